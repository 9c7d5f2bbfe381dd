package tableformat.write;

import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import tableformat.log.PythonFloat;

/**
 * A key as the Python engine's messages show it ({@code describe_keys}, tableformat/write/insert.py):
 * one column's value alone, several as {@code (v1, v2)}; a string, bytes, an integer or a float as
 * Python's {@code repr}, anything else (a date, a timestamp, a decimal) as {@code str} in quotes:
 * {@code '2024-01-31'}, {@code '2024-01-31 10:00:00+00:00'}, {@code '12.50'}. A DuplicateKeyError
 * names the same key whichever writer found it.
 */
public final class KeyText {
  private KeyText() {}

  /** The key columns (positions in the row, their Spark types) of one row. */
  public static String describe(InternalRow row, int[] positions, DataType[] types) {
    StringBuilder b = new StringBuilder();
    for (int j = 0; j < positions.length; j++) {
      if (j > 0) b.append(", ");
      b.append(value(row, positions[j], types[j]));
    }
    return positions.length == 1 ? b.toString() : "(" + b + ")";
  }

  static String value(InternalRow row, int p, DataType t) {
    if (row.isNullAt(p)) return "None";
    if (t instanceof StringType) return repr(row.getUTF8String(p).toString());
    if (t instanceof BinaryType) return bytesRepr(row.getBinary(p));
    if (t instanceof BooleanType) return row.getBoolean(p) ? "True" : "False";
    if (t instanceof DoubleType) return floatRepr(row.getDouble(p));
    if (t instanceof FloatType) return floatRepr(row.getFloat(p));
    if (t instanceof DateType) return "'" + LocalDate.ofEpochDay(row.getInt(p)) + "'";
    if (t instanceof TimestampType) return "'" + timestamp(row.getLong(p)) + "+00:00'";
    if (t instanceof TimestampNTZType) return "'" + timestamp(row.getLong(p)) + "'";
    if (t instanceof DecimalType d) {
      Decimal v = row.getDecimal(p, d.precision(), d.scale());
      return "'" + v.toJavaBigDecimal().toString() + "'";     // Python's str(Decimal): the same scientific rule
    }
    return String.valueOf(row.get(p, t));                    // integers
  }

  /** Python's str(datetime) without its offset: microseconds only when there are some. */
  static String timestamp(long micros) {
    LocalDateTime t = LocalDateTime.ofEpochSecond(Math.floorDiv(micros, 1_000_000L),
        (int) Math.floorMod(micros, 1_000_000L) * 1000, ZoneOffset.UTC);
    String s = String.format("%04d-%02d-%02d %02d:%02d:%02d", t.getYear(), t.getMonthValue(), t.getDayOfMonth(),
        t.getHour(), t.getMinute(), t.getSecond());
    long us = Math.floorMod(micros, 1_000_000L);
    return us == 0 ? s : s + String.format(".%06d", us);
  }

  static String floatRepr(double d) {
    if (Double.isNaN(d)) return "nan";
    if (Double.isInfinite(d)) return d > 0 ? "inf" : "-inf";
    return PythonFloat.repr(d);
  }

  /** Python's repr(str): single quotes unless the text holds one and no double quote. */
  static String repr(String s) {
    char q = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
    StringBuilder b = new StringBuilder().append(q);
    s.codePoints().forEach(c -> {
      if (c == q || c == '\\') b.append('\\').appendCodePoint(c);
      else if (c == '\n') b.append("\\n");
      else if (c == '\r') b.append("\\r");
      else if (c == '\t') b.append("\\t");
      else if (c < 0x20 || c == 0x7f) b.append(String.format("\\x%02x", c));
      else b.appendCodePoint(c);
    });
    return b.append(q).toString();
  }

  /** Python's repr(bytes). */
  static String bytesRepr(byte[] v) {
    boolean single = false, dbl = false;
    for (byte x : v) {
      single |= x == '\'';
      dbl |= x == '"';
    }
    char q = single && !dbl ? '"' : '\'';
    StringBuilder b = new StringBuilder("b").append(q);
    for (byte x : v) {
      int c = x & 0xff;
      if (c == q || c == '\\') b.append('\\').append((char) c);
      else if (c == '\n') b.append("\\n");
      else if (c == '\r') b.append("\\r");
      else if (c == '\t') b.append("\\t");
      else if (c < 0x20 || c >= 0x7f) b.append(String.format("\\x%02x", c));
      else b.append((char) c);
    }
    return b.append(q).toString();
  }
}
