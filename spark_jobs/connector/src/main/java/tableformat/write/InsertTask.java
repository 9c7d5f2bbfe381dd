package tableformat.write;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.InternalRow;
import tableformat.log.CellTooLargeError;
import tableformat.log.InvalidDataError;
import tableformat.log.NullValueError;

/**
 * One Spark task of an insert (Python's {@code writes.insert_task}, specs/format.md §10.2): rows
 * arrive ordered by the key columns (Spark's order of them is §3's encoded order), tablets
 * interleaved, so a key's duplicates in the input are adjacent. A row whose tablet has rowsets
 * that may hold its key waits in a batch for one key check of the batch's keys ({@link KeyCheck});
 * any other row goes straight to its tablet's rolling writer. A duplicate (adjacent, or live in
 * the snapshot) with on_duplicate fail aborts every writer (their files deleted) and is counted
 * from then on; with ignore it is skipped and counted, and the live rows skipped are recorded
 * ({@code skipped_keys_still_live}, §10.1). {@link #finish} gives the task's result: the fragment
 * JSON exactly as Python's task makes it, so either committer commits it.
 */
public final class InsertTask {
  static final int BATCH = 4096;
  static final int MAX_CELL_BYTES = 64 * 1024, MAX_ENCODED_KEY_BYTES = 16 * 1024;    // Kudu's (§2, §3)

  private final InsertPlan plan;
  private final WriterBinding binding;
  private final Configuration conf;
  private final Map<String, KeyCheck> checks;
  private final Map<String, WriterBinding.TabletWriter> writers = new LinkedHashMap<>();
  private final Map<String, Integer> waiting = new LinkedHashMap<>();     // rows of a tablet in the batch
  private final Map<String, TreeSet<Long>> skipped = new TreeMap<>();
  private final InternalRow[] rows = new InternalRow[BATCH];
  private final byte[][] keys = new byte[BATCH][];
  private final String[] tablets = new String[BATCH];
  private int n;
  private byte[] prev;
  private long duplicates;
  private String sample = "";
  private boolean failed, finished;

  public InsertTask(InsertPlan plan, Configuration conf) {
    this.plan = plan;
    this.conf = conf;
    this.binding = new WriterBinding(plan);
    this.checks = KeyCheck.of(conf, plan.rowsets, plan.readTs);
  }

  /** The next row (in the table's column order), at or above the previous row's key. */
  public void write(InternalRow row) {
    for (int p : plan.required) {
      if (row.isNullAt(p))
        throw new NullValueError("column '" + plan.columns.get(p) + "' is not nullable but has a NULL value");
    }
    for (int i = 0; i < plan.variable.length; i++) {
      int p = plan.variable[i];
      if (row.isNullAt(p)) continue;
      int len = plan.binary[i] ? row.getBinary(p).length : row.getUTF8String(p).numBytes();
      if (len > MAX_CELL_BYTES)
        throw new CellTooLargeError("column '" + plan.columns.get(p) + "': a cell is " + len
            + " bytes; the limit is " + MAX_CELL_BYTES + " bytes (64 KiB)");
    }
    byte[] key = binding.key(row);
    if (key.length > MAX_ENCODED_KEY_BYTES)
      throw new CellTooLargeError("an encoded primary key is " + key.length + " bytes; the limit is "
          + MAX_ENCODED_KEY_BYTES + " bytes (16 KiB)");
    if (prev != null) {
      int c = Arrays.compareUnsigned(key, prev);
      if (c < 0) throw new InvalidDataError("rows given to an insert task must be sorted by primary key");
      if (c == 0) {
        duplicate(row, binding.tablet(row), null, -1);
        return;
      }
    }
    prev = key;
    String tablet = binding.tablet(row);
    KeyCheck check = checks.get(tablet);
    if (check != null && (waiting.containsKey(tablet) || check.anyInterval(key, key))) {
      rows[n] = row.copy();
      keys[n] = key;
      tablets[n++] = tablet;
      waiting.merge(tablet, 1, Integer::sum);
      if (n == BATCH) flush();
    } else if (!failed) {
      writer(tablet).write(row, key);
    }
  }

  /** The batch's key check, then its rows (not found live) to their writers, each tablet in key order. */
  private void flush() {
    if (n == 0) return;
    int[] which = new int[n];
    long[] rowid = new long[n];
    Map<String, List<Integer>> byTablet = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) byTablet.computeIfAbsent(tablets[i], t -> new ArrayList<>()).add(i);
    for (Map.Entry<String, List<Integer>> e : byTablet.entrySet()) {
      List<Integer> idx = e.getValue();
      byte[][] ks = new byte[idx.size()][];
      for (int j = 0; j < ks.length; j++) ks[j] = keys[idx.get(j)];
      int[] w = new int[ks.length];
      long[] r = new long[ks.length];
      KeyCheck check = checks.get(e.getKey());
      check.find(ks, 0, ks.length, w, r);
      for (int j = 0; j < ks.length; j++) {
        int i = idx.get(j);
        if (w[j] >= 0) duplicate(rows[i], tablets[i], check.rowsets().get(w[j]).id(), r[j]);
        else if (!failed) writer(tablets[i]).write(rows[i], keys[i]);
      }
    }
    Arrays.fill(rows, 0, n, null);
    Arrays.fill(keys, 0, n, null);
    n = 0;
    waiting.clear();
  }

  private void duplicate(InternalRow row, String tablet, String rowset, long rowid) {
    duplicates++;
    if (sample.isEmpty()) sample = describe(row);
    if (rowset != null) skipped.computeIfAbsent(rowset, k -> new TreeSet<>()).add(rowid);
    if (!plan.ignore && !failed) abort();
  }

  /** The row's key as the engine's messages show it ({@link KeyText}). */
  private String describe(InternalRow row) {
    org.apache.spark.sql.types.StructType t = binding.sparkSchema();
    int[] at = new int[plan.keyColumns.size()];
    org.apache.spark.sql.types.DataType[] types = new org.apache.spark.sql.types.DataType[at.length];
    for (int j = 0; j < at.length; j++) {
      at[j] = plan.columns.indexOf(plan.keyColumns.get(j));
      types[j] = t.fields()[at[j]].dataType();
    }
    return KeyText.describe(row, at, types);
  }

  private WriterBinding.TabletWriter writer(String tablet) {
    WriterBinding.TabletWriter w = writers.get(tablet);
    if (w == null) {
      w = binding.open(tablet, conf);
      writers.put(tablet, w);
    }
    return w;
  }

  /** Deletes every file written; later rows are only checked (to count duplicates). */
  public void abort() {
    failed = true;
    RuntimeException first = null;
    for (WriterBinding.TabletWriter w : writers.values()) {
      try {
        w.abort();
      } catch (RuntimeException e) {
        if (first == null) first = e;
      }
    }
    writers.clear();
    if (first != null) throw first;
  }

  /** The task's result as JSON: {fragment (null: nothing to commit), files, rows, duplicates, sample}. */
  public String finish() {
    if (finished) throw new IllegalStateException("this insert task is finished");
    finished = true;
    flush();
    ObjectMapper m = new ObjectMapper();
    ObjectNode out = m.createObjectNode();
    ArrayNode actions = m.createArrayNode(), files = m.createArrayNode();
    long inserted = 0;
    int withRowsets = 0;
    try {
      for (WriterBinding.TabletWriter w : writers.values()) {
        List<Map<String, Object>> added = w.finish();
        if (added.isEmpty()) continue;
        withRowsets++;
        for (Map<String, Object> d : added) {
          actions.addObject().set("add_rowset", m.valueToTree(d));
          inserted += ((Number) d.get("num_rows")).longValue();
        }
        for (String f : w.files()) files.add(f);
      }
    } catch (RuntimeException e) {
      abort();
      throw e;
    }
    writers.clear();
    boolean skips = plan.ignore && duplicates > 0;
    ObjectNode frag = null;
    if (!failed && (withRowsets > 0 || skips)) {
      frag = m.createObjectNode();
      frag.put("operation", plan.operation());
      frag.put("read_version", plan.version);
      frag.set("actions", actions);
      frag.set("files", files.deepCopy());
      ObjectNode counts = frag.putObject("counts");
      counts.put("inserted", inserted);
      counts.put("ignored", plan.ignore ? duplicates : 0);
      ArrayNode reqs = frag.putArray("requirements");
      if (withRowsets > 1) reqs.addObject().put("kind", "rowsets_disjoint");
      if (withRowsets > 0) {
        reqs.addObject().put("kind", "definition_unchanged");
        ObjectNode ka = reqs.addObject();
        ka.put("kind", "keys_absent");
        ka.putObject("keys");
        ka.put("own_rowsets", true);
      }
      if (skips) {
        ObjectNode s = reqs.addObject();
        s.put("kind", "skipped_keys_still_live");
        ObjectNode r = s.putObject("rows");
        for (Map.Entry<String, TreeSet<Long>> e : skipped.entrySet()) r.put(e.getKey(), packRowids(e.getValue()));
      }
      frag.put("data_change", true);
      frag.put("table_id", plan.tableId);
      frag.put("kind", "spark_insert");
    }
    if (frag == null) {
      out.putNull("fragment");
      out.putArray("files");
    } else {
      out.set("fragment", frag);
      out.set("files", files);
    }
    out.put("rows", frag == null ? 0 : inserted);
    out.put("duplicates", duplicates);
    out.put("sample", sample);
    try {
      return m.writeValueAsString(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Rowids as Python's pack_rowids: base64 of little-endian int64s, ascending. */
  static String packRowids(java.util.Collection<Long> ids) {
    ByteBuffer b = ByteBuffer.allocate(8 * ids.size()).order(ByteOrder.LITTLE_ENDIAN);
    for (long id : ids) b.putLong(id);
    return Base64.getEncoder().encodeToString(b.array());
  }
}
