package tableformat.connector;

import java.util.Collections;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** One snapshot of a table, as its read plan describes it: readable in batches. */
final class TableFormatTable implements SupportsRead {
  private final ReadPlan plan;

  TableFormatTable(ReadPlan plan) {
    this.plan = plan;
  }

  @Override
  public String name() {
    return "tableformat_jvm@" + plan.version;
  }

  @Override
  public StructType schema() {
    return plan.schema();
  }

  @Override
  public Set<TableCapability> capabilities() {
    return Collections.singleton(TableCapability.BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new TableFormatScanBuilder(plan);
  }
}
