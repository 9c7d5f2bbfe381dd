package tableformat.write;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import tableformat.log.CorruptFileError;

/** The key check's bloom probe against filters Python's bloom.py built (both magics, §7):
 *  every key it holds answers yes, and the absent keys Python answers no to answer no. */
class BloomProbeTest {
  // BloomFilter.build / SplitBlockBloomFilter.build of [a, bb, key-17, bytes(range(20))]
  static final String CLASSIC = "5446424c4f4f4d310d0000005000000000000000a6d2ae2816157e2b5b171768e7528daccab5";
  static final String SPLIT = "5446424c4f4f4d320100000000000000a6d2ae2816157e2b090000880028204040001010400001440040"
      + "201810004120011003000140c000";

  static byte[][] present() {
    byte[] r = new byte[20];
    for (int i = 0; i < 20; i++) r[i] = (byte) i;
    return new byte[][] {b("a"), b("bb"), b("key-17"), r};
  }

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void bothKindsAnswerAsPython() {
    for (String hex : new String[] {CLASSIC, SPLIT}) {
      BloomProbe p = BloomProbe.of(HexFormat.of().parseHex(hex), "bloom.bin");
      for (byte[] k : present()) assertTrue(p.mayContain(k));
      for (String k : new String[] {"b", "zz", "key-18", ""}) assertFalse(p.mayContain(b(k)));
    }
  }

  @Test
  void theWritersFilterIsProbed() {
    byte[][] keys = present();
    long[] h = new long[keys.length];
    for (int i = 0; i < keys.length; i++) h[i] = SplitBlockBloom.hash(keys[i]);
    BloomProbe p = BloomProbe.of(SplitBlockBloom.build(h, h.length), "bloom.bin");
    for (byte[] k : keys) assertTrue(p.mayContain(k));
  }

  @Test
  void aTruncatedOrForeignFileIsCorrupt() {
    byte[] split = HexFormat.of().parseHex(SPLIT);
    assertThrows(CorruptFileError.class, () -> BloomProbe.of(java.util.Arrays.copyOf(split, split.length - 1), "x"));
    assertThrows(CorruptFileError.class, () -> BloomProbe.of(b("PAR1 not a bloom filter"), "x"));
  }
}
