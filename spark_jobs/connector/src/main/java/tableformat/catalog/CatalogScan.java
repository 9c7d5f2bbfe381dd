package tableformat.catalog;

import java.util.Map;
import java.util.OptionalLong;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.read.colstats.ColumnStatistics;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.types.StructType;
import tableformat.log.DeltaFile;
import tableformat.plan.Planner;

/**
 * The connector's scan of a catalog read, with statistics from the log (issue #35 item 4): the
 * exact row count of the planned rowsets with pending deletes subtracted, as the engine's
 * {@code live_rows} counts them (rows less REDO deletes plus reinserts, §5), and the bytes of the
 * base files read, and column statistics ({@link ColumnStats}). A read at a cut (behind the horizon) reports no row count: a REDO file may lie
 * partly after it.
 */
final class CatalogScan implements Scan, SupportsReportStatistics {
  private final Scan scan;
  private final Planner.ReadPlan plan;

  CatalogScan(Scan scan, Planner.ReadPlan plan) {
    this.scan = scan;
    this.plan = plan;
  }

  /** The key columns NOT NULL, as the catalog's table schema shows them ({@link CatalogTable#keysNotNull}):
   *  a scan's attributes agree with its relation's. */
  @Override public StructType readSchema() { return CatalogTable.keysNotNull(scan.readSchema(), plan.state()); }
  @Override public String description() { return scan.description(); }
  @Override public Batch toBatch() { return scan.toBatch(); }
  @Override public ColumnarSupportMode columnarSupportMode() { return scan.columnarSupportMode(); }
  @Override public CustomMetric[] supportedCustomMetrics() { return scan.supportedCustomMetrics(); }
  @Override public CustomTaskMetric[] reportDriverMetrics() { return scan.reportDriverMetrics(); }

  /** Live rows of the planned rowsets, or -1 when the log cannot say exactly. */
  long liveRows() {
    if (plan.state().readTs() != null) return -1;
    long rows = 0;
    for (Planner.RowSetPlan r : plan.rowsets()) {
      if (!r.undo().isEmpty()) return -1;
      rows += r.rowset().numRows();
      for (DeltaFile d : plan.state().deltasOf(r.rowset().id()))
        if (d.isRedo()) rows -= d.deleteCount() - d.reinsertCount();
    }
    return rows;
  }

  @Override
  public Statistics estimateStatistics() {
    Statistics base = ((SupportsReportStatistics) scan).estimateStatistics();
    long rows = liveRows();
    Map<NamedReference, ColumnStatistics> cols = ColumnStats.of(plan);
    return new Statistics() {
      @Override public OptionalLong sizeInBytes() { return base.sizeInBytes(); }
      @Override public OptionalLong numRows() { return rows < 0 ? OptionalLong.empty() : OptionalLong.of(rows); }
      @Override public Map<NamedReference, ColumnStatistics> columnStats() { return cols; }
    };
  }
}
