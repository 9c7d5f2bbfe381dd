package tableformat.connector;

import java.util.BitSet;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.DataTypes;

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
