package tableformat.log;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;

/** A delta file and its statistics (§9): a commit's REDO file takes its commit's timestamp; its
 *  {@code crc32} (format 3, §8.2; null before). */
public record DeltaFile(String path, long size, String kind, String rowset, long numRecords, long deleteCount,
                        long reinsertCount, Map<Integer, Long> updateCounts, long minTs, long maxTs,
                        boolean hasTsColumn, Long crc32) {
  public static DeltaFile of(JsonNode d) {
    Map<Integer, Long> counts = new TreeMap<>();
    JsonNode uc = Fields.get(d, "update_counts");
    if (!uc.isObject()) throw new CorruptFileError("update_counts of delta " + d.get("path") + " is not an object");
    for (Iterator<Map.Entry<String, JsonNode>> it = uc.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      counts.put(Integer.parseInt(e.getKey()), e.getValue().asLong());
    }
    return new DeltaFile(Fields.text(d, "path"), Fields.integer(d, "size"), Fields.text(d, "kind"),
        Fields.text(d, "rowset"), Fields.integer(d, "num_records"), Fields.integer(d, "delete_count"),
        Fields.integer(d, "reinsert_count"), Map.copyOf(counts), d.path("min_ts").asLong(0),
        d.path("max_ts").asLong(0), d.path("has_ts_column").asBoolean(false), Fields.optInteger(d, "crc32"));
  }

  DeltaFile stamped(long ts) {
    return new DeltaFile(path, size, kind, rowset, numRecords, deleteCount, reinsertCount, updateCounts, ts, ts,
        hasTsColumn, crc32);
  }

  public boolean isRedo() {
    return "redo".equals(kind);
  }

  public boolean updates(int columnId) {
    return updateCounts.getOrDefault(columnId, 0L) > 0;
  }
}
