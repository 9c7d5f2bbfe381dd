package tableformat.connector;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.internal.SQLConf;

/**
 * Tasks for a read, sized and packed by the rules of Spark's own file scans
 * ({@code FilePartition.maxSplitBytes} and {@code getFilePartitions}), so a read has the task
 * count {@code spark.read.parquet} of the same files has: small rowsets are packed "next fit
 * decreasing" up to the split size (a slice joins a task when the task's bytes plus the slice's own
 * bytes fit; it then also costs {@code openCostInBytes} per file), a rowset whose single base file
 * is larger is split into byte ranges (whole row groups; the row index keeps rowids right).
 * Rowsets with several column groups are read whole, in lockstep. With
 * {@code spark.sql.files.maxPartitionNum} set and exceeded, the same slices are packed again to
 * the split size Spark then uses (all bytes and open costs / maxPartitionNum, rounded up).
 */
final class SlicePlanner {
  private SlicePlanner() {}

  static List<RowSetPartition> plan(SparkSession spark, List<ReadPlan.RowSetPlan> rowsets) {
    SQLConf conf = spark.sessionState().conf();
    return plan(rowsets, conf.filesMaxPartitionBytes(), conf.filesOpenCostInBytes(), minPartitions(spark, conf),
        maxPartitions(conf));
  }

  /** The tasks for these settings: Spark's maxPartitionBytes, openCostInBytes, min and max partition counts. */
  static List<RowSetPartition> plan(List<ReadPlan.RowSetPlan> rowsets, long maxBytes, long openCost, int minTasks,
                                    int maxTasks) {
    long total = 0;
    for (ReadPlan.RowSetPlan rs : rowsets) total += rs.baseBytes() + openCost * rs.base.size();
    int parallelism = Math.max(1, minTasks);
    long split = Math.min(maxBytes, Math.max(openCost, total / parallelism));
    List<RowSetPartition.Slice> slices = new ArrayList<>();
    for (ReadPlan.RowSetPlan rs : rowsets) {
      long bytes = rs.baseBytes();
      if (rs.base.size() == 1 && bytes > split && rs.base.get(0).size > 0) {
        long size = rs.base.get(0).size;
        for (long s = 0; s < size; s += split) {
          long len = Math.min(split, size - s);
          slices.add(new RowSetPartition.Slice(rs, s, len, len));
        }
      } else {
        slices.add(new RowSetPartition.Slice(rs, 0, -1, bytes));
      }
    }
    slices.sort(Comparator.comparingLong((RowSetPartition.Slice s) -> s.bytes).reversed());
    List<RowSetPartition> out = pack(slices, split, openCost);
    if (maxTasks > 0 && out.size() > maxTasks) {     // Spark repacks to at most maxPartitionNum, same slices
      java.math.BigDecimal all = java.math.BigDecimal.ZERO;
      for (RowSetPartition.Slice s : slices) all = all.add(java.math.BigDecimal.valueOf(cost(s, openCost)));
      long desired = all.divide(java.math.BigDecimal.valueOf(maxTasks), 0, java.math.RoundingMode.UP).longValue();
      out = pack(slices, desired, openCost);
    }
    return out;
  }

  /** A slice's bytes plus the open cost of each file it reads. */
  private static long cost(RowSetPartition.Slice s, long openCost) {
    return s.bytes + openCost * (s.length < 0 ? s.rowset.base.size() : 1);
  }

  /** Next fit over slices sorted by bytes, largest first ({@code FilePartition.getFilePartitions}). */
  private static List<RowSetPartition> pack(List<RowSetPartition.Slice> slices, long split, long openCost) {
    List<RowSetPartition> out = new ArrayList<>();
    RowSetPartition cur = null;
    for (RowSetPartition.Slice s : slices) {
      if (cur != null && cur.bytes + s.bytes > split) cur = null;      // Spark's test: the open cost is not in it
      if (cur == null) {
        cur = new RowSetPartition();
        out.add(cur);
      }
      cur.slices.add(s);
      cur.bytes += cost(s, openCost);
    }
    return out;
  }

  /** {@code spark.sql.files.maxPartitionNum}, 0 when unset. */
  static int maxPartitions(SQLConf conf) {
    String k = "spark.sql.files.maxPartitionNum";
    return conf.contains(k) ? Integer.parseInt(conf.getConfString(k).trim()) : 0;
  }

  /** {@code spark.sql.files.minPartitionNum}, else the session's leaf-node parallelism (Spark's
   *  {@code leafNodeDefaultParallelism}: {@code spark.sql.leafNodeDefaultParallelism} or the
   *  context's default parallelism). */
  static int minPartitions(SparkSession spark, SQLConf conf) {
    for (String k : new String[] {"spark.sql.files.minPartitionNum", "spark.sql.leafNodeDefaultParallelism"}) {
      if (conf.contains(k)) return Integer.parseInt(conf.getConfString(k).trim());
    }
    return spark.sparkContext().defaultParallelism();
  }
}
