package tableformat.write;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataType;
import tableformat.log.Json;

/**
 * One Spark task of a SQL DELETE (issue #46): the keys of the rows the statement's scan matched
 * come in (a row a key, in key-column order, at the snapshot the statement planned on); each key
 * is routed to its tablet and found live in that snapshot's rowsets by the key check's probes
 * (interval, bloom, PK index, minus rows deleted, §6-§8.4), and the task writes one REDO DELETE
 * file per rowset it touches ({@link DeltaFileWriter}, §9). {@link #finish} returns the task's
 * result: its mutation fragment (§10.2: {@code definition_unchanged}, {@code rows_live} of the rows
 * it deletes) and the files it wrote.
 */
public final class DeleteTask {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  private final InsertPlan plan;
  private final Configuration conf;
  private final WriteSchema schema;
  private final TabletRouter router;
  private final KeyEncoder encoder;
  private final int[] keyPos;
  private final DataType[] keyTypes;
  private final List<InternalRow> keys = new ArrayList<>();
  private final List<String> written = new ArrayList<>();

  /** @param plan the snapshot's plan, as an insert's (schema, partitioning, the rowsets probed)
   *  @param keyTypes the Spark types of the key columns, in key order */
  public DeleteTask(InsertPlan plan, DataType[] keyTypes, Configuration conf) {
    this.plan = plan;
    this.keyTypes = keyTypes.clone();
    this.conf = conf;
    this.schema = WriteSchema.of(plan.schemaJson);
    this.router = TabletRouter.of(schema, plan.partitioningJson);
    this.encoder = KeyEncoder.primaryKey(schema);
    this.keyPos = schema.keyPositions();
  }

  /** A row to delete, by its key (ordinal i: key column i). */
  public void delete(InternalRow key) {
    InternalRow own = key.copy();                  // Spark reuses its rows
    Object[] cells = new Object[schema.columns().size()];
    for (int i = 0; i < keyPos.length; i++)
      cells[keyPos[i]] = own.get(i, keyTypes[i]);
    keys.add(new GenericInternalRow(cells));
  }

  /** Locate the keys, write the delete files: the task's result as JSON ({@code fragment}, null
   *  when it deletes nothing, and {@code files}). */
  public String finish() {
    Map<String, KeyCheck> checks = KeyCheck.of(conf, plan.rowsets, plan.readTs);
    List<String> tablets = router.tabletIds();
    Map<String, List<Object[]>> byTablet = new LinkedHashMap<>();       // tablet -> (encoded key, row)
    for (InternalRow r : keys)
      byTablet.computeIfAbsent(tablets.get(router.tabletOrdinal(r)), t -> new ArrayList<>())
          .add(new Object[] {encoder.encode(r), r});
    Map<String, DeltaFileWriter> writers = new LinkedHashMap<>();
    Map<String, List<Long>> rows = new LinkedHashMap<>();
    TableFiles files = new TableFiles(plan.root, conf);
    long deleted = 0;
    ArrayNode actions = F.arrayNode();
    try {
      for (Map.Entry<String, List<Object[]>> e : byTablet.entrySet()) {
        KeyCheck check = checks.get(e.getKey());
        if (check == null) continue;                  // a tablet without rowsets holds no row
        List<Object[]> ks = e.getValue();
        ks.sort((a, b) -> Arrays.compareUnsigned((byte[]) a[0], (byte[]) b[0]));
        List<Object[]> uniq = new ArrayList<>();
        for (Object[] k : ks)
          if (uniq.isEmpty() || !Arrays.equals((byte[]) uniq.get(uniq.size() - 1)[0], (byte[]) k[0])) uniq.add(k);
        byte[][] enc = new byte[uniq.size()][];
        for (int i = 0; i < enc.length; i++) enc[i] = (byte[]) uniq.get(i)[0];
        int[] which = new int[enc.length];
        long[] rowid = new long[enc.length];
        check.find(enc, 0, enc.length, which, rowid);
        for (int i = 0; i < enc.length; i++) {
          if (which[i] < 0) continue;                 // not live at the snapshot: nothing to delete
          KeyCheck.Probed rs = check.rowsets().get(which[i]);
          InternalRow full = (InternalRow) uniq.get(i)[1];
          Object[] k = new Object[keyPos.length];
          for (int j = 0; j < keyPos.length; j++)
            k[j] = full.get(keyPos[j], keyTypes[j]);
          writers.computeIfAbsent(rs.id(), id -> new DeltaFileWriter(files, schema, rs.tablet(), id))
              .delete(rowid[i], new GenericInternalRow(k));
          rows.computeIfAbsent(rs.id(), id -> new ArrayList<>()).add(rowid[i]);
          deleted++;
        }
      }
      for (DeltaFileWriter w : writers.values()) {
        Map<String, Object> d = w.finish();
        written.add((String) d.get("path"));
        actions.addObject().set("add_delta", Json.MAPPER.valueToTree(d));
      }
    } catch (RuntimeException e) {
      files.deleteQuietly(written);
      throw e;
    }
    ObjectNode out = F.objectNode();
    ArrayNode fl = out.putArray("files");
    written.forEach(fl::add);
    if (deleted == 0) {
      out.putNull("fragment");
      return out.toString();
    }
    ObjectNode f = out.putObject("fragment");
    f.put("operation", "DELETE").put("read_version", plan.version);
    f.set("actions", actions);
    f.set("files", fl.deepCopy());
    f.putObject("counts").put("deleted", deleted);
    ArrayNode reqs = f.putArray("requirements");
    reqs.addObject().put("kind", "definition_unchanged");
    // the rows were chosen by the statement's condition on their values: a concurrent change to one
    // of them is a conflict, never a rebase (Requirements.rowsLive, specs/format.md §17)
    ObjectNode live = reqs.addObject().put("kind", "rows_live").put("chosen_by_values", true).putObject("rows");
    for (Map.Entry<String, List<Long>> e : rows.entrySet()) live.put(e.getKey(), packRowids(e.getValue()));
    f.put("data_change", true).put("table_id", plan.tableId).put("kind", "mutation");
    return out.toString();
  }

  /** Delete the files written (the statement failed). */
  public void abort() {
    new TableFiles(plan.root, conf).deleteQuietly(written);
  }

  private static String packRowids(List<Long> ids) {
    long[] a = ids.stream().mapToLong(Long::longValue).sorted().toArray();
    ByteBuffer b = ByteBuffer.allocate(a.length * 8).order(ByteOrder.LITTLE_ENDIAN);
    for (long id : a) b.putLong(id);
    return Base64.getEncoder().encodeToString(b.array());
  }
}
