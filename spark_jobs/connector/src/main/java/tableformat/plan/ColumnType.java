package tableformat.plan;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tableformat.log.CorruptFileError;

/** A column type as the schema JSON names it (specs/format.md §2.1): kind, decimal precision and scale. */
public record ColumnType(String kind, int precision, int scale) implements java.io.Serializable {
  private static final Pattern DECIMAL = Pattern.compile("decimal\\((\\d+),\\s*(\\d+)\\)");
  private static final Pattern VARCHAR = Pattern.compile("varchar\\((\\d+)\\)");

  public static ColumnType parse(String name) {
    String s = name.strip().toLowerCase();
    Matcher m = DECIMAL.matcher(s);
    if (m.matches()) return new ColumnType("decimal", Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)));
    if (VARCHAR.matcher(s).matches()) return new ColumnType("varchar", 0, 0);
    return switch (s) {
      case "bool", "int8", "int16", "int32", "int64", "float", "double", "date", "unixtime_micros", "string",
          "binary" -> new ColumnType(s, 0, 0);
      default -> throw new CorruptFileError("unknown column type '" + name + "' in the schema");
    };
  }

  public boolean isInteger() {
    return kind.equals("int8") || kind.equals("int16") || kind.equals("int32") || kind.equals("int64");
  }

  public boolean isFloat() {
    return kind.equals("float") || kind.equals("double");
  }

  public boolean isText() {
    return kind.equals("string") || kind.equals("varchar");
  }

  /** The bit width of an integer-like kind (dates are int32 days, timestamps int64 micros). */
  public int bits() {
    return switch (kind) {
      case "int8" -> 8;
      case "int16" -> 16;
      case "int32", "date" -> 32;
      default -> 64;
    };
  }

  /** Key encoding width (§2.1, §3); 0 for variable-width kinds. */
  public int keyWidth() {
    if (kind.equals("decimal")) return precision <= 9 ? 4 : precision <= 18 ? 8 : 16;
    if (isText() || kind.equals("binary")) return 0;
    return bits() / 8;
  }

  /** Spark SQL's simple name of the type (what the connector's plan carries). */
  public String sparkType() {
    return switch (kind) {
      case "bool" -> "boolean";
      case "int8" -> "tinyint";
      case "int16" -> "smallint";
      case "int32" -> "int";
      case "int64" -> "bigint";
      case "float" -> "float";
      case "double" -> "double";
      case "date" -> "date";
      case "unixtime_micros" -> "timestamp";
      case "string", "varchar" -> "string";
      case "binary" -> "binary";
      default -> "decimal(" + precision + "," + scale + ")";
    };
  }
}
