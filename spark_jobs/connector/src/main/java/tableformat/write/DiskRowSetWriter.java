package tableformat.write;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.parquet.column.ColumnWriter;
import org.apache.parquet.column.ParquetProperties;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.apache.parquet.schema.Type;
import org.apache.parquet.schema.Types;
import org.apache.spark.sql.catalyst.InternalRow;
import tableformat.plan.ColumnType;

/**
 * One rowset written as its key-sorted rows arrive (Kudu's DiskRowSetWriter; the JVM twin of
 * tableformat/write/rolling_writer.py's): base file (§5), PK index (§6), bloom filter (§7) and
 * the descriptor with its statistics (§8.2).
 *
 * <p>Rows wait in a columnar buffer for a full row group and go out a column at a time. The
 * first rows wait until the dictionary sample of {@code max(row_group_rows, 65,536)} rows is in
 * (encodings are chosen from the rowset's first rows, §5); a rowset ending inside them is the
 * whole file, and its float columns get footer statistics when they hold no NaN. Keys stream
 * into the PK index as they come (a block a row group). Held to the end: 8 bytes a row for the
 * bloom filter, each PK block's first key, the statistics.
 */
public final class DiskRowSetWriter {
  static final int DICT_SAMPLE_ROWS = 65536;
  private static final String BLOCK_KEYS_META = "tableformat.pk_block_first_keys";
  private static final int CHUNK = 4096;               // rows a column writes before the next column

  private final TableFiles files;
  private final WriteSchema schema;
  private final RowSetProperties props;
  private final String tablet, id, dir;
  private final List<String> written = new ArrayList<>();
  private final ColumnBuffer[] buffers;
  private final ColumnStatistics[] stats;
  private final int capacity;
  private ParquetStream base, pk;
  private String basePath;
  private TableFiles.Sink baseSink, pkSink;
  private int pkInBlock;
  private final List<byte[]> firstKeys = new ArrayList<>();
  // the keys' bloom hashes in fixed blocks: no copy as the rowset grows, and no block G1 must
  // treat as a humongous object
  private static final int HASH_BLOCK = 8192;
  private final List<long[]> hashes = new ArrayList<>();
  private long numRows;
  private double inputBytes;
  private byte[] minKey, maxKey;

  public DiskRowSetWriter(TableFiles files, WriteSchema schema, RowSetProperties props, String tablet) {
    this.files = files;
    this.schema = schema;
    this.props = props;
    this.tablet = tablet;
    this.id = UUID.randomUUID().toString().replace("-", "");
    this.dir = "tablets/" + tablet + "/" + id;
    this.capacity = Math.max(props.rowGroupRows(), DICT_SAMPLE_ROWS);
    List<WriteColumn> cols = schema.columns();
    buffers = new ColumnBuffer[cols.size()];
    stats = new ColumnStatistics[cols.size()];
    for (int i = 0; i < buffers.length; i++) {
      buffers[i] = new ColumnBuffer(cols.get(i), i, capacity);
      stats[i] = new ColumnStatistics(cols.get(i));
    }
  }

  public String id() {
    return id;
  }

  /** A row (ordinals as {@link WriteSchema}) and its encoded key, above the previous row's; the
   *  key array is kept (the PK index, bounds): the caller must not change it. */
  public void write(InternalRow row, byte[] encodedKey) {
    for (ColumnBuffer b : buffers) {
      b.append(row);
      inputBytes += b.arrowBytes(b.size - 1);
    }
    writeKey(encodedKey);
    int pending = buffers.length == 0 ? 0 : buffers[0].size;
    if (base == null) {
      if (pending >= capacity) {
        open(false);
        flushRows(false);
      }
    } else if (pending >= props.rowGroupRows()) {
      flushRows(false);
    }
  }

  private void writeKey(byte[] key) {
    if (minKey == null) minKey = key;
    maxKey = key;
    int at = (int) (numRows % HASH_BLOCK);
    if (at == 0) hashes.add(new long[HASH_BLOCK]);
    hashes.get(hashes.size() - 1)[at] = SplitBlockBloom.hash(key);
    numRows++;
    if (pk == null) openPkIndex();
    if (pkInBlock == 0) firstKeys.add(key);
    pk.column(0).write(Binary.fromConstantByteArray(key), 0, 0);
    pk.endRecords(1);
    if (++pkInBlock == props.pkIndexBlockRows()) {
      pk.endRowGroup();
      pkInBlock = 0;
    }
  }

  public long numRows() {
    return numRows;
  }

  /** Arrow bytes of the input so far, as the Python writer measures rowset size (§8.2 rowset_target_bytes). */
  public long inputBytes() {
    return (long) inputBytes;
  }

  private void openPkIndex() {
    MessageType s = Types.buildMessage().addField(Types.required(PrimitiveTypeName.BINARY).named("key")).named("schema");
    ParquetProperties p = ParquetStream.properties().withStatisticsEnabled(false)
        .withValuesWriterFactory(new Encodings(Map.of("key", Encodings.Enc.DELTA_BYTE_ARRAY))).build();
    String path = dir + "/pkindex.parquet";
    written.add(path);
    pkSink = files.create(path);
    pk = new ParquetStream(pkSink, s, p, new CompressionCodecName[] {CompressionCodecName.LZ4_RAW});
  }

  /** Open the base file, its encodings chosen from the buffered first rows ({@code whole}: all of them). */
  private void open(boolean whole) {
    List<Type> fields = new ArrayList<>();
    Map<String, Encodings.Enc> encs = new HashMap<>();
    ParquetProperties.Builder p = ParquetStream.properties();
    CompressionCodecName[] codecs = new CompressionCodecName[buffers.length];
    for (int i = 0; i < buffers.length; i++) {
      ColumnBuffer b = buffers[i];
      WriteColumn c = b.column;
      fields.add(field(c, b.width));
      encs.put(c.field(), Encodings.choose(c, Encodings.sampled(c) && b.highCardinality(DICT_SAMPLE_ROWS)));
      codecs[i] = codec(c.compression());
      if (c.type().isFloat() && !(whole && !b.hasNaN())) p.withStatisticsEnabled(c.field(), false);
    }
    MessageType s = new MessageType("schema", fields);
    basePath = dir + "/base-" + UUID.randomUUID().toString().replace("-", "").substring(0, 12) + ".parquet";
    written.add(basePath);
    baseSink = files.create(basePath);
    base = new ParquetStream(baseSink, s, p.withValuesWriterFactory(new Encodings(encs)).build(), codecs);
  }

  static Type field(WriteColumn c, int flbaWidth) {
    ColumnType t = c.type();
    Type.Repetition rep = c.nullable() ? Type.Repetition.OPTIONAL : Type.Repetition.REQUIRED;
    Types.PrimitiveBuilder<PrimitiveType> b = switch (t.kind()) {
      case "bool" -> Types.primitive(PrimitiveTypeName.BOOLEAN, rep);
      case "int8" -> Types.primitive(PrimitiveTypeName.INT32, rep).as(LogicalTypeAnnotation.intType(8, true));
      case "int16" -> Types.primitive(PrimitiveTypeName.INT32, rep).as(LogicalTypeAnnotation.intType(16, true));
      case "int32" -> Types.primitive(PrimitiveTypeName.INT32, rep);
      case "int64" -> Types.primitive(PrimitiveTypeName.INT64, rep);
      case "date" -> Types.primitive(PrimitiveTypeName.INT32, rep).as(LogicalTypeAnnotation.dateType());
      case "unixtime_micros" -> Types.primitive(PrimitiveTypeName.INT64, rep)
          .as(LogicalTypeAnnotation.timestampType(true, LogicalTypeAnnotation.TimeUnit.MICROS));
      case "float" -> Types.primitive(PrimitiveTypeName.FLOAT, rep);
      case "double" -> Types.primitive(PrimitiveTypeName.DOUBLE, rep);
      case "decimal" -> {
        LogicalTypeAnnotation dec = LogicalTypeAnnotation.decimalType(t.scale(), t.precision());
        if (t.precision() <= 9) yield Types.primitive(PrimitiveTypeName.INT32, rep).as(dec);
        if (t.precision() <= 18) yield Types.primitive(PrimitiveTypeName.INT64, rep).as(dec);
        yield Types.primitive(PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY, rep).length(flbaWidth).as(dec);
      }
      case "binary" -> Types.primitive(PrimitiveTypeName.BINARY, rep);
      default -> Types.primitive(PrimitiveTypeName.BINARY, rep).as(LogicalTypeAnnotation.stringType());
    };
    return b.id(c.id()).named(c.field());
  }

  static CompressionCodecName codec(String compression) {
    return switch (compression) {
      case "lz4" -> CompressionCodecName.LZ4_RAW;
      case "snappy" -> CompressionCodecName.SNAPPY;
      case "zlib" -> CompressionCodecName.GZIP;
      case "zstd" -> CompressionCodecName.ZSTD;
      default -> CompressionCodecName.UNCOMPRESSED;
    };
  }

  /** Write the buffered rows' full row groups ({@code last}: all of them) and keep the rest. */
  private void flushRows(boolean last) {
    int pending = buffers[0].size;
    int rg = props.rowGroupRows();
    int n = last ? pending : pending - pending % rg;
    for (int start = 0; start < n; start += rg) {
      int end = Math.min(start + rg, n);
      for (int c = 0; c < buffers.length; c++) stats[c].add(buffers[c], start, end);
      for (int from = start; from < end; from += CHUNK) {
        int to = Math.min(from + CHUNK, end);
        for (int c = 0; c < buffers.length; c++) {
          ColumnWriter w = base.column(c);
          buffers[c].writeTo(w, from, to);
        }
        base.endRecords(to - from);
      }
      base.endRowGroup();
    }
    for (ColumnBuffer b : buffers) b.shift(n);
    if (!last && rg < capacity) for (ColumnBuffer b : buffers) b.shrink(rg);     // the sample is past
  }

  /** Close the files: the rowset's {@code add_rowset} descriptor (§8.2). */
  public Map<String, Object> finish() {
    if (numRows == 0) throw new IllegalStateException("a rowset has at least one row");
    if (base == null) open(true);
    flushRows(true);
    base.close(Map.of("tableformat.column_names", columnNames()));
    List<String> hex = new ArrayList<>();
    for (byte[] k : firstKeys) hex.add(HexFormat.of().formatHex(k));
    pk.close(Map.of(BLOCK_KEYS_META, PyJson.list(hex)));
    byte[] bloom = SplitBlockBloom.build(hashes, HASH_BLOCK, (int) numRows);
    hashes.clear();
    String bloomPath = dir + "/bloom.bin";
    written.add(bloomPath);
    TableFiles.Sink bs = files.create(bloomPath);
    try {
      bs.write(bloom, 0, bloom.length);
      bs.close();
    } catch (IOException e) {
      bs.discard();
      throw new UncheckedIOException(e);
    }
    List<Object> ids = new ArrayList<>();
    for (WriteColumn c : schema.columns()) ids.add(c.id());
    Map<String, Object> st = new LinkedHashMap<>();
    for (int i = 0; i < stats.length; i++) st.put(Integer.toString(schema.columns().get(i).id()), stats[i].toJson());
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("id", id);
    d.put("tablet", tablet);
    d.put("num_rows", numRows);
    d.put("min_key", HexFormat.of().formatHex(minKey));
    d.put("max_key", HexFormat.of().formatHex(maxKey));
    Map<String, Object> b = ref(basePath, baseSink);
    b.put("column_ids", ids);
    b.put("crc32", baseSink.crc32());
    d.put("base", List.of(b));
    d.put("pk_index", ref(dir + "/pkindex.parquet", pkSink));
    d.put("bloom", ref(bloomPath, bs));
    d.put("stats", st);
    base = pk = null;
    return d;
  }

  private static Map<String, Object> ref(String path, TableFiles.Sink sink) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("path", path);
    m.put("size", sink.size());
    m.put("crc32", sink.crc32());
    return m;
  }

  private String columnNames() {
    Map<String, String> names = new LinkedHashMap<>();
    for (WriteColumn c : schema.columns()) names.put(c.field(), c.name());
    return PyJson.object(names);
  }

  /** Drop the open files unpublished and delete every file written. */
  public void abort() {
    if (base != null) base.discard();
    if (pk != null) pk.discard();
    base = pk = null;
    files.deleteQuietly(written);
  }

  /** Paths (relative to the root) of every file this writer created. */
  public List<String> files() {
    return List.copyOf(written);
  }
}
