package tableformat.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;
import tableformat.connector.ReadPlan;
import tableformat.log.AsOf;
import tableformat.log.Listing;
import tableformat.log.LogCache;
import tableformat.log.LogReader;
import tableformat.log.LogStore;
import tableformat.log.Mvcc;
import tableformat.log.SchemaChangedError;
import tableformat.log.TableState;
import tableformat.plan.Column;
import tableformat.plan.KeySeek;
import tableformat.plan.PlanJson;
import tableformat.plan.Planner;
import tableformat.plan.Schema;

/**
 * A table's state read by the JVM planner (specs/format.md §8, §9.4) and its plan in the
 * connector's form: the same {@link ReadPlan} Python's {@code Snapshot.read_plan} hands over, so
 * the columnar reader is unchanged.
 */
final class Snapshots {
  private Snapshots() {}

  static Configuration hadoopConf() {
    return SparkSession.active().sessionState().newHadoopConf();
  }

  /** The reader of the table's log, listed now: one listing of {@code _log/} serves the states a
   *  query asks for, and what earlier queries of this JVM read of it is kept ({@link LogCache}), so
   *  a query with no new commit reads no log file. */
  static LogReader reader(String uri) {
    return LogCache.reader(uri, hadoopConf());
  }

  /** The state at {@code asOf} (null: the latest version the reader's listing shows). */
  static TableState open(LogReader log, AsOf asOf) {
    return Mvcc.stateAt(log, asOf);
  }

  /** Whether the reader's listing shows a log: a commit or a checkpoint (§1, §8.3). */
  static boolean isTable(LogReader log) {
    Listing l = log.listing();
    return !l.commits().isEmpty() || !l.checkpoints().isEmpty();
  }

  /** The Spark schema of {@code state}: the plan's columns with no rowset planned (a table's
   *  definition costs no pass over its rowsets). */
  static StructType schema(String uri, TableState state) {
    Schema s = new Schema(state.schema());
    Planner.ReadPlan none = new Planner.ReadPlan(state, s, s.columns, java.util.List.of());
    return ReadPlan.of(PlanJson.of(new LogStore(uri, hadoopConf()), none)).schema();
  }

  /** Refuse to read {@code latest} through a Table analysed at {@code loaded} when a column of
   *  {@code loaded} is gone, renamed or re-typed in {@code latest} (matched by ID, §11), or the table
   *  was replaced: Spark's plan holds the old schema, and its vectors would be read as the old types.
   *  Columns added since are fine: the plan does not name them. */
  static void checkColumns(String name, TableState loaded, TableState latest) {
    if (!loaded.tableId().equals(latest.tableId()))
      throw new SchemaChangedError(name + " was replaced since this DataFrame or view was defined (table "
          + loaded.tableId() + ", now " + latest.tableId() + "): define it again");
    Schema then = new Schema(loaded.schema()), now = new Schema(latest.schema());
    for (Column c : then.columns) {
      Column n = now.byId(c.id());
      if (n == null || !n.name().equals(c.name()) || !sameSparkType(n, c))
        throw new SchemaChangedError("column '" + c.name() + "' of " + name + " was "
            + (n == null ? "dropped" : n.name().equals(c.name()) ? "re-typed" : "renamed to '" + n.name() + "'")
            + " at or before version " + latest.version() + ", after this DataFrame or view was defined at version "
            + loaded.version() + ": define it again (register_view, or read the table again)");
    }
  }

  private static boolean sameSparkType(Column a, Column b) {
    return a.type().equals(b.type()) || (a.type().isText() && b.type().isText());   // varchar(n) is a string
  }

  /** One plan in the planner's form (log records: counts, statistics) and the connector's. */
  record Planned(Planner.ReadPlan log, ReadPlan connector) {}

  /** The plan of {@code state}: {@code columns} null for all, {@code filter} the planner's terms. */
  static Planned plan(String uri, TableState state, java.util.List<String> columns, JsonNode filter) {
    LogStore store = new LogStore(uri, hadoopConf());
    Planner.ReadPlan p = Planner.plan(state, columns, filter, (KeySeek) null);
    return new Planned(p, ReadPlan.of(PlanJson.of(store, p)));
  }
}
