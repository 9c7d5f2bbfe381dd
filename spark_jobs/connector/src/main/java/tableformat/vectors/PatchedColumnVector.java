package tableformat.vectors;

import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A base column with some rows replaced by delta values (§9.4 rule 4): row i reads
 * {@code values[patch[i]]} where {@code patch[i] >= 0}, else the base row. Values are never
 * written into the Parquet reader's vectors, so dictionary-encoded pages need no decoding.
 */
public final class PatchedColumnVector extends ColumnVector {
  private final ColumnVector base;
  private final int[] patch;
  private final ColumnVector values;
  private final int rows;
  private int nulls = -1;

  /** {@code rows}: the batch's row count ({@code patch} may be a longer scratch array). */
  public PatchedColumnVector(ColumnVector base, int[] patch, ColumnVector values, int rows) {
    super(base.dataType());
    this.base = base;
    this.patch = patch;
    this.values = values;
    this.rows = rows;
  }

  @Override public void close() {}
  @Override public boolean hasNull() { return (base.hasNull() || values.hasNull()) && numNulls() > 0; }

  /** The NULLs of this batch's rows: a patch can turn a NULL into a value and back, so neither
   *  the base's count nor the values' is it; counted once, on demand (Spark rarely asks). */
  @Override public int numNulls() {
    if (nulls < 0) {
      int c = 0;
      if (base.hasNull() || values.hasNull()) for (int i = 0; i < rows; i++) if (isNullAt(i)) c++;
      nulls = c;
    }
    return nulls;
  }
  @Override public boolean isNullAt(int i) { int p = patch[i]; return p < 0 ? base.isNullAt(i) : values.isNullAt(p); }
  @Override public boolean getBoolean(int i) { int p = patch[i]; return p < 0 ? base.getBoolean(i) : values.getBoolean(p); }
  @Override public byte getByte(int i) { int p = patch[i]; return p < 0 ? base.getByte(i) : values.getByte(p); }
  @Override public short getShort(int i) { int p = patch[i]; return p < 0 ? base.getShort(i) : values.getShort(p); }
  @Override public int getInt(int i) { int p = patch[i]; return p < 0 ? base.getInt(i) : values.getInt(p); }
  @Override public long getLong(int i) { int p = patch[i]; return p < 0 ? base.getLong(i) : values.getLong(p); }
  @Override public float getFloat(int i) { int p = patch[i]; return p < 0 ? base.getFloat(i) : values.getFloat(p); }
  @Override public double getDouble(int i) { int p = patch[i]; return p < 0 ? base.getDouble(i) : values.getDouble(p); }
  @Override public ColumnarArray getArray(int i) { throw new UnsupportedOperationException(); }
  @Override public ColumnarMap getMap(int i) { throw new UnsupportedOperationException(); }
  @Override public Decimal getDecimal(int i, int pr, int s) {
    int p = patch[i];
    return p < 0 ? base.getDecimal(i, pr, s) : values.getDecimal(p, pr, s);
  }
  @Override public UTF8String getUTF8String(int i) { int p = patch[i]; return p < 0 ? base.getUTF8String(i) : values.getUTF8String(p); }
  @Override public byte[] getBinary(int i) { int p = patch[i]; return p < 0 ? base.getBinary(i) : values.getBinary(p); }
  @Override public ColumnVector getChild(int i) { throw new UnsupportedOperationException(); }
}
