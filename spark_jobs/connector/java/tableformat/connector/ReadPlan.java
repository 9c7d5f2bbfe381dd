package tableformat.connector;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The engine's read plan (Python's {@code Snapshot.read_plan}, specs/format.md §9.4) as the
 * connector receives it: JSON handed over as the {@code plan} option. The connector reads
 * exactly these files; it never reads the log itself.
 */
public final class ReadPlan implements Serializable {
  /** One column of the snapshot read: its ID (Parquet field {@code c<id>}), name, type, read default. */
  public static final class ColumnPlan implements Serializable {
    public final int id;
    public final String name;
    public final DataType type;
    public final boolean nullable;
    /** the read default in Catalyst's internal form (null: NULL) */
    public final Object readDefault;

    ColumnPlan(JsonNode n) {
      id = n.get("id").asInt();
      name = n.get("name").asText();
      type = DataType.fromDDL(n.get("type").asText());
      nullable = n.path("nullable").asBoolean(true);
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
    public final long numRecords;

    FilePlan(JsonNode n) {
      path = n.get("path").asText();
      size = n.path("size").asLong(-1);
      JsonNode c = n.has("columns") ? n.get("columns") : n.path("updates");
      columns = new int[c.size()];
      for (int i = 0; i < columns.length; i++) columns[i] = c.get(i).asInt();
      order = n.path("order").asInt(0);
      minTs = n.path("min_ts").asLong(0);
      maxTs = n.path("max_ts").asLong(0);
      hasTs = n.path("has_ts").asBoolean(false);
      deletes = n.path("deletes").asBoolean(false);
      numRecords = n.path("num_records").asLong(-1);
    }

    boolean holds(int columnId) {
      for (int c : columns) if (c == columnId) return true;
      return false;
    }
  }

  /** One rowset: base column groups (later ones win, the plan lists each column once), REDO files
   *  in rank order, UNDO files newer than the cut, and the columns it lacks (read defaults). */
  public static final class RowSetPlan implements Serializable {
    public final String id;
    public final long numRows;
    public final List<FilePlan> base = new ArrayList<>();
    public final List<FilePlan> redo = new ArrayList<>();
    public final List<FilePlan> undo = new ArrayList<>();
    public final int[] missing;

    RowSetPlan(JsonNode n) {
      id = n.get("id").asText();
      numRows = n.get("num_rows").asLong();
      for (JsonNode f : n.path("base")) base.add(new FilePlan(f));
      for (JsonNode f : n.path("redo")) redo.add(new FilePlan(f));
      for (JsonNode f : n.path("undo")) undo.add(new FilePlan(f));
      redo.sort((a, b) -> Integer.compare(a.order, b.order));
      JsonNode m = n.path("missing");
      missing = new int[m.size()];
      for (int i = 0; i < missing.length; i++) missing[i] = m.get(i).asInt();
    }

    public boolean clean() {
      return redo.isEmpty() && undo.isEmpty();
    }

    public long baseBytes() {
      long s = 0;
      for (FilePlan f : base) s += Math.max(f.size, 0);
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
    version = n.path("version").asLong(-1);
    readTs = n.path("read_ts").isNull() || n.path("read_ts").isMissingNode() ? null : n.get("read_ts").asLong();
    for (JsonNode c : n.path("columns")) columns.add(new ColumnPlan(c));
    for (JsonNode r : n.path("rowsets")) rowsets.add(new RowSetPlan(r));
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
