package tableformat.write;

import java.io.Serializable;
import java.math.BigInteger;
import java.util.Arrays;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;
import tableformat.plan.ColumnType;

/**
 * The memcmp-ordered key encoding (specs/format.md §3) of a row's key columns, or of any ordered
 * list of key columns (a hash level's, the range columns: "last" is then the list's last).
 * Encodes into one reused buffer and copies out the key; string cells of an {@link UnsafeRow}
 * are read in place (no UTF8String per cell).
 */
public final class KeyEncoder implements Serializable {
  private static final long serialVersionUID = 1L;
  private final int[] positions;
  private final ColumnType[] types;
  private final int[] codes;               // each column's encoding (C_*), chosen once
  private static final int C_INT8 = 0, C_INT16 = 1, C_INT32 = 2, C_INT64 = 3, C_DECIMAL = 4, C_STRING = 5,
      C_BINARY = 6, C_OTHER = 7;
  private transient byte[] buf;
  private transient int len;

  /** Encoder of the columns at these row ordinals, in this order. */
  public KeyEncoder(WriteSchema schema, int[] positions) {
    this.positions = positions.clone();
    this.types = new ColumnType[positions.length];
    this.codes = new int[positions.length];
    for (int i = 0; i < positions.length; i++) {
      types[i] = schema.columns().get(positions[i]).type();
      codes[i] = switch (types[i].kind()) {
        case "int8" -> C_INT8;
        case "int16" -> C_INT16;
        case "int32", "date" -> C_INT32;
        case "int64", "unixtime_micros" -> C_INT64;
        case "decimal" -> C_DECIMAL;
        case "string", "varchar" -> C_STRING;
        case "binary" -> C_BINARY;
        default -> C_OTHER;
      };
    }
  }

  /** The primary key's encoder. */
  public static KeyEncoder primaryKey(WriteSchema schema) {
    return new KeyEncoder(schema, schema.keyPositions());
  }

  /** The encoder of the columns with these IDs, in this order (a hash level, the range columns). */
  public static KeyEncoder ofColumnIds(WriteSchema schema, int[] columnIds) {
    int[] pos = new int[columnIds.length];
    for (int i = 0; i < pos.length; i++) pos[i] = schema.positionOfId(columnIds[i]);
    return new KeyEncoder(schema, pos);
  }

  /** The row ordinals this encoder reads. */
  public int[] positions() {
    return positions.clone();
  }

  /** The encoded key of a row (its key columns must not be NULL). */
  public byte[] encode(InternalRow row) {
    encodeInto(row);
    return Arrays.copyOf(buf, len);
  }

  /** Encode into the internal buffer; {@link #buffer()} and {@link #length()} then hold the key
   *  until the next call (for a caller that only hashes or compares it). */
  public void encodeInto(InternalRow row) {
    if (buf == null) buf = new byte[64];
    len = 0;
    for (int i = 0; i < positions.length; i++) {
      int p = positions[i];
      if (row.isNullAt(p)) throw new IllegalArgumentException("a key column is NULL");
      ColumnType t = types[i];
      boolean last = i == positions.length - 1;
      switch (codes[i]) {
        case C_INT8 -> fixed(row.getByte(p), 1);
        case C_INT16 -> fixed(row.getShort(p), 2);
        case C_INT32 -> fixed(row.getInt(p), 4);
        case C_INT64 -> fixed(row.getLong(p), 8);
        case C_DECIMAL -> {
          if (t.precision() <= 18) {
            long u = row instanceof UnsafeRow ? row.getLong(p) : row.getDecimal(p, t.precision(), t.scale()).toUnscaledLong();
            fixed(u, t.precision() <= 9 ? 4 : 8);
          } else {
            wide(row.getDecimal(p, t.precision(), t.scale()).toJavaBigDecimal().unscaledValue());
          }
        }
        case C_STRING, C_BINARY -> variable(row, p, codes[i] == C_BINARY, last);
        default -> throw new IllegalArgumentException("a " + t.kind() + " column cannot be in a key");
      }
    }
  }

  public byte[] buffer() {
    return buf;
  }

  public int length() {
    return len;
  }

  private void room(int n) {
    if (len + n > buf.length) buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + n));
  }

  private void fixed(long v, int width) {
    room(width);
    for (int j = width - 1; j >= 0; j--) {
      buf[len + j] = (byte) v;
      v >>= 8;
    }
    buf[len] ^= (byte) 0x80;
    len += width;
  }

  private void wide(BigInteger n) {
    room(16);
    byte[] b = n.toByteArray();                          // big-endian two's complement, minimal
    byte fill = n.signum() < 0 ? (byte) 0xFF : 0;
    int pad = 16 - b.length;
    for (int j = 0; j < 16; j++) buf[len + j] = j < pad ? fill : b[j - pad];
    buf[len] ^= (byte) 0x80;
    len += 16;
  }

  private void variable(InternalRow row, int p, boolean binary, boolean last) {
    Object base;
    long off;
    int n;
    if (row instanceof UnsafeRow u) {
      long offsetAndSize = u.getLong(p);
      base = u.getBaseObject();
      off = u.getBaseOffset() + (offsetAndSize >>> 32);
      n = (int) offsetAndSize;
    } else if (binary) {
      byte[] b = row.getBinary(p);
      base = b;
      off = Platform.BYTE_ARRAY_OFFSET;
      n = b.length;
    } else {
      UTF8String s = row.getUTF8String(p);
      base = s.getBaseObject();
      off = s.getBaseOffset();
      n = s.numBytes();
    }
    if (last) {
      room(n);
      Platform.copyMemory(base, off, buf, Platform.BYTE_ARRAY_OFFSET + len, n);
      len += n;
      return;
    }
    room(2 * n + 2);
    // most values hold no 0x00 byte: copy them whole, and escape byte by byte only when one does
    Platform.copyMemory(base, off, buf, Platform.BYTE_ARRAY_OFFSET + len, n);
    int start = len, zero = len;
    while (zero < start + n && buf[zero] != 0) zero++;
    len = zero;
    for (int j = zero - start; j < n; j++) {      // from the first 0x00 on (none: no iteration)
      byte x = Platform.getByte(base, off + j);
      buf[len++] = x;
      if (x == 0) buf[len++] = 1;
    }
    buf[len++] = 0;
    buf[len++] = 0;
  }
}
