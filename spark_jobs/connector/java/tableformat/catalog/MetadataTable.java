package tableformat.catalog;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;
import tableformat.log.CommitInfo;
import tableformat.log.LogReader;
import tableformat.log.LogStore;

/**
 * A metadata table of a catalog table, {@code <table>.history} or {@code <table>.tags}, as Iceberg
 * names them: rows read from the log (§8) when the query is planned, the latest version's.
 */
final class MetadataTable implements SupportsRead {
  static final Set<String> KINDS = Set.of("history", "tags");

  private final String name;
  private final String uri;
  private final String kind;

  MetadataTable(String name, String uri, String kind) {
    this.name = name;
    this.uri = uri;
    this.kind = kind;
  }

  @Override
  public String name() {
    return name + "." + kind;
  }

  @Override
  public StructType schema() {
    if (kind.equals("history"))
      return new StructType().add("version", DataTypes.LongType, false).add("timestamp", DataTypes.TimestampType, false)
          .add("operation", DataTypes.StringType, true);
    return new StructType().add("name", DataTypes.StringType, false).add("version", DataTypes.LongType, false)
        .add("timestamp", DataTypes.TimestampType, true);
  }

  @Override
  public Set<TableCapability> capabilities() {
    return Collections.singleton(TableCapability.BATCH_READ);
  }

  private InternalRow[] rows() {
    LogReader.Loaded log = new LogReader(new LogStore(uri, Snapshots.hadoopConf())).load(null);
    List<InternalRow> out = new ArrayList<>();
    if (kind.equals("history")) {
      for (CommitInfo h : log.history())
        out.add(new GenericInternalRow(new Object[] {h.version(), h.timestamp(), UTF8String.fromString(h.operation())}));
    } else {
      List<String> names = new ArrayList<>(log.state().tags().keySet());
      names.sort(null);
      for (String n : names) {
        long[] t = log.state().tags().get(n);
        out.add(new GenericInternalRow(new Object[] {UTF8String.fromString(n), t[0], t[1]}));
      }
    }
    return out.toArray(new InternalRow[0]);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    StructType schema = schema();
    return () -> new LocalScanOf(schema, rows());
  }

  private record LocalScanOf(StructType readSchema, InternalRow[] rows) implements LocalScan {
    @Override
    public String description() {
      return "tableformat metadata (" + rows.length + " rows)";
    }
  }

}
