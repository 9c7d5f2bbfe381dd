package tableformat.vectors;

import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A view of another vector's rows through a row map: row i is {@code base[rows[i]]} (Delta's
 * ColumnVectorWithFilter). It drops deleted rows from a batch, and shows a column group's rows
 * at an offset, without copying values. Closing it leaves the base vector to its owner.
 */
public final class RemappedColumnVector extends ColumnVector {
  private final ColumnVector base;
  private final int[] rows;
  private int nulls = -1;

  public RemappedColumnVector(ColumnVector base, int[] rows) {
    super(base.dataType());
    this.base = base;
    this.rows = rows;
  }

  @Override public void close() {}
  @Override public boolean hasNull() { return base.hasNull() && numNulls() > 0; }

  /** The NULLs among the rows shown (not the base's: deleted rows are gone), counted on demand. */
  @Override public int numNulls() {
    if (nulls < 0) {
      int c = 0;
      if (base.hasNull()) for (int r : rows) if (base.isNullAt(r)) c++;
      nulls = c;
    }
    return nulls;
  }
  @Override public boolean isNullAt(int i) { return base.isNullAt(rows[i]); }
  @Override public boolean getBoolean(int i) { return base.getBoolean(rows[i]); }
  @Override public byte getByte(int i) { return base.getByte(rows[i]); }
  @Override public short getShort(int i) { return base.getShort(rows[i]); }
  @Override public int getInt(int i) { return base.getInt(rows[i]); }
  @Override public long getLong(int i) { return base.getLong(rows[i]); }
  @Override public float getFloat(int i) { return base.getFloat(rows[i]); }
  @Override public double getDouble(int i) { return base.getDouble(rows[i]); }
  @Override public ColumnarArray getArray(int i) { return base.getArray(rows[i]); }
  @Override public ColumnarMap getMap(int i) { return base.getMap(rows[i]); }
  @Override public Decimal getDecimal(int i, int p, int s) { return base.getDecimal(rows[i], p, s); }
  @Override public UTF8String getUTF8String(int i) { return base.getUTF8String(rows[i]); }
  @Override public byte[] getBinary(int i) { return base.getBinary(rows[i]); }
  @Override public ColumnVector getChild(int i) { throw new UnsupportedOperationException(); }
}
