package tableformat.log;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;

/**
 * What this JVM already read of each table's log, kept for its next query (specs/format.md §8.3:
 * "a reader that keeps what it read for a later query"). A query asks for the table's reader:
 * a known table is listed once more ({@link LogReader#refresh}), and only the commits and
 * checkpoints that are new since are read; the damaged-log rules apply to the new listing as to
 * a cold one, and a changed or vanished file (the table replaced) drops everything kept. Keyed by
 * the store's identity ({@link LogStore#identity}: location, file system, user, endpoint), never
 * by path alone; at most {@link #capacity} tables, the least recently used dropped first.
 */
public final class LogCache {
  private LogCache() {}

  /** Tables kept (system property {@code tableformat.logCache.tables}; 0 turns the cache off). */
  static final int capacity = Integer.getInteger("tableformat.logCache.tables", 32);

  private static final Map<String, LogReader> READERS = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, LogReader> e) {
      return size() > capacity;
    }
  };

  /** The table's reader, listed now: one listing of {@code _log/}, the files read before kept. */
  public static LogReader reader(String uri, Configuration conf) {
    LogStore store = new LogStore(uri, conf);
    if (capacity <= 0) return new LogReader(store);
    LogReader r;
    boolean known;
    synchronized (READERS) {
      r = READERS.get(store.identity());
      known = r != null;
      if (!known) READERS.put(store.identity(), r = new LogReader(store));
    }
    if (known) r.refresh();
    else r.listing();
    return r;
  }

  /** Forgets every table (tests: a cold read in a warm JVM). */
  public static void clear() {
    synchronized (READERS) {
      READERS.clear();
    }
  }
}
