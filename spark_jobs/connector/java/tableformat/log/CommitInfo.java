package tableformat.log;

/** One line of history: what a version did and when (§8.3's checkpoint {@code history}). */
public record CommitInfo(long version, long timestamp, String operation) {}
