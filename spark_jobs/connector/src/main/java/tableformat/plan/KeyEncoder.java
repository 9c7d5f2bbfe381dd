package tableformat.plan;

import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * The memcmp-ordered key encoding (specs/format.md §3): fixed-width kinds as big-endian two's
 * complement with the sign bit flipped; strings and binaries escaped and terminated unless last.
 */
public final class KeyEncoder {
  private KeyEncoder() {}

  /** Encode domain values of the given types; {@code terminal}: the last value is the key's last column. */
  public static byte[] encode(List<Object> values, List<ColumnType> types, boolean terminal) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int i = 0; i < values.size(); i++) {
      ColumnType t = types.get(i);
      Object v = values.get(i);
      boolean last = terminal && i == values.size() - 1;
      int w = t.keyWidth();
      if (w > 0) {
        BigInteger n = v instanceof BigDecimal d ? d.setScale(t.scale()).unscaledValue() : BigInteger.valueOf((Long) v);
        byte[] b = new byte[w];
        for (int j = 0; j < w; j++) b[w - 1 - j] = n.shiftRight(8 * j).byteValue();
        b[0] ^= (byte) 0x80;
        out.writeBytes(b);
      } else {
        byte[] raw = v instanceof String s ? s.getBytes(StandardCharsets.UTF_8) : (byte[]) v;
        if (last) {
          out.writeBytes(raw);
        } else {
          for (byte x : raw) {
            out.write(x);
            if (x == 0) out.write(1);
          }
          out.write(0);
          out.write(0);
        }
      }
    }
    return out.toByteArray();
  }

  /** The smallest byte string above every string starting with prefix (null: none). */
  public static byte[] prefixSuccessor(byte[] prefix) {
    int n = prefix.length;
    while (n > 0 && prefix[n - 1] == (byte) 0xFF) n--;
    if (n == 0) return null;
    byte[] b = Arrays.copyOf(prefix, n);
    b[n - 1]++;
    return b;
  }
}
