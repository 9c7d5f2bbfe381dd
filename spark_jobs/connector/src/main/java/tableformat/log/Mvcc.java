package tableformat.log;

import java.util.List;
import java.util.TreeSet;

/**
 * Which state a read sees (specs/format.md §9.1, §12, §12.2): the version an as_of names, the
 * history_max_age and history_gc_ts refusals (tagged versions excepted), and a version behind
 * the history horizon read from the horizon's files as of its timestamp.
 */
public final class Mvcc {
  private Mvcc() {}

  /** The state a read {@code asOf} sees (null: the latest): the head, the version read and the
   *  horizon's state all come from {@code log}'s one listing, each file read once (§8.3). */
  public static TableState stateAt(LogReader log, AsOf asOf) {
    LogReader.Loaded latest = log.load(null);
    TableState head = latest.state();
    if (asOf == null) return head;
    List<CommitInfo> history = latest.history();
    long v = resolveVersion(history, asOf, head);
    checkHistory(head, history, v, asOf, System.currentTimeMillis() * 1000);
    if (v == head.version) return head;
    TableState st = load(log, v, head);
    long horizon = head.historyHorizon;
    if (v >= horizon) return st;
    long validUntil = history.get((int) v + 1).timestamp();
    if (validUntil <= head.historyGcTs && !head.isTagged(v))
      throw new HistoryExpiredError("version " + v + " is older than history a compaction garbage-collected "
          + "(before " + AsOf.iso(head.historyGcTs) + ") behind the vacuum horizon (version " + horizon + ")");
    TableState h = load(log, horizon, head).copy();
    h.version = v;
    h.timestamp = st.timestamp;
    h.name = st.name;
    h.schema = st.schema;
    h.partitioning = st.partitioning;
    h.properties = st.properties;
    h.readTs = st.timestamp;
    h.logFormat = st.logFormat;
    return h;
  }

  private static TableState load(LogReader log, long v, TableState head) {
    TableState s = log.load(v).state();
    if (!s.tableId.equals(head.tableId))
      throw new TableReplacedError("the table at '" + log.store().uri("") + "' was replaced: version " + v
          + " belongs to table " + s.tableId + ", the latest to " + head.tableId + "; open it again");
    return s;
  }

  /** The version a read as of {@code asOf} sees (§9.1): a timestamp after the newest commit is refused. */
  public static long resolveVersion(List<CommitInfo> history, AsOf asOf, TableState head) {
    CommitInfo last = history.get(history.size() - 1);
    switch (asOf.kind()) {
      case TAG -> {
        long[] t = head.tags.get(asOf.tag());
        if (t == null) {
          String known = new TreeSet<>(head.tags.keySet()).stream().limit(10).reduce((a, b) -> a + ", " + b)
              .orElse("none");
          if (!asOf.explicitTag())          // one class for an unknown tag, bare or not (the engine's too)
            throw new TagNotFoundError("as_of '" + asOf.tag() + "' is not a version number, ts:<microseconds>, "
                + "an ISO date-time nor a tag: no tag of that name in this table (tags: " + known + ")");
          throw new TagNotFoundError("no tag '" + asOf.tag() + "' in this table (tags: " + known + ")");
        }
        return t[0];
      }
      case VERSION -> {
        if (asOf.value() < 0 || asOf.value() > last.version())
          throw new VersionNotFoundError("version " + asOf.versionText() + " does not exist; versions are 0.."
              + last.version());
        return asOf.value();
      }
      default -> {
        long ts = asOf.value();
        if (ts > last.timestamp())
          throw new TimestampAfterLatestError("timestamp " + AsOf.iso(ts) + " is after the newest commit (version "
              + last.version() + " at " + AsOf.iso(last.timestamp()) + "); read the latest, or as of a time at "
              + "or before it");
        long found = -1;
        for (CommitInfo h : history) if (h.timestamp() <= ts) found = h.version();
        if (found < 0)
          throw new VersionNotFoundError("timestamp " + AsOf.iso(ts) + " is before the table was created ("
              + AsOf.iso(history.get(0).timestamp()) + ")");
        return found;
      }
    }
  }

  /** history_max_age (§12): a version whose validity ended before the ancient history mark, or an
   * explicit time before it, is refused, unless it is the latest or tagged. */
  static void checkHistory(TableState head, List<CommitInfo> history, long v, AsOf asOf, long nowMicros) {
    long age = head.historyMaxAge();
    if (age < 0 || v == head.version || head.isTagged(v)) return;
    long ahm = Math.max(0, nowMicros - age * 1_000_000L);
    boolean tooOld = (asOf.kind() == AsOf.Kind.TIMESTAMP && asOf.value() < ahm)
        || (v + 1 < history.size() && history.get((int) v + 1).timestamp() <= ahm);
    if (tooOld)
      throw new HistoryExpiredError("version " + v + " is earlier than the ancient history mark: history older "
          + "than history_max_age=" + age + " s is not retained; raise the table property history_max_age to "
          + "keep more");
  }
}
