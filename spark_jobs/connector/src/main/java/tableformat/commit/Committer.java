package tableformat.commit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.hadoop.conf.Configuration;
import tableformat.commit.Matrix.Outcome;
import tableformat.commit.Requirements.Context;
import tableformat.commit.Requirements.Verdict;
import tableformat.log.CommitConflictError;
import tableformat.log.ContradictoryFragmentsError;
import tableformat.log.CommitInfo;
import tableformat.log.InvalidOptionError;
import tableformat.log.Json;
import tableformat.log.LogFiles;
import tableformat.log.LogReader;
import tableformat.log.LogStore;
import tableformat.log.Replay;
import tableformat.log.RestartRequiredException;
import tableformat.log.TableExistsError;
import tableformat.log.TableFormatError;
import tableformat.log.TableReplacedError;
import tableformat.log.TableState;
import tableformat.log.VersionNotFoundError;

/**
 * The JVM committer of one table (specs/format.md §8, §10): write fragments (§10.2, the JSON
 * Python's {@code WriteFragment.to_json} makes) committed as one log version with put-if-absent
 * ({@link PutIfAbsent}), retried against the commits that won with the fragments' requirements
 * (§10.1) and the matrix (§10.2), as the engine's {@code Transaction} (tableformat/log/transaction.py)
 * commits fragments for {@code Table.commit_fragments}:
 * <ul>
 *   <li>before the first attempt: the fragments' table is the table here ({@code table_id}), every
 *       requirement's precheck, and the commit built on still belongs to the table;</li>
 *   <li>a lost race reads exactly the winners: our own {@code txn_id} among them is our commit
 *       (its answer was lost); our files committed by another is a fragment committed twice; else
 *       the requirements answer rebase (try the next version), restart
 *       ({@link RestartRequiredException}: plan the job again) or fail (a typed error);</li>
 *   <li>the files of a write that does not land are deleted, never those of one that did;</li>
 *   <li>after landing version v with {@code v % checkpoint_interval == 0}, a checkpoint (§8.3).</li>
 * </ul>
 * Nothing that can fail follows a landed commit except the checkpoint, which is best effort.
 */
public final class Committer {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;
  static final String LAST_CHECKPOINT = "_log/_last_checkpoint";

  private final String root;
  private final Configuration conf;
  private final LogStore store;
  private final PutIfAbsent put;
  /** Lost races in a row before CommitConflictError, and the backoff (Python's CommitProperties). */
  private int maxAttempts = 1000, backoffAfter = 3;
  private double maxBackoffSeconds = 0.2;
  private Integer checkpointInterval;          // null: the table property
  private long lastHint = -1;

  public Committer(String root, Configuration conf) {
    this.root = LogStore.normalize(root);
    this.conf = conf;
    this.store = new LogStore(this.root, conf);
    this.put = new PutIfAbsent(this.root, conf);
  }

  /** Python's CommitProperties: races lost in a row before CommitConflictError, and the
   *  checkpoint interval (null: the table's {@code checkpoint_interval}). */
  public Committer withProperties(int maxAttempts, Integer checkpointInterval) {
    if (maxAttempts < 1) throw new InvalidOptionError("max_attempts must be at least 1, got " + maxAttempts);
    if (checkpointInterval != null && checkpointInterval < 1)
      throw new InvalidOptionError("checkpoint_interval must be at least 1, got " + checkpointInterval);
    this.maxAttempts = maxAttempts;
    this.checkpointInterval = checkpointInterval;
    return this;
  }

  public String root() {
    return root;
  }

  // --- create ------------------------------------------------------------------------------

  /** Version 0 from a {@code metadata} action ({@code {"metadata": {...}}} or its body, §8.2);
   *  TableExistsError when the table exists. Returns the version (0). */
  public long create(String metadataActionJson, String operation) {
    JsonNode d = parse(metadataActionJson, "a metadata action");
    JsonNode meta = d.has("metadata") && d.size() == 1 ? d.get("metadata") : d;
    for (String k : List.of("format_version", "table_id", "name", "schema", "partitioning", "properties"))
      if (!meta.has(k)) throw new InvalidOptionError("a metadata action needs '" + k + "' (specs/format.md §8.2)");
    if (!meta.get("format_version").isIntegralNumber())
      throw new InvalidOptionError("metadata format_version must be an integer, got " + meta.get("format_version"));
    if (!new LogReader(store).listing().commits().isEmpty())
      throw new TableExistsError("a table already exists at '" + root + "'");
    ObjectNode action = F.objectNode();
    action.set("metadata", meta);
    int fv = LogFiles.writtenFormatVersion(meta.get("format_version").asInt());
    ObjectNode commit = commitJson(fv, 0, now(), operation == null ? "CREATE TABLE" : operation, null,
        uuid(), meta.get("table_id").asText(), F.objectNode(), true, List.of(action));
    byte[] bytes = LogFiles.sealed(commit);
    Replay.apply(null, Json.parse(bytes, "commit 0"), LogReader.commitPath(0));   // readers take it
    if (!put.put(LogReader.commitPath(0), bytes))
      throw new TableExistsError("a table was created concurrently at '" + root + "'");
    return 0;
  }

  // --- commit -----------------------------------------------------------------------------

  /** One commit of the fragments (JSON); {@code counts} null: the fragments' sum. A txn (app id
   *  non-null) records (app, version) with {@code txn_unseen}. RestartRequiredException: plan again.
   *  Fragments with nothing to commit (and no txn) commit nothing: the result names the version
   *  they were planned on, with 0 attempts. */
  public CommitResult commit(List<String> fragmentJsons, String operation, Map<String, Long> counts,
                             String txnAppId, long txnVersion) {
    if (fragmentJsons == null || fragmentJsons.isEmpty())
      throw new InvalidOptionError("fragments must be a non-empty list of write fragments");
    List<Fragment> frags = new ArrayList<>();
    for (String j : fragmentJsons) frags.add(Fragment.parse(j));
    Fragment f;
    try {
      f = Fragment.combine(frags, operation, counts);
    } catch (ContradictoryFragmentsError e) {       // nothing of it lands, its files go (§10.3)
      List<String> files = new ArrayList<>();
      for (Fragment x : frags) files.addAll(x.files());
      put.deleteQuietly(files);
      throw e;
    }
    if (txnAppId != null) {
      if (txnAppId.isEmpty() || txnVersion < 0)
        throw new InvalidOptionError("txn needs a non-empty app id and a version >= 0, got ('" + txnAppId + "', "
            + txnVersion + ")");
      List<JsonNode> actions = new ArrayList<>(f.actions());
      ObjectNode txn = F.objectNode();
      txn.putObject("txn").put("app_id", txnAppId).put("version", txnVersion);
      actions.add(txn);
      List<JsonNode> reqs = new ArrayList<>();
      reqs.add(F.objectNode().put("kind", "txn_unseen").put("app_id", txnAppId).put("version", txnVersion));
      reqs.addAll(f.requirements());
      f = new Fragment(f.operation(), f.readVersion(), actions, f.files(), f.counts(), reqs, f.dataChange(),
          f.tableId(), f.kind());
    }
    if (f.empty()) {
      TableState s = new LogReader(store).load(f.readVersion()).state();
      return new CommitResult(s.version(), s.timestamp(), f.operation(), f.counts(), 0);
    }
    return new Transaction(f).commit();
  }

  // --- alter ------------------------------------------------------------------------------

  /** An {@code alter} commit (§11) planned on {@code readVersion}: {@code {"alter": {name, schema,
   *  partitioning[, properties]}}} (or its body), the complete new definition. The rowsets of
   *  tablets its partitioning drops are removed in the same commit; it restarts
   *  (RestartRequiredException) when the definition changed meanwhile or rows landed in a dropped
   *  tablet. Returns the version. */
  public long alter(String alterActionJson, long readVersion) {
    JsonNode d = parse(alterActionJson, "an alter action");
    JsonNode body = d.has("alter") && d.size() == 1 ? d.get("alter") : d;
    for (String k : List.of("name", "schema", "partitioning"))
      if (!body.has(k)) throw new InvalidOptionError("an alter action needs '" + k + "' (specs/format.md §8.2)");
    TableState s = new LogReader(store).load(readVersion).state();
    Set<String> live = new HashSet<>(tabletIds(body.get("partitioning")));
    Set<String> gone = new java.util.TreeSet<>(tabletIds(s.partitioning()));
    gone.removeAll(live);
    List<JsonNode> actions = new ArrayList<>();
    ObjectNode a = F.objectNode();
    a.set("alter", body);
    actions.add(a);
    long dropped = 0;
    for (var r : s.rowsets())
      if (!live.contains(r.tablet())) {
        ObjectNode rm = F.objectNode();
        rm.putObject("remove_rowset").put("id", r.id());
        actions.add(rm);
        dropped++;
      }
    ObjectNode tablets = F.objectNode().put("kind", "no_rows_in_tablets");
    ArrayNode ts = tablets.putArray("tablets");
    gone.forEach(ts::add);
    Map<String, Long> counts = new LinkedHashMap<>();
    counts.put("rowsets_dropped", dropped);
    Fragment f = new Fragment("ALTER TABLE", readVersion, actions, List.of(), counts,
        List.of(F.objectNode().put("kind", "definition_unchanged"), tablets), false, s.tableId(), "alter");
    return new Transaction(f).commit().version();
  }

  /** The tablet ids of a partitioning (§4; Python's Partitioning.tablet_ids): r{range}-h{b}... */
  static List<String> tabletIds(JsonNode partitioning) {
    List<String> out = new ArrayList<>();
    List<Integer> buckets = new ArrayList<>();
    for (JsonNode h : partitioning.path("hash")) buckets.add(h.path("buckets").asInt());
    for (JsonNode r : partitioning.path("ranges")) {
      long id = r.path("id").asLong();
      int[] combo = new int[buckets.size()];
      while (true) {
        StringBuilder sb = new StringBuilder("r").append(id);
        for (int b : combo) sb.append("-h").append(b);
        out.add(sb.toString());
        int i = combo.length - 1;
        while (i >= 0 && ++combo[i] == buckets.get(i)) combo[i--] = 0;
        if (i < 0) break;
      }
    }
    return out;
  }

  // --- one transaction --------------------------------------------------------------------

  /** One fragment's commit: Python's Transaction with latest_known (fragments planned on a
   *  snapshot the job read). */
  private final class Transaction {
    final Fragment f;
    final String txnId = uuid();
    final LogReader reader = new LogReader(store);
    final List<String> written;
    final Map<String, List<byte[]>> keys = new HashMap<>();
    TableState snapshot;
    int attempts;

    Transaction(Fragment f) {
      this.f = f;
      this.written = new ArrayList<>(f.files());
    }

    CommitResult commit() {
      boolean landed = false;
      try {
        LogReader.Loaded loaded = reader.load(f.readVersion());
        snapshot = loaded.state();
        if (f.tableId() != null && !f.tableId().equals(snapshot.tableId()))
          throw new TableReplacedError(f.operation() + ": the fragment was written for table " + f.tableId()
              + "; the table at this path is now " + snapshot.tableId());
        TableState base = snapshot;
        List<CommitInfo> history = new ArrayList<>(loaded.history());
        Verdict v = Requirements.checkAll(f.requirements(), context(base, List.of()), true);
        if (v.outcome() != Outcome.REBASE) throw failure(v);
        sameTable(base);
        for (attempts = 1; attempts <= maxAttempts; attempts++) {
          JsonNode mine = tryCommit(base);
          if (mine != null) {
            landed = true;
            return landed(base, history, mine);
          }
          List<JsonNode> winners = newCommits(base.version());
          JsonNode ours = oursAmong(base, winners);
          if (ours != null) {          // our PUT landed; only its answer was lost
            landed = true;
            for (JsonNode w : winners) {
              if (w == ours) break;
              base = advance(base, history, w);
            }
            return landed(base, history, ours);
          }
          base = rebase(base, history, winners);
          if (attempts > backoffAfter) backoff();
        }
        throw new CommitConflictError(f.operation() + " lost " + maxAttempts + " commit races in a row; retry later");
      } catch (RuntimeException | Error e) {
        if (!landed) put.deleteQuietly(written);
        throw e;
      }
    }

    private Context context(TableState base, List<JsonNode> winners) {
      return new Context(store, snapshot, base, winners, f.actions(), f.kind(), keys);
    }

    private TableFormatError failure(Verdict v) {
      if (v.outcome() == Outcome.RESTART)
        return new RestartRequiredException(f.operation() + ": " + v.reason() + "; planning again");
      return v.error() != null ? v.error() : new CommitConflictError(f.operation() + ": " + v.reason());
    }

    /** After a lost race: the state to try again on, or RestartRequired / a typed error. */
    private TableState rebase(TableState base, List<CommitInfo> history, List<JsonNode> winners) {
      Verdict v = Requirements.checkAll(f.requirements(), context(base, winners), false);
      if (v.outcome() != Outcome.REBASE) throw failure(v);
      for (JsonNode w : winners) base = advance(base, history, w);
      return base;
    }

    private TableState advance(TableState base, List<CommitInfo> history, JsonNode c) {
      long v = c.path("version").asLong();
      JsonNode tid = c.get("table_id");
      if (tid != null && !tid.isNull() && !tid.asText().equals(base.tableId()))
        throw new TableReplacedError(f.operation() + ": the table was replaced while it ran (version " + v
            + " belongs to table " + tid.asText() + ")");
      TableState next = Replay.apply(base, c, LogReader.commitPath(v));
      history.add(CommitInfo.ofCommit(c));
      return next;
    }

    /** The commit this write builds on still belongs to its table (a table deleted and created
     *  again at the path, with a log no longer than ours, must not receive our commit). */
    private void sameTable(TableState base) {
      JsonNode c;
      try {
        c = reader.readCommit(base.version());
      } catch (VersionNotFoundError e) {
        c = null;
      }
      JsonNode tid = c == null ? null : c.get("table_id");
      if (c == null || (tid != null && !tid.isNull() && !tid.asText().equals(base.tableId())))
        throw new TableReplacedError(f.operation() + ": the table at this path was replaced (version " + base.version()
            + " is not table " + base.tableId() + "'s any more); open it again");
    }

    private List<JsonNode> newCommits(long after) {
      List<JsonNode> out = new ArrayList<>();
      for (long v = after + 1; ; v++) {
        JsonNode c = reader.readCommit(v);
        if (c == null) return out;
        out.add(c);
      }
    }

    /** Our own commit among the winners, or an error when another transaction committed these
     *  files (a fragment committed twice: they are not deleted) or a winner is of another table. */
    private JsonNode oursAmong(TableState base, List<JsonNode> winners) {
      for (JsonNode c : winners) {
        JsonNode tid = c.get("table_id");
        if (tid != null && !tid.isNull() && !tid.asText().equals(base.tableId()))
          throw new TableReplacedError(f.operation() + ": the table was replaced while it ran (version "
              + c.path("version").asLong() + " belongs to table " + tid.asText() + ")");
      }
      Set<String> mine = new HashSet<>(f.files());
      for (JsonNode c : winners) {
        if (txnId.equals(c.path("txn_id").asText())) return c;
        Set<String> theirs = filesOf(c);
        theirs.retainAll(mine);
        if (!theirs.isEmpty()) {
          written.removeAll(filesOf(c));
          throw new CommitConflictError(f.operation() + ": these files were already committed in version "
              + c.path("version").asLong() + "; nothing was done");
        }
      }
      return null;
    }

    /** Version base+1 with put-if-absent: the commit as written, or null when another took it. An
     *  error of the store is no answer: the version is read back, and ours if it carries our txn_id. */
    private JsonNode tryCommit(TableState base) {
      long version = base.version() + 1;
      long ts = Math.max(now(), base.timestamp() + 1);
      int fv = LogFiles.writtenFormatVersion(needs(f.actions()), base.formatVersion(), base.logFormat());
      ObjectNode commit = commitJson(fv, version, ts, f.operation(), f.readVersion(), txnId, base.tableId(),
          countsJson(f.counts()), f.dataChange(), f.actions());
      byte[] bytes = LogFiles.sealed(commit);
      try {
        if (!put.put(LogReader.commitPath(version), bytes)) return null;
      } catch (UncheckedIOException e) {
        JsonNode there;
        try {
          there = reader.readCommit(version);
        } catch (RuntimeException again) {
          throw e;
        }
        if (there != null && txnId.equals(there.path("txn_id").asText())) return there;
        if (there == null) throw e;
        return null;
      }
      return Json.parse(bytes, LogReader.commitPath(version));
    }

    /** Our commit landed on {@code base}: a checkpoint every N versions (best effort). */
    private CommitResult landed(TableState base, List<CommitInfo> history, JsonNode mine) {
      long v = mine.path("version").asLong();
      try {
        TableState next = Replay.apply(base, mine, LogReader.commitPath(v));
        history.add(CommitInfo.ofCommit(mine));
        long every = checkpointInterval != null ? checkpointInterval
            : next.properties().path("checkpoint_interval").asLong(10);
        if (every > 0 && v % every == 0) checkpoint(next, history);
      } catch (RuntimeException ignored) {
        // derived data: a missing checkpoint only costs replay time; the commit is live
      }
      return new CommitResult(v, mine.path("timestamp").asLong(), f.operation(), f.counts(), attempts);
    }

    private void backoff() {
      double cap = Math.min(maxBackoffSeconds, 0.002 * Math.pow(2, Math.min(attempts, 7)));
      try {
        Thread.sleep((long) (ThreadLocalRandom.current().nextDouble(0, cap) * 1000));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new CommitConflictError(f.operation() + ": interrupted while retrying");
      }
    }
  }

  /** A checkpoint of {@code state} with its history, then the {@code _last_checkpoint} hint for
   *  older engines when newer than the one this committer wrote (§8.3). */
  void checkpoint(TableState state, List<CommitInfo> history) {
    try {
      put.put(LogReader.checkpointPath(state.version()), LogFiles.checkpoint(state, history));
      if (lastHint < state.version()) {
        put.overwrite(LAST_CHECKPOINT, ("{\"version\": " + state.version() + "}").getBytes(StandardCharsets.US_ASCII));
        lastHint = state.version();
      }
    } catch (IOException | RuntimeException ignored) {
      // best effort (Python's write_checkpoint)
    }
  }

  /** The paths a commit's actions make live (Python's Commit.files). */
  static Set<String> filesOf(JsonNode commit) {
    Set<String> out = new HashSet<>();
    for (JsonNode a : commit.path("actions")) {
      if (a.has("add_rowset")) {
        JsonNode r = a.get("add_rowset");
        for (JsonNode b : r.path("base")) out.add(b.path("path").asText());
        if (r.has("pk_index")) out.add(r.get("pk_index").path("path").asText());
        if (r.hasNonNull("bloom")) out.add(r.get("bloom").path("path").asText());
      } else if (a.has("add_delta")) {
        out.add(a.get("add_delta").path("path").asText());
      } else if (a.has("skipped")) {
        out.add(a.get("skipped").path("path").asText());
      }
    }
    return out;
  }

  /** The format version a commit's actions need (Python's Action.needs_format). */
  static int needs(List<JsonNode> actions) {
    int n = 1;
    for (JsonNode a : actions) {
      if (a.has("txn")) n = Math.max(n, LogFiles.TXN_FORMAT_VERSION);
      else if (a.has("tag") || a.has("untag") || a.has("skipped")) n = Math.max(n, 4);
      else if (a.has("history")) n = Math.max(n, 2);
    }
    return n;
  }

  static ObjectNode commitJson(int formatVersion, long version, long timestamp, String operation, Long readVersion,
                               String txnId, String tableId, JsonNode counts, boolean dataChange, List<JsonNode> actions) {
    ObjectNode c = F.objectNode();
    c.put("format_version", formatVersion);
    c.put("version", version);
    c.put("timestamp", timestamp);
    c.put("operation", operation);
    if (readVersion == null) c.putNull("read_version"); else c.put("read_version", readVersion);
    c.put("txn_id", txnId);
    if (tableId == null) c.putNull("table_id"); else c.put("table_id", tableId);
    c.set("counts", counts);
    c.put("data_change", dataChange);
    ArrayNode a = c.putArray("actions");
    actions.forEach(a::add);
    return c;
  }

  private static ObjectNode countsJson(Map<String, Long> counts) {
    ObjectNode o = F.objectNode();
    counts.forEach(o::put);
    return o;
  }

  private static JsonNode parse(String json, String what) {
    try {
      JsonNode d = Json.MAPPER.readTree(json);
      if (d == null || !d.isObject()) throw new InvalidOptionError(what + " must be a JSON object");
      return d;
    } catch (IOException e) {
      throw new InvalidOptionError(what + " is not JSON: " + e.getMessage());
    }
  }

  /** Microseconds since the epoch (the MVCC clock, §8.1). */
  static long now() {
    Instant i = Instant.now();
    return i.getEpochSecond() * 1_000_000L + i.getNano() / 1000;
  }

  static String uuid() {
    return UUID.randomUUID().toString().replace("-", "");
  }
}
