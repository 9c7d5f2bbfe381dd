package tableformat.connector;

import java.util.BitSet;
import org.apache.spark.sql.vectorized.ColumnVector;

/**
 * Drops deleted rows from a batch (§9.4 rule 5): the live rows' positions, or null when the
 * batch holds no deleted row (the common case: one BitSet probe per batch).
 */
final class DeleteCompactor {
  private DeleteCompactor() {}

  static int[] liveRows(ColumnVector rowIndex, int n, BitSet deleted) {
    if (n == 0) return null;
    long lo = rowIndex.getLong(0), hi = rowIndex.getLong(n - 1);
    int next = deleted.nextSetBit((int) lo);
    if (next < 0 || next > hi) return null;
    int[] live = new int[n];
    int m = 0;
    for (int i = 0; i < n; i++) {
      if (!deleted.get((int) rowIndex.getLong(i))) live[m++] = i;
    }
    return java.util.Arrays.copyOf(live, m);
  }

  static ColumnVector[] compact(ColumnVector[] cols, int[] live) {
    ColumnVector[] out = new ColumnVector[cols.length];
    for (int j = 0; j < cols.length; j++) out[j] = new RemappedColumnVector(cols[j], live);
    return out;
  }
}
