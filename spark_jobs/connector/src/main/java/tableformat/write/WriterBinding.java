package tableformat.write;

import java.io.Serializable;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * What an {@link InsertTask} asks of the rowset writers (specs/format.md §3-§8: key encoding, tablet
 * routing, rolling rowset files), in one place: the key of a row, its tablet, and a tablet's writer.
 */
final class WriterBinding implements Serializable {
  /** One tablet's rolling rowset writer: rows in key order; {@code finish} gives the add_rowset descriptors. */
  interface TabletWriter {
    void write(InternalRow row, byte[] key);

    List<Map<String, Object>> finish();

    void abort();

    List<String> files();
  }

  private final InsertPlan plan;

  private final org.apache.spark.sql.types.StructType schema;

  WriterBinding(InsertPlan plan) {
    this.plan = plan;
    this.schema = SparkInsert.sparkSchema(plan);
  }

  /** The Spark schema of the rows a task gets: the table's columns in order, as Spark types. */
  org.apache.spark.sql.types.StructType sparkSchema() {
    return schema;
  }

  /** Whether the JVM rowset writers are part of this build. */
  static boolean available() {
    return false;
  }

  /** The row's encoded primary key (§3). */
  byte[] key(InternalRow row) {
    throw new UnsupportedOperationException("the JVM rowset writer is not part of this build");
  }

  /** The row's tablet id (§4); NoRangePartitionError when no range partition holds it. */
  String tablet(InternalRow row) {
    throw new UnsupportedOperationException("the JVM rowset writer is not part of this build");
  }

  TabletWriter open(String tablet, org.apache.hadoop.conf.Configuration conf) {
    throw new UnsupportedOperationException("the JVM rowset writer is not part of this build");
  }
}
