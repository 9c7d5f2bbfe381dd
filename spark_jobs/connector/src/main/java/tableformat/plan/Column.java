package tableformat.plan;

import com.fasterxml.jackson.databind.JsonNode;

/** A column of the schema (§2): ID, name, type and read default (JSON value encoding, §2.2). */
public record Column(int id, String name, ColumnType type, JsonNode readDefault) {
  static Column of(JsonNode d) {
    JsonNode rd = d.get("read_default");
    return new Column(d.get("id").asInt(), d.get("name").asText(), ColumnType.parse(d.get("type").asText()),
        rd == null || rd.isNull() ? null : rd);
  }
}
