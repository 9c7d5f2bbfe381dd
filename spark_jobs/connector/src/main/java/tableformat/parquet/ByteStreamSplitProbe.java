package tableformat.parquet;

import java.io.File;
import java.nio.file.Files;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.column.ParquetProperties;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;
import org.apache.spark.sql.execution.datasources.parquet.VectorizedParquetRecordReader;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Whether this JVM's Spark vectorized Parquet reader decodes BYTE_STREAM_SPLIT pages (bitshuffle,
 * the format's default for numbers, §5): Spark 4.3 does (SPARK-56894), 4.2 does not. Probed once
 * per JVM on a one-row file written here, not guessed from a version string; any failure means
 * "no", so the connector's own reader ({@link ParquetColumnsReader}) stays the safe answer.
 */
public final class ByteStreamSplitProbe {
  private ByteStreamSplitProbe() {}

  private static volatile Boolean decodes;

  /** Spark's reader decodes BYTE_STREAM_SPLIT here, so it reads every base file (and pushes
   *  filters). {@code conf}: a reader conf ({@link ParquetFiles#hadoopConf}), used by the first call. */
  static boolean sparkDecodes(Configuration conf) {
    Boolean d = decodes;
    if (d == null) {
      synchronized (ByteStreamSplitProbe.class) {
        if (decodes == null) decodes = probe(conf);
        d = decodes;
      }
    }
    return d;
  }

  /** The same, from a session (for tests and tools reaching the JVM through py4j). */
  public static boolean sparkDecodes(org.apache.spark.sql.SparkSession spark) {
    return sparkDecodes(ParquetFiles.hadoopConf(spark));
  }

  private static boolean probe(Configuration base) {
    File dir = null;
    try {
      dir = Files.createTempDirectory("tableformat-bss-probe").toFile();
      Path p = new Path(new File(dir, "p.parquet").toURI());
      Configuration conf = new Configuration(base);
      MessageType schema = MessageTypeParser.parseMessageType("message m { required double x; }");
      try (ParquetWriter<org.apache.parquet.example.data.Group> w = ExampleParquetWriter.builder(p).withConf(conf)
          .withType(schema).withDictionaryEncoding(false).withByteStreamSplitEncoding(true)
          .withWriterVersion(ParquetProperties.WriterVersion.PARQUET_2_0).build()) {
        w.write(new SimpleGroupFactory(schema).newGroup().append("x", 1.5));
      }
      try (ParquetFileReader r = ParquetFileReader.open(HadoopInputFile.fromPath(p, conf))) {
        boolean split = false;
        for (BlockMetaData b : r.getRowGroups()) {
          for (ColumnChunkMetaData c : b.getColumns()) split |= c.getEncodings().contains(Encoding.BYTE_STREAM_SPLIT);
        }
        if (!split) return false;            // the probe file is not what it should be: assume no
      }
      StructType requested = new StructType(new StructField[] {
          new StructField("x", DataTypes.DoubleType, true, Metadata.empty())});
      org.apache.hadoop.fs.FileStatus st = p.getFileSystem(conf).getFileStatus(p);
      VectorizedParquetRecordReader v = ParquetFiles.vectorized(conf, st, requested, 0, st.getLen(), 16, null, null).reader;
      try {
        if (!v.nextKeyValue()) return false;
        ColumnarBatch b = (ColumnarBatch) v.getCurrentValue();
        return b.numRows() == 1 && b.column(0).getDouble(0) == 1.5;
      } finally {
        v.close();
      }
    } catch (Throwable e) {               // an unsupported encoding, or no temp dir: the own reader
      return false;
    } finally {
      if (dir != null) {
        File[] fs = dir.listFiles();
        if (fs != null) for (File f : fs) f.delete();
        dir.delete();
      }
    }
  }
}
