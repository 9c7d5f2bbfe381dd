package tableformat.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.TableChange;
import tableformat.log.InvalidOptionError;
import tableformat.log.PartitionSchemaError;
import tableformat.log.SchemaError;
import tableformat.log.TableState;
import tableformat.plan.ColumnType;

/**
 * An ALTER TABLE as the action of one {@code alter} commit (specs/format.md §11, §17): the complete
 * new definition (the committer removes the rowsets of a dropped range partition). The
 * engine's {@code AlterTable} rules: column IDs never reused, key columns never dropped, a non-null
 * added column needs a default, which older rows read; ranges added without overlap, dropped by
 * their exact bounds.
 */
final class AlterDefinition {
  private AlterDefinition() {}

  /** ALTER ... SET TBLPROPERTIES keys that change the range partitions rather than a property. */
  static final String ADD_RANGE = "add_range_partition";
  static final String DROP_RANGE = "drop_range_partition";
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  static ObjectNode apply(TableState state, TableChange[] changes) {
    ObjectNode schema = state.schema().deepCopy();
    ObjectNode partitioning = state.partitioning().deepCopy();
    ObjectNode properties = state.properties() == null ? F.objectNode() : (ObjectNode) state.properties().deepCopy();
    for (TableChange c : changes) {
      if (c instanceof TableChange.AddColumn a) addColumn(schema, a);
      else if (c instanceof TableChange.RenameColumn r) renameColumn(schema, properties, one(r.fieldNames()), r.newName());
      else if (c instanceof TableChange.DeleteColumn d) dropColumn(schema, properties, one(d.fieldNames()), d.ifExists());
      else if (c instanceof TableChange.SetProperty p) setProperty(schema, partitioning, properties, p.property(), p.value());
      else if (c instanceof TableChange.RemoveProperty p) removeProperty(properties, p.property());
      else throw new SchemaError("ALTER TABLE " + c.getClass().getSimpleName() + " is not supported: a table takes ADD, RENAME and "
          + "DROP COLUMN, SET and UNSET TBLPROPERTIES, and add_range_partition / drop_range_partition (specs/format.md §17); "
          + "types, nullability and the key never change");
    }
    ObjectNode alter = F.objectNode();
    alter.put("name", state.name());
    alter.set("schema", schema);
    alter.set("partitioning", partitioning);
    alter.set("properties", properties);
    ObjectNode action = F.objectNode();
    action.set("alter", alter);
    return action;       // the committer removes the rowsets of dropped tablets (§11)
  }

  private static String one(String[] fieldNames) {
    if (fieldNames.length != 1) throw new SchemaError("column " + String.join(".", fieldNames) + ": a table has no nested columns");
    return fieldNames[0];
  }

  private static ObjectNode column(ObjectNode schema, String name) {
    for (JsonNode c : schema.get("columns")) if (c.get("name").asText().equals(name)) return (ObjectNode) c;
    return null;
  }

  private static ObjectNode require(ObjectNode schema, String name) {
    ObjectNode c = column(schema, name);
    if (c == null) {
      List<String> names = new ArrayList<>();
      schema.get("columns").forEach(x -> names.add(x.get("name").asText()));
      throw new tableformat.log.ColumnNotFoundError("column '" + name + "' is not in the schema; columns are " + names);
    }
    return c;
  }

  private static boolean isKey(ObjectNode schema, String name) {
    for (JsonNode k : schema.get("primary_key")) if (k.asText().equals(name)) return true;
    return false;
  }

  static void addColumn(ObjectNode schema, TableChange.AddColumn a) {
    String name = TableDefinition.identifier(one(a.fieldNames()), "column");
    if (column(schema, name) != null) throw new SchemaError("column '" + name + "' already exists");
    if (schema.get("columns").size() + 1 > TableDefinition.MAX_COLUMNS)
      throw new SchemaError("a table has at most " + TableDefinition.MAX_COLUMNS + " columns");
    if (a.position() != null)
      throw new SchemaError("ADD COLUMN ... FIRST / AFTER is not supported: a new column comes last");
    Column spark = Column.create(name, a.dataType(), a.isNullable(), a.comment(), a.defaultValue(), null);
    String type = TableDefinition.typeName(spark);
    ColumnType t = ColumnType.parse(type);
    JsonNode dflt = TableDefinition.defaultValue(spark, t);
    if (!a.isNullable() && dflt.isNull())
      throw new SchemaError("a non-null column '" + name + "' needs a DEFAULT for the rows that already exist");
    int id = schema.get("next_column_id").asInt();
    ObjectNode col = ((ArrayNode) schema.get("columns")).addObject();
    col.put("id", id);
    col.put("name", name);
    col.put("type", type);
    col.put("nullable", a.isNullable());
    col.set("default", dflt);
    col.put("encoding", TableDefinition.defaultEncoding(t));
    col.put("compression", "lz4");
    col.set("read_default", dflt);       // what rows written before the column read (§11)
    schema.put("next_column_id", id + 1);
  }

  static void renameColumn(ObjectNode schema, ObjectNode properties, String old, String name) {
    ObjectNode c = require(schema, old);
    TableDefinition.identifier(name, "column");
    if (column(schema, name) != null) throw new SchemaError("column '" + name + "' already exists");
    c.put("name", name);
    ArrayNode pk = (ArrayNode) schema.get("primary_key");      // key columns are stored by name (§2)
    for (int i = 0; i < pk.size(); i++) if (pk.get(i).asText().equals(old)) pk.set(i, F.textNode(name));
    if (properties.path("sequence_column").asText("").equals(old))
      properties.put("sequence_column", name);                  // the property follows its column (§14)
  }

  static void dropColumn(ObjectNode schema, ObjectNode properties, String name, boolean ifExists) {
    if (column(schema, name) == null && ifExists) return;
    require(schema, name);
    if (isKey(schema, name)) throw new SchemaError("column '" + name + "' is in the primary key and cannot be dropped");
    if (properties.has("sequence_column") && properties.get("sequence_column").asText().equals(name))
      throw new tableformat.log.SequenceColumnError("column '" + name + "' is the table's sequence_column; unset it first");
    ArrayNode cols = (ArrayNode) schema.get("columns");
    for (int i = 0; i < cols.size(); i++) if (cols.get(i).get("name").asText().equals(name)) { cols.remove(i); break; }
  }

  static void setProperty(ObjectNode schema, ObjectNode partitioning, ObjectNode properties, String key, String value) {
    if (key.equals(ADD_RANGE) || key.equals(DROP_RANGE)) {
      JsonNode pair = TableDefinition.parse(value, key);
      if (!pair.isArray() || pair.size() != 2)
        throw new PartitionSchemaError(key + " takes a JSON [lower, upper] pair (null: unbounded), got " + value);
      rangePartition(schema, partitioning, key.equals(ADD_RANGE), pair);
      return;
    }
    if (key.equals("sequence_column"))
      throw new InvalidOptionError("sequence_column is set through the engine (Table.alter().set_property), which checks "
          + "its ordering rules (specs/format.md §14)");
    if (key.equals(org.apache.spark.sql.connector.catalog.TableCatalog.PROP_COMMENT)
        || key.equals(org.apache.spark.sql.connector.catalog.TableCatalog.PROP_OWNER)) return;   // Spark's own
    ObjectNode one = TableDefinition.properties(Map.of(key, value), schema);
    properties.set(key, one.get(key));
  }

  static void removeProperty(ObjectNode properties, String key) {
    long[] spec = TableDefinition.PROPERTIES.get(key);
    if (spec != null) properties.put(key, spec[0]);
    else if (key.equals("sequence_column")) throw new InvalidOptionError("sequence_column is unset through the engine");
    else throw new InvalidOptionError("unknown table property '" + key + "'; known: " + String.join(", ", TableDefinition.PROPERTIES.keySet()));
  }

  static void rangePartition(ObjectNode schema, ObjectNode partitioning, boolean add, JsonNode pair) {
    List<String> cols = new ArrayList<>();
    List<ColumnType> types = new ArrayList<>();
    for (JsonNode id : partitioning.get("range_column_ids"))
      for (JsonNode c : schema.get("columns"))
        if (c.get("id").asInt() == id.asInt()) {
          cols.add(c.get("name").asText());
          types.add(ColumnType.parse(c.get("type").asText()));
        }
    Object[] lo = TableDefinition.bound(cols, types, pair.get(0), "lower bound");
    Object[] hi = TableDefinition.bound(cols, types, pair.get(1), "upper bound");
    byte[] l = (byte[]) lo[0], h = (byte[]) hi[0];
    if (l != null && h != null && Arrays.compareUnsigned(l, h) >= 0)
      throw new PartitionSchemaError("range partition " + pair + ": lower must be below upper");
    ArrayNode ranges = (ArrayNode) partitioning.get("ranges");
    if (!add) {
      for (int i = 0; i < ranges.size(); i++)
        if (same(ranges.get(i).get("lower"), l) && same(ranges.get(i).get("upper"), h)) {
          ranges.remove(i);
          return;
        }
      throw new PartitionSchemaError("there is no range partition " + pair);
    }
    for (JsonNode r : ranges) {
      byte[] rl = hex(r.get("lower")), rh = hex(r.get("upper"));
      boolean overlap = (l == null || rh == null || Arrays.compareUnsigned(l, rh) < 0)
          && (rl == null || h == null || Arrays.compareUnsigned(rl, h) < 0);
      if (overlap)
        throw new PartitionSchemaError("range partition " + pair + " overlaps the existing range partition ["
            + r.get("lower_values") + ", " + r.get("upper_values") + ") (an open end reaches to -inf/+inf; drop or narrow that one first)");
    }
    int id = partitioning.get("next_range_id").asInt();
    ObjectNode n = F.objectNode();
    n.put("id", id);
    n.put("lower", l == null ? null : HexFormat.of().formatHex(l));
    n.put("upper", h == null ? null : HexFormat.of().formatHex(h));
    n.set("lower_values", lo[1] == null ? F.nullNode() : (JsonNode) lo[1]);
    n.set("upper_values", hi[1] == null ? F.nullNode() : (JsonNode) hi[1]);
    List<JsonNode> all = new ArrayList<>();
    ranges.forEach(all::add);
    all.add(n);
    all.sort((x, y) -> {
      byte[] a = hex(x.get("lower")), b = hex(y.get("lower"));
      return a == null ? (b == null ? 0 : -1) : b == null ? 1 : Arrays.compareUnsigned(a, b);
    });
    ranges.removeAll();
    all.forEach(ranges::add);
    partitioning.put("next_range_id", id + 1);
  }

  private static byte[] hex(JsonNode n) {
    return n == null || n.isNull() ? null : HexFormat.of().parseHex(n.asText());
  }

  private static boolean same(JsonNode stored, byte[] b) {
    byte[] s = hex(stored);
    return s == null ? b == null : b != null && Arrays.equals(s, b);
  }
}
