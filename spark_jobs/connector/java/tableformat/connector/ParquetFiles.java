package tableformat.connector;

import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapred.FileSplit;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.spark.internal.config.ConfigEntry;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.parquet.ParquetReadSupport;
import org.apache.spark.sql.execution.datasources.parquet.VectorizedParquetRecordReader;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.internal.SQLConf$;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Opening base and delta files with Spark's own vectorized Parquet reader, the way Spark's
 * Parquet scan does: the Hadoop conf carries the requested schema and the session's
 * {@code spark.sql.*} Parquet settings; splits are {@code mapred.FileSplit}s (Spark 4 casts to it).
 */
final class ParquetFiles {
  private ParquetFiles() {}

  /** Spark's temporary row-index field: the reader fills it with each row's ordinal in its file
   *  (the rowid, §9.4 rule 2). Declared nullable, or the reader calls it a missing required column. */
  static final StructField ROW_INDEX = new StructField(
      ParquetFileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME(), DataTypes.LongType, true, Metadata.empty());

  static final String VERIFY_CRC = "parquet.page.verify-checksum.enabled";

  /** The session's Hadoop conf plus every Parquet-reader SQL setting (defaults included): the
   *  reader's schema converter reads them from the Hadoop conf, not from SQLConf. */
  static Configuration hadoopConf(SparkSession spark) {
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

  /** The file's length, checked against the size the log recorded (§8.2, §9.4 rule 8). */
  static long checkedLength(Configuration conf, String path, long recorded) throws IOException {
    Path p = new Path(path);
    FileStatus st = p.getFileSystem(conf).getFileStatus(p);
    if (recorded >= 0 && st.getLen() != recorded) {
      throw new IOException("tableformat CorruptFileError: " + path + " does not have the size the table log recorded ("
          + st.getLen() + " bytes, the log says " + recorded + "): it was replaced or is corrupt");
    }
    return st.getLen();
  }

  /** A batch reader of {@code requested} fields over bytes [start, start + length) of the file:
   *  the row groups whose midpoint lies in the range (Parquet's rule, so splits never overlap).
   *  Spark's vectorized reader where it decodes every page of those fields (always on a Spark
   *  that decodes BYTE_STREAM_SPLIT: {@link ByteStreamSplitProbe}), else {@link ParquetColumnsReader}. */
  static BatchSource open(Configuration base, String path, StructType requested, long start, long length,
                          int capacity, org.apache.parquet.filter2.predicate.FilterPredicate filter) throws IOException {
    boolean own = false;
    if (!ByteStreamSplitProbe.sparkDecodes(base)) {    // Spark 4.2: look for pages it cannot decode
      Path p = new Path(path);
      try (org.apache.parquet.hadoop.ParquetFileReader r = org.apache.parquet.hadoop.ParquetFileReader.open(
          org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(p, base),
          org.apache.parquet.HadoopReadOptions.builder(base, p).withRange(start, start + length).build())) {
        own = ParquetColumnsReader.needed(r, requested);
      }
    }
    if (own) return new ParquetColumnsReader(base, path, requested, start, length, capacity);
    VectorizedParquetRecordReader v = vectorized(base, path, requested, start, length, capacity, filter);
    return new BatchSource() {
      @Override public org.apache.spark.sql.vectorized.ColumnarBatch next() throws IOException {
        return v.nextKeyValue() ? (org.apache.spark.sql.vectorized.ColumnarBatch) v.getCurrentValue() : null;
      }
      @Override public void close() throws IOException { v.close(); }
    };
  }

  static VectorizedParquetRecordReader vectorized(Configuration base, String path, StructType requested, long start,
                                                  long length, int capacity,
                                                  org.apache.parquet.filter2.predicate.FilterPredicate filter)
      throws IOException {
    Configuration conf = new Configuration(base);
    conf.set("parquet.read.support.class", ParquetReadSupport.class.getName());
    conf.set(ParquetReadSupport.SPARK_ROW_REQUESTED_SCHEMA(), requested.json());
    conf.set("org.apache.spark.sql.parquet.row.attributes", requested.json());
    if (filter != null) {
      org.apache.parquet.hadoop.ParquetInputFormat.setFilterPredicate(conf, filter);
      conf.setBoolean("parquet.filter.record-level.enabled", false);   // rows stay by row index
    }
    VectorizedParquetRecordReader r =
        new VectorizedParquetRecordReader(null, "CORRECTED", "UTC", "CORRECTED", "UTC", false, capacity);
    try {
      r.initialize(new FileSplit(new Path(path), start, length, new String[0]),
          new TaskAttemptContextImpl(conf, new TaskAttemptID()));
      r.initBatch(new StructType(), new GenericInternalRow(0));
      r.enableReturningBatches();
    } catch (InterruptedException e) {
      r.close();
      throw new IOException(e);
    } catch (IOException | RuntimeException e) {
      r.close();
      throw e;
    }
    return r;
  }
}
