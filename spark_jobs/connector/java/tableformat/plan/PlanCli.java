package tableformat.plan;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import tableformat.log.AsOf;
import tableformat.log.Json;
import tableformat.log.LogReader;
import tableformat.log.LogStore;
import tableformat.log.Mvcc;
import tableformat.log.TableFormatError;

/**
 * The JVM planner from the command line, for tests and tools: one JSON request a line on stdin
 * ({@code {"table": uri, "as_of": str|null, "columns": [..]|null, "filter": ..., "seek": bool}}; seek:
 * also seek PK indexes, as the engine's scan does), one JSON
 * answer a line on stdout: the plan ({@link PlanJson}) or {@code {"error": name, "message": ...}}
 * with the engine's error name. {@code {"canonical": <json text>}} answers the canonical
 * serialization and CRC-32 of a value instead (specs/format.md §8.1).
 */
public final class PlanCli {
  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isBlank()) continue;
      System.out.println(Json.write(answer(Json.MAPPER.readTree(line), conf)));
      System.out.flush();
    }
  }

  static JsonNode answer(JsonNode req, Configuration conf) {
    ObjectNode out = Json.MAPPER.createObjectNode();
    try {
      if (req.has("canonical")) {
        JsonNode value = Json.parse(req.get("canonical").asText().getBytes(StandardCharsets.UTF_8), "value");
        out.put("text", tableformat.log.CanonicalJson.write(value));
        out.put("crc32", tableformat.log.Checksum.crc32(value));
        return out;
      }
      LogStore store = new LogStore(req.get("table").asText(), conf);
      JsonNode asOf = req.get("as_of");
      AsOf a = asOf == null || asOf.isNull() ? null : AsOf.parse(asOf.asText());
      var state = Mvcc.stateAt(new LogReader(store), a);
      List<String> columns = null;
      JsonNode c = req.get("columns");
      if (c != null && !c.isNull()) {
        columns = new ArrayList<>();
        for (JsonNode n : c) columns.add(n.asText());
      }
      KeySeek seek = req.path("seek").asBoolean(false) ? new PkIndexSeek(store) : null;
      return PlanJson.of(store, Planner.plan(state, columns, req.get("filter"), seek));
    } catch (TableFormatError e) {
      out.put("error", e.errorName());
      out.put("message", e.getMessage());
      return out;
    } catch (RuntimeException e) {           // not the engine's: an I/O failure, a bug; said, not fatal
      out.put("error", e.getClass().getName());
      out.put("message", String.valueOf(e.getMessage()));
      return out;
    }
  }
}
