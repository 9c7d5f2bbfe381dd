package tableformat.write;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;

/** The key-sorted rows of one tablet as rowsets rolled at rowset_target_bytes. STUB. */
public final class RollingRowSetWriter {
  public RollingRowSetWriter(TableFiles files, WriteSchema schema, RowSetProperties props, String tablet) {}

  /** A row (ordinals as {@link WriteSchema}) and its encoded key, above the previous row's. */
  public void write(InternalRow row, byte[] encodedKey) {}

  /** Rows written so far. */
  public long numRows() {
    return 0;
  }

  /** Close the last rowset: the add_rowset descriptors (§8.2) of every rowset written. */
  public List<Map<String, Object>> finish() {
    return List.of();
  }

  /** Delete every file written. */
  public void abort() {}

  /** Paths (relative to the root) of every file written. */
  public List<String> files() {
    return List.of();
  }
}
