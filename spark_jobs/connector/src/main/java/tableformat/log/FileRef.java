package tableformat.log;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/** A file of the table, relative to its root, with its recorded size, column IDs and (format 3)
 * the CRC-32 of all its bytes (§8.2; null before). */
public record FileRef(String path, long size, List<Integer> columnIds, Long crc32) {
  static FileRef of(JsonNode d) {
    List<Integer> ids = new ArrayList<>();
    for (JsonNode i : d.path("column_ids")) ids.add(i.asInt());
    return new FileRef(Fields.text(d, "path"), Fields.integer(d, "size"), List.copyOf(ids),
        Fields.optInteger(d, "crc32"));
  }
}
