package tableformat.deltas;

import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;

/** The deltas package's part of VectorsCheck (tableformat.connector): its classes are package-private. */
public final class DeltasCheck {
  public static void main(String[] args) {
    OnHeapColumnVector base = new OnHeapColumnVector(4, DataTypes.DoubleType);   // VectorsCheck's, a NULL at row 1
    base.putDouble(0, 1);
    base.putNull(1);
    base.putDouble(2, 3);
    base.putDouble(3, 4);
    OnHeapColumnVector str = new OnHeapColumnVector(5, DataTypes.StringType);
    OnHeapColumnVector wide = new OnHeapColumnVector(5, DataTypes.createDecimalType(38, 10));
    OnHeapColumnVector flags = new OnHeapColumnVector(5, DataTypes.BooleanType);
    for (int i = 0; i < 5; i++) {
      str.putByteArray(i, ("s" + i).getBytes());
      wide.putDecimal(i, Decimal.apply(new java.math.BigDecimal("1234567890123456789012345." + i).setScale(10), 38, 10), 38);
      flags.putBoolean(i, i % 2 == 0);
    }
    int[] keep = {0, 2, 4};
    boolean moved = DeletedRowFilter.compactInPlace(str, keep) && DeletedRowFilter.compactInPlace(wide, keep)
        && DeletedRowFilter.compactInPlace(flags, keep);
    StringBuilder sb = new StringBuilder();
    for (int k = 0; k < 3; k++) {
      sb.append(str.getUTF8String(k)).append('/').append(wide.getDecimal(k, 38, 10).toJavaBigDecimal().toPlainString())
          .append('/').append(flags.getBoolean(k)).append(' ');
    }
    System.out.println("inPlace.moved=" + moved);
    System.out.println("inPlace.rows=" + sb.toString().trim());
    System.out.println("inPlace.withNulls=" + DeletedRowFilter.compactInPlace(base, keep));

    OnHeapColumnVector plain = new OnHeapColumnVector(4, DataTypes.DoubleType);
    OnHeapColumnVector idx = new OnHeapColumnVector(4, DataTypes.LongType);
    for (int i = 0; i < 4; i++) {
      plain.putDouble(i, i);
      idx.putLong(i, 100 + i);
    }
    OnHeapColumnVector upd = new OnHeapColumnVector(2, DataTypes.DoubleType);
    upd.putDouble(0, 7.5);
    upd.putNull(1);
    RowSetDeltas.ColumnChanges set = new RowSetDeltas.ColumnChanges(new long[] {101, 103}, new int[] {0, 0}, upd);
    org.apache.spark.sql.vectorized.ColumnVector got = UpdateApplier.apply(plain, idx, 4, set, null);
    System.out.println("patch.inPlace=" + (got == plain) + "," + got.getDouble(1) + "," + got.getDouble(2) + ","
        + got.getDouble(3) + "," + got.numNulls());
    RowSetDeltas.ColumnChanges toNull = new RowSetDeltas.ColumnChanges(new long[] {102}, new int[] {1}, upd);
    got = UpdateApplier.apply(plain, idx, 4, toNull, null);
    System.out.println("patch.toNull=" + (got != plain) + "," + got.isNullAt(2) + "," + got.numNulls()
        + "," + plain.numNulls());

    RowSetDeltas small = new RowSetDeltas(bits(1000));
    RowSetDeltas big = new RowSetDeltas(bits(1 << 20));
    long s = small.bytes(), b = big.bytes();
    System.out.println("bytes.ordered=" + (s < b && b >= (1 << 17)));
    DeltaLoader.cacheBytes = b + 2 * s;     // room for one big and two small
    DeltaLoader.cache("s1", small);
    DeltaLoader.cache("s2", small);
    DeltaLoader.cache("b1", big);
    System.out.println("cache.afterBig=" + DeltaLoader.cacheUse()[0] + "," + (DeltaLoader.cacheUse()[1] <= DeltaLoader.cacheBytes));
    DeltaLoader.cached("s1");               // s1 used: s2 is now the least recently used
    DeltaLoader.cache("s3", small);
    System.out.println("cache.lru=" + (DeltaLoader.cached("s2") == null) + "," + (DeltaLoader.cached("s1") != null)
        + "," + (DeltaLoader.cacheUse()[1] <= DeltaLoader.cacheBytes));
    DeltaLoader.cacheBytes = s;             // shrunk below one big entry: it is not kept at all
    DeltaLoader.cache("b2", big);
    System.out.println("cache.tooBig=" + (DeltaLoader.cached("b2") == null));

    unsignedRowids();
  }

  /** A deleted-row set of rows 0..n-1: its heap grows with n. */
  private static RowIdSet bits(int n) {
    RowIdSet d = new RowIdSet();
    for (int i = 0; i < n; i++) d.set(i);
    return d;
  }

  /** Rowids past 2^31 (the format's rowids are uint32): set, probed, and dropped from a batch. */
  private static void unsignedRowids() {
    RowIdSet d = new RowIdSet();
    long far = (1L << 32) - 1, past = (1L << 31) + 5;
    d.set(7);
    d.set(past);
    d.set(far);
    String refused = "no";
    try {
      d.set(1L << 32);
    } catch (IllegalArgumentException e) {
      refused = "yes";
    }
    System.out.println("rowids.unsigned=" + d.get(past) + "," + d.get(past - 1) + "," + d.nextSetBit(8) + ","
        + d.nextSetBit(past + 1) + "," + d.nextSetBit(far + 1) + "," + refused);
    OnHeapColumnVector idx = new OnHeapColumnVector(4, DataTypes.LongType);
    for (int i = 0; i < 4; i++) idx.putLong(i, past - 2 + i);     // rows past-2 .. past+1
    int[] live = DeletedRowFilter.liveRows(idx, 4, d);
    idx.putLong(3, far);                                          // positions not contiguous
    int[] scattered = DeletedRowFilter.liveRows(idx, 4, d);
    System.out.println("rowids.live=" + java.util.Arrays.toString(live) + java.util.Arrays.toString(scattered));
  }
}
