package tableformat.connector;

import java.util.Arrays;
import org.apache.spark.sql.vectorized.ColumnVector;

/**
 * Applies a column's resolved updates to one batch (§9.4 rule 4): the batch's rows are known by
 * their row index (ascending; contiguous unless Parquet skipped pages), the changes by sorted
 * rowids, so one merge walk finds the changed rows of the batch. A batch no change touches
 * keeps its vector as it is.
 */
final class UpdateApplier {
  private UpdateApplier() {}

  static ColumnVector apply(ColumnVector base, ColumnVector rowIndex, int n, RowSetDeltas.ColumnChanges ch,
                            int[] scratch) {
    if (n == 0) return base;
    long lo = rowIndex.getLong(0), hi = rowIndex.getLong(n - 1);
    long[] ids = ch.rowids;
    int from = lowerBound(ids, lo);
    if (from >= ids.length || ids[from] > hi) return base;
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

  static int lowerBound(long[] a, long v) {
    int lo = 0, hi = a.length;
    while (lo < hi) {
      int m = (lo + hi) >>> 1;
      if (a[m] < v) lo = m + 1; else hi = m;
    }
    return lo;
  }
}
