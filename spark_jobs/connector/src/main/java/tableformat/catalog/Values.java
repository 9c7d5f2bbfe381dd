package tableformat.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.LocalDate;
import java.time.format.DateTimeParseException;
import java.util.Base64;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.UTF8String;
import tableformat.log.SchemaError;
import tableformat.plan.ColumnType;

/**
 * Typed values of a definition (a column's DEFAULT, a range bound) in the three forms they pass
 * through: Spark's internal value, the key encoder's domain value (Long for integers, dates as days
 * and timestamps as microseconds; BigDecimal; String; byte[]; Boolean; Double), and §2.2's JSON.
 */
final class Values {
  private Values() {}

  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /** A Catalyst literal's value (UTF8String, Decimal, Integer days, Long micros, ...) as a domain value. */
  static Object fromCatalyst(ColumnType t, Object v) {
    return switch (t.kind()) {
      case "string", "varchar" -> v.toString();
      case "decimal" -> ((Decimal) v).toJavaBigDecimal();
      case "binary" -> (byte[]) v;
      case "bool" -> (Boolean) v;
      case "float", "double" -> ((Number) v).doubleValue();
      default -> v instanceof UTF8String s ? Long.parseLong(s.toString()) : ((Number) v).longValue();
    };
  }

  /** §2.2's JSON of a value of type t as a domain value, checked against the type. */
  static Object fromJson(ColumnType t, JsonNode x, String what) {
    try {
      switch (t.kind()) {
        case "bool":
          if (!x.isBoolean()) break;
          return x.booleanValue();
        case "float", "double":
          if (x.isNumber()) return x.doubleValue();
          if (x.isTextual()) return switch (x.asText()) {
            case "nan" -> Double.NaN;
            case "inf" -> Double.POSITIVE_INFINITY;
            case "-inf" -> Double.NEGATIVE_INFINITY;
            default -> throw new SchemaError(what + ": " + x + " is not a " + t.kind());
          };
          break;
        case "decimal":
          return decimal(t, x.isTextual() ? new BigDecimal(x.asText()) : x.decimalValue(), what);
        case "date":
          if (!x.isTextual()) break;
          return LocalDate.parse(x.asText()).toEpochDay();
        case "string", "varchar":
          if (!x.isTextual()) break;
          return x.asText();
        case "binary":
          if (!x.isTextual()) break;
          return Base64.getDecoder().decode(x.asText());
        default:        // integers and unixtime_micros (integer microseconds, §2.2)
          if (!x.canConvertToLong() || !x.isIntegralNumber()) break;
          long v = x.longValue();
          int bits = t.bits();
          if (bits < 64 && (v < -(1L << (bits - 1)) || v >= (1L << (bits - 1))))
            throw new SchemaError(what + ": " + v + " is out of range for " + t.kind());
          return v;
      }
    } catch (DateTimeParseException | IllegalArgumentException e) {
      if (e instanceof SchemaError s) throw s;
      throw new SchemaError(what + ": " + x + " is not a valid " + t.kind() + " (" + e.getMessage() + ")");
    }
    throw new SchemaError(what + ": " + x + " is not a valid " + t.kind() + " in JSON (specs/format.md §2.2)");
  }

  static BigDecimal decimal(ColumnType t, BigDecimal d, String what) {
    BigDecimal s;
    try {
      s = d.setScale(t.scale(), RoundingMode.UNNECESSARY);
    } catch (ArithmeticException e) {
      throw new SchemaError(what + ": " + d.toPlainString() + " has more than " + t.scale() + " digits after the point");
    }
    if (s.precision() > t.precision() && s.signum() != 0 && s.unscaledValue().abs().toString().length() > t.precision())
      throw new SchemaError(what + ": " + d.toPlainString() + " has more than " + t.precision() + " digits");
    return s;
  }

  /** Spark's columns of a table (its read schema, in the log's column order) with each column's
   *  write default: the SQL text Spark evaluates for an INSERT that leaves the column out, and its value. */
  static org.apache.spark.sql.connector.catalog.Column[] columns(org.apache.spark.sql.types.StructType schema,
                                                                 JsonNode logSchema) {
    java.util.Map<String, JsonNode> defaults = new java.util.HashMap<>();
    for (JsonNode c : logSchema.get("columns")) defaults.put(c.get("name").asText(), c);
    org.apache.spark.sql.types.StructField[] f = schema.fields();
    org.apache.spark.sql.connector.catalog.Column[] out = new org.apache.spark.sql.connector.catalog.Column[f.length];
    for (int i = 0; i < f.length; i++) {
      JsonNode c = defaults.get(f[i].name());
      JsonNode d = c == null ? null : c.get("default");
      org.apache.spark.sql.connector.catalog.ColumnDefaultValue dv = null;
      if (d != null && !d.isNull()) {
        ColumnType t = ColumnType.parse(c.get("type").asText());
        Object v = catalyst(t, fromJson(t, d, "default of column '" + f[i].name() + "'"));
        dv = new org.apache.spark.sql.connector.catalog.ColumnDefaultValue(sql(t, v, f[i].dataType()),
            new org.apache.spark.sql.connector.expressions.LiteralValue<>(v, f[i].dataType()));
      }
      out[i] = org.apache.spark.sql.connector.catalog.Column.create(f[i].name(), f[i].dataType(), f[i].nullable(),
          f[i].getComment().isDefined() ? f[i].getComment().get() : null, dv,
          f[i].metadata().equals(org.apache.spark.sql.types.Metadata.empty()) ? null : f[i].metadata().json());
    }
    return out;
  }

  /** A domain value as Spark's internal value of the column's type. */
  static Object catalyst(ColumnType t, Object v) {
    return switch (t.kind()) {
      case "int8" -> ((Long) v).byteValue();
      case "int16" -> ((Long) v).shortValue();
      case "int32", "date" -> ((Long) v).intValue();
      case "int64", "unixtime_micros" -> (Long) v;
      case "float" -> (float) (double) (Double) v;
      case "double" -> (Double) v;
      case "decimal" -> Decimal.apply((BigDecimal) v, t.precision(), t.scale());
      case "string", "varchar" -> UTF8String.fromString((String) v);
      default -> v;                         // bool, binary
    };
  }

  /** SQL text of a default that evaluates to exactly the value in any session time zone. */
  private static String sql(ColumnType t, Object v, org.apache.spark.sql.types.DataType dt) {
    return switch (t.kind()) {
      case "date" -> "date_from_unix_date(" + v + ")";
      case "unixtime_micros" -> "timestamp_micros(" + v + "L)";
      default -> new org.apache.spark.sql.catalyst.expressions.Literal(v, dt).sql();
    };
  }

  /** A domain value as §2.2's JSON. */
  static JsonNode toJson(ColumnType t, Object v, String what) {
    return switch (t.kind()) {
      case "bool" -> F.booleanNode((Boolean) v);
      case "float", "double" -> {
        double d = (Double) v;
        yield Double.isNaN(d) ? F.textNode("nan") : Double.isInfinite(d) ? F.textNode(d > 0 ? "inf" : "-inf")
            : t.kind().equals("float") ? F.numberNode((double) (float) d) : F.numberNode(d);
      }
      case "decimal" -> F.textNode(decimal(t, (BigDecimal) v, what).toPlainString());
      case "date" -> {
        long days = (Long) v;
        LocalDate date = LocalDate.ofEpochDay(days);
        if (date.getYear() < 1 || date.getYear() > 9999) throw new SchemaError(what + ": date " + date + " is outside 0001-9999");
        yield F.textNode(date.toString());
      }
      case "string" -> F.textNode((String) v);
      case "varchar" -> F.textNode((String) v);
      case "binary" -> F.textNode(Base64.getEncoder().encodeToString((byte[]) v));
      default -> F.numberNode((Long) v);
    };
  }
}
