package tableformat.parquet;

import java.io.Closeable;
import java.io.IOException;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Batches of one Parquet file's requested fields, the row index last when requested. */
public interface BatchSource extends Closeable {
  /** The next batch, or null at the end of the file (or split). */
  ColumnarBatch next() throws IOException;
}
