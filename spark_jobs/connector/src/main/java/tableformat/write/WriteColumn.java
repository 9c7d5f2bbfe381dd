package tableformat.write;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.Serializable;
import tableformat.plan.ColumnType;

/**
 * A column as a writer needs it (specs/format.md §2): ID, name, type, nullability, and its Kudu
 * encoding and compression, which pick the base file's Parquet encoding and codec (§5).
 */
public record WriteColumn(int id, String name, ColumnType type, boolean nullable, String encoding,
                          String compression) implements Serializable {
  static WriteColumn of(JsonNode d) {
    return new WriteColumn(d.get("id").asInt(), d.get("name").asText(), ColumnType.parse(d.get("type").asText()),
        d.path("nullable").asBoolean(true), d.path("encoding").asText("plain"),
        d.path("compression").asText("none"));
  }

  /** The Parquet field name of the column (§5). */
  public String field() {
    return "c" + id;
  }
}
