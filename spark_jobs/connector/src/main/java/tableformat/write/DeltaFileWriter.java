package tableformat.write;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.parquet.column.ColumnWriter;
import org.apache.parquet.column.ParquetProperties;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.apache.parquet.schema.Type;
import org.apache.parquet.schema.Types;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * One commit's REDO delta file for one rowset (Kudu's DeltaFileWriter; the JVM twin of
 * tableformat/format/deltafile.py's {@code write_delta_file}), holding DELETE records: columns
 * {@code rowid} (uint32), {@code op} (int8) and the key columns {@code c<id>} (specs/format.md §9),
 * no {@code ts} column (the records take the commit's timestamp), no statistics (readers use the
 * descriptor's), {@code op} and the keys dictionary-encoded, as the engine writes them.
 *
 * <p>A delete commit writes no UNDO file: UNDO files are written by compactions only (§9), and
 * change history reads a delete's before-image from the base and the older REDO files (§9.2).
 * Records may come in any rowid order (a task's rows of a rowset mostly come in order); they are
 * sorted, and a rowid deleted twice is one record (the net effect, §9).
 */
public final class DeltaFileWriter {
  static final int DELETE = 2;

  private final TableFiles files;
  private final String tablet, rowset;
  private final List<WriteColumn> keys = new ArrayList<>();
  private long[] rowids = new long[64];
  private InternalRow[] keyRows = new InternalRow[64];
  private int n;

  /** @param rowset the id of the rowset in {@code tablet} whose rows the records delete */
  public DeltaFileWriter(TableFiles files, WriteSchema schema, String tablet, String rowset) {
    this.files = files;
    this.tablet = tablet;
    this.rowset = rowset;
    for (int p : schema.keyPositions()) {
      WriteColumn c = schema.columns().get(p);
      keys.add(new WriteColumn(c.id(), c.name(), c.type(), false, c.encoding(), c.compression()));
    }
  }

  public String rowset() {
    return rowset;
  }

  public int size() {
    return n;
  }

  /** Delete row {@code rowid} of the rowset, whose key is {@code key} (ordinal i: key column i, in
   *  the internal values {@link WriteSchema} describes). The row is copied. */
  public void delete(long rowid, InternalRow key) {
    if (rowid < 0 || rowid > 0xFFFFFFFFL) throw new IllegalArgumentException("rowid " + rowid + " is not a uint32");
    if (n == rowids.length) {
      rowids = Arrays.copyOf(rowids, 2 * n);
      keyRows = Arrays.copyOf(keyRows, 2 * n);
    }
    rowids[n] = rowid;
    keyRows[n++] = key.copy();
  }

  /** Write the file (there is at least one record): its {@code add_delta} descriptor (§9). */
  public Map<String, Object> finish() {
    if (n == 0) throw new IllegalStateException("a delta file has at least one record");
    Integer[] order = new Integer[n];
    for (int i = 0; i < n; i++) order[i] = i;
    Arrays.sort(order, (a, b) -> Long.compare(rowids[a], rowids[b]));
    List<Integer> kept = new ArrayList<>(n);
    for (int i = 0; i < n; i++)
      if (i == 0 || rowids[order[i]] != rowids[order[i - 1]]) kept.add(order[i]);
    int m = kept.size();

    List<Type> fields = new ArrayList<>();
    fields.add(Types.required(PrimitiveTypeName.INT32).as(LogicalTypeAnnotation.intType(32, false)).named("rowid"));
    fields.add(Types.required(PrimitiveTypeName.INT32).as(LogicalTypeAnnotation.intType(8, true)).named("op"));
    Map<String, Encodings.Enc> encs = new HashMap<>();
    encs.put("op", Encodings.Enc.DICTIONARY);
    ColumnBuffer[] bufs = new ColumnBuffer[keys.size()];
    for (int k = 0; k < bufs.length; k++) {
      WriteColumn c = keys.get(k);
      bufs[k] = new ColumnBuffer(c, k, m);
      for (int i : kept) bufs[k].append(keyRows[i]);
      fields.add(DiskRowSetWriter.field(c, bufs[k].width));
      encs.put(c.field(), Encodings.Enc.DICTIONARY);
    }
    CompressionCodecName[] codecs = new CompressionCodecName[fields.size()];
    Arrays.fill(codecs, CompressionCodecName.LZ4_RAW);
    ParquetProperties p = ParquetStream.properties().withStatisticsEnabled(false)
        .withValuesWriterFactory(new Encodings(encs)).build();
    String path = "tablets/" + tablet + "/" + rowset + "/redo-"
        + UUID.randomUUID().toString().replace("-", "").substring(0, 12) + ".parquet";
    TableFiles.Sink sink = files.create(path);
    ParquetStream out = new ParquetStream(sink, new MessageType("schema", fields), p, codecs);
    try {
      ColumnWriter rid = out.column(0), op = out.column(1);
      for (int i : kept) {
        rid.write((int) rowids[i], 0, 0);          // uint32 in an INT32 (two's complement bits)
        op.write(DELETE, 0, 0);
      }
      for (int k = 0; k < bufs.length; k++) bufs[k].writeTo(out.column(2 + k), 0, m);
      out.endRecords(m);
      out.close(Map.of());
    } catch (RuntimeException e) {
      out.discard();
      files.deleteQuietly(List.of(path));
      throw e;
    }
    rowids = null;
    keyRows = null;
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("path", path);
    d.put("size", sink.size());
    d.put("kind", "redo");
    d.put("rowset", rowset);
    d.put("num_records", (long) m);
    d.put("delete_count", (long) m);
    d.put("reinsert_count", 0L);
    d.put("update_counts", new LinkedHashMap<String, Object>());
    d.put("min_ts", 0L);
    d.put("max_ts", 0L);
    d.put("has_ts_column", false);
    d.put("crc32", sink.crc32());
    return d;
  }
}
