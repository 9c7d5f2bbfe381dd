package tableformat.commit;

import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;

/**
 * The JVM committer of one table (specs/format.md §8, §10): write fragments (§10.2, the JSON
 * Python's {@code WriteFragment.to_json} makes) committed as one log version with put-if-absent,
 * retried against the commits that won with the fragments' requirements (§10.1) and the matrix
 * (§10.2), exactly as the engine's {@code Transaction} (tableformat/log/transaction.py).
 */
public final class Committer {
  public Committer(String root, Configuration conf) {
    throw new UnsupportedOperationException("not yet");
  }

  /** Version 0 from a {@code metadata} action ({@code {"metadata": {...}}} or its body, §8.2);
   *  TableExistsError when the table exists. Returns the version (0). */
  public long create(String metadataActionJson, String operation) {
    throw new UnsupportedOperationException("not yet");
  }

  /** One commit of the fragments (JSON); {@code counts} null: the fragments' sum. A txn (app id
   *  non-null) records (app, version) with {@code txn_unseen}. RestartRequiredException: plan again. */
  public CommitResult commit(List<String> fragmentJsons, String operation, Map<String, Long> counts,
                             String txnAppId, long txnVersion) {
    throw new UnsupportedOperationException("not yet");
  }

  /** An {@code alter} commit (§11) planned on {@code readVersion}: the action JSON
   *  ({@code {"alter": {...}}}, plus any {@code remove_rowset} as an array of actions). */
  public long alter(String alterActionJson, long readVersion) {
    throw new UnsupportedOperationException("not yet");
  }
}
