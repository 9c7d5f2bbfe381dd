package tableformat.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;
import tableformat.connector.ReadPlan;
import tableformat.log.AsOf;
import tableformat.log.LogReader;
import tableformat.log.LogStore;
import tableformat.log.Mvcc;
import tableformat.log.TableState;
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

  /** The state at {@code asOf} (null: the latest version now). */
  static TableState open(String uri, AsOf asOf) {
    return Mvcc.stateAt(new LogReader(new LogStore(uri, hadoopConf())), asOf);
  }

  /** The Spark schema of {@code state}: the plan's columns with no rowset planned (a table's
   *  definition costs no pass over its rowsets). */
  static StructType schema(String uri, TableState state) {
    Schema s = new Schema(state.schema());
    Planner.ReadPlan none = new Planner.ReadPlan(state, s, s.columns, java.util.List.of());
    return ReadPlan.of(PlanJson.of(new LogStore(uri, hadoopConf()), none)).schema();
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
