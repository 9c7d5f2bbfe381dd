package tableformat.plan;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The values of an encoded primary key (specs/format.md §4.1), KeyEncoder's inverse: fixed-width
 * columns big-endian with the sign bit flipped (integers; dates as days; timestamps as micros;
 * decimals unscaled), a variable-width column raw when last, else with 00 escaped as 00 01 and
 * ended by 00 00. For people (a rowset's bounds in metadata tables), as Python's decode_key is.
 */
public final class KeyDecoder {
  private KeyDecoder() {}

  /** Long for integer-like kinds, BigDecimal for decimals, String or byte[]; null if key is not such a key. */
  public static List<Object> decode(byte[] key, List<ColumnType> types) {
    List<Object> out = new ArrayList<>();
    int i = 0;
    for (int j = 0; j < types.size(); j++) {
      ColumnType t = types.get(j);
      int w = t.keyWidth();
      if (w == 0) {
        byte[] raw;
        if (j == types.size() - 1) {
          raw = Arrays.copyOfRange(key, i, key.length);
          i = key.length;
        } else {
          java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
          while (true) {
            if (i + 1 >= key.length) return null;
            if (key[i] == 0 && key[i + 1] == 0) break;
            if (key[i] == 0 && key[i + 1] != 1) return null;
            b.write(key[i]);
            i += key[i] == 0 ? 2 : 1;
          }
          raw = b.toByteArray();
          i += 2;
        }
        out.add(t.kind().equals("binary") ? raw : new String(raw, StandardCharsets.UTF_8));
        continue;
      }
      if (i + w > key.length) return null;
      byte[] b = Arrays.copyOfRange(key, i, i + w);
      b[0] ^= (byte) 0x80;
      BigInteger n = new BigInteger(b);
      i += w;
      out.add(t.kind().equals("decimal") ? new BigDecimal(n, t.scale()) : (Object) n.longValue());
    }
    return i == key.length ? out : null;
  }
}
