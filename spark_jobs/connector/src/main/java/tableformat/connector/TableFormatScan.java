package tableformat.connector;

import java.util.List;
import java.util.OptionalLong;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;
import tableformat.parquet.ParquetFiles;

/** The scan of one read plan: its tasks (SlicePlanner), its reader factory and the statistics
 *  Spark plans joins with (bytes of the base files read; rows when nothing is deleted). */
final class TableFormatScan implements Scan, Batch, SupportsReportStatistics {
  /** Spark conf of the executors' delta cache bound, in bytes ("256m" and the like); unset: an
   *  eighth of the heap, at most 256 MiB. */
  static final String DELTA_CACHE_SIZE = "spark.tableformat.deltaCache.size";

  private final SparkSession spark;
  private final ReadPlan plan;
  private final List<ReadPlan.ColumnPlan> cols;
  private final Filter[] pushed;

  TableFormatScan(SparkSession spark, ReadPlan plan, List<ReadPlan.ColumnPlan> cols, Filter[] pushed) {
    this.spark = spark;
    this.plan = plan;
    this.cols = cols;
    this.pushed = pushed;
  }

  @Override
  public StructType readSchema() {
    StructField[] f = new StructField[cols.size()];
    for (int i = 0; i < f.length; i++) f[i] = new StructField(cols.get(i).name, cols.get(i).type, cols.get(i).nullable, Metadata.empty());
    return new StructType(f);
  }

  @Override
  public String description() {
    return "tableformat version " + plan.version + " (" + plan.rowsets.size() + " rowsets"
        + (plan.readTs == null ? "" : ", as of ts " + plan.readTs) + ")"
        + (pushed.length == 0 ? "" : " PushedToParquet: " + java.util.Arrays.toString(pushed));
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    return SlicePlanner.plan(spark, plan.rowsets).toArray(new InputPartition[0]);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    Broadcast<SerializableConfiguration> conf =
        SerializableConfiguration.broadcast(spark.sparkContext(), ParquetFiles.hadoopConf(spark));
    int capacity = spark.sessionState().conf().parquetVectorizedReaderBatchSize();
    String size = spark.conf().get(DELTA_CACHE_SIZE, null);
    long cacheBytes = size == null ? -1 : org.apache.spark.network.util.JavaUtils.byteStringAsBytes(size);
    return new BatchReaderFactory(conf, cols, plan.readTs, pushed, capacity, cacheBytes);
  }

  @Override
  public Statistics estimateStatistics() {
    long bytes = 0, rows = 0;
    boolean exact = true;
    for (ReadPlan.RowSetPlan rs : plan.rowsets) {
      bytes += rs.baseBytes();
      rows += rs.numRows;
      for (ReadPlan.FilePlan f : rs.redo) exact &= !f.deletes;
      exact &= rs.undo.isEmpty();
    }
    final long b = bytes, r = rows;
    final boolean e = exact;
    return new Statistics() {
      @Override public OptionalLong sizeInBytes() { return OptionalLong.of(b); }
      @Override public OptionalLong numRows() { return e ? OptionalLong.of(r) : OptionalLong.empty(); }
    };
  }
}
