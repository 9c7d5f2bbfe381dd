package tableformat.write;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The schema a writer writes (§2), from the schema JSON of the log. Rows handed to the writers
 * ({@link RollingRowSetWriter#write}, {@link KeyEncoder#encode}, {@link TabletRouter#tabletOrdinal})
 * are Spark {@code InternalRow}s whose ordinal i is {@code columns().get(i)}, in Spark's internal
 * values of the column's type: bool → boolean, int8 → byte, int16 → short, int32 → int,
 * int64 → long, date → int days, unixtime_micros → long micros, float, double, decimal(p,s) →
 * {@code Decimal} of that precision and scale, string/varchar → {@code UTF8String}, binary → byte[].
 */
public final class WriteSchema implements Serializable {
  private static final long serialVersionUID = 1L;
  private final List<WriteColumn> columns;
  private final int[] key;

  public WriteSchema(List<WriteColumn> columns, int[] keyPositions) {
    this.columns = List.copyOf(columns);
    this.key = keyPositions.clone();
  }

  /** From the log's schema JSON ({@code {"columns": [...], "primary_key": [...]}}). */
  public static WriteSchema of(JsonNode schema) {
    List<WriteColumn> cols = new ArrayList<>();
    for (JsonNode c : schema.get("columns")) cols.add(WriteColumn.of(c));
    JsonNode pk = schema.get("primary_key");
    int[] key = new int[pk.size()];
    for (int i = 0; i < key.length; i++) key[i] = position(cols, pk.get(i).asText());
    return new WriteSchema(cols, key);
  }

  public static WriteSchema of(String schemaJson) {
    try {
      return of(new ObjectMapper().readTree(schemaJson));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static int position(List<WriteColumn> cols, String name) {
    for (int i = 0; i < cols.size(); i++) if (cols.get(i).name().equals(name)) return i;
    throw new IllegalArgumentException("the primary key names an unknown column '" + name + "'");
  }

  public List<WriteColumn> columns() {
    return columns;
  }

  /** Row ordinals of the primary key columns, in key order. */
  public int[] keyPositions() {
    return key.clone();
  }

  /** The row ordinal of a column ID. */
  public int positionOfId(int id) {
    for (int i = 0; i < columns.size(); i++) if (columns.get(i).id() == id) return i;
    throw new IllegalArgumentException("no column with ID " + id);
  }
}
