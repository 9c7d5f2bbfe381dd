package tableformat.connector;

import java.util.BitSet;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;

/** Unit checks of the connector's batch views and delta cache, run by test_connector_units.py in a
 *  JVM of its own (the classes are package-private): prints {@code name=value} lines. */
public final class VectorsCheck {
  public static void main(String[] args) {
    OnHeapColumnVector base = new OnHeapColumnVector(4, DataTypes.DoubleType);
    base.putDouble(0, 1);
    base.putNull(1);
    base.putDouble(2, 3);
    base.putDouble(3, 4);
    OnHeapColumnVector values = new OnHeapColumnVector(3, DataTypes.DoubleType);
    values.putDouble(0, 9);
    values.putNull(1);
    values.putNull(2);                     // a value of rows in another batch
    int[] patch = {-1, 0, 1, -1, 2, 2};    // row 1: NULL -> 9, row 2: 3 -> NULL; a scratch longer than the batch
    PatchedColumnVector p = new PatchedColumnVector(base, patch, values, 4);
    System.out.println("patched.numNulls=" + p.numNulls());
    System.out.println("patched.hasNull=" + p.hasNull());
    PatchedColumnVector none = new PatchedColumnVector(base, new int[] {-1, 0, -1, -1}, values, 4);
    System.out.println("patchedNone.numNulls=" + none.numNulls());
    System.out.println("patchedNone.hasNull=" + none.hasNull());
    RemappedColumnVector live = new RemappedColumnVector(base, new int[] {0, 2, 3});
    System.out.println("remapped.numNulls=" + live.numNulls());
    System.out.println("remapped.hasNull=" + live.hasNull());
    RemappedColumnVector kept = new RemappedColumnVector(p, new int[] {1, 2});
    System.out.println("remappedPatched.numNulls=" + kept.numNulls());

    OnHeapColumnVector str = new OnHeapColumnVector(5, DataTypes.StringType);
    OnHeapColumnVector wide = new OnHeapColumnVector(5, DataTypes.createDecimalType(38, 10));
    OnHeapColumnVector flags = new OnHeapColumnVector(5, DataTypes.BooleanType);
    for (int i = 0; i < 5; i++) {
      str.putByteArray(i, ("s" + i).getBytes());
      wide.putDecimal(i, Decimal.apply(new java.math.BigDecimal("1234567890123456789012345." + i).setScale(10), 38, 10), 38);
      flags.putBoolean(i, i % 2 == 0);
    }
    int[] keep = {0, 2, 4};
    boolean moved = DeleteCompactor.compactInPlace(str, keep) && DeleteCompactor.compactInPlace(wide, keep)
        && DeleteCompactor.compactInPlace(flags, keep);
    StringBuilder sb = new StringBuilder();
    for (int k = 0; k < 3; k++) {
      sb.append(str.getUTF8String(k)).append('/').append(wide.getDecimal(k, 38, 10).toJavaBigDecimal().toPlainString())
          .append('/').append(flags.getBoolean(k)).append(' ');
    }
    System.out.println("inPlace.moved=" + moved);
    System.out.println("inPlace.rows=" + sb.toString().trim());
    System.out.println("inPlace.withNulls=" + DeleteCompactor.compactInPlace(base, keep));

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
    RedoLoader.cacheBytes = b + 2 * s;     // room for one big and two small
    RedoLoader.cache("s1", small);
    RedoLoader.cache("s2", small);
    RedoLoader.cache("b1", big);
    System.out.println("cache.afterBig=" + RedoLoader.cacheUse()[0] + "," + (RedoLoader.cacheUse()[1] <= RedoLoader.cacheBytes));
    RedoLoader.cached("s1");               // s1 used: s2 is now the least recently used
    RedoLoader.cache("s3", small);
    System.out.println("cache.lru=" + (RedoLoader.cached("s2") == null) + "," + (RedoLoader.cached("s1") != null)
        + "," + (RedoLoader.cacheUse()[1] <= RedoLoader.cacheBytes));
    RedoLoader.cacheBytes = s;             // shrunk below one big entry: it is not kept at all
    RedoLoader.cache("b2", big);
    System.out.println("cache.tooBig=" + (RedoLoader.cached("b2") == null));
  }

  private static BitSet bits(int n) {
    BitSet d = new BitSet();
    d.set(n - 1);
    return d;
  }
}
