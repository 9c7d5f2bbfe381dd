package tableformat.deltas;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.vectorized.ColumnVector;
import tableformat.vectors.CellCopy;

/**
 * A rowset's delta records resolved for one read (Kudu's DeltaIterator state, §9.4 rules 4-6):
 * per column read, the winning value of every changed row (sorted rowids and their values),
 * and the rows deleted. Built by {@link DeltaLoader}; immutable afterwards, so tasks of one
 * executor share it.
 */
public final class RowSetDeltas {
  /** The changes of one column: {@code values[index[i]]} is row {@code rowids[i]}'s value. */
  public static final class ColumnChanges {
    final long[] rowids;
    final int[] index;
    final ColumnVector values;

    ColumnChanges(long[] rowids, int[] index, ColumnVector values) {
      this.rowids = rowids;
      this.index = index;
      this.values = values;
    }
  }

  public final RowIdSet deleted;                    // null: no row of the rowset is deleted
  public final Map<Integer, ColumnChanges> columns = new HashMap<>();

  RowSetDeltas(RowIdSet deleted) {
    this.deleted = deleted;
  }

  /** About the heap this holds (what the executor's delta cache is bounded by): the deleted-row
   *  bitmap, and per column its rowids, indices and values (fixed-width slots, a null flag, the
   *  bytes of strings and binaries). */
  long bytes() {
    long b = 64 + (deleted == null ? 0 : deleted.bytes());
    for (ColumnChanges c : columns.values()) {
      b += 64 + 8L * c.rowids.length + 4L * c.index.length;
      if (c.values instanceof WritableColumnVector) {
        WritableColumnVector v = (WritableColumnVector) c.values;
        int n = c.index.length == 0 ? 0 : maxOf(c.index) + 1;
        b += (long) n * (v.dataType().defaultSize() + 1);
        if (CellCopy.kind(v.dataType()) == CellCopy.BYTES) b += v.arrayData().getElementsAppended();
      }
    }
    return b;
  }

  private static int maxOf(int[] a) {
    int m = 0;
    for (int x : a) m = Math.max(m, x);
    return m;
  }

  /** Records of one column (or of deletes) in application order, so the last record of a row
   *  wins: record k sorts by {@code rowid << 31 | k}. */
  static final class Collector {
    final int kind;
    final DataType type;
    final WritableColumnVector values;     // null for the delete collector
    long[] rowid = new long[64];
    long[] ts = new long[64];
    byte[] op = new byte[64];
    int n;
    private int capacity = 64;

    Collector(DataType type) {
      this.type = type;
      this.kind = type == null ? -1 : CellCopy.kind(type);
      this.values = type == null ? null : new OnHeapColumnVector(64, type);
    }

    void add(long row, long t, byte o, ColumnVector src, int srcRow) {
      if (n == rowid.length) {
        int cap = n * 2;
        rowid = Arrays.copyOf(rowid, cap);
        ts = Arrays.copyOf(ts, cap);
        op = Arrays.copyOf(op, cap);
      }
      if (values != null) {
        if (n >= capacity) {
          capacity = n * 2;
          values.reserve(capacity);
        }
        CellCopy.copy(kind, type, src, srcRow, values, n);
      }
      rowid[n] = row;
      ts[n] = t;
      op[n] = o;
      n++;
    }

    /** The last record of each row, as ascending rowids and record indices. */
    long[][] lastPerRow() {
      long[] keys = new long[n];
      for (int k = 0; k < n; k++) keys[k] = rowid[k] << 31 | k;
      Arrays.sort(keys);
      long[] rows = new long[n];
      long[] idx = new long[n];
      int m = 0;
      for (int i = 0; i < n; i++) {
        long r = keys[i] >>> 31;
        if (i + 1 < n && (keys[i + 1] >>> 31) == r) continue;
        rows[m] = r;
        idx[m++] = keys[i] & 0x7FFFFFFFL;
      }
      return new long[][] {Arrays.copyOf(rows, m), Arrays.copyOf(idx, m)};
    }

    ColumnChanges changes() {
      long[][] w = lastPerRow();
      int[] index = new int[w[1].length];
      for (int i = 0; i < index.length; i++) index[i] = (int) w[1][i];
      return new ColumnChanges(w[0], index, values);
    }
  }
}
