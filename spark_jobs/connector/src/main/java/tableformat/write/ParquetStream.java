package tableformat.write;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.bytes.BytesInput;
import org.apache.parquet.bytes.HeapByteBufferAllocator;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnWriteStore;
import org.apache.parquet.column.ColumnWriter;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.column.ParquetProperties;
import org.apache.parquet.column.page.DictionaryPage;
import org.apache.parquet.column.page.PageWriteStore;
import org.apache.parquet.column.page.PageWriter;
import org.apache.parquet.column.statistics.SizeStatistics;
import org.apache.parquet.column.statistics.Statistics;
import org.apache.parquet.column.statistics.geospatial.GeospatialStatistics;
import org.apache.parquet.compression.CompressionCodecFactory.BytesInputCompressor;
import org.apache.parquet.hadoop.CodecFactory;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.OutputFile;
import org.apache.parquet.io.PositionOutputStream;
import org.apache.parquet.schema.MessageType;

/**
 * A Parquet file written row group by row group through parquet-mr's column writers: data page
 * v2 with page CRCs (§5), a codec per column, the file's bytes counted and checksummed by its
 * {@link TableFiles.Sink}. The values of a row group go in a column at a time
 * ({@link #column}), then {@link #endRecords} and {@link #endRowGroup}: a row group's compressed
 * pages are all this holds.
 */
final class ParquetStream {
  private static final int PAGE_SIZE = 1 << 20;       // pyarrow's data page and dictionary page limits
  /** A CodecFactory hands out one compressor per codec, which keeps state between calls: each task
   *  thread has its own (an executor's threads write their files at the same time; a file is
   *  written by one thread). */
  private static final ThreadLocal<CodecFactory> CODECS =
      ThreadLocal.withInitial(() -> new CodecFactory(new Configuration(false), PAGE_SIZE));

  private final TableFiles.Sink sink;
  private final MessageType schema;
  private final ParquetProperties props;
  private final ParquetFileWriter file;
  private final List<ColumnDescriptor> columns;
  private final Chunk[] chunks;
  private ColumnWriteStore store;
  private long rows;

  ParquetStream(TableFiles.Sink sink, MessageType schema, ParquetProperties props, CompressionCodecName[] codecs) {
    this.sink = sink;
    this.schema = schema;
    this.props = props;
    this.columns = schema.getColumns();
    this.chunks = new Chunk[columns.size()];
    for (int i = 0; i < chunks.length; i++) {
      chunks[i] = new Chunk(columns.get(i), codecs[i], CODECS.get().getCompressor(codecs[i]));
    }
    try {
      file = new ParquetFileWriter(new Out(sink), schema, ParquetFileWriter.Mode.CREATE, Long.MAX_VALUE, 0,
          ParquetProperties.DEFAULT_COLUMN_INDEX_TRUNCATE_LENGTH, Integer.MAX_VALUE, true);
      file.start();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    newStore();
  }

  private void newStore() {
    PageWriteStore pages = this::pageWriter;
    store = props.newColumnWriteStore(schema, pages);
  }

  private PageWriter pageWriter(ColumnDescriptor d) {
    for (Chunk c : chunks) if (c.column.equals(d)) return c;
    throw new IllegalStateException("no column " + d);
  }

  ColumnWriter column(int i) {
    return store.getColumnWriter(columns.get(i));
  }

  /** n rows were written to every column. */
  void endRecords(int n) {
    for (int j = 0; j < n; j++) store.endRecord();
    rows += n;
  }

  /** Close the row group (if any row is in it). */
  void endRowGroup() {
    if (rows == 0) return;
    store.flush();
    try {
      file.startBlock(rows);
      for (Chunk c : chunks) c.writeTo(file);
      file.endBlock();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    store.close();
    rows = 0;
    newStore();
  }

  /** Finish the file with this key-value metadata; the sink is closed. */
  void close(Map<String, String> keyValues) {
    endRowGroup();
    try {
      file.end(keyValues);
      sink.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  void discard() {
    try {
      store.close();
    } catch (RuntimeException e) {     // dropped after a failure: what failed is reported
    }
    sink.discard();
  }

  /** One column chunk's pages, compressed, until the row group is written (dictionary page first). */
  private static final class Chunk implements PageWriter {
    final ColumnDescriptor column;
    final CompressionCodecName codec;
    final BytesInputCompressor compressor;
    DictionaryPage dictionary;
    final List<Object[]> pages = new ArrayList<>();
    long valueCount, bytes;

    Chunk(ColumnDescriptor column, CompressionCodecName codec, BytesInputCompressor compressor) {
      this.column = column;
      this.codec = codec;
      this.compressor = compressor;
    }

    @Override
    public void writePageV2(int rowCount, int nullCount, int valueCount, BytesInput repetitionLevels,
                            BytesInput definitionLevels, Encoding dataEncoding, BytesInput data,
                            Statistics<?> statistics) throws IOException {
      int uncompressed = (int) data.size();
      BytesInput compressed = BytesInput.from(compressor.compress(data).toByteArray());
      pages.add(new Object[] {rowCount, nullCount, valueCount, BytesInput.from(repetitionLevels.toByteArray()),
          BytesInput.from(definitionLevels.toByteArray()), dataEncoding, compressed, uncompressed, statistics});
      this.valueCount += valueCount;
      bytes += compressed.size() + repetitionLevels.size() + definitionLevels.size();
    }

    @Override
    public void writePageV2(int rowCount, int nullCount, int valueCount, BytesInput repetitionLevels,
                            BytesInput definitionLevels, Encoding dataEncoding, BytesInput data,
                            Statistics<?> statistics, SizeStatistics sizeStatistics) throws IOException {
      writePageV2(rowCount, nullCount, valueCount, repetitionLevels, definitionLevels, dataEncoding, data, statistics);
    }

    @Override
    public void writePageV2(int rowCount, int nullCount, int valueCount, BytesInput repetitionLevels,
                            BytesInput definitionLevels, Encoding dataEncoding, BytesInput data,
                            Statistics<?> statistics, SizeStatistics sizeStatistics,
                            GeospatialStatistics geospatialStatistics) throws IOException {
      writePageV2(rowCount, nullCount, valueCount, repetitionLevels, definitionLevels, dataEncoding, data, statistics);
    }

    @Override
    public void writePage(BytesInput bytesInput, int valueCount, Statistics<?> statistics, Encoding rlEncoding,
                          Encoding dlEncoding, Encoding valuesEncoding) {
      throw new UnsupportedOperationException("base files are written with data page v2 (§5)");
    }

    @Override
    public void writePage(BytesInput bytesInput, int valueCount, int rowCount, Statistics<?> statistics,
                          Encoding rlEncoding, Encoding dlEncoding, Encoding valuesEncoding) {
      throw new UnsupportedOperationException("base files are written with data page v2 (§5)");
    }

    @Override
    public void writeDictionaryPage(DictionaryPage page) throws IOException {
      dictionary = new DictionaryPage(BytesInput.from(compressor.compress(page.getBytes()).toByteArray()),
          page.getUncompressedSize(), page.getDictionarySize(), page.getEncoding());
    }

    void writeTo(ParquetFileWriter file) throws IOException {
      file.startColumn(column, valueCount, codec);
      if (dictionary != null) file.writeDictionaryPage(dictionary);
      for (Object[] p : pages) {
        file.writeDataPageV2((int) p[0], (int) p[1], (int) p[2], (BytesInput) p[3], (BytesInput) p[4],
            (Encoding) p[5], (BytesInput) p[6], (int) p[7], (Statistics<?>) p[8]);
      }
      file.endColumn();
      pages.clear();
      dictionary = null;
      valueCount = bytes = 0;
    }

    @Override
    public long getMemSize() {
      return bytes;
    }

    @Override
    public long allocatedSize() {
      return bytes;
    }

    @Override
    public String memUsageString(String prefix) {
      return prefix + " " + column + " " + bytes + " bytes";
    }
  }

  /** parquet-mr's view of the sink. */
  private static final class Out implements OutputFile {
    private final TableFiles.Sink sink;

    Out(TableFiles.Sink sink) {
      this.sink = sink;
    }

    @Override
    public PositionOutputStream create(long blockSizeHint) {
      return new PositionOutputStream() {
        @Override
        public long getPos() {
          return sink.size();
        }

        @Override
        public void write(int b) throws IOException {
          sink.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
          sink.write(b, off, len);
        }

        @Override
        public void flush() throws IOException {
          sink.flush();
        }

        @Override
        public void close() throws IOException {
          sink.close();
        }
      };
    }

    @Override
    public PositionOutputStream createOrOverwrite(long blockSizeHint) {
      return create(blockSizeHint);
    }

    @Override
    public boolean supportsBlockSize() {
      return false;
    }

    @Override
    public long defaultBlockSize() {
      return 0;
    }
  }

  static ParquetProperties.Builder properties() {
    return ParquetProperties.builder().withWriterVersion(ParquetProperties.WriterVersion.PARQUET_2_0)
        .withPageSize(PAGE_SIZE).withDictionaryPageSize(PAGE_SIZE).withPageWriteChecksumEnabled(true)
        .withAllocator(new HeapByteBufferAllocator());
  }
}
