package tableformat.write;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;

/** One rowset (Kudu's DiskRowSetWriter), written as its key-sorted rows arrive. STUB. */
public final class DiskRowSetWriter {
  public DiskRowSetWriter(TableFiles files, WriteSchema schema, RowSetProperties props, String tablet) {
    throw new UnsupportedOperationException("stub");
  }

  /** A row (ordinals as {@link WriteSchema}) and its encoded key, above the previous row's. */
  public void write(InternalRow row, byte[] encodedKey) {}

  public long numRows() {
    return 0;
  }

  /** Arrow bytes of the input so far, as the Python writer measures rowset size. */
  public long inputBytes() {
    return 0;
  }

  /** Close the files: the rowset's add_rowset descriptor (§8.2). */
  public Map<String, Object> finish() {
    return null;
  }

  public void abort() {}

  /** Paths (relative to the root) of every file this writer created. */
  public List<String> files() {
    return List.of();
  }
}
