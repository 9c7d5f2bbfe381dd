package tableformat.connector;

import java.io.IOException;

/** Closes every resource given, even when some close() throws: the first failure is rethrown
 *  with the later ones suppressed (try-with-resources' rule), so one bad file cannot leave the
 *  other readers of a slice open. */
final class Closer {
  private Closer() {}

  static void closeAll(Iterable<? extends AutoCloseable> resources) throws IOException {
    Throwable first = null;
    for (AutoCloseable r : resources) {
      if (r == null) continue;
      try {
        r.close();
      } catch (Exception | Error e) {
        if (first == null) first = e;
        else first.addSuppressed(e);
      }
    }
    if (first instanceof IOException) throw (IOException) first;
    if (first instanceof RuntimeException) throw (RuntimeException) first;
    if (first instanceof Error) throw (Error) first;
    if (first != null) throw new IOException(first);
  }
}
