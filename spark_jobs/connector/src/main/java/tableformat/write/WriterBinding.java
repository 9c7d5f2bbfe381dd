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
  private final WriteSchema writeSchema;
  private final KeyEncoder keys;
  private final TabletRouter router;
  private final List<String> tabletIds;
  private final RowSetProperties properties;

  WriterBinding(InsertPlan plan) {
    this.plan = plan;
    this.schema = SparkInsert.sparkSchema(plan);
    this.writeSchema = WriteSchema.of(plan.schemaJson);
    this.keys = KeyEncoder.primaryKey(writeSchema);
    this.router = TabletRouter.of(writeSchema, plan.partitioningJson);
    this.tabletIds = router.tabletIds();
    try {
      this.properties = RowSetProperties.of(new com.fasterxml.jackson.databind.ObjectMapper().readTree(plan.propertiesJson));
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** The Spark schema of the rows a task gets: the table's columns in order, as Spark types. */
  org.apache.spark.sql.types.StructType sparkSchema() {
    return schema;
  }

  /** Whether the JVM rowset writers are part of this build. */
  static boolean available() {
    return true;
  }

  /** The row's encoded primary key (§3). */
  byte[] key(InternalRow row) {
    return keys.encode(row);
  }

  /** The row's tablet id (§4); NoRangePartitionError when no range partition holds it. */
  String tablet(InternalRow row) {
    return tabletIds.get(router.tabletOrdinal(row));
  }

  TabletWriter open(String tablet, org.apache.hadoop.conf.Configuration conf) {
    RollingRowSetWriter w = new RollingRowSetWriter(new TableFiles(plan.root, conf), writeSchema, properties, tablet);
    return new TabletWriter() {
      @Override public void write(InternalRow row, byte[] key) {
        w.write(row, key);
      }
      @Override public List<Map<String, Object>> finish() {
        return w.finish();
      }
      @Override public void abort() {
        w.abort();
      }
      @Override public List<String> files() {
        return w.files();
      }
    };
  }
}
