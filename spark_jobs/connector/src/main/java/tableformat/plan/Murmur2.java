package tableformat.plan;

/** MurmurHash64A as Kudu's HashUtil::MurmurHash2_64 (specs/format.md §4.1). */
public final class Murmur2 {
  private Murmur2() {}

  private static final long M = 0xc6a4a7935bd1e995L;
  private static final int R = 47;
  private static final java.lang.invoke.VarHandle LONGS =
      java.lang.invoke.MethodHandles.byteArrayViewVarHandle(long[].class, java.nio.ByteOrder.LITTLE_ENDIAN);

  public static long hash64(byte[] data, long seed) {
    return hash64(data, data.length, seed);
  }

  /** The hash of the first {@code len} bytes of {@code data}. */
  public static long hash64(byte[] data, int len, long seed) {
    return hash64(data, 0, len, seed);
  }

  /** The hash of {@code data[off, off + len)}. */
  public static long hash64(byte[] data, int off, int len, long seed) {
    long h = seed ^ (len * M);
    int full = len / 8;
    for (int i = 0; i < full; i++) {
      long k = (long) LONGS.get(data, off + i * 8);      // the 8 bytes little-endian
      k *= M;
      k ^= k >>> R;
      k *= M;
      h ^= k;
      h *= M;
    }
    int rest = len & 7;
    if (rest > 0) {
      long k = 0;
      for (int j = rest - 1; j >= 0; j--) k = (k << 8) | (data[off + full * 8 + j] & 0xffL);
      h ^= k;
      h *= M;
    }
    h ^= h >>> R;
    h *= M;
    h ^= h >>> R;
    return h;
  }

  /** The bucket of an encoded value: the hash, unsigned, mod buckets. */
  public static int bucket(byte[] data, long seed, int buckets) {
    return (int) Long.remainderUnsigned(hash64(data, seed), buckets);
  }
}
