package tableformat.log;

import com.fasterxml.jackson.databind.JsonNode;

/** One line of history: what a version did and when (§8.3's checkpoint {@code history}), with its
 *  row counts (a JSON object; null when the log has none) and the version it was planned on. */
public record CommitInfo(long version, long timestamp, String operation, JsonNode counts, Long readVersion) {
  public CommitInfo(long version, long timestamp, String operation) {
    this(version, timestamp, operation, null, null);
  }

  /** A checkpoint's history entry: [version, timestamp, operation, counts, read_version]. */
  static CommitInfo ofEntry(JsonNode h) {
    JsonNode rv = h.size() > 4 ? h.get(4) : null;
    return new CommitInfo(h.get(0).asLong(), h.get(1).asLong(), h.get(2).asText(), h.size() > 3 ? h.get(3) : null,
        rv == null || !rv.isIntegralNumber() ? null : rv.asLong());
  }

  /** A commit file's line of history. */
  public static CommitInfo ofCommit(JsonNode d) {
    JsonNode rv = d.get("read_version");
    return new CommitInfo(Fields.integer(d, "version"), Fields.integer(d, "timestamp"), Fields.text(d, "operation"),
        d.get("counts"), rv == null || !rv.isIntegralNumber() ? null : rv.asLong());
  }
}
