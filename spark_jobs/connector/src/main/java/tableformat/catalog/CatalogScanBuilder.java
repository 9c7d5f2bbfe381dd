package tableformat.catalog;

import com.fasterxml.jackson.databind.node.ArrayNode;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import tableformat.connector.TableFormatScanBuilder;
import tableformat.log.InvalidFilterError;
import tableformat.log.TableState;
import tableformat.plan.Schema;

/**
 * The catalog's scan: Spark's filters prune tablets and rowsets in the JVM planner before any file
 * is opened (§9.4 rule 1, §13); the plan of the required columns then goes to the connector's own
 * scan builder (Parquet pushdown, the columnar reader). Every filter is also handed back to Spark,
 * which evaluates it above the scan: pruning only ever drops rowsets that hold no match. Filters
 * come as DSv2 predicates, whose literals are Catalyst's own values (dates as day numbers,
 * timestamps as UTC micros: {@link SparkFilters}); the connector's Parquet pushdown gets only the
 * ones a V1 filter says exactly ({@link ExactFilters}: comparisons of a column with a literal of its
 * own integer or string type; an OR or NOT only when the whole of it converts).
 */
final class CatalogScanBuilder implements ScanBuilder, SupportsPushDownRequiredColumns, SupportsPushDownV2Filters {
  private final String uri;
  private final TableState state;
  private final StructType tableSchema;
  private StructType required;
  private Predicate[] filters = new Predicate[0];
  private ArrayNode terms;

  CatalogScanBuilder(String uri, TableState state, StructType tableSchema) {
    this.uri = uri;
    this.state = state;
    this.tableSchema = tableSchema;
    this.required = tableSchema;
  }

  @Override
  public Predicate[] pushPredicates(Predicate[] fs) {
    filters = fs;
    terms = SparkFilters.terms(new Schema(state.schema()), fs);
    return fs;
  }

  @Override
  public Predicate[] pushedPredicates() {
    return filters;
  }

  @Override
  public void pruneColumns(StructType r) {
    required = r;
  }

  @Override
  public Scan build() {
    List<String> cols = new ArrayList<>();
    for (StructField f : required.fields()) if (tableSchema.getFieldIndex(f.name()).isDefined()) cols.add(f.name());
    Snapshots.Planned plan;
    try {
      plan = Snapshots.plan(uri, state, cols, terms == null || terms.isEmpty() ? null : terms);
    } catch (InvalidFilterError e) {        // a literal the planner does not take: no pruning, Spark filters
      plan = Snapshots.plan(uri, state, cols, null);
    }
    TableFormatScanBuilder b = new TableFormatScanBuilder(plan.connector());
    b.pushFilters(ExactFilters.of(tableSchema, filters));
    return new CatalogScan(b.build(), plan.log());
  }
}
