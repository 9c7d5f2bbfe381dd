package tableformat.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.DeltaBatchWrite;
import org.apache.spark.sql.connector.write.DeltaWrite;
import org.apache.spark.sql.connector.write.DeltaWriteBuilder;
import org.apache.spark.sql.connector.write.DeltaWriter;
import org.apache.spark.sql.connector.write.DeltaWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.SupportsDelta;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.util.SerializableConfiguration;
import tableformat.commit.Committer;
import tableformat.log.CommitConflictError;
import tableformat.log.Json;
import tableformat.log.LogStore;
import tableformat.log.RestartRequiredException;
import tableformat.log.TableState;
import tableformat.write.DeleteTask;
import tableformat.write.InsertPlan;

/**
 * {@code DELETE FROM t WHERE ...} (issue #46) through Spark's delta-based row-level operation: the
 * scan is the catalog's own ({@link CatalogScanBuilder}: tablets and rowsets pruned by the
 * condition, as reads do), Spark hands each matched row's key (the operation's row id) to a
 * {@link DeleteTask}, which finds its rowset and rowid in the same snapshot and writes REDO DELETE
 * files; the driver commits the tasks' mutation fragments once (operation {@code DELETE}) with the
 * JVM committer. No base file is rewritten. A concurrent commit that deleted one of the rows, or
 * compacted its rowset, fails the statement with CommitConflictError and commits nothing.
 */
final class RowLevelDelete implements SupportsDelta, DeltaWriteBuilder, DeltaWrite {
  private final String display, uri;
  private final TableState state;
  private final StructType schema;

  RowLevelDelete(String display, String uri, TableState state, StructType schema) {
    this.display = display;
    this.uri = uri;
    this.state = state;
    this.schema = schema;
  }

  private List<String> keyColumns() {
    List<String> out = new ArrayList<>();
    for (JsonNode k : state.schema().get("primary_key")) out.add(k.asText());
    return out;
  }

  @Override
  public Command command() {
    return Command.DELETE;
  }

  @Override
  public String description() {
    return "tableformat DELETE from " + display + " at version " + state.version();
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new CatalogScanBuilder(uri, state, schema);
  }

  /** The row id Spark carries from the scan to the writer: the key, which the task locates. */
  @Override
  public NamedReference[] rowId() {
    return keyColumns().stream().map(Expressions::column).toArray(NamedReference[]::new);
  }

  @Override
  public DeltaWriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return this;
  }

  @Override
  public DeltaWrite build() {
    return this;
  }

  @Override
  public DeltaBatchWrite toBatch() {
    Configuration conf = tableformat.parquet.ParquetFiles.hadoopConf(
        (org.apache.spark.sql.classic.SparkSession) org.apache.spark.sql.SparkSession.active());
    InsertPlan plan = InsertPlan.of(state, new LogStore(uri, conf), "fail");
    List<String> keys = keyColumns();
    DataType[] types = new DataType[keys.size()];
    for (int i = 0; i < types.length; i++) types[i] = schema.apply(keys.get(i)).dataType();
    return new Batch(new Factory(plan, types, new SerializableConfiguration(conf)));
  }

  /** The driver's half: the tasks' fragments committed once, or every file deleted. */
  final class Batch implements DeltaBatchWrite {
    private final Factory factory;
    private volatile boolean handedOver;

    Batch(Factory factory) {
      this.factory = factory;
    }

    @Override
    public DeltaWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      return factory;
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
      List<String> fragments = new ArrayList<>();
      for (WriterCommitMessage m : messages) {
        JsonNode f = result(m).get("fragment");
        if (f != null && !f.isNull()) fragments.add(f.toString());
      }
      if (fragments.isEmpty()) return;            // no row matched: nothing to commit
      handedOver = true;
      try {
        new Committer(uri, factory.conf.value()).commit(fragments, "DELETE", null, null, 0);
      } catch (RestartRequiredException e) {
        throw new CommitConflictError("a concurrent commit to table " + display + " changed rows or the definition "
            + "the DELETE read (" + e.getMessage() + "); nothing was committed: run the statement again");
      }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
      if (handedOver) return;
      List<String> files = new ArrayList<>();
      for (WriterCommitMessage m : messages) {
        if (m == null) continue;
        result(m).path("files").forEach(f -> files.add(f.asText()));
      }
      new tableformat.write.TableFiles(uri, factory.conf.value()).deleteQuietly(files);
    }
  }

  private static JsonNode result(WriterCommitMessage m) {
    return Json.parse(((Result) m).json.getBytes(StandardCharsets.UTF_8), "a delete task's result");
  }

  /** A task's result: the JSON {@link DeleteTask#finish} returns. */
  record Result(String json) implements WriterCommitMessage {}

  /** The executors' half: one {@link DeleteTask} per task. */
  record Factory(InsertPlan plan, DataType[] keyTypes, SerializableConfiguration conf)
      implements DeltaWriterFactory, Serializable {
    @Override
    public DeltaWriter<InternalRow> createWriter(int partitionId, long taskId) {
      DeleteTask task = new DeleteTask(plan, keyTypes, conf.value());
      return new DeltaWriter<>() {
        @Override
        public void delete(InternalRow metadata, InternalRow id) {
          task.delete(id);
        }

        @Override
        public void update(InternalRow metadata, InternalRow id, InternalRow row) {
          throw new UnsupportedOperationException("a tableformat DELETE updates no row");
        }

        @Override
        public void insert(InternalRow row) {
          throw new UnsupportedOperationException("a tableformat DELETE inserts no row");
        }

        @Override
        public WriterCommitMessage commit() {
          return new Result(task.finish());
        }

        @Override
        public void abort() {
          task.abort();
        }

        @Override
        public void close() {}
      };
    }
  }
}
