package tableformat.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.distributions.Distribution;
import org.apache.spark.sql.connector.distributions.Distributions;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NullOrdering;
import org.apache.spark.sql.connector.expressions.SortDirection;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.RequiresDistributionAndOrdering;
import org.apache.spark.sql.connector.write.SupportsOverwriteV2;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.util.SerializableConfiguration;
import tableformat.commit.Committer;
import tableformat.log.CommitConflictError;
import tableformat.log.DuplicateKeyError;
import tableformat.log.Json;
import tableformat.log.LogStore;
import tableformat.log.RestartRequiredException;
import tableformat.log.TableState;
import tableformat.write.InsertPlan;
import tableformat.write.InsertTask;

/**
 * {@code INSERT INTO} and {@code df.writeTo(t).append()}: a key-enforced append in one commit
 * (specs/format.md §8.4, §10, §17). Spark range-partitions and sorts the rows by the key columns
 * (their ascending order is §3's encoded order), so a key meets its duplicates in one task, next
 * to each other; each task streams its rows through the JVM rowset writers ({@link InsertTask}) and
 * the driver commits the tasks' write fragments once with the JVM committer. A duplicate, in the
 * input or against the table, fails the statement with {@code DuplicateKeyError} and commits nothing.
 */
final class TableWrite implements WriteBuilder, SupportsTruncate, SupportsOverwriteV2, Write, RequiresDistributionAndOrdering {
  static final String OVERWRITE = "INSERT OVERWRITE is refused: a tableformat table keeps its rows and their history. "
      + "Replace rows by key with MERGE INTO or the engine's upsert (spark_jobs.merge.mutation_merge), or delete them "
      + "first (the engine's Table.delete), then INSERT INTO.";

  private final String display;
  private final String uri;
  private final TableState state;
  private final LogicalWriteInfo info;

  TableWrite(String display, String uri, TableState state, LogicalWriteInfo info) {
    this.display = display;
    this.uri = uri;
    this.state = state;
    this.info = info;
  }

  @Override
  public Write build() {
    return this;
  }

  @Override
  public WriteBuilder truncate() {
    throw new UnsupportedOperationException(OVERWRITE);
  }

  @Override
  public WriteBuilder overwrite(Predicate[] predicates) {
    throw new UnsupportedOperationException(OVERWRITE);
  }

  @Override
  public String description() {
    return "tableformat INSERT into " + display + " at version " + state.version();
  }

  private SortOrder[] keyOrder() {
    List<SortOrder> out = new ArrayList<>();
    for (JsonNode k : state.schema().get("primary_key"))
      out.add(Expressions.sort(Expressions.column(k.asText()), SortDirection.ASCENDING, NullOrdering.NULLS_FIRST));
    return out.toArray(new SortOrder[0]);
  }

  /** Ranges of the key: every copy of a key in one task (the duplicate check needs no shuffle of its own). */
  @Override
  public Distribution requiredDistribution() {
    return Distributions.ordered(keyOrder());
  }

  @Override
  public SortOrder[] requiredOrdering() {
    return keyOrder();
  }

  @Override
  public BatchWrite toBatch() {
    // the Parquet reader's SQL settings too: the key check reads PK indexes with Spark's reader
    Configuration conf = tableformat.parquet.ParquetFiles.hadoopConf(
        (org.apache.spark.sql.classic.SparkSession) org.apache.spark.sql.SparkSession.active());
    InsertPlan plan = InsertPlan.of(state, new LogStore(uri, conf), "fail");
    return new Batch(plan, new SerializableConfiguration(conf));
  }

  /** The driver's half: the tasks' fragments committed once, or every file deleted. */
  final class Batch implements BatchWrite {
    private final InsertPlan plan;
    private final SerializableConfiguration conf;
    /** Set once the fragments reach the committer, which then owns their files: it deletes them
     *  when nothing landed, and never deletes files another commit holds (§10). */
    private volatile boolean handedOver;

    Batch(InsertPlan plan, SerializableConfiguration conf) {
      this.plan = plan;
      this.conf = conf;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo physical) {
      return new Factory(plan, conf);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
      List<String> fragments = new ArrayList<>();
      long duplicates = 0;
      String sample = "";
      for (WriterCommitMessage m : messages) {
        JsonNode r = Json.parse(((Result) m).json.getBytes(java.nio.charset.StandardCharsets.UTF_8), "an insert task's result");
        duplicates += r.path("duplicates").asLong();
        if (sample.isEmpty()) sample = r.path("sample").asText("");
        JsonNode f = r.get("fragment");
        if (f != null && !f.isNull()) {
          // A statement cannot run its query again: a key a concurrent writer inserted is the
          // strict insert's DuplicateKeyError (§10.2 row `insert`), not a restart.
          ((com.fasterxml.jackson.databind.node.ObjectNode) f).put("kind", "insert");
          fragments.add(f.toString());
        }
      }
      if (duplicates > 0) {
        abort(messages);
        throw new DuplicateKeyError(duplicates + " key(s) of the INSERT already exist in table " + display
            + " or repeat in its input" + (sample.isEmpty() ? "" : " (first: " + sample + ")")
            + "; nothing was committed. Use MERGE INTO to update existing keys", duplicates);
      }
      if (fragments.isEmpty()) return;          // no row: nothing to commit
      handedOver = true;
      try {
        new Committer(uri, conf.value()).commit(fragments, "INSERT", null, null, 0);
      } catch (RestartRequiredException e) {
        throw new CommitConflictError("a concurrent commit changed the definition of table " + display
            + " during the INSERT (" + e.getMessage() + "); nothing was committed: run the statement again");
      }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
      if (handedOver) return;
      List<String> files = new ArrayList<>();
      for (WriterCommitMessage m : messages) {
        if (!(m instanceof Result r)) continue;
        JsonNode j = Json.parse(r.json.getBytes(java.nio.charset.StandardCharsets.UTF_8), "an insert task's result");
        j.path("files").forEach(f -> files.add(f.asText()));
      }
      LogStore store = new LogStore(uri, conf.value());
      var fs = LogStore.fileSystem(uri, conf.value());
      for (String f : files) {
        try {
          fs.delete(new org.apache.hadoop.fs.Path(f.contains(":") || f.startsWith("/") ? f : store.uri(f)), false);
        } catch (java.io.IOException | RuntimeException e) {
          // an orphan vacuum removes (§1): the statement's own error is the one to report
        }
      }
    }
  }

  /** A task's result: the JSON {@link InsertTask#finish} returns. */
  record Result(String json) implements WriterCommitMessage {}

  /** The executors' half: one {@link InsertTask} per task. */
  record Factory(InsertPlan plan, SerializableConfiguration conf) implements DataWriterFactory, Serializable {
    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
      InsertTask task = new InsertTask(plan, conf.value());
      return new DataWriter<>() {
        @Override
        public void write(InternalRow row) {
          task.write(row);
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
