package tableformat.log;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;

/**
 * Opening a table (specs/format.md §8.1-§8.3) from one listing of {@code _log/}: the newest
 * checkpoint at or before the version read (the latest: the newest listed commit), then every
 * commit after it, each file opened from its listed status; a commit missing there is a damaged
 * log ({@link CorruptFileError}), never the head. {@code _last_checkpoint} is never read.
 * Every commit and checkpoint is checked: its format version (newer than {@link #FORMAT_VERSION}:
 * refused), its version, its checksum (§8.1), and no downgrade of format along the log. A broken
 * checkpoint is derived data: the reader falls back to an older one, or to replay from version 0.
 *
 * <p>A reader is one query's view of the log: it lists once and reads each file at most once,
 * so the states a query asks for (the latest, a version as of, the horizon's) cost one listing
 * and the files they need. {@link #refresh} lists again for the next query, keeping what it read.
 */
public final class LogReader {
  public static final int FORMAT_VERSION = 6;
  static final String LOG = "_log";

  private final LogStore store;
  private final Map<Long, Integer> formatOf = new HashMap<>();
  private Listing listing;                                            // null: not listed yet
  private final Map<Long, JsonNode> commits = new HashMap<>();        // read and checked, by version (this listing)
  private final Set<Long> read = new HashSet<>();                     // every commit read, for refresh's check
  private final Set<Long> readCheckpoints = new HashSet<>();          // every checkpoint read, likewise
  private final Map<Long, Optional<Loaded>> checkpoints = bounded(KEPT_STATES);   // empty: broken
  private final Map<Long, Loaded> loads = bounded(KEPT_STATES);       // states as of a version
  private Loaded head;                        // the latest state of this listing
  private Loaded previous;                    // the head before a refresh that only added files

  /** States kept of past versions and checkpoints (a reader held across queries, {@link LogCache}, keeps
   *  this many, the least recently used dropped: read again when asked for). */
  static final int KEPT_STATES = 8;

  private static <V> Map<Long, V> bounded(int n) {
    return new java.util.LinkedHashMap<>(16, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<Long, V> e) {
        return size() > n;
      }
    };
  }

  public LogReader(LogStore store) {
    this.store = store;
  }

  public LogStore store() {
    return store;
  }

  /** A state and the history up to it. */
  public record Loaded(TableState state, List<CommitInfo> history) {}

  public static String commitPath(long v) {
    return String.format("%s/%020d.json", LOG, v);
  }

  public static String checkpointPath(long v) {
    return String.format("%s/%020d.checkpoint.json", LOG, v);
  }

  private static void checkFormat(JsonNode d, String path) {
    JsonNode fv = d.get("format_version");
    if (fv == null || !fv.isIntegralNumber()) throw new CorruptFileError(path + ": no format_version");
    if (fv.asLong() > FORMAT_VERSION)
      throw new UnsupportedFormatVersionError(path + " was written with format version " + fv.asLong()
          + "; this reader supports up to " + FORMAT_VERSION + ". Upgrade tableformat to read this table");
  }

  /** Commit {@code v} as written, checked; null when it does not exist (read by name, no listing). */
  public JsonNode readCommit(long v) {
    byte[] raw = store.read(commitPath(v));
    return raw == null ? null : checkedCommit(raw, v);
  }

  /** Listed commit {@code v}, read once and checked; null when it is gone since the listing. */
  private JsonNode commit(long v, FileStatus st) {
    JsonNode d = commits.get(v);
    if (d != null) return d;
    byte[] raw = store.read(st);
    if (raw == null) return null;
    d = checkedCommit(raw, v);
    commits.put(v, d);
    read.add(v);
    return d;
  }

  private JsonNode checkedCommit(byte[] raw, long v) {
    String path = commitPath(v);
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

  /** Listed checkpoint {@code v}, read once and verified; null when broken or gone
   *  (UnsupportedFormatVersionError passes). */
  private Loaded checkpoint(long v, FileStatus st) {
    Optional<Loaded> known = checkpoints.get(v);
    if (known != null) return known.orElse(null);
    byte[] raw = store.read(st);
    Loaded l = raw == null ? null : checkedCheckpoint(raw, v);
    checkpoints.put(v, Optional.ofNullable(l));
    readCheckpoints.add(v);
    return l;
  }

  private Loaded checkedCheckpoint(byte[] raw, long v) {
    String path = checkpointPath(v);
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
      state.logFormat = fv;
      List<CommitInfo> history = new ArrayList<>();
      for (JsonNode h : Fields.get(d, "history"))
        history.add(CommitInfo.ofEntry(h));
      formatOf.putIfAbsent(v, fv);
      return new Loaded(state, history);
    } catch (CorruptFileError | NullPointerException | ClassCastException | IllegalArgumentException e) {
      return null;          // derived data: fall back to an older checkpoint or replay
    }
  }

  /** Commits held as read (JSON), for tests of what a long-held reader keeps. */
  synchronized int heldCommits() {
    return commits.size();
  }

  /** This reader's listing of {@code _log/}, taken at its first use. */
  public synchronized Listing listing() {
    if (listing == null) listing = Listing.of(store.listStatus(LOG));
    return listing;
  }

  /**
   * Lists {@code _log/} again, for a later query: the next {@link #load} sees the commits made
   * since. Files read before are kept while the new listing shows them unchanged (commits are
   * never rewritten, §8.1); a changed or vanished one (the table replaced) drops everything read.
   */
  public synchronized void refresh() {
    Listing old = listing;
    listing = Listing.of(store.listStatus(LOG));
    if (old == null) return;
    boolean kept = read.stream().allMatch(v -> Listing.sameFile(old.commits().get(v), listing.commits().get(v)))
        && readCheckpoints.stream().allMatch(v -> Listing.sameFile(old.checkpoints().get(v), listing.checkpoints().get(v)));
    commits.clear();         // the states keep what they need: a view held across many commits holds no log
    if (!kept) {
      read.clear();
      readCheckpoints.clear();
      checkpoints.clear();
      formatOf.clear();
      loads.clear();
      head = previous = null;
      return;
    }
    boolean same = old.commits().keySet().equals(listing.commits().keySet())
        && old.checkpoints().keySet().equals(listing.checkpoints().keySet());
    if (!same && head != null) {
      previous = head;                         // the next head continues from it (§8.3: the commits after it)
      head = null;
    }
  }

  /** The state at {@code version} (null: the latest) and the history up to it. */
  public synchronized Loaded load(Long version) {
    if (version == null) {
      if (head == null) {
        head = replay(null);
        previous = null;
      }
      return head;
    }
    if (head != null && head.state().version == version) return head;
    Loaded l = loads.get(version);
    if (l == null) {
      l = replay(version);
      loads.put(version, l);
    }
    return l;
  }

  /** The newest usable checkpoint at or before {@code target}. */
  private Loaded start(Listing l, long target) {
    for (Map.Entry<Long, FileStatus> c : l.checkpoints().headMap(target, true).descendingMap().entrySet()) {
      Loaded loaded = checkpoint(c.getKey(), c.getValue());
      if (loaded != null) return loaded;
    }
    return null;
  }

  /** No state to replay from: no table (no commits), or a damaged log whose commit 0 is gone with no
   *  checkpoint after it (§8.3); the engine's words (txlog.py). */
  private TableFormatError noStart(Listing l) {
    if (l.commits().isEmpty()) return new TableNotFoundError("no table at '" + store.uri("") + "' (no _log/ commits)");
    return new CorruptFileError("commit file " + commitPath(0) + " of the table at '" + store.uri("") + "' is missing, "
        + "while _log/ holds " + l.commits().size() + " commits (versions " + l.commits().firstKey() + ".."
        + l.latest() + ") and no usable checkpoint to start from: the log is damaged; restore " + commitPath(0)
        + " from a backup");
  }

  /** The state at {@code version} (null: the newest listed commit): every commit after the start must
   *  be listed and readable; one missing there is a damaged log, never its end (§8.3). The latest
   *  continues the head a refresh kept when every commit after it is listed and no checkpoint after
   *  it is: the same state as a fresh start. Should a commit after it fail (one a newer checkpoint would have skipped), the
   *  read starts again as a fresh reader would, so the answer or error is the cold one. */
  private Loaded replay(Long version) {
    Listing l = listing();
    if (l.commits().isEmpty()) throw noStart(l);
    if (version != null && version > l.latest())
      throw new VersionNotFoundError("version " + version + " does not exist; the latest is " + l.latest());
    long target = version == null ? l.latest() : version;
    if (version == null && previous != null) {
      long p = previous.state().version;
      Loaded from = previous;
      previous = null;
      // a checkpoint listed after it is where a cold read starts (and what it checks: a newer format is
      // refused there, §8.1), so the head is continued only when no checkpoint appeared after it
      if (p <= target && l.commits().containsKey(p) && l.commits().subMap(p, false, target, true).size() == target - p
          && l.checkpoints().subMap(p, false, target, true).isEmpty()) {
        try {
          return replay(l, from, target);
        } catch (TableFormatError e) {
          // fall through: the cold read's answer (a checkpoint after the failing commit, or its error)
        }
      }
    }
    return replay(l, start(l, target), target);
  }

  private Loaded replay(Listing l, Loaded loaded, long target) {
    TableState state = loaded == null ? null : loaded.state();
    List<CommitInfo> history = loaded == null ? new ArrayList<>() : new ArrayList<>(loaded.history());
    for (long v = state == null ? 0 : state.version + 1; v <= target; v++) {
      FileStatus st = l.commits().get(v);
      JsonNode d = st == null ? null : commit(v, st);
      if (d == null && state == null) throw noStart(l);
      if (d == null)
        throw new CorruptFileError("commit file " + commitPath(v) + " is missing from the log of '" + store.uri("")
            + "', whose commits go on to version " + l.latest() + ": the log is damaged; restore the file from a "
            + "backup (versions before " + v + " and from a checkpoint after it can still be read)");
      state = next(state, d, v);
      history.add(CommitInfo.ofCommit(d));
    }
    return new Loaded(state, history);
  }

  /** The state after commit {@code v}: the table's own (§8.1 table_id), in no older format than its table's. */
  private TableState next(TableState state, JsonNode d, long v) {
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
    state.logFormat = Math.max(state.logFormat, fv);
    if (fv < state.formatVersion)
      throw new CorruptFileError("commit file " + commitPath(v) + " says format version " + fv + " in a table "
          + "created in format version " + state.formatVersion + ": the file was altered; restore it from a backup");
    return state;
  }
}
