package tableformat.log;

import java.util.List;
import java.util.NavigableMap;
import java.util.Objects;
import java.util.TreeMap;
import org.apache.hadoop.fs.EtagSource;
import org.apache.hadoop.fs.FileStatus;

/**
 * One listing of {@code _log/} (specs/format.md §8.3): the commit files {@code <v>.json} and the
 * checkpoints {@code <v>.checkpoint.json} it names, by version, with the statuses they are opened
 * from. The reader takes the newest usable checkpoint and the commits after it from here, as
 * Delta's and Iceberg's readers list their logs, instead of probing {@code v+1, v+2, ...}.
 */
public record Listing(NavigableMap<Long, FileStatus> commits, NavigableMap<Long, FileStatus> checkpoints) {
  static final String COMMIT = ".json", CHECKPOINT = ".checkpoint.json";

  static Listing of(List<FileStatus> files) {
    NavigableMap<Long, FileStatus> commits = new TreeMap<>(), checkpoints = new TreeMap<>();
    for (FileStatus st : files) {
      String n = st.getPath().getName();
      if (n.endsWith(CHECKPOINT)) {
        Long v = version(n, CHECKPOINT);
        if (v != null) checkpoints.put(v, st);
      } else if (n.endsWith(COMMIT)) {
        Long v = version(n, COMMIT);            // "<v>.checkpoint.json" has no all-digit stem here
        if (v != null) commits.put(v, st);
      }
    }
    return new Listing(commits, checkpoints);
  }

  /** The version a name stands for: only the canonical 20-digit form (§8.1 {@code <v:020d>}), the
   *  one name Python's reader opens; "5.json" or a 21-digit name beside it is no version. */
  private static Long version(String name, String suffix) {
    String stem = name.substring(0, name.length() - suffix.length());
    if (stem.length() != 20 || !stem.chars().allMatch(c -> c >= '0' && c <= '9')) return null;
    try {
      return Long.parseLong(stem);
    } catch (NumberFormatException e) {     // past 2^63: no version of ours
      return null;
    }
  }

  /** The newest listed commit, or -1 when none is listed. */
  public long latest() {
    return commits.isEmpty() ? -1 : commits.lastKey();
  }

  /** Whether {@code a} and {@code b} (statuses of one name in two listings) are the same file: same
   *  length, modification time and, on stores that give one, entity tag. A file rewritten in place
   *  (a table deleted and created again) differs. */
  static boolean sameFile(FileStatus a, FileStatus b) {
    if (a == null || b == null) return false;
    if (a.getLen() != b.getLen() || a.getModificationTime() != b.getModificationTime()) return false;
    String ea = a instanceof EtagSource s ? s.getEtag() : null, eb = b instanceof EtagSource s ? s.getEtag() : null;
    return Objects.equals(ea, eb);
  }
}
