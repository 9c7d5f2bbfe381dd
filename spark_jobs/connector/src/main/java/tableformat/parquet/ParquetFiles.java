package tableformat.parquet;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapred.FileSplit;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.parquet.HadoopReadOptions;
import org.apache.parquet.filter2.predicate.FilterPredicate;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.io.SeekableInputStream;
import org.apache.spark.internal.config.ConfigEntry;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.parquet.ParquetReadSupport;
import org.apache.spark.sql.execution.datasources.parquet.VectorizedParquetRecordReader;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.internal.SQLConf$;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import tableformat.log.CorruptFileError;
import tableformat.plan.BytesInputFile;

/**
 * Opening base and delta files with Spark's own vectorized Parquet reader, the way Spark's
 * Parquet scan does: the Hadoop conf carries the requested schema and the session's
 * {@code spark.sql.*} Parquet settings; splits are {@code mapred.FileSplit}s (Spark 4 casts to it).
 */
public final class ParquetFiles {
  private ParquetFiles() {}

  /** Spark's temporary row-index field: the reader fills it with each row's ordinal in its file
   *  (the rowid, §9.4 rule 2). Declared nullable, or the reader calls it a missing required column. */
  public static final StructField ROW_INDEX = new StructField(
      ParquetFileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME(), DataTypes.LongType, true, Metadata.empty());

  static final String VERIFY_CRC = "parquet.page.verify-checksum.enabled";

  /** The session's Hadoop conf plus every Parquet-reader SQL setting (defaults included): the
   *  reader's schema converter reads them from the Hadoop conf, not from SQLConf. */
  public static Configuration hadoopConf(SparkSession spark) {
    Configuration conf = spark.sessionState().newHadoopConf();
    SQLConf sql = spark.sessionState().conf();
    for (ConfigEntry<?> e : SQLConf$.MODULE$.getConfigEntries()) {
      String k = e.key();
      if (k.startsWith("spark.sql.parquet.") || k.startsWith("spark.sql.legacy.parquet.")
          || k.startsWith("spark.sql.variant.") || k.equals("spark.sql.caseSensitive")
          || k.equals("spark.sql.session.timeZone") || k.equals("spark.sql.optimizer.nestedSchemaPruning.enabled")) {
        String v;
        try {
          v = sql.getConfString(k);
        } catch (RuntimeException ex) {
          continue;
        }
        if (v != null && !v.startsWith("<")) conf.set(k, v);
      }
    }
    if (conf.get(VERIFY_CRC) == null) conf.set(VERIFY_CRC, "true");   // page CRCs are part of the format (§5)
    return conf;
  }

  /** The file's status, its length checked against the size the log recorded (§8.2, §9.4 rule 8):
   *  the one metadata request a read makes of a file, which is then opened from this status. */
  public static FileStatus checkedStatus(Configuration conf, String path, long recorded) throws IOException {
    Path p = new Path(path);
    FileStatus st = p.getFileSystem(conf).getFileStatus(p);
    if (st.getLen() != recorded) {
      throw new IOException("tableformat CorruptFileError: " + path + " does not have the size the table log recorded ("
          + st.getLen() + " bytes, the log says " + recorded + "): it was replaced or is corrupt");
    }
    return st;
  }

  /**
   * The file's bytes, read whole once and checked against the CRC-32 the log recorded (§8.2): for a
   * read of every column and row of it, which then decodes these very bytes (§5: their page CRCs need
   * no second check). Another valid Parquet file in its place, of any length, is refused by name.
   */
  public static byte[] readVerified(Configuration conf, FileStatus file, long crc32) throws IOException {
    String path = file.getPath().toString();
    if (file.getLen() > Integer.MAX_VALUE - 16)
      throw new IOException("tableformat: " + path + " is too large to read whole (" + file.getLen() + " bytes)");
    byte[] bytes = new byte[(int) file.getLen()];
    try (SeekableInputStream in = HadoopInputFile.fromStatus(file, conf).newStream()) {
      in.readFully(bytes);
    }
    CRC32 crc = new CRC32();
    crc.update(bytes);
    if (crc.getValue() != crc32)
      throw new CorruptFileError("base file " + path + " fails its checksum (the CRC-32 the log recorded): it was "
          + "replaced or is damaged; restore it from a backup");
    return bytes;
  }

  /** A batch reader of {@code requested} fields over bytes [start, start + length) of the file:
   *  the row groups whose midpoint lies in the range (Parquet's rule, so splits never overlap).
   *  Spark's vectorized reader where it decodes every page of those fields (always on a Spark
   *  that decodes BYTE_STREAM_SPLIT: {@link ByteStreamSplitProbe}), else {@link ParquetColumnsReader}.
   *  {@code verified}: the file's bytes, checked whole ({@link #readVerified}), decoded from memory;
   *  null: read from the file, page CRCs verified. */
  public static BatchSource open(Configuration base, FileStatus file, StructType requested, long start, long length,
                          int capacity, FilterPredicate filter, byte[] verified) throws IOException {
    String path = file.getPath().toString();
    boolean own = false;
    if (!ByteStreamSplitProbe.sparkDecodes(base)) {    // Spark 4.2: look for pages it cannot decode
      try (ParquetFileReader r = ParquetFileReader.open(HadoopInputFile.fromStatus(file, base),
          HadoopReadOptions.builder(base, file.getPath()).withRange(start, start + length).build())) {
        own = ParquetColumnsReader.needed(r, requested);
      }
    }
    if (own) return new ParquetColumnsReader(base, file, requested, start, length, capacity);
    int n = requested.fields().length;
    if (filter == null && n > 0 && requested.fields()[n - 1].name().equals(ROW_INDEX.name())) {
      return positioned(base, file, new StructType(Arrays.copyOf(requested.fields(), n - 1)), start, length,
          capacity, verified);
    }
    VectorizedParquetRecordReader v = vectorized(base, file, requested, start, length, capacity, filter, verified).reader;
    return new BatchSource() {
      @Override public ColumnarBatch next() throws IOException {
        return v.nextKeyValue() ? (ColumnarBatch) v.getCurrentValue() : null;
      }
      @Override public void close() throws IOException { v.close(); }
    };
  }

  /** Spark's vectorized reader with the row index filled here, not by Spark: Spark generates it
   *  through a boxed Scala range, a third of a scan's CPU with pending deltas. Without a filter
   *  every row of the split's row groups is read, in order, and a batch never spans row groups,
   *  so positions follow from the footer's row-group offsets. */
  private static BatchSource positioned(Configuration base, FileStatus file, StructType requested, long start,
                                        long length, int capacity, byte[] verified) throws IOException {
    String path = file.getPath().toString();
    Opened o = vectorized(base, file, requested, start, length, capacity, null, verified);
    VectorizedParquetRecordReader r = o.reader;
    List<BlockMetaData> blocks = new ArrayList<>();
    for (BlockMetaData b : o.blocks) if (b.getRowCount() > 0) blocks.add(b);
    long[] offsets = new long[blocks.size()], counts = new long[blocks.size()];
    for (int i = 0; i < offsets.length; i++) {
      offsets[i] = blocks.get(i).getRowIndexOffset();
      counts[i] = blocks.get(i).getRowCount();
      if (offsets[i] < 0) {
        r.close();
        throw new IOException("tableformat: " + path + " has no row-group row offsets");
      }
    }
    OnHeapColumnVector index = new OnHeapColumnVector(capacity, DataTypes.LongType);
    return new BatchSource() {
      private int group;
      private long done;          // rows of row group `group` already returned

      @Override public ColumnarBatch next() throws IOException {
        if (!r.nextKeyValue()) return null;
        ColumnarBatch b = (ColumnarBatch) r.getCurrentValue();
        int rows = b.numRows();
        while (group < counts.length && done >= counts[group]) {
          group++;
          done = 0;
        }
        if (rows > 0 && (group >= counts.length || done + rows > counts[group])) {
          throw new IOException("tableformat CorruptFileError: " + path + " returned rows past its row groups");
        }
        long first = rows == 0 ? 0 : offsets[group] + done;
        for (int i = 0; i < rows; i++) index.putLong(i, first + i);
        done += rows;
        ColumnVector[] cols = new ColumnVector[b.numCols() + 1];
        for (int j = 0; j < b.numCols(); j++) cols[j] = b.column(j);
        cols[cols.length - 1] = index;
        return new ColumnarBatch(cols, rows);
      }

      @Override public void close() throws IOException {
        index.close();
        r.close();
      }
    };
  }

  /** The Hadoop conf of one reader: the requested schema and, when given, the pushed filter. */
  private static Configuration readerConf(Configuration base, StructType requested,
                                          FilterPredicate filter) {
    Configuration conf = new Configuration(base);
    conf.set("parquet.read.support.class", ParquetReadSupport.class.getName());
    conf.set(ParquetReadSupport.SPARK_ROW_REQUESTED_SCHEMA(), requested.json());
    conf.set("org.apache.spark.sql.parquet.row.attributes", requested.json());
    if (filter != null) {
      org.apache.parquet.hadoop.ParquetInputFormat.setFilterPredicate(conf, filter);
      conf.setBoolean("parquet.filter.record-level.enabled", false);   // rows stay by row index
    }
    return conf;
  }

  /** An initialized vectorized reader and the row groups of its range (before any filter). */
  static final class Opened {
    final VectorizedParquetRecordReader reader;
    final List<BlockMetaData> blocks;

    Opened(VectorizedParquetRecordReader reader, List<BlockMetaData> blocks) {
      this.reader = reader;
      this.blocks = blocks;
    }
  }

  /** Spark's vectorized reader over the file's range, opened from its status (no second metadata
   *  request) with the footer read here and handed to Spark, which then filters row groups by
   *  the pushed filter as it would have. */
  static Opened vectorized(Configuration base, FileStatus file, StructType requested, long start, long length,
                           int capacity, FilterPredicate filter, byte[] verified) throws IOException {
    Configuration conf = readerConf(base, requested, filter);
    if (verified != null) conf.setBoolean(VERIFY_CRC, false);     // the whole-file CRC-32 covered these bytes (§5)
    HadoopInputFile in = HadoopInputFile.fromStatus(file, conf);
    SeekableInputStream stream = verified != null ? new BytesInputFile(verified).newStream() : in.newStream();
    VectorizedParquetRecordReader r =
        new VectorizedParquetRecordReader(null, "CORRECTED", "UTC", "CORRECTED", "UTC", false, capacity);
    try {
      ParquetMetadata footer = ParquetFileReader.readFooter(
          in, HadoopReadOptions.builder(conf, file.getPath()).withRange(start, start + length).build(), stream);
      r.initialize(new FileSplit(file.getPath(), start, length, new String[0]),
          new TaskAttemptContextImpl(conf, new TaskAttemptID()),
          scala.Option.apply(in), scala.Option.apply(stream), scala.Option.apply(footer));
      r.initBatch(new StructType(), new GenericInternalRow(0));
      r.enableReturningBatches();
      return new Opened(r, footer.getBlocks());
    } catch (InterruptedException e) {
      closeAfterFailure(r, stream, e);
      throw new IOException(e);
    } catch (IOException | RuntimeException e) {
      closeAfterFailure(r, stream, e);
      throw e;
    }
  }

  /** Both closed whatever either throws; the open's own failure stays the one reported. */
  private static void closeAfterFailure(VectorizedParquetRecordReader r, SeekableInputStream stream, Exception cause) {
    try {
      r.close();
    } catch (IOException | RuntimeException e) {
      cause.addSuppressed(e);
    }
    try {
      stream.close();
    } catch (IOException | RuntimeException e) {
      cause.addSuppressed(e);
    }
  }
}
