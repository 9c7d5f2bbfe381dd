package tableformat.connector;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import tableformat.parquet.ParquetPushdown;

/**
 * Column pruning and filter pushdown (§9.4 rule 7). Every filter is handed back to Spark, which
 * evaluates it above the scan; the ones Parquet can apply exactly are also pushed into base
 * scans of rowsets whose deltas do not change the column.
 */
public final class TableFormatScanBuilder implements ScanBuilder, SupportsPushDownRequiredColumns, SupportsPushDownFilters {
  private final ReadPlan plan;
  private List<ReadPlan.ColumnPlan> cols;
  private Filter[] pushed = new Filter[0];

  public TableFormatScanBuilder(ReadPlan plan) {
    this.plan = plan;
    this.cols = plan.columns;
  }

  @Override
  public void pruneColumns(StructType required) {
    List<ReadPlan.ColumnPlan> out = new ArrayList<>();
    for (StructField f : required.fields()) {
      ReadPlan.ColumnPlan c = plan.column(f.name());
      if (c != null) out.add(c);
    }
    cols = out;
  }

  @Override
  public Filter[] pushFilters(Filter[] filters) {
    List<Filter> p = new ArrayList<>();
    for (Filter f : filters) if (ParquetPushdown.supported(f, plan)) p.add(f);
    pushed = p.toArray(new Filter[0]);
    return filters;
  }

  @Override
  public Filter[] pushedFilters() {
    return pushed;
  }

  /** The scan, with the session it is built in: taken once here, not looked up again while Spark
   *  plans tasks or ships the reader factory. */
  @Override
  public Scan build() {
    return new TableFormatScan(SparkSession.active(), plan, cols, pushed);
  }
}
