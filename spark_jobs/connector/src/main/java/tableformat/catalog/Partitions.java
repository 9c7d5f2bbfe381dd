package tableformat.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import tableformat.log.TableState;
import tableformat.plan.Schema;

/** The table's partitioning (§4) in words, for DESCRIBE: hash components, range columns and ranges. */
final class Partitions {
  private Partitions() {}

  static String describe(TableState state) {
    Schema schema = new Schema(state.schema());
    JsonNode p = state.partitioning();
    List<String> parts = new ArrayList<>();
    for (JsonNode h : p.path("hash"))
      parts.add("hash(" + names(schema, h.path("column_ids")) + ") into " + h.path("buckets").asInt() + " buckets");
    JsonNode range = p.path("range_column_ids");
    if (range.size() > 0) parts.add("range(" + names(schema, range) + ") with " + p.path("ranges").size() + " ranges");
    return parts.isEmpty() ? "none" : String.join("; ", parts);
  }

  private static String names(Schema schema, JsonNode ids) {
    List<String> out = new ArrayList<>();
    for (JsonNode id : ids) {
      var c = schema.byId(id.asInt());
      out.add(c == null ? "#" + id.asInt() : c.name());
    }
    return String.join(", ", out);
  }
}
