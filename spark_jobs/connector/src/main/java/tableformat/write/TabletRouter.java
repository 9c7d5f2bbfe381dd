package tableformat.write;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import tableformat.log.NoRangePartitionError;
import tableformat.plan.Murmur2;

/**
 * A row's tablet (specs/format.md §4): its range partition by encoded range key, then its bucket
 * at each hash level ({@code MurmurHash2_64(encode(level columns), seed) mod buckets}, §4.1).
 * Tablet ordinal {@code ((range_pos * b0 + h0) * b1 + h1) ...}, tablet ID {@code r<id>-h<b>...},
 * in the engine's order (Python's {@code Partitioning.tablet_ids}).
 */
public final class TabletRouter implements Serializable {
  private static final long serialVersionUID = 1L;
  private final KeyEncoder[] levels;
  private final int[] buckets;
  private final long[] seeds;
  private final KeyEncoder range;          // null: one unbounded range partition
  private final byte[][] lower, upper;     // per range partition, null = unbounded
  private final int[] rangeIds;
  private final String rangeColumns;
  // each level's last encoded columns and their bucket: rows come sorted by key, so a row
  // usually repeats its predecessor's hash columns, and its bucket is known without hashing
  private transient byte[][] lastLevel;
  private transient int[] lastLevelLength, lastBucket;

  public TabletRouter(WriteSchema schema, JsonNode partitioning) {
    JsonNode hash = partitioning.path("hash");
    levels = new KeyEncoder[hash.size()];
    buckets = new int[hash.size()];
    seeds = new long[hash.size()];
    for (int i = 0; i < levels.length; i++) {
      JsonNode h = hash.get(i);
      levels[i] = KeyEncoder.ofColumnIds(schema, ids(h.get("column_ids")));
      buckets[i] = h.get("buckets").asInt();
      seeds[i] = h.path("seed").bigIntegerValue().longValue();
    }
    JsonNode ranges = partitioning.get("ranges");
    int n = ranges.size();
    lower = new byte[n][];
    upper = new byte[n][];
    rangeIds = new int[n];
    for (int i = 0; i < n; i++) {
      JsonNode r = ranges.get(i);
      rangeIds[i] = r.get("id").asInt();
      lower[i] = hex(r.get("lower"));
      upper[i] = hex(r.get("upper"));
    }
    int[] rcols = ids(partitioning.get("range_column_ids"));
    boolean unbounded = n == 1 && lower[0] == null && upper[0] == null;
    range = unbounded ? null : KeyEncoder.ofColumnIds(schema, rcols);
    List<String> names = new ArrayList<>();
    for (int id : rcols) names.add(schema.columns().get(schema.positionOfId(id)).name());
    rangeColumns = String.join(", ", names);
  }

  public static TabletRouter of(WriteSchema schema, String partitioningJson) {
    try {
      return new TabletRouter(schema, new ObjectMapper().readTree(partitioningJson));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static int[] ids(JsonNode a) {
    int[] out = new int[a == null ? 0 : a.size()];
    for (int i = 0; i < out.length; i++) out[i] = a.get(i).asInt();
    return out;
  }

  private static byte[] hex(JsonNode v) {
    return v == null || v.isNull() ? null : HexFormat.of().parseHex(v.asText());
  }

  /** The row's tablet ordinal; a row in no range partition is a {@link NoRangePartitionError}. */
  public int tabletOrdinal(InternalRow row) {
    int ordinal = rangePosition(row);
    if (lastLevel == null) {
      lastLevel = new byte[levels.length][];
      lastLevelLength = new int[levels.length];
      lastBucket = new int[levels.length];
    }
    for (int i = 0; i < levels.length; i++) {
      KeyEncoder e = levels[i];
      e.encodeInto(row);
      byte[] k = e.buffer();
      int n = e.length();
      byte[] last = lastLevel[i];
      if (last == null || !Arrays.equals(k, 0, n, last, 0, lastLevelLength[i])) {
        long h = Murmur2.hash64(k, n, seeds[i]);
        lastBucket[i] = (int) Long.remainderUnsigned(h, buckets[i]);
        if (last == null || last.length < n) lastLevel[i] = last = new byte[Math.max(n, 32)];
        System.arraycopy(k, 0, last, 0, n);
        lastLevelLength[i] = n;
      }
      ordinal = ordinal * buckets[i] + lastBucket[i];
    }
    return ordinal;
  }

  private int rangePosition(InternalRow row) {
    if (range == null) return 0;
    range.encodeInto(row);
    byte[] k = range.buffer();
    int n = range.length();
    for (int i = 0; i < rangeIds.length; i++) {
      if (lower[i] != null && Arrays.compareUnsigned(k, 0, n, lower[i], 0, lower[i].length) < 0) continue;
      if (upper[i] != null && Arrays.compareUnsigned(k, 0, n, upper[i], 0, upper[i].length) >= 0) continue;
      return i;
    }
    throw new NoRangePartitionError("a row falls in no range partition of (" + rangeColumns
        + ") (range key " + HexFormat.of().formatHex(k, 0, n) + "); add a range partition that covers it");
  }

  public int numTablets() {
    int t = rangeIds.length;
    for (int b : buckets) t *= b;
    return t;
  }

  /** The tablet ID of an ordinal: {@code r<range id>-h<bucket>...}. */
  public String tabletId(int ordinal) {
    StringBuilder s = new StringBuilder();
    int rest = ordinal;
    int[] bs = new int[buckets.length];
    for (int i = buckets.length - 1; i >= 0; i--) {
      bs[i] = rest % buckets[i];
      rest /= buckets[i];
    }
    s.append('r').append(rangeIds[rest]);
    for (int b : bs) s.append("-h").append(b);
    return s.toString();
  }

  /** Every tablet ID, in ordinal order. */
  public List<String> tabletIds() {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < numTablets(); i++) out.add(tabletId(i));
    return out;
  }
}
