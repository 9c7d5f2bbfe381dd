package tableformat.connector;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.internal.SQLConf;

/**
 * Tasks for a read, sized as Spark sizes file scans ({@code FilePartition.maxSplitBytes}): small
 * rowsets are packed up to the split size (each file costing {@code openCostInBytes}), a rowset
 * whose single base file is larger is split into byte ranges (whole row groups; the row index
 * keeps rowids right). Rowsets with several column groups are read whole, in lockstep.
 */
final class SlicePlanner {
  private SlicePlanner() {}

  static List<RowSetPartition> plan(SparkSession spark, List<ReadPlan.RowSetPlan> rowsets) {
    SQLConf conf = spark.sessionState().conf();
    long maxBytes = conf.filesMaxPartitionBytes();
    long openCost = conf.filesOpenCostInBytes();
    long total = 0;
    for (ReadPlan.RowSetPlan rs : rowsets) total += rs.baseBytes() + openCost * rs.base.size();
    int parallelism = Math.max(1, spark.sparkContext().defaultParallelism());
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
    List<RowSetPartition> out = new ArrayList<>();
    RowSetPartition cur = null;
    for (RowSetPartition.Slice s : slices) {
      long cost = s.bytes + openCost * (s.length < 0 ? s.rowset.base.size() : 1);
      if (cur != null && cur.bytes + cost > split) cur = null;
      if (cur == null) {
        cur = new RowSetPartition();
        out.add(cur);
      }
      cur.slices.add(s);
      cur.bytes += cost;
    }
    return out;
  }
}
