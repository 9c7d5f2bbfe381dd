package tableformat.deltas;

import java.util.Arrays;

/**
 * UNDO records for a read behind the history horizon (§9.4 rule 6, §12): per row and column the
 * earliest UNDO record newer than the cut holds the value as of the cut, and the earliest UNDO
 * DELETE / REINSERT decides whether the row existed then. These winners go into a collector
 * before any REDO record, so a REDO record at or before the cut still overrides them.
 */
final class UndoWinners {
  private UndoWinners() {}

  /** Appends the earliest record of each row in {@code undo} (records newer than the cut) to {@code out}. */
  static void earliestInto(RowSetDeltas.Collector undo, RowSetDeltas.Collector out) {
    Integer[] order = new Integer[undo.n];
    for (int i = 0; i < order.length; i++) order[i] = i;
    Arrays.sort(order, (a, b) -> undo.rowid[a] != undo.rowid[b] ? Long.compare(undo.rowid[a], undo.rowid[b])
        : undo.ts[a] != undo.ts[b] ? Long.compare(undo.ts[a], undo.ts[b]) : Integer.compare(a, b));
    long prev = -1;
    for (Integer k : order) {
      if (undo.rowid[k] == prev) continue;
      prev = undo.rowid[k];
      out.add(undo.rowid[k], undo.ts[k], undo.op[k], undo.values, k);
    }
  }
}
