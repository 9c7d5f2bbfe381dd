package tableformat.plan;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * Pruning from a filter's bounds, before any file is opened: tablets by range partition and
 * hash bucket (specs/format.md §4.2), rowsets by key interval and by the column statistics of
 * the log (§8.2), with §13's order (NULL, NaN above every number, -0.0 = 0.0).
 */
public final class Pruning {
  private Pruning() {}

  private static final int HASH_COMBINATIONS = 4096;

  /** The tablet IDs a scan with these bounds may need. */
  public static List<String> tablets(Schema schema, JsonNode part, Map<String, Bounds> bounds) {
    List<Column> rcols = new ArrayList<>();
    for (JsonNode i : part.get("range_column_ids")) rcols.add(schema.byId(i.asInt()));
    byte[][] lohi = rcols.isEmpty() ? new byte[2][] : keyRange(rcols, bounds);
    List<String> prefixes = new ArrayList<>();
    for (JsonNode r : part.get("ranges")) {
      byte[] lower = hex(r.get("lower")), upper = hex(r.get("upper"));
      if (lohi[1] != null && lower != null && Arrays.compareUnsigned(lower, lohi[1]) >= 0) continue;
      if (lohi[0] != null && upper != null && Arrays.compareUnsigned(upper, lohi[0]) <= 0) continue;
      prefixes.add("r" + r.get("id").asLong());
    }
    for (JsonNode level : part.get("hash")) {
      List<Column> cols = new ArrayList<>();
      for (JsonNode i : level.get("column_ids")) cols.add(schema.byId(i.asInt()));
      int buckets = level.get("buckets").asInt();
      boolean[] allowed = hashBuckets(cols, bounds, level.get("seed").asLong(), buckets);
      List<String> next = new ArrayList<>();
      for (String p : prefixes)
        for (int b = 0; b < buckets; b++) if (allowed[b]) next.add(p + "-h" + b);
      prefixes = next;
    }
    return prefixes;
  }

  private static byte[] hex(JsonNode n) {
    return n == null || n.isNull() ? null : HexFormat.of().parseHex(n.asText());
  }

  /** The buckets of one hash level that the =/in values of its columns reach (all when unconstrained). */
  static boolean[] hashBuckets(List<Column> cols, Map<String, Bounds> bounds, long seed, int buckets) {
    boolean[] all = new boolean[buckets];
    Arrays.fill(all, true);
    long total = 1;
    List<List<Object>> vals = new ArrayList<>();
    for (Column c : cols) {
      Bounds b = bounds.get(c.name());
      if (b == null || b.values == null) return all;
      vals.add(b.values);
      total *= b.values.size();
      if (total > HASH_COMBINATIONS) return all;
    }
    boolean[] out = new boolean[buckets];
    List<ColumnType> types = cols.stream().map(Column::type).toList();
    combos(vals, 0, new ArrayList<>(), v -> out[Murmur2.bucket(KeyEncoder.encode(v, types, true), seed, buckets)] = true);
    return out;
  }

  private static void combos(List<List<Object>> vals, int i, List<Object> acc, java.util.function.Consumer<List<Object>> f) {
    if (i == vals.size()) {
      f.accept(List.copyOf(acc));
      return;
    }
    for (Object v : vals.get(i)) {
      acc.add(v);
      combos(vals, i + 1, acc, f);
      acc.remove(acc.size() - 1);
    }
  }

  /** The encoded-key interval [lower, upper) the bounds imply on these columns (Kudu's scan spec:
   * equality on a prefix, then a range on the next column); null ends are unbounded. */
  public static byte[][] keyRange(List<Column> cols, Map<String, Bounds> bounds) {
    List<Object> prefix = new ArrayList<>();
    List<ColumnType> types = cols.stream().map(Column::type).toList();
    int n = cols.size();
    for (int i = 0; i < n; i++) {
      Bounds b = bounds.get(cols.get(i).name());
      if (b != null && b.values != null && b.values.size() == 1) {
        prefix.add(b.values.get(0));
        continue;
      }
      Object lo = b == null ? null : b.lower();
      Object hi = b == null ? null : b.upper();
      boolean hiIncl = b == null || b.upperIncl();
      boolean terminal = i == n - 1;
      if (lo == null && hi == null) break;
      byte[] lower, upper;
      if (lo != null) lower = KeyEncoder.encode(with(prefix, lo), types.subList(0, i + 1), terminal);
      else lower = prefix.isEmpty() ? null : KeyEncoder.encode(prefix, types.subList(0, i), false);
      if (hi != null) {
        byte[] e = KeyEncoder.encode(with(prefix, hi), types.subList(0, i + 1), terminal);
        upper = hiIncl ? KeyEncoder.prefixSuccessor(e) : e;
      } else {
        upper = prefix.isEmpty() ? null : KeyEncoder.prefixSuccessor(KeyEncoder.encode(prefix, types.subList(0, i), false));
      }
      return new byte[][] {lower, upper};
    }
    if (prefix.size() == n) {
      byte[] k = KeyEncoder.encode(prefix, types, true);
      byte[] up = Arrays.copyOf(k, k.length + 1);
      return new byte[][] {k, up};
    }
    if (prefix.isEmpty()) return new byte[2][];
    byte[] p = KeyEncoder.encode(prefix, types.subList(0, prefix.size()), false);
    return new byte[][] {p, KeyEncoder.prefixSuccessor(p)};
  }

  private static List<Object> with(List<Object> prefix, Object v) {
    List<Object> out = new ArrayList<>(prefix);
    out.add(v);
    return out;
  }

  /** Can a rowset with these statistics of the column hold a row matching the bounds? (§8.2) */
  public static boolean statsMayMatch(Column col, JsonNode stats, long numRows, Bounds b) {
    if (b.empty) return false;
    if (stats == null) return true;
    long nulls = stats.path("nulls").asLong(0);
    if (b.isNull) return nulls > 0;
    if (nulls >= numRows && (b.notNull || b.values != null || b.lo != null || b.hi != null)) return false;
    List<Object[]> pieces = pieces(col, stats);
    if (pieces == null || pieces.isEmpty()) return true;
    if (b.values != null) {
      for (Object v : b.values)
        for (Object[] p : pieces) if (Domain.compare(p[0], v) <= 0 && Domain.compare(v, p[1]) <= 0) return true;
      return false;
    }
    for (Object[] p : pieces) if (overlaps(p[0], p[1], b)) return true;
    return false;
  }

  private static List<Object[]> pieces(Column col, JsonNode stats) {
    Object lo = null, hi = null;
    if (stats.has("min")) {
      lo = statValue(col.type(), stats.get("min"));
      hi = statValue(col.type(), stats.get("max"));
    }
    List<Object[]> out = new ArrayList<>();
    if (!col.type().isFloat()) {
      if (lo == null) return null;
      out.add(new Object[] {lo, hi});
      return out;
    }
    if (Domain.isNaN(lo) || Domain.isNaN(hi)) lo = hi = null;
    JsonNode nan = stats.get("nan");
    if (nan == null && lo == null) return null;
    if (lo != null) out.add(new Object[] {lo, hi});
    if (nan == null || nan.asLong() > 0) out.add(new Object[] {Double.NaN, Double.NaN});
    return out;
  }

  private static boolean overlaps(Object lo, Object hi, Bounds b) {
    if (b.lo != null && (Domain.compare(hi, b.lo) < 0 || (Domain.compare(hi, b.lo) == 0 && !b.loIncl))) return false;
    if (b.hi != null && (Domain.compare(lo, b.hi) > 0 || (Domain.compare(lo, b.hi) == 0 && !b.hiIncl))) return false;
    return true;
  }

  /** A min/max statistic of the log (JSON value encoding, §2.2) as a domain value. */
  static Object statValue(ColumnType t, JsonNode v) {
    String k = t.kind();
    if (k.equals("date")) return v.isIntegralNumber() ? v.asLong() : LocalDate.parse(v.asText()).toEpochDay();
    if (t.isInteger() || k.equals("unixtime_micros")) return v.asLong();
    if (t.isFloat()) return v.isTextual() ? Locate.parseFloat(v.asText()) : v.asDouble();
    if (k.equals("decimal")) return new BigDecimal(v.asText());
    if (k.equals("binary")) return Base64.getDecoder().decode(v.asText());
    if (k.equals("bool")) return v.asBoolean();
    return v.asText();
  }
}
