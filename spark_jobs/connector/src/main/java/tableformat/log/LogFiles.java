package tableformat.log;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * Log files as a writer makes them (specs/format.md §8.1, §8.3): the checksum over the canonical
 * serialization the reader checks ({@link Checksum}), the file's text in that same canonical form
 * (ASCII, keys sorted: a reader's parse gives back exactly the values summed), and a checkpoint's
 * state and history as Python's {@code TableState.to_json} / {@code CommitInfo.to_json} write them.
 */
public final class LogFiles {
  private LogFiles() {}

  /** The lowest format version any writer declares (Python's WRITE_FORMAT_FLOOR), and the newest. */
  public static final int WRITE_FORMAT_FLOOR = 5, TXN_FORMAT_VERSION = 6;
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /** {@code min(FORMAT_VERSION, max(floor, needed...))}: Python's written_format_version. */
  public static int writtenFormatVersion(int... needed) {
    int v = WRITE_FORMAT_FLOOR;
    for (int n : needed) v = Math.max(v, n);
    return Math.min(LogReader.FORMAT_VERSION, v);
  }

  /** The file's bytes with its {@code checksum} member set (format 3 and later: the whole file). */
  public static byte[] sealed(ObjectNode file) {
    file.remove("checksum");
    file.put("checksum", Checksum.expected(file, "actions"));
    return CanonicalJson.write(file).getBytes(StandardCharsets.US_ASCII);
  }

  /** A checkpoint of {@code state} (version v) with the history up to it (§8.3), sealed. */
  public static byte[] checkpoint(TableState state, List<CommitInfo> history) {
    ObjectNode d = F.objectNode();
    d.put("format_version", writtenFormatVersion(state.formatVersion, state.logFormat,
        state.txns.isEmpty() ? 0 : TXN_FORMAT_VERSION));
    d.put("version", state.version);
    d.set("state", stateJson(state));
    ArrayNode h = d.putArray("history");
    for (CommitInfo c : history) {
      ArrayNode e = h.addArray();
      e.add(c.version()).add(c.timestamp()).add(c.operation());
      e.add(c.counts() == null || c.counts().isNull() ? F.objectNode() : c.counts());
      if (c.readVersion() == null) e.addNull(); else e.add(c.readVersion());
    }
    return sealed(d);
  }

  /** Python's TableState.to_json. */
  static ObjectNode stateJson(TableState s) {
    ObjectNode d = F.objectNode();
    d.put("format_version", s.formatVersion);
    d.put("version", s.version);
    d.put("timestamp", s.timestamp);
    d.put("table_id", s.tableId);
    d.put("name", s.name);
    d.set("schema", s.schema);
    d.set("partitioning", s.partitioning);
    d.set("properties", s.properties);
    ArrayNode rs = d.putArray("rowsets");
    for (RowSet r : s.rowsets.values()) rs.add(rowsetJson(r));
    ArrayNode ds = d.putArray("deltas");
    for (List<DeltaFile> l : s.deltas.values()) for (DeltaFile f : l) ds.add(deltaJson(f));
    d.put("history_horizon", s.historyHorizon);
    d.put("history_gc_ts", s.historyGcTs);
    if (!s.tags.isEmpty()) {
      ObjectNode t = d.putObject("tags");
      for (Map.Entry<String, long[]> e : s.tags.entrySet()) t.putArray(e.getKey()).add(e.getValue()[0]).add(e.getValue()[1]);
    }
    if (!s.txns.isEmpty()) {
      ObjectNode t = d.putObject("txns");
      for (Map.Entry<String, Long> e : s.txns.entrySet()) t.put(e.getKey(), e.getValue());
    }
    return d;
  }

  /** Python's RowSetMeta.to_json. */
  public static ObjectNode rowsetJson(RowSet r) {
    ObjectNode d = F.objectNode();
    d.put("id", r.id());
    d.put("tablet", r.tablet());
    d.put("num_rows", r.numRows());
    d.put("min_key", java.util.HexFormat.of().formatHex(r.minKey()));
    d.put("max_key", java.util.HexFormat.of().formatHex(r.maxKey()));
    ArrayNode base = d.putArray("base");
    for (FileRef f : r.base()) base.add(fileJson(f));
    d.set("pk_index", fileJson(r.pkIndex()));
    if (r.bloom() != null) d.set("bloom", fileJson(r.bloom()));
    d.set("stats", r.stats() == null || r.stats().isMissingNode() || r.stats().isNull() ? F.objectNode() : r.stats());
    if (r.createdTs() != null) d.put("created_ts", r.createdTs());
    if (r.liveUntil() != null) d.put("live_until", r.liveUntil());
    return d;
  }

  static ObjectNode fileJson(FileRef f) {
    ObjectNode d = F.objectNode();
    d.put("path", f.path());
    d.put("size", f.size());
    if (!f.columnIds().isEmpty()) {
      ArrayNode ids = d.putArray("column_ids");
      for (int i : f.columnIds()) ids.add(i);
    }
    if (f.crc32() != null) d.put("crc32", f.crc32());
    return d;
  }

  /** Python's DeltaFileMeta.to_json. */
  static ObjectNode deltaJson(DeltaFile f) {
    ObjectNode d = F.objectNode();
    d.put("path", f.path());
    d.put("size", f.size());
    d.put("kind", f.kind());
    d.put("rowset", f.rowset());
    d.put("num_records", f.numRecords());
    d.put("delete_count", f.deleteCount());
    d.put("reinsert_count", f.reinsertCount());
    ObjectNode uc = d.putObject("update_counts");
    for (Map.Entry<Integer, Long> e : f.updateCounts().entrySet()) uc.put(Integer.toString(e.getKey()), e.getValue());
    d.put("min_ts", f.minTs());
    d.put("max_ts", f.maxTs());
    d.put("has_ts_column", f.hasTsColumn());
    if (f.crc32() != null) d.put("crc32", f.crc32());
    return d;
  }

}
