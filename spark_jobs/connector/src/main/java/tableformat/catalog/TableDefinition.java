package tableformat.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.spark.sql.catalyst.util.CharVarcharUtils;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.ColumnDefaultValue;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.constraints.Constraint;
import org.apache.spark.sql.connector.catalog.constraints.PrimaryKey;
import org.apache.spark.sql.connector.expressions.BucketTransform;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.CharType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.types.VarcharType;
import tableformat.log.InvalidIdentifierError;
import tableformat.log.InvalidOptionError;
import tableformat.log.Json;
import tableformat.log.PartitionSchemaError;
import tableformat.log.SchemaError;
import tableformat.log.SequenceColumnError;
import tableformat.plan.ColumnType;
import tableformat.plan.KeyEncoder;

/**
 * A SQL {@code CREATE TABLE} as the version-0 {@code metadata} action (specs/format.md §2, §4, §8.2,
 * §17): the same definition {@code tableformat.create_table} makes from the same columns, key,
 * partitioning and properties, so a table made in SQL is an ordinary table to the engine.
 * Validated here, before anything is written, with the engine's rules and error names.
 */
public final class TableDefinition {
  private TableDefinition() {}

  /** The format version a new table is created in (the engine's WRITE_FORMAT_FLOOR, §8.1). */
  public static final int CREATE_FORMAT_VERSION = 5;
  static final int MAX_COLUMNS = 300;
  static final int MAX_TABLETS = 10_000;
  /** §8.2's table properties, their defaults and ranges (tableformat/format/metadata.py). */
  static final Map<String, long[]> PROPERTIES = new LinkedHashMap<>();
  static {
    PROPERTIES.put("rowset_target_bytes", new long[] {128L << 20, 1L << 16, 1L << 34});
    PROPERTIES.put("row_group_rows", new long[] {16384, 128, 1 << 24});
    PROPERTIES.put("pk_index_block_rows", new long[] {4096, 16, 1 << 20});
    PROPERTIES.put("checkpoint_interval", new long[] {10, 1, 100_000});
    PROPERTIES.put("history_max_age", new long[] {7 * 24 * 3600, -1, 10L * 365 * 24 * 3600});
    PROPERTIES.put("reclaim_deleted_pct", new long[] {20, 0, 100});
  }
  /** TBLPROPERTIES keys of the definition itself (§17), not stored as table properties. */
  public static final String PRIMARY_KEY = "primary_key";
  public static final String RANGE_BOUNDS = "range_bounds";
  public static final String RANGE_SPLITS = "range_splits";
  static final String COLUMN_PREFIX = "column.";
  /** What Spark itself puts in a CREATE's properties (provider, location, comment, options...). */
  static final Set<String> SPARK_KEYS = Set.of(TableCatalog.PROP_PROVIDER, TableCatalog.PROP_LOCATION,
      TableCatalog.PROP_COMMENT, TableCatalog.PROP_OWNER, TableCatalog.PROP_EXTERNAL,
      TableCatalog.PROP_IS_MANAGED_LOCATION, TableCatalog.PROP_TABLE_TYPE, TableCatalog.PROP_COLLATION);
  static final List<String> ENCODINGS = List.of("plain", "bitshuffle", "run_length", "dictionary", "prefix");
  static final List<String> COMPRESSIONS = List.of("none", "lz4", "snappy", "zlib", "zstd");
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /** The {@code metadata} action of a new table named {@code name}. */
  public static ObjectNode create(String name, Column[] columns, Transform[] partitions, Map<String, String> props,
                                 Constraint[] constraints) {
    Map<String, String> own = ownProperties(props);
    List<String> pk = primaryKey(columns, constraints, own.remove(PRIMARY_KEY));
    ObjectNode schema = schema(columns, pk, own);
    ObjectNode meta = F.objectNode();
    meta.put("format_version", CREATE_FORMAT_VERSION);
    meta.put("table_id", UUID.randomUUID().toString().replace("-", ""));
    meta.put("name", name);
    meta.set("schema", schema);
    meta.set("partitioning", partitioning(schema, partitions, own.remove(RANGE_BOUNDS), own.remove(RANGE_SPLITS)));
    meta.set("properties", properties(own, schema));
    return meta;
  }

  /** The user's TBLPROPERTIES: Spark's own keys and {@code option.*} left out. */
  static Map<String, String> ownProperties(Map<String, String> props) {
    Map<String, String> own = new LinkedHashMap<>();
    for (var e : props.entrySet())
      if (!SPARK_KEYS.contains(e.getKey()) && !e.getKey().startsWith(TableCatalog.OPTION_PREFIX)) own.put(e.getKey(), e.getValue());
    return own;
  }

  // ---- schema (§2) ----

  static List<String> primaryKey(Column[] columns, Constraint[] constraints, String property) {
    List<String> fromConstraint = null;
    for (Constraint c : constraints == null ? new Constraint[0] : constraints) {
      if (!(c instanceof PrimaryKey p))
        throw new SchemaError("constraint " + c.toDDL() + " is not supported: a table has a PRIMARY KEY only");
      if (fromConstraint != null) throw new SchemaError("a table has one PRIMARY KEY");
      fromConstraint = new ArrayList<>();
      for (NamedReference r : p.columns()) fromConstraint.add(String.join(".", r.fieldNames()));
    }
    List<String> fromProperty = property == null ? null : Arrays.stream(property.split(",")).map(String::strip).toList();
    if (fromConstraint != null && fromProperty != null && !fromConstraint.equals(fromProperty))
      throw new SchemaError("the PRIMARY KEY (" + String.join(", ", fromConstraint) + ") and the table property primary_key ("
          + property + ") differ: give one");
    List<String> pk = fromConstraint != null ? fromConstraint : fromProperty;
    if (pk == null || pk.isEmpty() || pk.stream().anyMatch(String::isEmpty))
      throw new SchemaError("a tableformat table needs a primary key: CONSTRAINT pk PRIMARY KEY (col, ...) in the column list, "
          + "or TBLPROPERTIES ('primary_key' = 'col, ...') (CREATE TABLE ... AS SELECT)");
    if (new HashSet<>(pk).size() != pk.size()) throw new SchemaError("primary key lists a column twice: " + pk);
    Set<String> names = new HashSet<>();
    for (Column c : columns) names.add(c.name());
    for (String k : pk) if (!names.contains(k)) throw new SchemaError("primary key column '" + k + "' is not in the schema");
    return pk;
  }

  static ObjectNode schema(Column[] columns, List<String> pk, Map<String, String> own) {
    if (columns.length == 0) throw new SchemaError("a schema needs at least one column");
    if (columns.length > MAX_COLUMNS)
      throw new SchemaError("a table has at most " + MAX_COLUMNS + " columns, got " + columns.length);
    ArrayNode cols = F.arrayNode();
    Set<String> seen = new HashSet<>();
    int id = 0;
    for (Column c : columns) {
      String name = identifier(c.name(), "column");
      if (!seen.add(name)) throw new SchemaError("duplicate column names: '" + name + "'");
      String type = typeName(c);
      ColumnType t = ColumnType.parse(type);
      boolean key = pk.contains(name);
      if (key && (t.kind().equals("bool") || t.isFloat()))
        throw new SchemaError("primary key column '" + name + "' has type " + type + "; a key column cannot be bool, float or double");
      ObjectNode col = F.objectNode();
      col.put("id", id++);
      col.put("name", name);
      col.put("type", type);
      col.put("nullable", !key && c.nullable());     // key columns are never nullable (§2), as in Kudu
      col.set("default", defaultValue(c, t));
      col.put("encoding", columnOption(own, name, "encoding", defaultEncoding(t), ENCODINGS));
      col.put("compression", columnOption(own, name, "compression", "lz4", COMPRESSIONS));
      checkEncoding(name, t, col.get("encoding").asText());
      col.putNull("read_default");
      cols.add(col);
    }
    for (String k : own.keySet())
      if (k.startsWith(COLUMN_PREFIX)) throw new SchemaError("table property '" + k + "' names no column option: "
          + "use column.<name>.encoding or column.<name>.compression with a column of the table");
    ObjectNode schema = F.objectNode();
    schema.set("columns", cols);
    ArrayNode keys = schema.putArray("primary_key");
    pk.forEach(keys::add);
    schema.put("next_column_id", id);
    return schema;
  }

  /** A name as §2 allows it: 1-256 bytes of UTF-8, no control character, no path separator, not . or .. */
  static String identifier(String name, String what) {
    int bytes = name.getBytes(StandardCharsets.UTF_8).length;
    if (bytes == 0) throw new InvalidIdentifierError(what + " name must not be empty");
    if (bytes > 256) throw new InvalidIdentifierError(what + " name '" + name + "' is longer than 256 bytes");
    if (name.chars().anyMatch(ch -> ch < 0x20 || ch == 0x7f))
      throw new InvalidIdentifierError(what + " name '" + name + "' contains a control character (NUL, newline...)");
    if (name.contains("/") || name.contains("\\") || name.equals(".") || name.equals(".."))
      throw new InvalidIdentifierError(what + " name '" + name + "' contains a path separator or is '.'/'..'");
    return name;
  }

  /** The engine's type name of a Spark column (§2.1, §17); the inverse of {@code ColumnType.sparkType}. */
  static String typeName(Column c) {
    DataType t = c.dataType();
    if (t instanceof StringType) {    // Spark may hand a varchar(n) as a string with its declared type aside
      DataType declared = CharVarcharUtils.getRawType(
          org.apache.spark.sql.types.Metadata.fromJson(c.metadataInJSON() == null ? "{}" : c.metadataInJSON())).getOrElse(() -> t);
      if (declared != t) return typeName(c.name(), declared);
    }
    return typeName(c.name(), t);
  }

  static String typeName(String column, DataType t) {
    if (t instanceof BooleanType) return "bool";
    if (t instanceof ByteType) return "int8";
    if (t instanceof ShortType) return "int16";
    if (t instanceof IntegerType) return "int32";
    if (t instanceof LongType) return "int64";
    if (t instanceof FloatType) return "float";
    if (t instanceof DoubleType) return "double";
    if (t instanceof DateType) return "date";
    if (t instanceof TimestampType) return "unixtime_micros";
    if (t instanceof BinaryType) return "binary";
    if (t instanceof DecimalType d) return "decimal(" + d.precision() + "," + d.scale() + ")";
    if (t instanceof VarcharType v) {
      if (v.length() < 1 || v.length() > 65535)
        throw new SchemaError("column '" + column + "': varchar(" + v.length() + ") is out of range: 1 to 65535");
      return "varchar(" + v.length() + ")";
    }
    if (t instanceof CharType)
      throw new SchemaError("column '" + column + "': CHAR(n) has no tableformat type (it pads); use VARCHAR(n) or STRING");
    if (t instanceof StringType st) {
      if (!st.isUTF8BinaryCollation())      // the engine's strings compare as bytes (§3): a collation is not kept
        throw new SchemaError("column '" + column + "' has type " + t.sql() + "; tableformat strings compare byte by "
            + "byte (UTF8_BINARY): a collation would be silently lost, so it is refused");
      return "string";
    }
    throw new SchemaError("column '" + column + "' has type " + t.sql() + ", which tableformat has no type for; the types are "
        + "BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p,s), DATE, TIMESTAMP (UTC), STRING, VARCHAR(n), BINARY");
  }

  static String defaultEncoding(ColumnType t) {
    if (t.kind().equals("bool")) return "run_length";
    if (t.isText() || t.kind().equals("binary")) return "dictionary";
    return "plain";
  }

  static void checkEncoding(String column, ColumnType t, String enc) {
    boolean ok = switch (enc) {
      case "plain" -> true;
      case "dictionary" -> t.isText() || t.kind().equals("binary");      // §2: the engine's encodings by type
      case "run_length" -> !t.isText() && !t.kind().equals("binary") && !t.isFloat() && !t.kind().equals("decimal");
      case "bitshuffle" -> !t.isText() && !t.kind().equals("binary") && !t.kind().equals("bool");
      case "prefix" -> t.isText() || t.kind().equals("binary");
      default -> false;
    };
    if (!ok) throw new SchemaError("column '" + column + "': encoding '" + enc + "' is not allowed for " + t.kind());
  }

  static String columnOption(Map<String, String> own, String column, String option, String fallback, List<String> allowed) {
    String v = own.remove(COLUMN_PREFIX + column + "." + option);
    if (v == null) return fallback;
    String s = v.strip().toLowerCase(Locale.ROOT);
    if (!allowed.contains(s))
      throw new SchemaError("column '" + column + "': unknown " + option + " '" + v + "'; known: " + String.join(", ", allowed));
    return s;
  }

  /** A column's write default (§2.2): a literal DEFAULT, or none. */
  static JsonNode defaultValue(Column c, ColumnType t) {
    ColumnDefaultValue d = c.defaultValue();
    if (d == null) return F.nullNode();
    Object v = d.getValue() == null ? null : d.getValue().value();
    if (v == null) return F.nullNode();
    return Values.toJson(t, Values.fromCatalyst(t, v), "DEFAULT of column '" + c.name() + "'");
  }

  // ---- partitioning (§4) ----

  static ObjectNode partitioning(ObjectNode schema, Transform[] partitions, String bounds, String splits) {
    Map<String, JsonNode> byName = new LinkedHashMap<>();
    for (JsonNode c : schema.get("columns")) byName.put(c.get("name").asText(), c);
    List<String> pk = new ArrayList<>();
    schema.get("primary_key").forEach(k -> pk.add(k.asText()));
    ArrayNode hash = F.arrayNode();
    Set<String> hashed = new HashSet<>();
    List<String> rangeCols = null;
    long buckets = 1;
    for (Transform tr : partitions == null ? new Transform[0] : partitions) {
      String fn = tr.name().toLowerCase(Locale.ROOT);
      List<String> cols = new ArrayList<>();
      for (NamedReference r : tr.references()) cols.add(String.join(".", r.fieldNames()));
      if (fn.equals("bucket")) {
        int n = bucketCount(tr);
        if (cols.isEmpty()) throw new PartitionSchemaError("a hash level needs at least one column");
        if (n < 2 || n > 1024) throw new PartitionSchemaError("hash buckets must be an integer 2..1024, got " + n);
        ObjectNode level = F.objectNode();
        ArrayNode ids = level.putArray("column_ids");
        for (String col : cols) {
          if (!pk.contains(col)) throw new PartitionSchemaError("hash column '" + col + "' is not a primary key column");
          if (!hashed.add(col)) throw new PartitionSchemaError("column '" + col + "' is in two hash levels");
          ids.add(byName.get(col).get("id").asInt());
        }
        level.put("buckets", n);
        level.put("seed", 0);
        hash.add(level);
        buckets *= n;
      } else if (fn.equals("range")) {
        if (rangeCols != null) throw new PartitionSchemaError("a table has one range level: range(col, ...) once");
        rangeCols = cols;
        for (String col : cols)
          if (!pk.contains(col)) throw new PartitionSchemaError("range column '" + col + "' is not a primary key column");
        if (new HashSet<>(cols).size() != cols.size()) throw new PartitionSchemaError("range columns list a column twice: " + cols);
      } else {
        throw new PartitionSchemaError("PARTITIONED BY " + tr.describe() + " is not a tableformat partitioning: use "
            + "bucket(n, key columns...) for a hash level and range(key columns...) for the range level, with "
            + "TBLPROPERTIES ('range_bounds' = ..., 'range_splits' = ...) (specs/format.md §17)");
      }
    }
    if (rangeCols == null) rangeCols = pk;
    List<ColumnType> types = new ArrayList<>();
    ArrayNode rids = F.arrayNode();
    for (String col : rangeCols) {
      types.add(ColumnType.parse(byName.get(col).get("type").asText()));
      rids.add(byName.get(col).get("id").asInt());
    }
    List<Object[]> parts = ranges(rangeCols, types, bounds, splits);
    if (parts.size() * buckets > MAX_TABLETS)
      throw new PartitionSchemaError(parts.size() * buckets + " tablets is more than the limit of " + MAX_TABLETS);
    ObjectNode p = F.objectNode();
    p.set("hash", hash);
    p.set("range_column_ids", rids);
    ArrayNode ranges = p.putArray("ranges");
    for (int i = 0; i < parts.size(); i++) {
      Object[] r = parts.get(i);
      ObjectNode n = ranges.addObject();
      n.put("id", i);
      n.put("lower", r[0] == null ? null : HexFormat.of().formatHex((byte[]) r[0]));
      n.put("upper", r[1] == null ? null : HexFormat.of().formatHex((byte[]) r[1]));
      n.set("lower_values", r[2] == null ? F.nullNode() : (JsonNode) r[2]);
      n.set("upper_values", r[3] == null ? F.nullNode() : (JsonNode) r[3]);
    }
    p.put("next_range_id", parts.size());
    return p;
  }

  static int bucketCount(Transform tr) {
    if (tr instanceof BucketTransform b) return (Integer) b.numBuckets().value();
    for (Expression e : tr.arguments())
      if (e instanceof org.apache.spark.sql.connector.expressions.Literal<?> l && l.value() instanceof Integer i) return i;
    throw new PartitionSchemaError("bucket(n, columns...) needs a number of buckets: " + tr.describe());
  }

  /** The range partitions [lower, upper) as (lower key, upper key, lower values, upper values),
   *  from TBLPROPERTIES' JSON bounds and splits, as the engine's {@code partition.resolve}. */
  static List<Object[]> ranges(List<String> cols, List<ColumnType> types, String bounds, String splits) {
    List<Object[]> parts = new ArrayList<>();
    JsonNode b = bounds == null ? null : parse(bounds, RANGE_BOUNDS);
    if (b == null || b.isEmpty()) {
      parts.add(new Object[4]);
    } else {
      if (!b.isArray()) throw new PartitionSchemaError("range_bounds must be a JSON list of [lower, upper] pairs, got " + bounds);
      for (JsonNode pair : b) {
        if (!pair.isArray() || pair.size() != 2)
          throw new PartitionSchemaError("each range bound is a [lower, upper] pair, got " + pair);
        Object[] lo = bound(cols, types, pair.get(0), "lower bound");
        Object[] hi = bound(cols, types, pair.get(1), "upper bound");
        if (lo[0] != null && hi[0] != null && Arrays.compareUnsigned((byte[]) lo[0], (byte[]) hi[0]) >= 0)
          throw new PartitionSchemaError("range bound " + pair + ": lower must be below upper");
        parts.add(new Object[] {lo[0], hi[0], lo[1], hi[1]});
      }
      parts.sort((x, y) -> x[0] == null ? (y[0] == null ? 0 : -1) : y[0] == null ? 1 : Arrays.compareUnsigned((byte[]) x[0], (byte[]) y[0]));
      for (int i = 0; i + 1 < parts.size(); i++) {
        Object[] x = parts.get(i), y = parts.get(i + 1);
        if (x[1] == null || y[0] == null || Arrays.compareUnsigned((byte[]) x[1], (byte[]) y[0]) > 0)
          throw new PartitionSchemaError("range bounds overlap: [" + x[2] + ", " + x[3] + ") and [" + y[2] + ", " + y[3] + ")");
      }
    }
    JsonNode s = splits == null ? null : parse(splits, RANGE_SPLITS);
    if (s != null && !s.isArray()) throw new PartitionSchemaError("range_splits must be a JSON list of split points, got " + splits);
    for (JsonNode split : s == null ? F.arrayNode() : s) {
      Object[] k = bound(cols, types, split, "split");
      if (k[0] == null) throw new PartitionSchemaError("a split point cannot be null");
      byte[] sk = (byte[]) k[0];
      boolean cut = false;
      for (int i = 0; i < parts.size() && !cut; i++) {
        Object[] r = parts.get(i);
        if ((r[0] == null || Arrays.compareUnsigned((byte[]) r[0], sk) < 0) && (r[1] == null || Arrays.compareUnsigned(sk, (byte[]) r[1]) < 0)) {
          parts.set(i, new Object[] {r[0], sk, r[2], k[1]});
          parts.add(i + 1, new Object[] {sk, r[1], k[1], r[3]});
          cut = true;
        }
      }
      if (!cut) throw new PartitionSchemaError("split " + split + " is not strictly inside any range bound");
    }
    return parts;
  }

  /** One bound: a value (one range column) or a list of values, in §2.2's JSON encoding; null unbounded. */
  static Object[] bound(List<String> cols, List<ColumnType> types, JsonNode v, String what) {
    if (v == null || v.isNull()) return new Object[2];
    JsonNode vals = v;
    if (cols.size() == 1 && !v.isArray()) {
      vals = F.arrayNode().add(v);
    }
    if (!vals.isArray() || vals.size() != cols.size())
      throw new PartitionSchemaError(what + " " + v + " must give " + cols.size() + " value(s), one per range column " + cols);
    List<Object> domain = new ArrayList<>();
    ArrayNode canonical = F.arrayNode();
    for (int i = 0; i < cols.size(); i++) {
      JsonNode x = vals.get(i);
      if (x.isNull()) throw new PartitionSchemaError(what + " " + v + " has a NULL; use null for the whole bound instead");
      String w = what + " for '" + cols.get(i) + "'";
      Object d;
      try {
        d = Values.fromJson(types.get(i), x, w);
      } catch (SchemaError e) {
        throw new PartitionSchemaError(e.getMessage());
      }
      domain.add(d);
      canonical.add(Values.toJson(types.get(i), d, w));
    }
    return new Object[] {KeyEncoder.encode(domain, types, true), canonical};
  }

  static JsonNode parse(String text, String key) {
    try {
      return Json.MAPPER.readTree(text);
    } catch (java.io.IOException e) {
      throw new PartitionSchemaError("table property " + key + " is not JSON: " + e.getMessage());
    }
  }

  // ---- properties (§8.2) ----

  /** §14's rules, as the engine's check_sequence_column: an existing column, not in the key,
   *  non-null, of a type with a total order. */
  static void checkSequenceColumn(ObjectNode schema, String name) {
    JsonNode col = null;
    List<String> names = new ArrayList<>();
    for (JsonNode c : schema.get("columns")) {
      names.add(c.get("name").asText());
      if (c.get("name").asText().equals(name)) col = c;
    }
    if (col == null) throw new SequenceColumnError("sequence_column '" + name + "' is not a column; columns are " + names);
    for (JsonNode k : schema.get("primary_key"))
      if (k.asText().equals(name))
        throw new SequenceColumnError("sequence_column '" + name + "' is a primary key column; a key never changes, "
            + "so it cannot order the versions of a row");
    String kind = ColumnType.parse(col.get("type").asText()).kind();
    if (!ORDERABLE_KINDS.contains(kind))
      throw new SequenceColumnError("sequence_column '" + name + "' is " + col.get("type").asText() + "; it must be one of "
          + String.join(", ", ORDERABLE_KINDS) + " (a type with a total order)");
    if (col.path("nullable").asBoolean(true))
      throw new SequenceColumnError("sequence_column '" + name + "' is nullable; a row without a sequence cannot be "
          + "ordered (make the column non-null)");
  }

  static final List<String> ORDERABLE_KINDS = List.of("int8", "int16", "int32", "int64", "date", "unixtime_micros", "decimal");

  static ObjectNode properties(Map<String, String> own, ObjectNode schema) {
    ObjectNode p = F.objectNode();
    PROPERTIES.forEach((k, v) -> p.put(k, v[0]));
    for (var e : own.entrySet()) {
      String k = e.getKey();
      if (k.equals("sequence_column")) {
        checkSequenceColumn(schema, e.getValue());
        p.put(k, e.getValue());
        continue;
      }
      long[] spec = PROPERTIES.get(k);
      if (spec == null)
        throw new InvalidOptionError("unknown table property '" + k + "'; known: " + String.join(", ", PROPERTIES.keySet())
            + ", sequence_column, and in CREATE TABLE " + PRIMARY_KEY + ", " + RANGE_BOUNDS + ", " + RANGE_SPLITS
            + ", column.<name>.encoding, column.<name>.compression");
      long v;
      try {
        v = Long.parseLong(e.getValue().strip());
      } catch (NumberFormatException x) {
        v = Long.MIN_VALUE;
      }
      if (v < spec[1] || v > spec[2])
        throw new InvalidOptionError("table property " + k + " must be an integer in [" + spec[1] + ", " + spec[2] + "], got '" + e.getValue() + "'");
      p.put(k, v);
    }
    return p;
  }
}
