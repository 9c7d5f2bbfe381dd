package tableformat.deltas;

import java.io.IOException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import tableformat.connector.ReadPlan;
import tableformat.parquet.BatchSource;
import tableformat.parquet.ParquetFiles;

/**
 * Loads a rowset's delta files with Spark's vectorized Parquet reader and resolves them once per
 * (rowset, files, columns, cut) for the whole executor (files are immutable): REDO files in rank
 * order, the newest record per (row, column) winning (§9.4 rules 3-5), after the UNDO winners
 * for a read behind the horizon (rule 6).
 */
public final class DeltaLoader {
  private DeltaLoader() {}

  /** The resolved deltas an executor keeps, bounded by their bytes (a few REDO-heavy rowsets
   *  must not fill the heap; many small ones may all stay): least recently used go first. Set
   *  from the Spark conf {@code spark.tableformat.deltaCache.size} as each task starts. */
  public static volatile long cacheBytes = Math.min(256L << 20, Runtime.getRuntime().maxMemory() / 8);
  private static long cached;
  private static final LinkedHashMap<String, RowSetDeltas> CACHE = new LinkedHashMap<>(16, 0.75f, true);
  private static final Map<String, Long> SIZES = new HashMap<>();

  /** Keeps {@code d} under {@code key} and evicts the least recently used entries beyond the bound
   *  (an entry larger than the whole bound is not kept). */
  static void cache(String key, RowSetDeltas d) {
    long b = d.bytes();
    synchronized (CACHE) {
      if (b > cacheBytes) return;
      Long old = SIZES.put(key, b);
      if (old != null) cached -= old;
      CACHE.put(key, d);
      cached += b;
      java.util.Iterator<Map.Entry<String, RowSetDeltas>> it = CACHE.entrySet().iterator();
      while (cached > cacheBytes && it.hasNext()) {
        String k = it.next().getKey();
        it.remove();
        cached -= SIZES.remove(k);
      }
    }
  }

  static RowSetDeltas cached(String key) {
    synchronized (CACHE) {
      return CACHE.get(key);
    }
  }

  /** (entries, bytes) cached now. */
  static long[] cacheUse() {
    synchronized (CACHE) {
      return new long[] {CACHE.size(), cached};
    }
  }

  public static RowSetDeltas load(Configuration conf, ReadPlan.RowSetPlan rs, List<ReadPlan.ColumnPlan> cols, Long readTs)
      throws IOException {
    StringBuilder key = new StringBuilder(rs.id).append('@').append(readTs).append(':');
    for (ReadPlan.ColumnPlan c : cols) key.append(c.id).append(',');
    for (ReadPlan.FilePlan f : rs.undo) key.append(f.path).append(';');
    for (ReadPlan.FilePlan f : rs.redo) key.append(f.path).append(';');
    String k = key.toString();
    RowSetDeltas d = cached(k);
    if (d != null) return d;
    d = resolve(conf, rs, cols, readTs);
    cache(k, d);
    return d;
  }

  private static RowSetDeltas resolve(Configuration conf, ReadPlan.RowSetPlan rs, List<ReadPlan.ColumnPlan> cols,
                                      Long readTs) throws IOException {
    Map<Integer, RowSetDeltas.Collector> main = new HashMap<>();
    RowSetDeltas.Collector dels = new RowSetDeltas.Collector(null);
    if (!rs.undo.isEmpty()) {
      Map<Integer, RowSetDeltas.Collector> undo = new HashMap<>();
      RowSetDeltas.Collector undoDels = new RowSetDeltas.Collector(null);
      for (ReadPlan.FilePlan f : rs.undo) read(conf, rs, f, cols, readTs, true, undo, undoDels);
      for (Map.Entry<Integer, RowSetDeltas.Collector> e : undo.entrySet()) {
        UndoWinners.earliestInto(e.getValue(), collector(main, e.getValue().type, e.getKey()));
      }
      UndoWinners.earliestInto(undoDels, dels);
    }
    for (ReadPlan.FilePlan f : rs.redo) read(conf, rs, f, cols, readTs, false, main, dels);
    RowIdSet deleted = null;
    if (dels.n > 0) {
      long[][] w = dels.lastPerRow();
      deleted = new RowIdSet();
      for (int i = 0; i < w[0].length; i++) {
        if (dels.op[(int) w[1][i]] == DeltaOp.DELETE) deleted.set(w[0][i]);
      }
      if (deleted.isEmpty()) deleted = null;
    }
    RowSetDeltas out = new RowSetDeltas(deleted);
    for (Map.Entry<Integer, RowSetDeltas.Collector> e : main.entrySet()) {
      if (e.getValue().n > 0) out.columns.put(e.getKey(), e.getValue().changes());
    }
    return out;
  }

  private static RowSetDeltas.Collector collector(Map<Integer, RowSetDeltas.Collector> m,
                                                  org.apache.spark.sql.types.DataType t, int id) {
    return m.computeIfAbsent(id, i -> new RowSetDeltas.Collector(t));
  }

  private static void read(Configuration conf, ReadPlan.RowSetPlan rs, ReadPlan.FilePlan f,
                           List<ReadPlan.ColumnPlan> cols, Long readTs, boolean undo,
                           Map<Integer, RowSetDeltas.Collector> out, RowSetDeltas.Collector dels) throws IOException {
    java.util.List<StructField> fields = new java.util.ArrayList<>();
    fields.add(new StructField("rowid", DataTypes.LongType, true, Metadata.empty()));
    fields.add(new StructField("op", DataTypes.ByteType, true, Metadata.empty()));
    if (f.hasTs) fields.add(new StructField("ts", DataTypes.LongType, true, Metadata.empty()));
    java.util.List<ReadPlan.ColumnPlan> changed = new java.util.ArrayList<>();
    for (ReadPlan.ColumnPlan c : cols) {
      if (!f.holds(c.id)) continue;
      changed.add(c);
      fields.add(new StructField("u" + c.id, DataTypes.BooleanType, true, Metadata.empty()));
      fields.add(new StructField("c" + c.id, c.type, true, Metadata.empty()));
    }
    RowSetDeltas.Collector[] colls = new RowSetDeltas.Collector[changed.size()];
    for (int j = 0; j < colls.length; j++) colls[j] = collector(out, changed.get(j).type, changed.get(j).id);
    int tsAt = f.hasTs ? 2 : -1, first = f.hasTs ? 3 : 2;
    org.apache.hadoop.fs.FileStatus st = ParquetFiles.checkedStatus(conf, f.path, f.size);
    try (BatchSource r = ParquetFiles.open(conf, st, new StructType(fields.toArray(new StructField[0])),
        0, st.getLen(), 4096, null, null)) {
      ColumnarBatch b;
      while ((b = r.next()) != null) {
        int n = b.numRows();
        ColumnVector rowid = b.column(0), op = b.column(1), ts = tsAt < 0 ? null : b.column(tsAt);
        for (int i = 0; i < n; i++) {
          long t = ts == null ? f.maxTs : ts.getLong(i);
          if (undo ? t <= readTs : (readTs != null && t > readTs)) continue;
          long row = rowid.getLong(i);
          if (row < 0 || row >= rs.numRows) {
            throw new IOException("tableformat CorruptFileError: delta file " + f.path + " has rowid " + row
                + " beyond its rowset's " + rs.numRows + " rows");
          }
          byte o = op.getByte(i);
          if (o == DeltaOp.DELETE || o == DeltaOp.REINSERT) dels.add(row, t, o, null, 0);
          if (o == DeltaOp.DELETE) continue;
          for (int j = 0; j < colls.length; j++) {
            ColumnVector u = b.column(first + 2 * j);
            if (!u.isNullAt(i) && u.getBoolean(i)) colls[j].add(row, t, o, b.column(first + 2 * j + 1), i);
          }
        }
      }
    }
  }
}
