package tableformat.log;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Opening a table (specs/format.md §8.1-§8.3): {@code _last_checkpoint}, that checkpoint, then
 * commits v+1, v+2, ... until one is missing. Every commit and checkpoint is checked: its
 * format version (newer than {@link #FORMAT_VERSION}: refused), its version, its checksum
 * (§8.1), and no downgrade of format along the log. A broken checkpoint is derived data: the
 * reader falls back to an older one, or to replay from version 0.
 */
public final class LogReader {
  public static final int FORMAT_VERSION = 6;
  static final String LOG = "_log";

  private final LogStore store;
  private final Map<Long, Integer> formatOf = new HashMap<>();

  public LogReader(LogStore store) {
    this.store = store;
  }

  public LogStore store() {
    return store;
  }

  /** A state and the history up to it. */
  public record Loaded(TableState state, List<CommitInfo> history) {}

  static String commitPath(long v) {
    return String.format("%s/%020d.json", LOG, v);
  }

  static String checkpointPath(long v) {
    return String.format("%s/%020d.checkpoint.json", LOG, v);
  }

  private static void checkFormat(JsonNode d, String path) {
    JsonNode fv = d.get("format_version");
    if (fv == null || !fv.isIntegralNumber()) throw new CorruptFileError(path + ": no format_version");
    if (fv.asLong() > FORMAT_VERSION)
      throw new UnsupportedFormatVersionError(path + " was written with format version " + fv.asLong()
          + "; this reader supports up to " + FORMAT_VERSION + ". Upgrade tableformat to read this table");
  }

  /** Commit {@code v} as written, checked; null when it does not exist. */
  JsonNode readCommit(long v) {
    String path = commitPath(v);
    byte[] raw = store.read(path);
    if (raw == null) return null;
    JsonNode d = Json.parse(raw, "commit file " + path);
    if (!d.isObject()) throw new CorruptFileError("commit file " + path + " is not a JSON object");
    checkFormat(d, path);
    if (!d.path("version").isIntegralNumber() || d.get("version").asLong() != v)
      throw new CorruptFileError("commit file " + path + " says version " + d.get("version"));
    int fv = d.get("format_version").asInt();
    if (!d.has("checksum")) {
      if (fv >= Checksum.WHOLE_FILE_FROM)
        throw new CorruptFileError("commit file " + path + " has no checksum, which format version " + fv
            + " requires: the file was altered; restore it from a backup");
    } else if (!verifies(d, "actions")) {
      throw new CorruptFileError("commit file " + path + " fails its checksum: the file was altered or damaged; "
          + "restore it from a backup");
    }
    Integer prev = formatOf.get(v - 1);
    if (prev != null && fv < prev)
      throw new CorruptFileError("commit file " + path + " says format version " + fv + " after a commit of format "
          + "version " + prev + ": the file was altered; restore it from a backup");
    formatOf.put(v, fv);
    return d;
  }

  private static boolean verifies(JsonNode d, String part) {
    try {
      return Checksum.matches(d, part);
    } catch (CorruptFileError | ClassCastException e) {
      return false;
    }
  }

  /** Checkpoint {@code v}, verified; null when missing or broken (UnsupportedFormatVersionError passes). */
  Loaded readCheckpoint(long v) {
    String path = checkpointPath(v);
    byte[] raw = store.read(path);
    if (raw == null) return null;
    try {
      JsonNode d = Json.parse(raw, "checkpoint " + path);
      checkFormat(d, path);
      int fv = d.get("format_version").asInt();
      if (!d.has("checksum") && fv >= Checksum.WHOLE_FILE_FROM) return null;
      if (!verifies(d, "state")) return null;
      JsonNode st = Fields.get(d, "state");
      if (Fields.integer(d, "version") != v || Fields.integer(st, "version") != v) return null;
      if (fv < Fields.integer(st, "format_version")) return null;
      TableState state = Replay.fromCheckpoint(st);
      List<CommitInfo> history = new ArrayList<>();
      for (JsonNode h : Fields.get(d, "history"))
        history.add(CommitInfo.ofEntry(h));
      formatOf.putIfAbsent(v, fv);
      return new Loaded(state, history);
    } catch (CorruptFileError | NullPointerException | ClassCastException | IllegalArgumentException e) {
      return null;          // derived data: fall back to an older checkpoint or replay
    }
  }

  private Long lastCheckpointHint() {
    byte[] raw = store.read(LOG + "/_last_checkpoint");
    if (raw == null) return null;
    try {
      JsonNode d = Json.MAPPER.readTree(raw);
      return d.get("version").isIntegralNumber() ? d.get("version").asLong() : null;
    } catch (Exception e) {
      return null;
    }
  }

  private List<Long> listed(String suffix) {
    List<Long> out = new ArrayList<>();
    for (String n : store.list(LOG)) {
      if (!n.endsWith(suffix)) continue;
      String stem = n.substring(0, n.length() - suffix.length());
      if (!stem.isEmpty() && stem.chars().allMatch(Character::isDigit)) out.add(Long.parseLong(stem));
    }
    out.sort(null);
    return out;
  }

  /** The state at {@code version} (null: the latest) and the history up to it. */
  public Loaded load(Long version) {
    Loaded loaded = null;
    Long cp = version == null ? lastCheckpointHint() : null;
    if (cp != null) loaded = readCheckpoint(cp);
    if (loaded == null) {
      List<Long> plain = listed(".json");          // "<v>.checkpoint.json" has no all-digit stem
      if (plain.isEmpty()) throw new TableNotFoundError("no table at '" + store.uri("") + "' (no _log/ commits)");
      long latest = plain.get(plain.size() - 1);
      if (version != null && version > latest)
        throw new VersionNotFoundError("version " + version + " does not exist; the latest is " + latest);
      List<Long> cps = listed(".checkpoint.json");
      for (int i = cps.size() - 1; i >= 0 && loaded == null; i--) {
        long c = cps.get(i);
        if ((cp == null || c != cp) && (version == null || c <= version)) loaded = readCheckpoint(c);
      }
    }
    TableState state = loaded == null ? null : loaded.state();
    List<CommitInfo> history = loaded == null ? new ArrayList<>() : new ArrayList<>(loaded.history());
    long v = state == null ? 0 : state.version + 1;
    while (version == null || v <= version) {
      JsonNode d = readCommit(v);
      if (d == null) {
        if (state == null) throw new TableNotFoundError("no table at '" + store.uri("") + "' (no _log/ commits)");
        if (version != null)
          throw new VersionNotFoundError("version " + version + " does not exist; the latest is " + state.version);
        break;
      }
      JsonNode tid = d.get("table_id");
      if (state != null && tid != null && !tid.isNull() && !tid.asText().equals(state.tableId))
        throw new TableReplacedError("the table at '" + store.uri("") + "' was replaced: commit " + commitPath(v)
            + " belongs to table " + tid.asText() + ", this state to " + state.tableId + "; open the table again");
      try {
        state = Replay.apply(state, d, commitPath(v));
      } catch (NullPointerException | ClassCastException | IllegalArgumentException e) {
        throw new CorruptFileError("commit file " + commitPath(v) + " is malformed: " + e);
      }
      int fv = d.get("format_version").asInt();
      if (fv < state.formatVersion)
        throw new CorruptFileError("commit file " + commitPath(v) + " says format version " + fv + " in a table "
            + "created in format version " + state.formatVersion + ": the file was altered; restore it from a backup");
      history.add(CommitInfo.ofCommit(d));
      v++;
    }
    return new Loaded(state, history);
  }
}
