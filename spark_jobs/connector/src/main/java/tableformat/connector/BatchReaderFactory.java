package tableformat.connector;

import java.util.List;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.util.SerializableConfiguration;
import tableformat.deltas.DeltaLoader;

/** Ships what every task needs (the Hadoop conf, broadcast once; the columns read; the cut; the
 *  filters pushed to Parquet; the delta cache bound) to the executors; reads are columnar only. */
final class BatchReaderFactory implements PartitionReaderFactory {
  private final Broadcast<SerializableConfiguration> conf;
  private final List<ReadPlan.ColumnPlan> cols;
  private final Long readTs;
  private final Filter[] pushed;
  private final int capacity;
  private final long cacheBytes;   // spark.tableformat.deltaCache.size; -1: the default bound

  BatchReaderFactory(Broadcast<SerializableConfiguration> conf, List<ReadPlan.ColumnPlan> cols, Long readTs,
                     Filter[] pushed, int capacity, long cacheBytes) {
    this.cacheBytes = cacheBytes;
    this.conf = conf;
    this.cols = cols;
    this.readTs = readTs;
    this.pushed = pushed;
    this.capacity = capacity;
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    throw new UnsupportedOperationException("tableformat connector reads columnar batches only");
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return true;
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    if (cacheBytes >= 0) DeltaLoader.cacheBytes = cacheBytes;
    return new RowSetBatchReader(conf.value().value(), cols, readTs, pushed, capacity, (RowSetPartition) partition);
  }
}
