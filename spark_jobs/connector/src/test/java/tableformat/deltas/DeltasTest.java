package tableformat.deltas;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.junit.jupiter.api.Test;

/** REDO deltas applied to a batch (§9.4): deleted rowids dropped, updated cells replaced. */
class DeltasTest {
  private static OnHeapColumnVector rowIndex(long... rowids) {
    OnHeapColumnVector v = new OnHeapColumnVector(rowids.length, DataTypes.LongType);
    for (int i = 0; i < rowids.length; i++) v.putLong(i, rowids[i]);
    return v;
  }

  @Test
  void rowidsAreUnsigned32Bit() {
    RowIdSet d = new RowIdSet();
    long past = (1L << 31) + 5;
    d.set(7);
    d.set(past);
    assertTrue(d.get(past));
    assertEquals(past, d.nextSetBit(8));
    assertThrows(IllegalArgumentException.class, () -> d.set(1L << 32));
  }

  @Test
  void liveRowsAreThePositionsWhoseRowidIsNotDeleted() {
    RowIdSet d = new RowIdSet();
    d.set(101);
    d.set(103);
    assertArrayEquals(new int[] {0, 2}, DeletedRowFilter.liveRows(rowIndex(100, 101, 102, 103), 4, d));
    assertArrayEquals(new int[] {0, 1}, DeletedRowFilter.liveRows(rowIndex(5, 6, 101), 3, d));
  }

  @Test
  void updatesAreWrittenByRowid() {
    OnHeapColumnVector plain = new OnHeapColumnVector(4, DataTypes.DoubleType);
    for (int i = 0; i < 4; i++) plain.putDouble(i, i);
    OnHeapColumnVector values = new OnHeapColumnVector(1, DataTypes.DoubleType);
    values.putDouble(0, 7.5);
    RowSetDeltas.ColumnChanges set = new RowSetDeltas.ColumnChanges(new long[] {101, 103}, new int[] {0, 0}, values);
    ColumnVector got = UpdateApplier.apply(plain, rowIndex(100, 101, 102, 103), 4, set, null);
    assertSame(plain, got);                              // no NULL comes in: written in place
    assertEquals(0.0, got.getDouble(0));
    assertEquals(7.5, got.getDouble(1));
    assertEquals(2.0, got.getDouble(2));
    assertEquals(7.5, got.getDouble(3));
  }
}
