package tableformat.log;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Log replay (specs/format.md §8.2): a commit's actions folded into the state before it, and a
 * checkpoint's state read back. An action that does not fit its state (a delta of an unknown
 * rowset, a tag added twice, an unknown action) is a corrupt log.
 */
public final class Replay {
  private Replay() {}

  /** The state after {@code commit} (version {@code prev.version + 1}; prev null for version 0). */
  public static TableState apply(TableState prev, JsonNode commit, String path) {
    long version = Fields.integer(commit, "version");
    long ts = Fields.integer(commit, "timestamp");
    TableState s;
    if (prev == null) {
      JsonNode meta = null;
      for (JsonNode a : Fields.get(commit, "actions")) if (a.has("metadata")) meta = a.get("metadata");
      if (meta == null) throw new CorruptFileError(path + ": version 0 has no metadata action");
      s = new TableState();
      s.define(meta);
    } else {
      if (version != prev.version + 1)
        throw new CorruptFileError(path + ": expected version " + (prev.version + 1) + ", found " + version);
      s = prev.copy();
    }
    try {
      for (JsonNode a : Fields.get(commit, "actions")) action(s, a, ts, path);
    } catch (CorruptFileError e) {
      throw e.getMessage().startsWith(path) ? e : new CorruptFileError(path + ": " + e.getMessage());
    }
    s.version = version;
    s.timestamp = ts;
    return s;
  }

  private static void action(TableState s, JsonNode a, long ts, String path) {
    if (!a.isObject() || a.size() != 1) throw new CorruptFileError(path + ": malformed log action " + a);
    Map.Entry<String, JsonNode> e = a.fields().next();
    JsonNode b = e.getValue();
    switch (e.getKey()) {
      case "metadata", "skipped" -> { }
      case "txn" -> s.txns.put(Fields.text(b, "app_id"), Fields.integer(b, "version"));   // (v6) reads ignore it
      case "add_rowset" -> {
        RowSet r = RowSet.of(b);
        if (r.createdTs() == null) r = r.withCreatedTs(ts);
        s.rowsets.put(r.id(), r);
      }
      case "remove_rowset" -> {
        String id = Fields.text(b, "id");
        s.rowsets.remove(id);
        s.deltas.remove(id);
      }
      case "add_delta" -> {
        DeltaFile d = DeltaFile.of(b);
        if (!d.hasTsColumn()) d = d.stamped(ts);
        if (!s.rowsets.containsKey(d.rowset()))
          throw new CorruptFileError(path + ": delta " + d.path() + " names unknown rowset " + d.rowset());
        s.deltas.computeIfAbsent(d.rowset(), k -> new ArrayList<>()).add(d);
      }
      case "remove_delta" -> {
        String rowset = Fields.text(b, "rowset"), p = Fields.text(b, "path");
        List<DeltaFile> kept = new ArrayList<>();
        for (DeltaFile d : s.deltasOf(rowset)) if (!d.path().equals(p)) kept.add(d);
        s.deltas.put(rowset, kept);
      }
      case "alter" -> {
        s.name = Fields.text(b, "name");
        s.schema = Fields.get(b, "schema");
        s.partitioning = Fields.get(b, "partitioning");
        if (b.has("properties") && !b.get("properties").isNull()) s.properties = b.get("properties");
      }
      case "history" -> {
        Long h = Fields.optInteger(b, "horizon_version"), g = Fields.optInteger(b, "gc_before_ts");
        s.historyHorizon = Math.max(s.historyHorizon, h == null ? 0 : h);
        s.historyGcTs = Math.max(s.historyGcTs, g == null ? 0 : g);
      }
      case "tag" -> {
        String name = Fields.text(b, "name");
        if (s.tags.containsKey(name)) throw new CorruptFileError(path + ": tag '" + name + "' added twice");
        s.tags.put(name, new long[] {Fields.integer(b, "version"), Fields.integer(b, "timestamp")});
      }
      case "untag" -> {
        String name = Fields.text(b, "name");
        if (s.tags.remove(name) == null) throw new CorruptFileError(path + ": untag of unknown tag '" + name + "'");
      }
      default -> throw new CorruptFileError(path + ": unknown log action " + e.getKey());
    }
  }

  /** A checkpoint's {@code state} (§8.3) as a TableState. */
  static TableState fromCheckpoint(JsonNode d) {
    TableState s = new TableState();
    s.define(d);
    s.version = Fields.integer(d, "version");
    s.timestamp = Fields.integer(d, "timestamp");
    for (JsonNode r : Fields.get(d, "rowsets")) {
      RowSet rs = RowSet.of(r);
      s.rowsets.put(rs.id(), rs);
    }
    for (JsonNode x : d.path("deltas")) {
      DeltaFile f = DeltaFile.of(x);
      s.deltas.computeIfAbsent(f.rowset(), k -> new ArrayList<>()).add(f);
    }
    s.historyHorizon = d.path("history_horizon").asLong(0);
    s.historyGcTs = d.path("history_gc_ts").asLong(0);
    for (Iterator<Map.Entry<String, JsonNode>> it = d.path("tags").fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> t = it.next();
      s.tags.put(t.getKey(), new long[] {t.getValue().get(0).asLong(), t.getValue().get(1).asLong()});
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = d.path("txns").fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> t = it.next();
      s.txns.put(t.getKey(), t.getValue().asLong());
    }
    return s;
  }
}
