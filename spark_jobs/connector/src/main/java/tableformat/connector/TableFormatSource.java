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
 * over as JSON; the connector reads exactly those files. Given a path instead
 * ({@code .load(path)}), the JVM plans the read itself ({@link tableformat.catalog.CatalogTable}),
 * at {@code as_of}, {@code versionAsOf} or {@code timestampAsOf} (Delta's names) when one is given.
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

  private static boolean byPath(Map<String, String> options) {
    return options.get("plan") == null && options.get("path") != null;
  }

  private static tableformat.catalog.CatalogTable atPath(Map<String, String> options) {
    CaseInsensitiveStringMap o = new CaseInsensitiveStringMap(options);
    return tableformat.catalog.CatalogTable.atPath(o.get("path"),
        tableformat.catalog.CatalogTable.asOf(o.get("as_of"), o.get("versionAsOf"), o.get("timestampAsOf")));
  }

  /** The table inferSchema opened, kept for getTable (Spark calls both on one instance per load):
   *  the log is read once per load, not twice. */
  private tableformat.catalog.CatalogTable opened;
  private Map<String, String> openedWith;

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    if (!byPath(options)) return plan(options).schema();
    opened = atPath(options);
    openedWith = options.asCaseSensitiveMap();
    return opened.schema();
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    if (!byPath(properties)) return new TableFormatTable(plan(properties));
    return opened != null && properties.equals(openedWith) ? opened : atPath(properties);
  }
}
