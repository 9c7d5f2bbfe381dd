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
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;
import tableformat.log.AsOf;
import tableformat.log.LogReader;
import tableformat.log.Mvcc;
import tableformat.log.TableState;

/**
 * A metadata table of a catalog table, {@code <table>.history}, {@code .tablets}, {@code .rowsets},
 * {@code .deltas}, {@code .files} or {@code .tags}, as Iceberg names them: rows read from the log
 * (§8) when the query is planned, of the latest version or of the one {@code VERSION AS OF} /
 * {@code TIMESTAMP AS OF} names; the columns of the engine's {@code Table.inspect} (MetadataRows).
 */
final class MetadataTable implements SupportsRead {
  static final Set<String> KINDS = Set.of("history", "tablets", "rowsets", "deltas", "files", "tags");

  private final String name;
  private final String uri;
  private final String kind;
  private final AsOf asOf;
  private final StructType schema;

  private final LogReader log;

  MetadataTable(String name, String uri, String kind, AsOf asOf, LogReader log) {
    this.name = name;
    this.uri = uri;
    this.kind = kind;
    this.asOf = asOf;
    this.log = log;
    this.schema = switch (kind) {
      case "history" -> MetadataRows.HISTORY;
      case "tags" -> new StructType().add("name", DataTypes.StringType, false).add("version", DataTypes.LongType, false)
          .add("timestamp", DataTypes.TimestampType, true);
      case "tablets" -> MetadataRows.TABLETS;
      case "deltas" -> MetadataRows.DELTAS;
      case "files" -> MetadataRows.FILES;
      default -> MetadataRows.rowsetsSchema(state());     // the key columns' types
    };
  }

  @Override
  public String name() {
    return name + "." + kind;
  }

  @Override
  public StructType schema() {
    return schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return Collections.singleton(TableCapability.BATCH_READ);
  }

  private TableState state() {
    return Mvcc.stateAt(log, asOf);
  }

  /** The rows, from one listing of the log (taken again for each scan: a later query sees later commits). */
  private InternalRow[] rows() {
    synchronized (log) {
      log.refresh();
      return rowsOf();
    }
  }

  private InternalRow[] rowsOf() {
    List<InternalRow> out = new ArrayList<>();
    switch (kind) {
      case "history" -> {
        long upTo = asOf == null ? Long.MAX_VALUE : state().version();
        out = MetadataRows.history(log.load(null).history(), upTo);
      }
      case "tags" -> {
        TableState st = state();
        List<String> names = new ArrayList<>(st.tags().keySet());
        names.sort(null);
        for (String n : names) {
          long[] t = st.tags().get(n);
          out.add(new GenericInternalRow(new Object[] {UTF8String.fromString(n), t[0], t[1]}));
        }
      }
      case "tablets" -> out = MetadataRows.tablets(state());
      case "rowsets" -> out = MetadataRows.rowsets(state());
      case "deltas" -> out = MetadataRows.deltas(state());
      default -> out = MetadataRows.files(state());
    }
    return out.toArray(new InternalRow[0]);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return () -> new LocalScanOf(schema, rows());
  }

  private record LocalScanOf(StructType readSchema, InternalRow[] rows) implements LocalScan {
    @Override
    public String description() {
      return "tableformat metadata (" + rows.length + " rows)";
    }
  }
}
