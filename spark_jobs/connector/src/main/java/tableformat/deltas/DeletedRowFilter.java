package tableformat.deltas;

import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.vectorized.ColumnVector;
import tableformat.vectors.CellCopy;
import tableformat.vectors.RemappedColumnVector;

/**
 * Drops deleted rows from a batch (§9.4 rule 5): the live rows' positions, or null when the
 * batch holds no deleted row (the common case: one probe of the deleted rowids per batch).
 */
public final class DeletedRowFilter {
  private DeletedRowFilter() {}

  public static int[] liveRows(ColumnVector rowIndex, int n, RowIdSet deleted) {
    if (n == 0) return null;
    long lo = rowIndex.getLong(0), hi = rowIndex.getLong(n - 1);
    long next = deleted.nextSetBit(lo);
    if (next < 0 || next > hi) return null;
    if (hi - lo == n - 1) {             // positions ascend, so these are rows lo..hi: skip each deleted bit
      int dead = 0;
      for (long d = next; d >= 0 && d <= hi; d = deleted.nextSetBit(d + 1)) dead++;
      int[] live = new int[n - dead];
      int m = 0, i = 0;
      for (long d = next; d >= 0 && d <= hi; d = deleted.nextSetBit(d + 1)) {
        for (int end = (int) (d - lo); i < end; i++) live[m++] = i;
        i++;
      }
      while (i < n) live[m++] = i++;
      return live;
    }
    int[] live = new int[n];
    int m = 0;
    for (int i = 0; i < n; i++) {
      if (!deleted.get(rowIndex.getLong(i))) live[m++] = i;
    }
    return java.util.Arrays.copyOf(live, m);
  }

  /** The batch's columns with only the live rows. A vector of Spark's reader with no NULL in the
   *  batch is compacted in place (values, dictionary ids, or string offsets moved down; no wrapper
   *  left between Spark's generated code and the reader's vector); a constant needs nothing; any
   *  other vector is shown through a row map. */
  public static ColumnVector[] compact(ColumnVector[] cols, int[] live) {
    ColumnVector[] out = new ColumnVector[cols.length];
    for (int j = 0; j < cols.length; j++) {
      ColumnVector c = cols[j];
      if (c instanceof ConstantColumnVector) out[j] = c;
      else if (c instanceof WritableColumnVector && compactInPlace((WritableColumnVector) c, live)) out[j] = c;
      else out[j] = new RemappedColumnVector(c, live);
    }
    return out;
  }

  /** Moves rows {@code live[k]} to k (live ascending, so moving forward never overwrites a row
   *  still to move). Only for vectors with no NULL in the batch, whose NULL count then stays right. */
  static boolean compactInPlace(WritableColumnVector v, int[] live) {
    if (v.hasNull()) return false;
    DataType t = v.dataType();
    int m = live.length;
    if (v.hasDictionary()) {
      WritableColumnVector ids = v.getDictionaryIds();
      for (int k = 0; k < m; k++) ids.putInt(k, ids.getInt(live[k]));
      return true;
    }
    int kind;
    try {
      kind = CellCopy.kind(t);
    } catch (UnsupportedOperationException e) {
      return false;
    }
    switch (kind) {
      case CellCopy.BOOL: for (int k = 0; k < m; k++) v.putBoolean(k, v.getBoolean(live[k])); return true;
      case CellCopy.BYTE: for (int k = 0; k < m; k++) v.putByte(k, v.getByte(live[k])); return true;
      case CellCopy.SHORT: for (int k = 0; k < m; k++) v.putShort(k, v.getShort(live[k])); return true;
      case CellCopy.INT: for (int k = 0; k < m; k++) v.putInt(k, v.getInt(live[k])); return true;
      case CellCopy.LONG: for (int k = 0; k < m; k++) v.putLong(k, v.getLong(live[k])); return true;
      case CellCopy.FLOAT: for (int k = 0; k < m; k++) v.putFloat(k, v.getFloat(live[k])); return true;
      case CellCopy.DOUBLE: for (int k = 0; k < m; k++) v.putDouble(k, v.getDouble(live[k])); return true;
      case CellCopy.DEC: {
        DecimalType d = (DecimalType) t;
        if (DecimalType.is32BitDecimalType(d)) {
          for (int k = 0; k < m; k++) v.putInt(k, v.getInt(live[k]));
          return true;
        }
        if (DecimalType.is64BitDecimalType(d)) {
          for (int k = 0; k < m; k++) v.putLong(k, v.getLong(live[k]));
          return true;
        }
        // wider decimals are byte arrays, as strings are
      }
      // fall through
      case CellCopy.BYTES:
        for (int k = 0; k < m; k++) {
          int r = live[k];
          v.putArray(k, v.getArrayOffset(r), v.getArrayLength(r));
        }
        return true;
      default:
        return false;
    }
  }
}
