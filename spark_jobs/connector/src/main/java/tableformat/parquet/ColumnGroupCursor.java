package tableformat.parquet;

import java.io.Closeable;
import java.io.IOException;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import tableformat.vectors.CellCopy;
import tableformat.vectors.RemappedColumnVector;

/**
 * One base file (column group) of a rowset being read: its batches, whose last column is the
 * row index. A secondary column group follows the primary in lockstep (§9.4 rule 2): it shows
 * the primary batch's rows [first, first + n) as views of its own batch, copying only where the
 * two files' batch boundaries differ.
 */
public final class ColumnGroupCursor implements Closeable {
  private final BatchSource reader;
  private final DataType[] types;
  private final String path;
  public ColumnarBatch batch;
  private long start;
  private int rows;
  private WritableColumnVector[] copies;
  private int copyCapacity;

  private final boolean indexed;

  /** {@code indexed}: the batches end with the row index (else positions are not tracked). */
  public ColumnGroupCursor(BatchSource reader, DataType[] types, String path, boolean indexed) {
    this.reader = reader;
    this.types = types;
    this.path = path;
    this.indexed = indexed;
  }

  /** The next batch (false at the end of the file or split). */
  public boolean advance() throws IOException {
    ColumnarBatch b = reader.next();
    if (b == null) return false;
    long next = start + rows;
    batch = b;
    rows = batch.numRows();
    start = rows == 0 || !indexed ? next : rowIndex().getLong(0);
    return true;
  }

  public ColumnVector rowIndex() {
    return batch.column(types.length);
  }

  /** This group's columns for rows [first, first + n) of the rowset. */
  public ColumnVector[] align(long first, int n) throws IOException {
    while (batch == null || start + rows <= first) {
      if (!advance()) throw new IOException("tableformat CorruptFileError: " + path + " has fewer rows than its rowset");
    }
    ColumnVector[] out = new ColumnVector[types.length];
    if (first >= start && first + n <= start + rows) {
      int off = (int) (first - start);
      if (off == 0 && n == rows) {
        for (int j = 0; j < out.length; j++) out[j] = batch.column(j);
      } else {
        int[] map = new int[n];
        for (int i = 0; i < n; i++) map[i] = off + i;
        for (int j = 0; j < out.length; j++) out[j] = new RemappedColumnVector(batch.column(j), map);
      }
      return out;
    }
    if (types.length == 0) return out;
    if (copies == null || copyCapacity < n) {
      if (copies != null) for (WritableColumnVector c : copies) if (c != null) c.close();
      copies = new WritableColumnVector[types.length];
      copyCapacity = Math.max(n, 1);
      for (int j = 0; j < types.length; j++) copies[j] = new OnHeapColumnVector(copyCapacity, types[j]);
    } else {
      for (WritableColumnVector c : copies) c.reset();
    }
    int pos = 0;
    while (pos < n) {
      while (start + rows <= first + pos) {
        if (!advance()) throw new IOException("tableformat CorruptFileError: " + path + " has fewer rows than its rowset");
      }
      int from = (int) (first + pos - start);
      int take = Math.min(rows - from, n - pos);
      for (int j = 0; j < types.length; j++) {
        int kind = CellCopy.kind(types[j]);
        for (int i = 0; i < take; i++) CellCopy.copy(kind, types[j], batch.column(j), from + i, copies[j], pos + i);
      }
      pos += take;
    }
    System.arraycopy(copies, 0, out, 0, out.length);
    return out;
  }

  @Override
  public void close() throws IOException {
    if (copies != null) for (WritableColumnVector c : copies) if (c != null) c.close();
    reader.close();
  }
}
