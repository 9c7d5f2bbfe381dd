package tableformat.deltas;

import java.util.Arrays;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import tableformat.vectors.CellCopy;
import tableformat.vectors.PatchedColumnVector;

/**
 * Applies a column's resolved updates to one batch (§9.4 rule 4): the batch's rows are known by
 * their row index (ascending; contiguous unless Parquet skipped pages), the changes by sorted
 * rowids, so one merge walk finds the changed rows of the batch. A batch no change touches
 * keeps its vector as it is.
 */
public final class UpdateApplier {
  private UpdateApplier() {}

  public static ColumnVector apply(ColumnVector base, ColumnVector rowIndex, int n, RowSetDeltas.ColumnChanges ch,
                            int[] scratch) {
    if (n == 0) return base;
    long lo = rowIndex.getLong(0), hi = rowIndex.getLong(n - 1);
    long[] ids = ch.rowids;
    int from = lowerBound(ids, lo);
    if (from >= ids.length || ids[from] > hi) return base;
    if (hi - lo == n - 1 && inPlace(base, ch, from, lo, hi)) return base;
    int[] patch = scratch != null && scratch.length >= n ? scratch : new int[n];
    Arrays.fill(patch, 0, n, -1);
    if (hi - lo == n - 1) {                       // contiguous rows: direct positions
      for (int k = from; k < ids.length && ids[k] <= hi; k++) patch[(int) (ids[k] - lo)] = ch.index[k];
    } else {
      int k = from;
      for (int i = 0; i < n && k < ids.length; i++) {
        long r = rowIndex.getLong(i);
        while (k < ids.length && ids[k] < r) k++;
        if (k < ids.length && ids[k] == r) patch[i] = ch.index[k];
      }
    }
    return new PatchedColumnVector(base, patch, ch.values, n);
  }

  /** Writes the batch's changed cells straight into the reader's vector when that keeps it exact:
   *  a plain (not dictionary-encoded) vector with no NULL, changed to values that are not NULL
   *  (its NULL count then stays right). The batch then reaches Spark's generated code unwrapped. */
  private static boolean inPlace(ColumnVector base, RowSetDeltas.ColumnChanges ch, int from, long lo, long hi) {
    if (!(base instanceof WritableColumnVector)) return false;
    WritableColumnVector v = (WritableColumnVector) base;
    if (v.hasDictionary() || v.hasNull()) return false;
    long[] ids = ch.rowids;
    for (int k = from; k < ids.length && ids[k] <= hi; k++) if (ch.values.isNullAt(ch.index[k])) return false;
    int kind = CellCopy.kind(v.dataType());
    for (int k = from; k < ids.length && ids[k] <= hi; k++) {
      CellCopy.copy(kind, v.dataType(), ch.values, ch.index[k], v, (int) (ids[k] - lo));
    }
    return true;
  }

  static int lowerBound(long[] a, long v) {
    int lo = 0, hi = a.length;
    while (lo < hi) {
      int m = (lo + hi) >>> 1;
      if (a[m] < v) lo = m + 1; else hi = m;
    }
    return lo;
  }
}
