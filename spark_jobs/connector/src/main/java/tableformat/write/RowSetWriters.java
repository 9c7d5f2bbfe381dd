package tableformat.write;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * A small driver-side entry to the writers, for Python (py4j) and tools: the rows of a (small)
 * DataFrame routed to their tablets (§4), sorted by key and written as rowsets, answered as
 * JSON {@code {"rowsets": [add_rowset descriptors], "files": [paths]}}. The rows are collected
 * in the driver: not the Spark insert path (the insert task writes per partition).
 */
public final class RowSetWriters {
  private static final ObjectMapper JSON = new ObjectMapper();

  private RowSetWriters() {}

  /** The DataFrame's columns must be the schema's, in order, of the matching Spark types (see {@link WriteSchema}). */
  public static String write(String root, String schemaJson, String partitioningJson, String propertiesJson,
                             Dataset<Row> rows) throws JsonProcessingException {
    WriteSchema schema = WriteSchema.of(schemaJson);
    TabletRouter router = TabletRouter.of(schema, partitioningJson);
    RowSetProperties props = RowSetProperties.of(JSON.readTree(propertiesJson));
    KeyEncoder keys = KeyEncoder.primaryKey(schema);
    InternalRow[] all = rows.queryExecution().executedPlan().executeCollect();
    int n = all.length;
    byte[][] key = new byte[n][];
    int[] tablet = new int[n];
    Integer[] order = new Integer[n];
    for (int i = 0; i < n; i++) {
      key[i] = keys.encode(all[i]);
      tablet[i] = router.tabletOrdinal(all[i]);
      order[i] = i;
    }
    Arrays.sort(order, Comparator.<Integer>comparingInt(i -> tablet[i]).thenComparing(i -> key[i], Arrays::compareUnsigned));
    TableFiles files = new TableFiles(root, rows.sparkSession().sessionState().newHadoopConf());
    List<Object> rowsets = new ArrayList<>();
    List<String> written = new ArrayList<>();
    List<RollingRowSetWriter> writers = new ArrayList<>();
    try {
      RollingRowSetWriter w = null;
      int current = -1;
      for (int j = 0; j < n; j++) {
        int i = order[j];
        if (tablet[i] != current) {
          if (w != null) rowsets.addAll(w.finish());
          current = tablet[i];
          w = new RollingRowSetWriter(files, schema, props, router.tabletId(current));
          writers.add(w);
        }
        w.write(all[i], key[i]);
      }
      if (w != null) rowsets.addAll(w.finish());
    } catch (RuntimeException e) {
      for (RollingRowSetWriter w : writers) w.abort();
      throw e;
    }
    for (RollingRowSetWriter w : writers) written.addAll(w.files());
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("rowsets", rowsets);
    out.put("files", written);
    return JSON.writeValueAsString(out);
  }
}
