package tableformat.connector;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The connector's entry point, {@code spark.read.format("tableformat-jvm").option("plan", json)}:
 * Python's engine plans the read ({@code Snapshot.read_plan}, specs/format.md §9.4) and hands it
 * over as JSON; the connector reads exactly those files.
 */
public final class TableFormatSource implements TableProvider, DataSourceRegister {
  public static final String NAME = "tableformat-jvm";

  @Override
  public String shortName() {
    return NAME;
  }

  private static ReadPlan plan(Map<String, String> options) {
    String json = options.get("plan");
    if (json == null) throw new IllegalArgumentException("tableformat-jvm needs the option 'plan' (a read plan as JSON)");
    return ReadPlan.parse(json);
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return plan(options).schema();
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new TableFormatTable(plan(properties));
  }
}
