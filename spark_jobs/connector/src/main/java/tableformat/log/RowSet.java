package tableformat.log;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * A rowset descriptor (specs/format.md §8.2): base files (column groups, later ones win per
 * column), key bounds, statistics (kept as JSON, by column ID string), {@code created_ts}
 * (stamped with the commit's timestamp at replay when absent) and {@code live_until}
 * (a history-only rowset). The bloom filter's file is kept for the {@code files} metadata table.
 */
public record RowSet(String id, String tablet, long numRows, byte[] minKey, byte[] maxKey, List<FileRef> base,
                     FileRef pkIndex, JsonNode stats, Long createdTs, Long liveUntil, FileRef bloom) {
  public static RowSet of(JsonNode d) {
    List<FileRef> base = new ArrayList<>();
    for (JsonNode f : Fields.get(d, "base")) base.add(FileRef.of(f));
    return new RowSet(Fields.text(d, "id"), Fields.text(d, "tablet"), Fields.integer(d, "num_rows"),
        hex(Fields.text(d, "min_key")), hex(Fields.text(d, "max_key")), List.copyOf(base),
        FileRef.of(Fields.get(d, "pk_index")), d.path("stats"),
        Fields.optInteger(d, "created_ts"), Fields.optInteger(d, "live_until"),
        d.hasNonNull("bloom") ? FileRef.of(d.get("bloom")) : null);
  }

  private static byte[] hex(String s) {
    try {
      return HexFormat.of().parseHex(s);
    } catch (IllegalArgumentException e) {
      throw new CorruptFileError("a key bound is not hex: " + s);
    }
  }

  RowSet withCreatedTs(long ts) {
    return new RowSet(id, tablet, numRows, minKey, maxKey, base, pkIndex, stats, ts, liveUntil, bloom);
  }

  /** Whether a read may see rows of it (§8.2): never a history-only rowset, except as of a
   * time before its live_until. */
  public boolean visibleAt(Long readTs) {
    return liveUntil == null || (readTs != null && readTs < liveUntil);
  }

  /** The newest base file holding the column (later column groups win, §5). */
  public FileRef baseFileFor(int columnId) {
    for (int i = base.size() - 1; i >= 0; i--) if (base.get(i).columnIds().contains(columnId)) return base.get(i);
    return null;
  }

  /** The column's statistics object, or null. */
  public JsonNode statsOf(int columnId) {
    JsonNode s = stats.get(Integer.toString(columnId));
    return s == null || s.isNull() ? null : s;
  }
}
