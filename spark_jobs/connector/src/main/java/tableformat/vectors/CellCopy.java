package tableformat.vectors;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.util.Base64;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.unsafe.types.UTF8String;

/** The column types of the format (specs/format.md §2.1) as Spark vectors hold them: one cell copied
 *  between vectors, and a JSON value (the plan's read defaults) in Catalyst's internal form. */
public final class CellCopy {
  private CellCopy() {}

  /** Physical kinds, resolved once per column so per-cell copies switch on an int. Python's
   *  {@code TYPE_NAMES} (tableformat/format/types.py) gives each logical type's kind by these names:
   *  tests/spark/test_connector_units.py compares the two through {@link Contract}. */
  public static final int BOOL = 0, BYTE = 1, SHORT = 2, INT = 3, LONG = 4, FLOAT = 5, DOUBLE = 6, BYTES = 7, DEC = 8;
  public static final String[] KIND_NAMES = {"BOOL", "BYTE", "SHORT", "INT", "LONG", "FLOAT", "DOUBLE", "BYTES", "DEC"};

  public static int kind(DataType t) {
    if (t instanceof BooleanType) return BOOL;
    if (t instanceof ByteType) return BYTE;
    if (t instanceof ShortType) return SHORT;
    if (t instanceof IntegerType || t instanceof DateType) return INT;
    if (t instanceof LongType || t instanceof TimestampType || t instanceof TimestampNTZType) return LONG;
    if (t instanceof FloatType) return FLOAT;
    if (t instanceof DoubleType) return DOUBLE;
    if (t instanceof StringType || t instanceof BinaryType) return BYTES;
    if (t instanceof DecimalType) return DEC;
    throw new UnsupportedOperationException("tableformat connector: unsupported type " + t.simpleString());
  }

  static boolean supported(DataType t) {
    try {
      kind(t);
      return true;
    } catch (UnsupportedOperationException e) {
      return false;
    }
  }

  /** dst[dstRow] = src[srcRow] (NULL included). */
  public static void copy(int kind, DataType t, ColumnVector src, int srcRow, WritableColumnVector dst, int dstRow) {
    if (src.isNullAt(srcRow)) {
      dst.putNull(dstRow);
      return;
    }
    dst.putNotNull(dstRow);
    switch (kind) {
      case BOOL: dst.putBoolean(dstRow, src.getBoolean(srcRow)); break;
      case BYTE: dst.putByte(dstRow, src.getByte(srcRow)); break;
      case SHORT: dst.putShort(dstRow, src.getShort(srcRow)); break;
      case INT: dst.putInt(dstRow, src.getInt(srcRow)); break;
      case LONG: dst.putLong(dstRow, src.getLong(srcRow)); break;
      case FLOAT: dst.putFloat(dstRow, src.getFloat(srcRow)); break;
      case DOUBLE: dst.putDouble(dstRow, src.getDouble(srcRow)); break;
      case BYTES: dst.putByteArray(dstRow, src.getBinary(srcRow)); break;
      case DEC: {
        DecimalType d = (DecimalType) t;
        dst.putDecimal(dstRow, src.getDecimal(srcRow, d.precision(), d.scale()), d.precision());
        break;
      }
      default: throw new IllegalStateException();
    }
  }

  /** A plan's JSON value (physical form: date = days, timestamp = micros, decimal = text,
   *  binary = base64, non-finite floats as text) in Catalyst's internal form; null for NULL. */
  public static Object fromJson(DataType t, JsonNode v) {
    if (v == null || v.isNull() || v.isMissingNode()) return null;
    switch (kind(t)) {
      case BOOL: return v.asBoolean();
      case BYTE: return (byte) v.asInt();
      case SHORT: return (short) v.asInt();
      case INT: return v.asInt();
      case LONG: return v.asLong();
      case FLOAT: return v.isTextual() ? Float.parseFloat(v.asText()) : (float) v.asDouble();
      case DOUBLE: return v.isTextual() ? Double.parseDouble(v.asText()) : v.asDouble();
      case BYTES:
        return t instanceof StringType ? UTF8String.fromString(v.asText()) : Base64.getDecoder().decode(v.asText());
      case DEC: {
        DecimalType d = (DecimalType) t;
        return Decimal.apply(new BigDecimal(v.asText()), d.precision(), d.scale());
      }
      default: throw new IllegalStateException();
    }
  }
}
