package tableformat.commit;

import java.util.Map;

/** What a commit landed as: its version and MVCC timestamp, its operation and counts (as
 *  {@code history()} shows them), and how many put-if-absent attempts it took. */
public record CommitResult(long version, long timestamp, String operation, Map<String, Long> counts, int attempts) {}
