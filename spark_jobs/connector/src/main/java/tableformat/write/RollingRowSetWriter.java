package tableformat.write;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * The key-sorted rows of one tablet as rowsets rolled at {@code rowset_target_bytes} of input
 * (Kudu's RollingDiskRowSetWriter; rolling_writer.py's twin, §8.2): a rowset closes once its
 * rows' Arrow bytes, as the Python writer counts them, reach the target. Holds one open
 * {@link DiskRowSetWriter}. Key checks (duplicates, keys already in the table) are the caller's.
 */
public final class RollingRowSetWriter {
  private final TableFiles files;
  private final WriteSchema schema;
  private final RowSetProperties props;
  private final String tablet;
  private final List<String> written = new ArrayList<>();
  private final List<Map<String, Object>> rowsets = new ArrayList<>();
  private DiskRowSetWriter open;
  private long rows;
  private boolean aborted;

  public RollingRowSetWriter(TableFiles files, WriteSchema schema, RowSetProperties props, String tablet) {
    this.files = files;
    this.schema = schema;
    this.props = props;
    this.tablet = tablet;
  }

  /** A row (ordinals as {@link WriteSchema}) and its encoded key, above the previous row's. */
  public void write(InternalRow row, byte[] encodedKey) {
    if (aborted) throw new IllegalStateException("this rowset writer was aborted");
    if (open == null) open = new DiskRowSetWriter(files, schema, props, tablet);
    try {
      open.write(row, encodedKey);
    } catch (RuntimeException e) {
      abort();
      throw e;
    }
    rows++;
    if (open.inputBytes() >= props.rowsetTargetBytes()) roll();
  }

  private void roll() {
    DiskRowSetWriter rs = open;
    open = null;
    if (rs == null || rs.numRows() == 0) return;
    try {
      rowsets.add(rs.finish());
    } catch (RuntimeException e) {
      written.addAll(rs.files());
      rs.abort();
      abort();
      throw e;
    } finally {
      if (!aborted) written.addAll(rs.files());
    }
  }

  /** Rows written so far. */
  public long numRows() {
    return rows;
  }

  /** Close the last rowset: the add_rowset descriptors (§8.2) of every rowset written, in key order. */
  public List<Map<String, Object>> finish() {
    if (aborted) throw new IllegalStateException("this rowset writer was aborted");
    roll();
    return List.copyOf(rowsets);
  }

  /** Delete every file written (the open rowset's too); the writer takes no more rows. */
  public void abort() {
    if (open != null) {
      written.addAll(open.files());
      open.abort();
      open = null;
    }
    files.deleteQuietly(written);
    rowsets.clear();
    aborted = true;
  }

  /** Paths (relative to the root) of every file written. */
  public List<String> files() {
    List<String> all = new ArrayList<>(written);
    if (open != null) all.addAll(open.files());
    return all;
  }
}
