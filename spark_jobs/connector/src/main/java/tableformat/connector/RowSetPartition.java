package tableformat.connector;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.read.InputPartition;

/** One task's work: rowsets packed together, or one byte range of a large rowset's base file
 *  (whole row groups, by Parquet's midpoint rule). */
final class RowSetPartition implements InputPartition {
  static final class Slice implements Serializable {
    final ReadPlan.RowSetPlan rowset;
    final long start;
    final long length;     // -1: the whole rowset
    final long bytes;

    Slice(ReadPlan.RowSetPlan rowset, long start, long length, long bytes) {
      this.rowset = rowset;
      this.start = start;
      this.length = length;
      this.bytes = bytes;
    }
  }

  final List<Slice> slices = new ArrayList<>();
  long bytes;
}
