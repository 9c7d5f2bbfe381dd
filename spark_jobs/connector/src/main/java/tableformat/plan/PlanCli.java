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
import tableformat.log.LogCache;
import tableformat.log.LogReader;
import tableformat.log.LogStore;
import tableformat.log.Mvcc;
import tableformat.log.TableFormatError;

/**
 * The JVM planner from the command line, for tests and tools: one JSON request a line on stdin
 * ({@code {"table": uri, "as_of": str|null, "columns": [..]|null, "filter": ..., "seek": bool}}; seek:
 * also seek PK indexes, as the engine's scan does), one JSON
 * answer a line on stdout: the plan ({@link PlanJson}) or {@code {"error": name, "message": ...}}
 * with the engine's error name; with {@code "summary": true} only the version, the rowset count and
 * the milliseconds of each step (open, plan, the plan's JSON tree: what a Spark scan pays) and the
 * thread's CPU milliseconds for them (for
 * benchmarks/bench_spark_sql.py). {@code {"canonical": <json text>}} answers the canonical
 * serialization and CRC-32 of a value instead (specs/format.md §8.1). With {@code "warm": true} the
 * table's log is read through this process's {@link LogCache} (what earlier requests read is kept),
 * and the answer says the listings and file reads opening the table cost
 * ({@code log_lists}, {@code log_reads}).
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

  private static List<String> columns(JsonNode c) {
    if (c == null || c.isNull()) return null;
    List<String> columns = new ArrayList<>();
    for (JsonNode n : c) columns.add(n.asText());
    return columns;
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
      java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
      long c0 = mx.getCurrentThreadCpuTime(), t0 = System.nanoTime();
      LogStore store = new LogStore(req.get("table").asText(), conf);
      JsonNode asOf = req.get("as_of");
      AsOf a = asOf == null || asOf.isNull() ? null : AsOf.parse(asOf.asText());
      long lists = LogStore.allLists(), reads = LogStore.allReads();
      boolean warm = req.path("warm").asBoolean(false);
      var state = Mvcc.stateAt(warm ? LogCache.reader(req.get("table").asText(), conf) : new LogReader(store), a);
      lists = LogStore.allLists() - lists;
      reads = LogStore.allReads() - reads;
      long t1 = System.nanoTime();
      KeySeek seek = req.path("seek").asBoolean(false) ? new PkIndexSeek(store) : null;
      Planner.ReadPlan plan = Planner.plan(state, columns(req.get("columns")), req.get("filter"), seek);
      long t2 = System.nanoTime();
      ObjectNode json = PlanJson.of(store, plan);
      if (warm) {                               // what opening the table cost: listings and reads of the log
        json.put("log_lists", lists);
        json.put("log_reads", reads);
      }
      if (!req.path("summary").asBoolean(false)) return json;
      long t3 = System.nanoTime(), c3 = mx.getCurrentThreadCpuTime();
      out.put("version", state.version());
      out.put("rowsets", plan.rowsets().size());
      ObjectNode ms = out.putObject("ms");
      ms.put("open", (t1 - t0) / 1e6);
      ms.put("plan", (t2 - t1) / 1e6);
      ms.put("plan_json", (t3 - t2) / 1e6);
      ms.put("cpu", (c3 - c0) / 1e6);          // this thread's CPU time for all three (the machine may be shared)
      return out;
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
