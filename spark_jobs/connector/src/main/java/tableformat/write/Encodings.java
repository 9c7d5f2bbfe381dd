package tableformat.write;

import java.util.Map;
import org.apache.parquet.bytes.ByteBufferAllocator;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.column.ParquetProperties;
import org.apache.parquet.column.values.ValuesWriter;
import org.apache.parquet.column.values.bytestreamsplit.ByteStreamSplitValuesWriter;
import org.apache.parquet.column.values.deltastrings.DeltaByteArrayWriter;
import org.apache.parquet.column.values.dictionary.DictionaryValuesWriter;
import org.apache.parquet.column.values.factory.ValuesWriterFactory;
import org.apache.parquet.column.values.fallback.FallbackValuesWriter;
import org.apache.parquet.column.values.plain.BooleanPlainValuesWriter;
import org.apache.parquet.column.values.plain.FixedLenByteArrayPlainValuesWriter;
import org.apache.parquet.column.values.plain.PlainValuesWriter;
import org.apache.parquet.column.values.rle.RunLengthBitPackingHybridValuesWriter;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;

/**
 * Kudu encodings as Parquet encodings (specs/format.md §5's table): each field gets the values
 * writer of the encoding chosen for it (diskrowset.parquet_encoding), where parquet-mr's own v2
 * factory would pick DELTA_BINARY_PACKED for integers.
 */
final class Encodings implements ValuesWriterFactory {
  enum Enc { PLAIN, DICTIONARY, BYTE_STREAM_SPLIT, RLE, DELTA_BYTE_ARRAY }

  private final Map<String, Enc> byField;
  private ParquetProperties props;

  Encodings(Map<String, Enc> byField) {
    this.byField = byField;
  }

  /** The Parquet encoding of a column's Kudu encoding; {@code highCardinality}: the rowset's
   *  sample is mostly distinct (dictionary falls back to plain). */
  static Enc choose(WriteColumn c, boolean highCardinality) {
    String kind = c.type().kind();
    switch (c.encoding()) {
      case "dictionary":
        return highCardinality || kind.equals("bool") ? Enc.PLAIN : Enc.DICTIONARY;
      case "run_length":
        if (kind.equals("bool")) return Enc.RLE;
        return highCardinality ? Enc.PLAIN : Enc.DICTIONARY;
      case "bitshuffle":
        if (kind.equals("decimal") && c.type().precision() > 18) return Enc.PLAIN;
        return ColumnBuffer.storeOf(c.type()) == ColumnBuffer.Store.BYTES || kind.equals("bool") ? Enc.PLAIN
            : Enc.BYTE_STREAM_SPLIT;
      case "prefix":
        return ColumnBuffer.storeOf(c.type()) == ColumnBuffer.Store.BYTES ? Enc.DELTA_BYTE_ARRAY : Enc.PLAIN;
      default:
        return Enc.PLAIN;
    }
  }

  /** Whether the encoding depends on the data (the dictionary fallback is sampled). */
  static boolean sampled(WriteColumn c) {
    return c.encoding().equals("dictionary") || (c.encoding().equals("run_length") && !c.type().kind().equals("bool"));
  }

  @Override
  public void initialize(ParquetProperties properties) {
    this.props = properties;
  }

  @Override
  public ValuesWriter newValuesWriter(ColumnDescriptor d) {
    Enc e = byField.getOrDefault(d.getPath()[0], Enc.PLAIN);
    PrimitiveTypeName t = d.getPrimitiveType().getPrimitiveTypeName();
    int init = props.getInitialSlabSize(), page = props.getPageSizeThreshold();
    ByteBufferAllocator alloc = props.getAllocator();
    int len = d.getPrimitiveType().getTypeLength();
    switch (e) {
      case DICTIONARY: {
        int max = props.getDictionaryPageSizeThreshold();
        Encoding data = Encoding.RLE_DICTIONARY, dict = Encoding.PLAIN;
        DictionaryValuesWriter w = switch (t) {
          case BINARY -> new DictionaryValuesWriter.PlainBinaryDictionaryValuesWriter(max, data, dict, alloc);
          case INT32 -> new DictionaryValuesWriter.PlainIntegerDictionaryValuesWriter(max, data, dict, alloc);
          case INT64 -> new DictionaryValuesWriter.PlainLongDictionaryValuesWriter(max, data, dict, alloc);
          case FLOAT -> new DictionaryValuesWriter.PlainFloatDictionaryValuesWriter(max, data, dict, alloc);
          case DOUBLE -> new DictionaryValuesWriter.PlainDoubleDictionaryValuesWriter(max, data, dict, alloc);
          case FIXED_LEN_BYTE_ARRAY ->
              new DictionaryValuesWriter.PlainFixedLenArrayDictionaryValuesWriter(max, len, data, dict, alloc);
          default -> null;
        };
        return w == null ? plain(t, len, init, page, alloc) : FallbackValuesWriter.of(w, plain(t, len, init, page, alloc));
      }
      case BYTE_STREAM_SPLIT:
        return switch (t) {
          case FLOAT -> new ByteStreamSplitValuesWriter.FloatByteStreamSplitValuesWriter(init, page, alloc);
          case DOUBLE -> new ByteStreamSplitValuesWriter.DoubleByteStreamSplitValuesWriter(init, page, alloc);
          case INT32 -> new ByteStreamSplitValuesWriter.IntegerByteStreamSplitValuesWriter(init, page, alloc);
          case INT64 -> new ByteStreamSplitValuesWriter.LongByteStreamSplitValuesWriter(init, page, alloc);
          default -> plain(t, len, init, page, alloc);
        };
      case RLE:
        return t == PrimitiveTypeName.BOOLEAN ? new RunLengthBitPackingHybridValuesWriter(1, init, page, alloc)
            : plain(t, len, init, page, alloc);
      case DELTA_BYTE_ARRAY:
        return t == PrimitiveTypeName.BINARY ? new DeltaByteArrayWriter(init, page, alloc) : plain(t, len, init, page, alloc);
      default:
        return plain(t, len, init, page, alloc);
    }
  }

  private static ValuesWriter plain(PrimitiveTypeName t, int len, int init, int page, ByteBufferAllocator alloc) {
    return switch (t) {
      case BOOLEAN -> new BooleanPlainValuesWriter();
      case FIXED_LEN_BYTE_ARRAY -> new FixedLenByteArrayPlainValuesWriter(len, init, page, alloc);
      default -> new PlainValuesWriter(init, page, alloc);
    };
  }
}
