package tableformat.write;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import tableformat.plan.Murmur2;

/**
 * The split-block bloom filter file {@code TFBLOOM2} (specs/format.md §7): Parquet's split-block
 * filter over {@code MurmurHash2_64(encoded key, SEED)}, 27 bits a key.
 */
public final class SplitBlockBloom {
  public static final long SEED = 0x2B7E151628AED2A6L;
  private static final int BITS_PER_KEY = 27;
  private static final int[] SALT = {0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b,
      0x9efc4947, 0x5c6bfb31};
  private static final byte[] MAGIC = "TFBLOOM2".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

  private SplitBlockBloom() {}

  /** The hash a key is filed under. */
  public static long hash(byte[] key) {
    return Murmur2.hash64(key, SEED);
  }

  /** The file's bytes for the keys of these hashes (the first n). */
  public static byte[] build(long[] hashes, int n) {
    return build(java.util.List.of(hashes), Math.max(1, n), n);
  }

  /** The file's bytes for the first n hashes of these arrays of {@code per} hashes each, in order. */
  public static byte[] build(java.util.List<long[]> hashes, int per, int n) {
    long blocks = Math.max(1, ((long) n * BITS_PER_KEY + 255) / 256);
    int[] words = new int[(int) (blocks * 8)];
    for (int j = 0; j < n; j++) {
      long h = hashes.get(j / per)[j % per];
      int b = (int) (((h >>> 32) * blocks) >>> 32);
      int low = (int) h;
      for (int i = 0; i < 8; i++) words[b * 8 + i] |= 1 << ((low * SALT[i]) >>> 27);
    }
    ByteBuffer out = ByteBuffer.allocate(24 + 4 * words.length).order(ByteOrder.LITTLE_ENDIAN);
    out.put(MAGIC).putLong(blocks).putLong(SEED);
    out.asIntBuffer().put(words);
    return out.array();
  }

  /** Whether a filter's bytes may hold the key (false is certain). */
  public static boolean mayContain(byte[] filter, byte[] key) {
    ByteBuffer in = ByteBuffer.wrap(filter).order(ByteOrder.LITTLE_ENDIAN);
    long blocks = in.getLong(8);
    long h = hash(key);
    int b = (int) (((h >>> 32) * blocks) >>> 32);
    int low = (int) h;
    for (int i = 0; i < 8; i++) {
      if ((in.getInt(24 + 4 * (b * 8 + i)) & (1 << ((low * SALT[i]) >>> 27))) == 0) return false;
    }
    return true;
  }
}
