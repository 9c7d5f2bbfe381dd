package tableformat.log;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The table as of one version (specs/format.md §8.3): definition (schema, partitioning and
 * properties kept as their JSON), the live rowsets in log order, their delta files in commit
 * order, the history horizon and GC mark, and tags. {@code readTs} is set on a version read from
 * a later version's files (behind the horizon, §12): the cut of UNDO and REDO records.
 * Built by {@link Replay}; callers only read it.
 */
public final class TableState {
  long version;
  long timestamp;
  String tableId;
  String name;
  JsonNode schema;
  JsonNode partitioning;
  JsonNode properties;
  int formatVersion;
  /** Not stored: the highest format version the log declared up to this version (its commits, or
   *  the checkpoint it was read from): what a reader must support. */
  int logFormat;
  final LinkedHashMap<String, RowSet> rowsets = new LinkedHashMap<>();
  final LinkedHashMap<String, List<DeltaFile>> deltas = new LinkedHashMap<>();
  long historyHorizon;
  long historyGcTs;
  final LinkedHashMap<String, long[]> tags = new LinkedHashMap<>();
  /** (v6) app id -> the newest transaction version a {@code txn} action recorded for it (§8.2). */
  final LinkedHashMap<String, Long> txns = new LinkedHashMap<>();
  Long readTs;

  TableState() {}

  TableState copy() {
    TableState s = new TableState();
    s.version = version;
    s.timestamp = timestamp;
    s.tableId = tableId;
    s.name = name;
    s.schema = schema;
    s.partitioning = partitioning;
    s.properties = properties;
    s.formatVersion = formatVersion;
    s.logFormat = logFormat;
    s.rowsets.putAll(rowsets);
    for (Map.Entry<String, List<DeltaFile>> e : deltas.entrySet()) s.deltas.put(e.getKey(), new ArrayList<>(e.getValue()));
    s.historyHorizon = historyHorizon;
    s.historyGcTs = historyGcTs;
    s.tags.putAll(tags);
    s.txns.putAll(txns);
    s.readTs = readTs;
    return s;
  }

  /** The definition fields of version 0's {@code metadata} action or a checkpoint's state. */
  void define(JsonNode d) {
    tableId = Fields.text(d, "table_id");
    name = Fields.text(d, "name");
    schema = Fields.get(d, "schema");
    partitioning = Fields.get(d, "partitioning");
    properties = Fields.get(d, "properties");
    formatVersion = (int) Fields.integer(d, "format_version");
  }

  public long version() { return version; }
  public long timestamp() { return timestamp; }
  public String tableId() { return tableId; }
  public String name() { return name; }
  public JsonNode schema() { return schema; }
  public JsonNode partitioning() { return partitioning; }
  public JsonNode properties() { return properties; }
  public int formatVersion() { return formatVersion; }
  public int logFormat() { return Math.max(logFormat, formatVersion); }
  public long historyHorizon() { return historyHorizon; }
  public long historyGcTs() { return historyGcTs; }
  public Long readTs() { return readTs; }

  /** The live rowsets, in the order the log added them (a replaced descriptor keeps its place). */
  public List<RowSet> rowsets() { return List.copyOf(rowsets.values()); }

  /** A rowset's delta files, in commit order. */
  public List<DeltaFile> deltasOf(String rowsetId) {
    List<DeltaFile> d = deltas.get(rowsetId);
    return d == null ? List.of() : Collections.unmodifiableList(d);
  }

  /** Tags: name -> (version, timestamp). */
  public Map<String, long[]> tags() { return Collections.unmodifiableMap(tags); }

  /** Application transactions: app id -> newest version recorded (§8.2 {@code txn}). */
  public Map<String, Long> txns() { return Collections.unmodifiableMap(txns); }

  /** The newest transaction version recorded for {@code appId}; -1 if none (Python's txn_version). */
  public long txnVersion(String appId) { return txns.getOrDefault(appId, -1L); }

  /** A live rowset by id, or null. */
  public RowSet rowset(String id) { return rowsets.get(id); }

  public boolean isTagged(long v) {
    for (long[] t : tags.values()) if (t[0] == v) return true;
    return false;
  }

  /** {@code history_max_age} in seconds (default a week; -1 keeps history forever). */
  public long historyMaxAge() {
    JsonNode v = properties.get("history_max_age");
    return v == null ? 7L * 24 * 3600 : v.asLong();
  }
}
