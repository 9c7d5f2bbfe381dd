package tableformat.write;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;
import tableformat.log.AsOf;
import tableformat.log.LogReader;
import tableformat.log.LogStore;
import tableformat.log.Mvcc;
import tableformat.log.TableReplacedError;
import tableformat.log.TableState;
import tableformat.parquet.ParquetFiles;
import tableformat.plan.ColumnType;

/**
 * The Spark job of an insert in the JVM (the entry {@code spark_jobs/insert.py} calls through py4j):
 * the DataFrame's columns in the table's order, range-partitioned and sorted by the key columns
 * by Spark itself (so every key meets its duplicates, adjacent, in one task; a tablet may span
 * tasks), then an {@link InsertTask} per partition. The rows never leave the JVM; the tasks'
 * results (fragment JSON, files, counts; specs/format.md §10.2) go back to the caller, which
 * commits them as it commits Python tasks' results.
 */
public final class SparkInsert {
  private SparkInsert() {}

  /** Whether this build has the JVM rowset writers (the Python job falls back to its own path without). */
  public static boolean available() {
    return WriterBinding.available();
  }

  /**
   * Runs the insert's tasks over {@code df} planned on {@code version} of the table at {@code root}
   * ({@code tableId}: the table planned on, else TableReplacedError); {@code partitions} the number
   * of write tasks (0: Spark's, adaptive execution may join small ranges). One JSON result a task.
   */
  public static List<String> run(Dataset<Row> df, String root, long version, String tableId, String onDuplicate,
                                 int partitions) {
    SparkSession spark = df.sparkSession();
    Configuration hconf = ParquetFiles.hadoopConf((org.apache.spark.sql.classic.SparkSession) spark);
    LogStore store = new LogStore(root, hconf);
    TableState st = Mvcc.stateAt(new LogReader(store), AsOf.version(version));
    if (tableId != null && !tableId.equals(st.tableId()))
      throw new TableReplacedError("the table at " + root + " was replaced (table " + tableId + ", now "
          + st.tableId() + ")");
    InsertPlan plan = InsertPlan.of(st, store, onDuplicate);
    Column[] cols = new Column[plan.columns.size()];
    for (int i = 0; i < cols.length; i++) {
      String name = plan.columns.get(i);
      int n = plan.varcharLengths[i];
      // Kudu's varchar rule, as the engine applies it: a longer value is cut to n characters;
      // one of at most n bytes has at most n characters, so it passes as is (no copy per cell)
      cols[i] = n < 0 ? col(name) : functions.when(functions.octet_length(col(name)).gt(n),
          functions.substring(col(name), 1, n)).otherwise(col(name)).as(name);
    }
    Column[] key = plan.keyColumns.stream().map(SparkInsert::col).toArray(Column[]::new);
    Dataset<Row> in = df.select(cols);
    Dataset<Row> ranged = partitions > 0 ? in.repartitionByRange(partitions, key) : in.repartitionByRange(key);
    Dataset<Row> sorted = ranged.sortWithinPartitions(key);
    Broadcast<SerializableConfiguration> conf = SerializableConfiguration.broadcast(spark.sparkContext(), hconf);
    return new ArrayList<>(((org.apache.spark.sql.classic.Dataset<Row>) sorted).queryExecution().toRdd()
        .toJavaRDD().mapPartitions(new Task(plan, conf)).collect());
  }

  /**
   * Which keys are live in {@code version} of the table (the insert's key check as its tasks run it,
   * planned as {@link #run} plans): for each (tablet, hex key), "rowset:rowid" of its live row or "".
   */
  public static List<String> liveKeys(SparkSession spark, String root, long version, List<String> tablets,
                                      List<String> keysHex) {
    Configuration hconf = ParquetFiles.hadoopConf((org.apache.spark.sql.classic.SparkSession) spark);
    LogStore store = new LogStore(root, hconf);
    InsertPlan plan = InsertPlan.of(Mvcc.stateAt(new LogReader(store), AsOf.version(version)), store, "fail");
    java.util.Map<String, KeyCheck> checks = KeyCheck.of(hconf, plan.rowsets, plan.readTs);
    String[] out = new String[keysHex.size()];
    java.util.Arrays.fill(out, "");
    java.util.Map<String, java.util.TreeMap<String, Integer>> byTablet = new java.util.LinkedHashMap<>();
    for (int i = 0; i < out.length; i++)
      byTablet.computeIfAbsent(tablets.get(i), t -> new java.util.TreeMap<>()).put(keysHex.get(i).toLowerCase(), i);
    for (java.util.Map.Entry<String, java.util.TreeMap<String, Integer>> e : byTablet.entrySet()) {
      KeyCheck check = checks.get(e.getKey());
      if (check == null) continue;
      // lower-case hex orders as the unsigned bytes it spells: the map's order is the keys' order
      byte[][] arr = new byte[e.getValue().size()][];
      int[] at = new int[arr.length];
      int j = 0;
      for (java.util.Map.Entry<String, Integer> k : e.getValue().entrySet()) {
        arr[j] = java.util.HexFormat.of().parseHex(k.getKey());
        at[j++] = k.getValue();
      }
      int[] which = new int[arr.length];
      long[] rowid = new long[arr.length];
      check.find(arr, 0, arr.length, which, rowid);
      for (j = 0; j < arr.length; j++)
        if (which[j] >= 0) out[at[j]] = check.rowsets().get(which[j]).id() + ":" + rowid[j];
    }
    return java.util.Arrays.asList(out);
  }

  private static Column col(String name) {
    return functions.col("`" + name.replace("`", "``") + "`");
  }

  /** The rows a task gets: the table's columns in order, as Spark types (§2.1). */
  static StructType sparkSchema(InsertPlan plan) {
    JsonNode schema;
    try {
      schema = new com.fasterxml.jackson.databind.ObjectMapper().readTree(plan.schemaJson);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    List<StructField> fields = new ArrayList<>();
    for (JsonNode c : schema.get("columns")) {
      DataType t = DataType.fromDDL(ColumnType.parse(c.get("type").asText()).sparkType());
      fields.add(new StructField(c.get("name").asText(), t, c.path("nullable").asBoolean(true), Metadata.empty()));
    }
    return new StructType(fields.toArray(new StructField[0]));
  }

  /** One partition: its rows through an InsertTask; aborted (its files deleted) when anything fails. */
  static final class Task implements FlatMapFunction<Iterator<InternalRow>, String> {
    private final InsertPlan plan;
    private final Broadcast<SerializableConfiguration> conf;

    Task(InsertPlan plan, Broadcast<SerializableConfiguration> conf) {
      this.plan = plan;
      this.conf = conf;
    }

    @Override
    public Iterator<String> call(Iterator<InternalRow> rows) {
      InsertTask task = new InsertTask(plan, conf.value().value());
      try {
        while (rows.hasNext()) task.write(rows.next());
        return List.of(task.finish()).iterator();
      } catch (Throwable t) {
        try {
          task.abort();
        } catch (RuntimeException e) {
          t.addSuppressed(e);
        }
        throw t;
      }
    }
  }
}
