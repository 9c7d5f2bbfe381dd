package tableformat.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsRowLevelOperations;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperationBuilder;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import tableformat.log.AsOf;
import tableformat.log.InvalidOptionError;
import tableformat.log.LogReader;
import tableformat.log.TableState;

/**
 * A table of the catalog (or a path given to {@code tableformat-jvm}): its definition from the
 * state it was loaded at, and its reads. Unpinned (no time travel), each scan plans the version
 * that is latest when the query is optimized, so a Table object Spark keeps (a DataFrame, a
 * view's plan) still sees later commits; pinned ({@code VERSION AS OF}, a tag, a timestamp),
 * it reads its one version. INSERT appends with the key enforced ({@link TableWrite}).
 */
public final class CatalogTable implements SupportsRead, SupportsWrite, SupportsRowLevelOperations {
  private final String name;
  private final String uri;
  private final AsOf asOf;
  private final TableState loaded;
  private final StructType schema;
  private final LogReader log;

  CatalogTable(String name, String uri, AsOf asOf) {
    this(name, uri, asOf, Snapshots.reader(Location.normalize(uri)));
  }

  /** A table opened from {@code log}, whose listing (taken by the catalog's existence check) it reuses. */
  CatalogTable(String name, String uri, AsOf asOf, LogReader log) {
    this.name = name;
    this.uri = Location.normalize(uri);
    this.asOf = asOf;
    this.log = log;
    this.loaded = Snapshots.open(log, asOf);
    this.schema = keysNotNull(declaredTypes(Snapshots.schema(this.uri, loaded), loaded), loaded);
  }

  /** The schema with each varchar(n) column marked as Spark marks a declared VARCHAR(n) (it reads
   *  as STRING): Spark then refuses a longer value in an INSERT, as SQL does, rather than the
   *  engine's truncation (§2.1, §17). */
  static StructType declaredTypes(StructType schema, TableState state) {
    java.util.Map<String, String> varchar = new java.util.HashMap<>();
    for (JsonNode c : state.schema().get("columns")) {
      String t = c.get("type").asText();
      if (t.startsWith("varchar(")) varchar.put(c.get("name").asText(), t);
    }
    if (varchar.isEmpty()) return schema;
    org.apache.spark.sql.types.StructField[] out = schema.fields().clone();
    for (int i = 0; i < out.length; i++) {
      String t = varchar.get(out[i].name());
      if (t == null) continue;
      org.apache.spark.sql.types.Metadata m = new org.apache.spark.sql.types.MetadataBuilder()
          .withMetadata(out[i].metadata()).putString("__CHAR_VARCHAR_TYPE_STRING", t).build();
      out[i] = new org.apache.spark.sql.types.StructField(out[i].name(), out[i].dataType(), out[i].nullable(), m);
    }
    return new StructType(out);
  }

  /** The key columns marked NOT NULL, as they are (§2): Spark carries them as a DELETE's row id
   *  ({@link RowLevelDelete}), which it requires to be non-nullable. */
  static StructType keysNotNull(StructType schema, TableState state) {
    java.util.Set<String> keys = new java.util.HashSet<>();
    for (JsonNode k : state.schema().get("primary_key")) keys.add(k.asText());
    org.apache.spark.sql.types.StructField[] out = schema.fields().clone();
    for (int i = 0; i < out.length; i++)
      if (keys.contains(out[i].name()))
        out[i] = new org.apache.spark.sql.types.StructField(out[i].name(), out[i].dataType(), false, out[i].metadata());
    return new StructType(out);
  }

  /** A table by path, for {@code spark.read.format("tableformat-jvm").load(path)} (read_table and
   *  register_view): named {@code tableformat_jvm:<uri>}, as plans show it. */
  public static CatalogTable atPath(String uri, AsOf asOf) {
    return new CatalogTable("tableformat_jvm:" + Location.normalize(uri), uri, asOf);
  }

  /** The read options' point in time: at most one of {@code as_of} (§8.2's forms), {@code versionAsOf}
   * (a version or a tag) and {@code timestampAsOf} (an ISO date-time, naive meaning UTC); null: latest. */
  public static AsOf asOf(String asOf, String versionAsOf, String timestampAsOf) {
    int given = (asOf == null ? 0 : 1) + (versionAsOf == null ? 0 : 1) + (timestampAsOf == null ? 0 : 1);
    if (given > 1)
      throw new InvalidOptionError("give at most one of as_of, versionAsOf and timestampAsOf");
    if (versionAsOf != null) return TableFormatCatalog.versionAsOf(versionAsOf);
    if (timestampAsOf != null) {
      AsOf a = AsOf.parse(timestampAsOf);
      if (a == null || a.kind() != AsOf.Kind.TIMESTAMP)
        throw new InvalidOptionError("timestampAsOf '" + timestampAsOf + "' is not a date-time such as 2024-05-01 00:00:00");
      return a;
    }
    return AsOf.parse(asOf);
  }

  @Override
  public String name() {
    return name + (asOf == null ? "" : "@" + loaded.version());
  }

  @Override
  public StructType schema() {
    return schema;
  }

  TableState state() {
    return loaded;
  }

  /** The columns with their write defaults (§2.2, §17): an INSERT that leaves a column out
   *  writes its DEFAULT, as the engine's insert of rows without it does, not NULL. */
  @Override
  public org.apache.spark.sql.connector.catalog.Column[] columns() {
    return Values.columns(schema, loaded.schema());
  }

  @Override
  public Map<String, String> properties() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put(TableCatalog.PROP_PROVIDER, "tableformat");
    p.put(TableCatalog.PROP_LOCATION, uri);
    p.put("created_format_version", String.valueOf(loaded.formatVersion()));   // §8.2: the table's, never changes
    p.put("min_reader_format_version", String.valueOf(loaded.logFormat()));    // the highest its log declares
    p.put("version", String.valueOf(loaded.version()));
    p.put("table_id", loaded.tableId());
    StringBuilder pk = new StringBuilder();
    for (JsonNode k : loaded.schema().get("primary_key")) pk.append(pk.length() == 0 ? "" : ", ").append(k.asText());
    p.put("primary_key", pk.toString());
    p.put("partitioning", loaded.partitioning() == null ? "" : Partitions.describe(loaded));
    if (!loaded.tags().isEmpty()) {
      StringBuilder t = new StringBuilder();
      for (var e : loaded.tags().entrySet()) t.append(t.length() == 0 ? "" : ", ").append(e.getKey()).append("=").append(e.getValue()[0]);
      p.put("tags", t.toString());
    }
    if (loaded.properties() != null)
      loaded.properties().fields().forEachRemaining(e -> p.put("tableformat." + e.getKey(),
          e.getValue().isTextual() ? e.getValue().asText() : e.getValue().toString()));
    return p;
  }

  @Override
  public Set<TableCapability> capabilities() {
    // TRUNCATE and OVERWRITE_BY_FILTER so that INSERT OVERWRITE reaches TableWrite's refusal, which names the alternatives
    return EnumSet.of(TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.TRUNCATE,
        TableCapability.OVERWRITE_BY_FILTER);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    TableState state = asOf == null ? latest() : loaded;
    if (state != loaded) Snapshots.checkColumns(name, loaded, state);
    return new CatalogScanBuilder(uri, state, schema);
  }

  /** The latest state for a scan: the log listed again when the scan is built (one listing; the
   *  files read before are kept, so an unchanged log costs no read). Never the load's listing, even
   *  in the query that loaded this table: Spark analyses a DataFrame when it is defined and plans it
   *  when it runs, under the same planning tracker, and a commit may land in between. */
  private TableState latest() {
    synchronized (log) {
      log.refresh();
      return Snapshots.open(log, null);
    }
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    if (asOf != null)
      throw new InvalidOptionError("table " + name() + " is a version of the past (VERSION AS OF / TIMESTAMP AS OF): "
          + "write to the table itself");
    return new TableWrite(name, uri, latest(), info);
  }

  @Override
  public RowLevelOperationBuilder newRowLevelOperationBuilder(RowLevelOperationInfo info) {
    String op = info.command().toString();
    if (info.command() == org.apache.spark.sql.connector.write.RowLevelOperation.Command.DELETE) {
      if (asOf != null)
        throw new InvalidOptionError("table " + name() + " is a version of the past (VERSION AS OF / TIMESTAMP AS "
            + "OF): write to the table itself");
      TableState state = latest();
      return () -> new RowLevelDelete(name, uri, state, schema);
    }
    throw ReadOnly.refuse(op, ReadOnly.MERGE);
  }
}
