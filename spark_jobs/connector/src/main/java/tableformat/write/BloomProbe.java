package tableformat.write;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import tableformat.log.CorruptFileError;
import tableformat.plan.Murmur2;

/**
 * A rowset's bloom filter read for key checks (specs/format.md §7): the split-block filter of
 * format 4 ({@code TFBLOOM2}, Parquet's) or the classic filter of formats 1-3 ({@code TFBLOOM1}),
 * told apart by their magic as Python's {@code read_bloom} does. Probed key by key over MurmurHash2_64
 * of the encoded key with the fixed seed: false means certainly absent.
 */
public final class BloomProbe {
  public static final long SEED = 0x2B7E151628AED2A6L;
  private static final int[] SALT = {0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D,
                                     0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31};
  private final boolean split;
  private final int[] words;        // split-block: num_blocks * 8 words
  private final byte[] bits;        // classic: packed bits, little bit order
  private final long numBlocks, numBits;
  private final int numHashes;

  private BloomProbe(boolean split, int[] words, byte[] bits, long numBlocks, long numBits, int numHashes) {
    this.split = split;
    this.words = words;
    this.bits = bits;
    this.numBlocks = numBlocks;
    this.numBits = numBits;
    this.numHashes = numHashes;
  }

  /** The filter in {@code data} (the file's bytes); CorruptFileError names {@code path} when it is not one. */
  public static BloomProbe of(byte[] data, String path) {
    String magic = data.length >= 8 ? new String(data, 0, 8, StandardCharsets.ISO_8859_1) : "";
    ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
    if (magic.equals("TFBLOOM2")) {
      if (data.length < 24) throw corrupt(path);
      long blocks = b.getLong(8), seed = b.getLong(16);
      if (seed != SEED || blocks < 1 || blocks >= (1L << 28) || data.length != 24 + 32 * blocks) throw corrupt(path);
      int[] w = new int[(int) blocks * 8];
      b.position(24);
      b.asIntBuffer().get(w);
      return new BloomProbe(true, w, null, blocks, 0, 0);
    }
    if (magic.equals("TFBLOOM1")) {
      if (data.length < 28) throw corrupt(path);
      int k = b.getInt(8);
      long nbits = b.getLong(12), seed = b.getLong(20);
      if (seed != SEED || nbits < 0 || data.length != 28 + nbits / 8) throw corrupt(path);
      byte[] bits = java.util.Arrays.copyOfRange(data, 28, data.length);
      return new BloomProbe(false, null, bits, 0, nbits, k);
    }
    throw corrupt(path);
  }

  private static CorruptFileError corrupt(String path) {
    return new CorruptFileError("bloom filter file " + path + " is corrupt or truncated");
  }

  public boolean mayContain(byte[] key) {
    long h = Murmur2.hash64(key, SEED);
    if (split) {
      int block = (int) (((h >>> 32) * numBlocks) >>> 32);
      int low = (int) h;
      for (int i = 0; i < 8; i++) {
        int bit = (low * SALT[i]) >>> 27;
        if (((words[block * 8 + i] >>> bit) & 1) == 0) return false;
      }
      return true;
    }
    long h1 = h & 0xFFFFFFFFL, h2 = h >>> 32;
    for (int i = 0; i < numHashes; i++) {
      long g = (h1 + i * h2) & 0xFFFFFFFFL;
      long pos = (g * numBits) >>> 32;
      if (((bits[(int) (pos >>> 3)] >> (pos & 7)) & 1) == 0) return false;
    }
    return true;
  }
}
