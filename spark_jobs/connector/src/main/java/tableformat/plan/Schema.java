package tableformat.plan;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tableformat.log.UnknownScanColumnError;

/** The schema of one version (§2): columns in order, by name and ID, and the primary key. */
public final class Schema {
  public final List<Column> columns = new ArrayList<>();
  public final List<Column> key = new ArrayList<>();
  private final Map<String, Column> byName = new LinkedHashMap<>();
  private final Map<Integer, Column> byId = new LinkedHashMap<>();

  public Schema(JsonNode d) {
    for (JsonNode c : d.get("columns")) {
      Column col = Column.of(c);
      columns.add(col);
      byName.put(col.name(), col);
      byId.put(col.id(), col);
    }
    for (JsonNode k : d.get("primary_key")) key.add(byName.get(k.asText()));
  }

  public Column column(String name) {
    Column c = byName.get(name);
    if (c == null) throw new UnknownScanColumnError("unknown column '" + name + "'; columns are " + byName.keySet());
    return c;
  }

  public boolean has(String name) {
    return byName.containsKey(name);
  }

  public Column byId(int id) {
    return byId.get(id);
  }
}
