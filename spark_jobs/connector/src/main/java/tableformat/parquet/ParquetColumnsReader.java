package tableformat.parquet;

import java.io.IOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.parquet.HadoopReadOptions;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnReader;
import org.apache.parquet.column.impl.ColumnReadStoreImpl;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.io.api.Converter;
import org.apache.parquet.io.api.GroupConverter;
import org.apache.parquet.io.api.PrimitiveConverter;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import tableformat.vectors.CellCopy;

/**
 * A column-at-a-time batch reader over parquet-java's own page decoders, for files Spark's
 * vectorized reader cannot decode: Spark 4.2's refuses BYTE_STREAM_SPLIT pages, the format's
 * default encoding for numbers (Kudu's bitshuffle, §5). Same output as the vectorized reader:
 * the requested fields (absent ones NULL) and, last, each row's index in the file. Page CRCs
 * are verified when the conf asks ({@code parquet.page.verify-checksum.enabled}).
 */
final class ParquetColumnsReader implements BatchSource {
  private final ParquetFileReader reader;
  private final MessageType fileSchema;
  private final StructType requested;
  private final ColumnDescriptor[] descs;
  private final int[] kinds;
  private final boolean rowIndex;
  private final int capacity;
  private final OnHeapColumnVector[] vectors;
  private final ColumnarBatch batch;
  private ColumnReader[] readers;
  private long groupStart, groupRows, consumed;

  ParquetColumnsReader(Configuration conf, FileStatus file, StructType requested, long start, long length,
                       int capacity) throws IOException {
    HadoopReadOptions.Builder opts = HadoopReadOptions.builder(conf, file.getPath());
    opts.withRange(start, start + length);
    reader = ParquetFileReader.open(HadoopInputFile.fromStatus(file, conf), opts.build());   // no second HEAD
    try {
      fileSchema = reader.getFooter().getFileMetaData().getSchema();
      this.requested = requested;
      this.capacity = capacity;
      int n = requested.fields().length;
      rowIndex = n > 0 && requested.fields()[n - 1].name().equals(ParquetFiles.ROW_INDEX.name());
      int data = rowIndex ? n - 1 : n;
      descs = new ColumnDescriptor[data];
      kinds = new int[data];
      for (int j = 0; j < data; j++) {
        String name = requested.fields()[j].name();
        descs[j] = fileSchema.containsField(name) ? fileSchema.getColumnDescription(new String[] {name}) : null;
        kinds[j] = CellCopy.kind(requested.fields()[j].dataType());
      }
      vectors = new OnHeapColumnVector[n];
      for (int j = 0; j < n; j++) vectors[j] = new OnHeapColumnVector(capacity, requested.fields()[j].dataType());
      batch = new ColumnarBatch(vectors);
    } catch (RuntimeException | Error e) {   // a failed constructor must not leak the open file
      try {
        reader.close();
      } catch (IOException | RuntimeException c) {
        e.addSuppressed(c);
      }
      throw e;
    }
  }

  /** Whether Spark's vectorized reader cannot decode the requested fields of this file. */
  static boolean needed(ParquetFileReader r, StructType requested) {
    for (org.apache.parquet.hadoop.metadata.BlockMetaData b : r.getRowGroups()) {
      for (org.apache.parquet.hadoop.metadata.ColumnChunkMetaData c : b.getColumns()) {
        if (requested.getFieldIndex(c.getPath().toDotString()).isEmpty()) continue;
        if (c.getEncodings().contains(org.apache.parquet.column.Encoding.BYTE_STREAM_SPLIT)) return true;
      }
    }
    return false;
  }

  private boolean nextGroup() throws IOException {
    PageReadStore pages = reader.readNextRowGroup();
    if (pages == null) return false;
    groupRows = pages.getRowCount();
    groupStart = pages.getRowIndexOffset().orElse(0L);
    consumed = 0;
    ColumnReadStoreImpl store = new ColumnReadStoreImpl(pages, new NoConverter(), fileSchema,
        reader.getFooter().getFileMetaData().getCreatedBy());
    readers = new ColumnReader[descs.length];
    for (int j = 0; j < descs.length; j++) if (descs[j] != null) readers[j] = store.getColumnReader(descs[j]);
    return true;
  }

  @Override
  public ColumnarBatch next() throws IOException {
    while (readers == null || consumed >= groupRows) {
      if (!nextGroup()) return null;
    }
    int n = (int) Math.min(capacity, groupRows - consumed);
    for (OnHeapColumnVector v : vectors) v.reset();
    for (int j = 0; j < descs.length; j++) fill(j, n);
    if (rowIndex) {
      OnHeapColumnVector ri = vectors[vectors.length - 1];
      long first = groupStart + consumed;
      for (int i = 0; i < n; i++) ri.putLong(i, first + i);
    }
    consumed += n;
    batch.setNumRows(n);
    return batch;
  }

  private void fill(int j, int n) {
    OnHeapColumnVector v = vectors[j];
    ColumnReader r = readers[j];
    if (r == null) {
      v.putNulls(0, n);
      return;
    }
    int maxDef = descs[j].getMaxDefinitionLevel();
    PrimitiveType.PrimitiveTypeName phys = descs[j].getPrimitiveType().getPrimitiveTypeName();
    DataType t = requested.fields()[j].dataType();
    for (int i = 0; i < n; i++) {
      if (r.getCurrentDefinitionLevel() < maxDef) {
        v.putNull(i);
        r.consume();
        continue;
      }
      switch (kinds[j]) {
        case CellCopy.BOOL: v.putBoolean(i, r.getBoolean()); break;
        case CellCopy.BYTE: v.putByte(i, (byte) r.getInteger()); break;
        case CellCopy.SHORT: v.putShort(i, (short) r.getInteger()); break;
        case CellCopy.INT: v.putInt(i, r.getInteger()); break;
        case CellCopy.LONG:
          v.putLong(i, phys == PrimitiveType.PrimitiveTypeName.INT32 ? r.getInteger() & 0xFFFFFFFFL : r.getLong());
          break;
        case CellCopy.FLOAT: v.putFloat(i, r.getFloat()); break;
        case CellCopy.DOUBLE: v.putDouble(i, r.getDouble()); break;
        case CellCopy.BYTES: v.putByteArray(i, r.getBinary().getBytes()); break;
        case CellCopy.DEC: {
          DecimalType d = (DecimalType) t;
          if (phys == PrimitiveType.PrimitiveTypeName.INT32) {
            v.putDecimal(i, Decimal.createUnsafe(r.getInteger(), d.precision(), d.scale()), d.precision());
          } else if (phys == PrimitiveType.PrimitiveTypeName.INT64) {
            v.putDecimal(i, Decimal.createUnsafe(r.getLong(), d.precision(), d.scale()), d.precision());
          } else {
            BigDecimal b = new BigDecimal(new BigInteger(r.getBinary().getBytes()), d.scale());
            v.putDecimal(i, Decimal.apply(b, d.precision(), d.scale()), d.precision());
          }
          break;
        }
        default: throw new IllegalStateException();
      }
      r.consume();
    }
  }

  @Override
  public void close() throws IOException {
    batch.close();
    reader.close();
  }

  /** ColumnReadStoreImpl wants a converter tree; values are pulled from the column readers instead. */
  private static final class NoConverter extends GroupConverter {
    @Override public Converter getConverter(int i) { return new PrimitiveConverter() {}; }
    @Override public void start() {}
    @Override public void end() {}
  }
}
