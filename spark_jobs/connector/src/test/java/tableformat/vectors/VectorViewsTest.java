package tableformat.vectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.Test;

/** The batch views: rows kept by a row map (deletes) and cells replaced by a patch (updates). */
class VectorViewsTest {
  /** 1.0, NULL, 3.0, 4.0 */
  private static OnHeapColumnVector base() {
    OnHeapColumnVector v = new OnHeapColumnVector(4, DataTypes.DoubleType);
    v.putDouble(0, 1);
    v.putNull(1);
    v.putDouble(2, 3);
    v.putDouble(3, 4);
    return v;
  }

  @Test
  void aRemappedVectorShowsOnlyTheRowsItKeeps() {
    RemappedColumnVector live = new RemappedColumnVector(base(), new int[] {0, 2, 3});
    assertEquals(3.0, live.getDouble(1));
    assertEquals(4.0, live.getDouble(2));
    assertEquals(0, live.numNulls());
    assertFalse(live.hasNull());
    RemappedColumnVector withNull = new RemappedColumnVector(base(), new int[] {1, 3});
    assertTrue(withNull.isNullAt(0));
    assertEquals(1, withNull.numNulls());
  }

  @Test
  void aPatchedVectorReadsPatchedCellsFromItsValues() {
    OnHeapColumnVector values = new OnHeapColumnVector(2, DataTypes.DoubleType);
    values.putDouble(0, 9);
    values.putNull(1);
    PatchedColumnVector p = new PatchedColumnVector(base(), new int[] {-1, 0, 1, -1}, values, 4);
    assertEquals(1.0, p.getDouble(0));
    assertFalse(p.isNullAt(1));
    assertEquals(9.0, p.getDouble(1));          // NULL -> 9
    assertTrue(p.isNullAt(2));                  // 3 -> NULL
    assertEquals(4.0, p.getDouble(3));
    assertEquals(1, p.numNulls());
    assertTrue(p.hasNull());
  }

  @Test
  void viewsCompose() {
    OnHeapColumnVector values = new OnHeapColumnVector(1, DataTypes.DoubleType);
    values.putDouble(0, 7);
    PatchedColumnVector p = new PatchedColumnVector(base(), new int[] {-1, 0, -1, -1}, values, 4);
    RemappedColumnVector kept = new RemappedColumnVector(p, new int[] {1, 3});
    assertEquals(7.0, kept.getDouble(0));
    assertEquals(4.0, kept.getDouble(1));
    assertEquals(0, kept.numNulls());
  }

  @Test
  void cellCopyKnowsEveryColumnTypeOfTheFormat() {
    assertEquals(CellCopy.DOUBLE, CellCopy.kind(DataTypes.DoubleType));
    assertEquals(CellCopy.LONG, CellCopy.kind(DataTypes.LongType));
    assertEquals(CellCopy.BYTES, CellCopy.kind(DataTypes.StringType));
    OnHeapColumnVector dst = new OnHeapColumnVector(2, DataTypes.DoubleType);
    CellCopy.copy(CellCopy.DOUBLE, DataTypes.DoubleType, base(), 2, dst, 1);
    CellCopy.copy(CellCopy.DOUBLE, DataTypes.DoubleType, base(), 1, dst, 0);
    assertEquals(3.0, dst.getDouble(1));
    assertTrue(dst.isNullAt(0));
  }
}
