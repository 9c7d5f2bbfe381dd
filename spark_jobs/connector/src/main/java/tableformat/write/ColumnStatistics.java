package tableformat.write;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A column's statistics for the log (§8.2, values in §2.2's JSON encoding), as the Python writer
 * records them (cfile_set.column_stats): null count; min and max (bools none; floats of the
 * non-NaN values, with {@code nan} counting NaNs; strings and binaries bytewise unsigned, left
 * out when either is over 256 bytes). Accumulated over the row groups as they are written.
 */
final class ColumnStatistics {
  private static final int MAX_STAT_BYTES = 256;
  private final ColumnBuffer.Store store;
  private final WriteColumn column;
  private long nulls, nan;
  private boolean any;
  private long lo, hi;               // INT, LONG
  private double dlo, dhi;           // FLOAT, DOUBLE
  private byte[] blo, bhi;           // WIDE (16 bytes), BYTES

  ColumnStatistics(WriteColumn column) {
    this.column = column;
    this.store = ColumnBuffer.storeOf(column.type());
  }

  void add(ColumnBuffer b, int from, int to) {
    int loAt = -1, hiAt = -1;
    for (int i = from; i < to; i++) {
      if (b.nulls[i]) {
        nulls++;
        continue;
      }
      switch (store) {
        case BOOL -> { }
        case INT, LONG -> {
          long v = store == ColumnBuffer.Store.INT ? b.ints[i] : b.longs[i];
          if (!any || v < lo) lo = v;
          if (!any || v > hi) hi = v;
          any = true;
        }
        case FLOAT, DOUBLE -> {
          double v = store == ColumnBuffer.Store.FLOAT ? b.floats[i] : b.doubles[i];
          if (Double.isNaN(v)) {
            nan++;
            continue;
          }
          if (!any || v < dlo) dlo = v;
          if (!any || v > dhi) dhi = v;
          any = true;
        }
        case WIDE, BYTES -> {
          if (loAt >= 0 && i > from && !b.nulls[i - 1] && equal(b, i, i - 1)) continue;   // sorted runs repeat
          if (loAt < 0 || compare(b, i, b, loAt) < 0) loAt = i;
          if (hiAt < 0 || compare(b, i, b, hiAt) > 0) hiAt = i;
        }
      }
    }
    if (loAt >= 0) {
      byte[] l = copy(b, loAt), h = copy(b, hiAt);
      if (blo == null || cmp(l, blo) < 0) blo = l;
      if (bhi == null || cmp(h, bhi) > 0) bhi = h;
      any = true;
    }
  }

  private int compare(ColumnBuffer b, int i, ColumnBuffer c, int j) {
    if (store == ColumnBuffer.Store.WIDE) {
      int s = Byte.compare(b.bytes[16 * i], c.bytes[16 * j]);       // the sign byte, signed
      return s != 0 ? s : Arrays.compareUnsigned(b.bytes, 16 * i + 1, 16 * i + 16, c.bytes, 16 * j + 1, 16 * j + 16);
    }
    return Arrays.compareUnsigned(b.bytes, b.offsets[i], b.offsets[i + 1], c.bytes, c.offsets[j], c.offsets[j + 1]);
  }

  private boolean equal(ColumnBuffer b, int i, int j) {
    if (store == ColumnBuffer.Store.WIDE) return Arrays.equals(b.bytes, 16 * i, 16 * i + 16, b.bytes, 16 * j, 16 * j + 16);
    return Arrays.equals(b.bytes, b.offsets[i], b.offsets[i + 1], b.bytes, b.offsets[j], b.offsets[j + 1]);
  }

  private int cmp(byte[] x, byte[] y) {
    if (store == ColumnBuffer.Store.WIDE) {
      int s = Byte.compare(x[0], y[0]);
      return s != 0 ? s : Arrays.compareUnsigned(x, 1, 16, y, 1, 16);
    }
    return Arrays.compareUnsigned(x, y);
  }

  private byte[] copy(ColumnBuffer b, int i) {
    return store == ColumnBuffer.Store.WIDE ? Arrays.copyOfRange(b.bytes, 16 * i, 16 * i + 16)
        : Arrays.copyOfRange(b.bytes, b.offsets[i], b.offsets[i + 1]);
  }

  /** The statistics object of the descriptor's {@code stats} (§8.2). */
  Map<String, Object> toJson() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("nulls", nulls);
    String kind = column.type().kind();
    boolean isFloat = store == ColumnBuffer.Store.FLOAT || store == ColumnBuffer.Store.DOUBLE;
    if (isFloat && (any || nan > 0)) m.put("nan", nan);
    if (!any || store == ColumnBuffer.Store.BOOL) return m;
    switch (store) {
      case INT, LONG -> {
        m.put("min", value(kind, lo));
        m.put("max", value(kind, hi));
      }
      case FLOAT, DOUBLE -> {
        m.put("min", floatJson(dlo));
        m.put("max", floatJson(dhi));
      }
      case WIDE -> {
        m.put("min", new BigDecimal(new BigInteger(blo), column.type().scale()).toString());
        m.put("max", new BigDecimal(new BigInteger(bhi), column.type().scale()).toString());
      }
      case BYTES -> {
        if (blo.length > MAX_STAT_BYTES || bhi.length > MAX_STAT_BYTES) return m;
        boolean binary = kind.equals("binary");
        m.put("min", binary ? Base64.getEncoder().encodeToString(blo) : new String(blo, StandardCharsets.UTF_8));
        m.put("max", binary ? Base64.getEncoder().encodeToString(bhi) : new String(bhi, StandardCharsets.UTF_8));
      }
      default -> { }
    }
    return m;
  }

  private Object value(String kind, long v) {
    if (kind.equals("decimal")) return BigDecimal.valueOf(v, column.type().scale()).toString();
    if (kind.equals("date")) {
      LocalDate d = LocalDate.ofEpochDay(v);
      return d.getYear() >= 1 && d.getYear() <= 9999 ? d.toString() : (Object) v;
    }
    return v;
  }

  private static Object floatJson(double v) {
    if (Double.isInfinite(v)) return v > 0 ? "inf" : "-inf";
    return v;
  }
}
