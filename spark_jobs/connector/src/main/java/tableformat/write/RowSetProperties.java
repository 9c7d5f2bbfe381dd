package tableformat.write;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.Serializable;

/** The table properties a rowset writer follows (§8.2): where rowsets roll, row group rows,
 *  PK index block rows. */
public record RowSetProperties(long rowsetTargetBytes, int rowGroupRows, int pkIndexBlockRows) implements Serializable {
  public static RowSetProperties of(JsonNode properties) {
    return new RowSetProperties(properties.path("rowset_target_bytes").asLong(128L << 20),
        properties.path("row_group_rows").asInt(16384), properties.path("pk_index_block_rows").asInt(4096));
  }
}
