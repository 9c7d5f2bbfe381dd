package tableformat.connector;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import tableformat.deltas.RowIdSet;
import tableformat.vectors.CellCopy;

/**
 * The engine's read plan (Python's {@code Snapshot.read_plan}, specs/format.md §9.4) as the
 * connector receives it: JSON handed over as the {@code plan} option. The connector reads
 * exactly these files; it never reads the log itself.
 */
public final class ReadPlan implements Serializable {
  /** The fields of each object of the plan: every one required, no other allowed (a plan from
   *  another version of either side fails here, not as a silently disabled check). */
  public static final Map<String, List<String>> FIELDS = fields();

  private static Map<String, List<String>> fields() {
    Map<String, List<String>> m = new LinkedHashMap<>();
    m.put("plan", List.of("version", "read_ts", "columns", "rowsets"));
    m.put("column", List.of("id", "name", "type", "nullable", "default"));
    m.put("rowset", List.of("id", "num_rows", "base", "redo", "undo", "missing", "tablet", "native"));
    m.put("base", List.of("path", "size", "columns", "crc32"));
    m.put("delta", List.of("path", "size", "order", "min_ts", "max_ts", "has_ts", "updates", "deletes"));
    return java.util.Collections.unmodifiableMap(m);
  }

  /** One column of the snapshot read: its ID (Parquet field {@code c<id>}), name, type, read default. */
  public static final class ColumnPlan implements Serializable {
    public final int id;
    public final String name;
    public final DataType type;
    public final boolean nullable;
    /** the read default in Catalyst's internal form (null: NULL) */
    public final Object readDefault;

    ColumnPlan(JsonNode n) {
      checked(n, "column");
      id = (int) integer(n, "column", "id", 0, Integer.MAX_VALUE);
      name = text(n, "column", "name");
      type = DataType.fromDDL(text(n, "column", "type"));
      nullable = bool(n, "column", "nullable");
      readDefault = CellCopy.fromJson(type, n.get("default"));
    }
  }

  /** A base or delta file: its URI, recorded size and what it holds. */
  public static final class FilePlan implements Serializable {
    public final String path;
    public final long size;
    public final int[] columns;      // base: the column IDs read from it; delta: the IDs it updates
    public final int order;          // delta: rank (0 applies first)
    public final long minTs, maxTs;
    public final boolean hasTs, deletes;
    /** base: the log's CRC-32 of the file when the plan reads every column of it (null: no whole-file check) */
    public final Long crc32;

    /** A base file ({@code base}) or a REDO/UNDO file ({@code delta}). */
    FilePlan(JsonNode n, String kind) {
      checked(n, kind);
      boolean delta = kind.equals("delta");
      path = text(n, kind, "path");
      size = integer(n, kind, "size", 0, Long.MAX_VALUE);
      columns = ids(n, kind, delta ? "updates" : "columns");
      order = delta ? (int) integer(n, kind, "order", 0, Integer.MAX_VALUE) : 0;
      minTs = delta ? integer(n, kind, "min_ts", Long.MIN_VALUE, Long.MAX_VALUE) : 0;
      maxTs = delta ? integer(n, kind, "max_ts", Long.MIN_VALUE, Long.MAX_VALUE) : 0;
      hasTs = delta && bool(n, kind, "has_ts");
      deletes = delta && bool(n, kind, "deletes");
      crc32 = delta || n.get("crc32").isNull() ? null : integer(n, kind, "crc32", 0, 0xFFFFFFFFL);
    }

    public boolean holds(int columnId) {
      for (int c : columns) if (c == columnId) return true;
      return false;
    }
  }

  /** One rowset: base column groups (later ones win, the plan lists each column once), REDO files
   *  in rank order, UNDO files newer than the cut, and the columns it lacks (read defaults). Its
   *  rows number at most 2^32: rowids are unsigned 32-bit (specs/format.md §9). */
  public static final class RowSetPlan implements Serializable {
    public final String id;
    public final String tablet;
    public final boolean nativeRead;
    public final long numRows;
    public final List<FilePlan> base = new ArrayList<>();
    public final List<FilePlan> redo = new ArrayList<>();
    public final List<FilePlan> undo = new ArrayList<>();
    public final int[] missing;

    RowSetPlan(JsonNode n) {
      checked(n, "rowset");
      id = text(n, "rowset", "id");
      tablet = text(n, "rowset", "tablet");
      nativeRead = bool(n, "rowset", "native");
      numRows = integer(n, "rowset", "num_rows", 0, RowIdSet.LIMIT);
      for (JsonNode f : array(n, "rowset", "base")) base.add(new FilePlan(f, "base"));
      for (JsonNode f : array(n, "rowset", "redo")) redo.add(new FilePlan(f, "delta"));
      for (JsonNode f : array(n, "rowset", "undo")) undo.add(new FilePlan(f, "delta"));
      redo.sort((a, b) -> Integer.compare(a.order, b.order));
      missing = ids(n, "rowset", "missing");
    }

    public boolean clean() {
      return redo.isEmpty() && undo.isEmpty();
    }

    public long baseBytes() {
      long s = 0;
      for (FilePlan f : base) s += f.size;
      return s;
    }

    /** The base file that provides column {@code id} (null: the rowset lacks it). */
    public FilePlan baseOf(int id) {
      for (int i = base.size() - 1; i >= 0; i--) if (base.get(i).holds(id)) return base.get(i);
      return null;
    }

    /** Whether a delta file this read applies changes column {@code id}. */
    public boolean changes(int id) {
      for (FilePlan f : redo) if (f.holds(id)) return true;
      for (FilePlan f : undo) if (f.holds(id)) return true;
      return false;
    }
  }

  public final long version;
  public final Long readTs;
  public final List<ColumnPlan> columns = new ArrayList<>();
  public final List<RowSetPlan> rowsets = new ArrayList<>();

  private ReadPlan(JsonNode n) {
    checked(n, "plan");
    version = integer(n, "plan", "version", 0, Long.MAX_VALUE);
    readTs = n.get("read_ts").isNull() ? null : integer(n, "plan", "read_ts", Long.MIN_VALUE, Long.MAX_VALUE);
    for (JsonNode c : array(n, "plan", "columns")) columns.add(new ColumnPlan(c));
    for (JsonNode r : array(n, "plan", "rowsets")) rowsets.add(new RowSetPlan(r));
  }

  private static IllegalArgumentException bad(String what) {
    return new IllegalArgumentException("tableformat: the read plan is malformed: " + what);
  }

  /** {@code n} is an object with exactly the fields {@link #FIELDS} gives {@code kind}. */
  private static void checked(JsonNode n, String kind) {
    if (n == null || !n.isObject()) throw bad("a " + kind + " is not a JSON object");
    List<String> want = FIELDS.get(kind);
    for (String f : want) if (!n.has(f)) throw bad("a " + kind + " lacks the field \"" + f + "\"");
    for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!want.contains(f)) throw bad("a " + kind + " has the unknown field \"" + f + "\"");
    }
  }

  private static long integer(JsonNode n, String kind, String field, long min, long max) {
    JsonNode v = n.get(field);
    if (!v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < min || v.asLong() > max) {
      throw bad(kind + "." + field + " is " + v + ", not an integer in [" + min + ", " + max + "]");
    }
    return v.asLong();
  }

  private static String text(JsonNode n, String kind, String field) {
    JsonNode v = n.get(field);
    if (!v.isTextual()) throw bad(kind + "." + field + " is " + v + ", not a string");
    return v.asText();
  }

  private static boolean bool(JsonNode n, String kind, String field) {
    JsonNode v = n.get(field);
    if (!v.isBoolean()) throw bad(kind + "." + field + " is " + v + ", not a boolean");
    return v.asBoolean();
  }

  private static JsonNode array(JsonNode n, String kind, String field) {
    JsonNode v = n.get(field);
    if (!v.isArray()) throw bad(kind + "." + field + " is " + v + ", not an array");
    return v;
  }

  private static int[] ids(JsonNode n, String kind, String field) {
    JsonNode a = array(n, kind, field);
    int[] out = new int[a.size()];
    for (int i = 0; i < out.length; i++) {
      JsonNode v = a.get(i);
      if (!v.isIntegralNumber() || !v.canConvertToInt() || v.asInt() < 0) {
        throw bad(kind + "." + field + " holds " + v + ", not a column ID");
      }
      out[i] = v.asInt();
    }
    return out;
  }

  /** A plan already parsed (the JVM planner's, tableformat.plan.PlanJson): no text in between. */
  public static ReadPlan of(JsonNode plan) {
    return new ReadPlan(plan);
  }

  public static ReadPlan parse(String json) {
    try {
      return new ReadPlan(new ObjectMapper().readTree(json));
    } catch (IOException e) {
      throw new IllegalArgumentException("tableformat: the read plan is not valid JSON: " + e.getMessage(), e);
    }
  }

  public StructType schema() {
    StructField[] f = new StructField[columns.size()];
    for (int i = 0; i < f.length; i++) {
      ColumnPlan c = columns.get(i);
      f[i] = new StructField(c.name, c.type, c.nullable, Metadata.empty());
    }
    return new StructType(f);
  }

  public ColumnPlan column(String name) {
    for (ColumnPlan c : columns) if (c.name.equals(name)) return c;
    return null;
  }
}
