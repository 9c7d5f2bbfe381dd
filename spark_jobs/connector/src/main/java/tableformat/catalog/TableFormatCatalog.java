package tableformat.catalog;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import tableformat.log.AsOf;
import tableformat.log.LogReader;

/**
 * A Spark catalog of tableformat tables: {@code spark.sql.catalog.<name>=tableformat.catalog.TableFormatCatalog}
 * with {@code spark.sql.catalog.<name>.warehouse} a local path or a Hadoop URI (s3a://, hdfs://).
 * Namespaces are directories of the warehouse, tables the directories holding {@code _log/}
 * (specs/format.md §1); {@code <name>.`/abs/path`} or {@code <name>.`s3a://bucket/t`} names a
 * table by its location, as Delta's {@code delta.`path`}. Time travel: {@code VERSION AS OF n},
 * {@code VERSION AS OF 'tag'}, {@code TIMESTAMP AS OF ...} (§8.2). Read-only: DDL and DML are refused.
 * {@code spark.sql.catalog.<name>.storage.<key>}: the storage options of an s3a:// warehouse ({@link StorageOptions}).
 */
public final class TableFormatCatalog implements TableCatalog, SupportsNamespaces {
  private String name;
  private String warehouse;

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
    String w = options.get("warehouse");
    this.warehouse = w == null || w.isBlank() ? null : Location.normalize(w);
    Map<String, String> storage = StorageOptions.of(options.asCaseSensitiveMap());
    StorageOptions.check(name, storage, warehouse);
    if (!storage.isEmpty()) {       // every Hadoop conf a read makes copies the session's settings
      var conf = org.apache.spark.sql.SparkSession.active().conf();
      StorageOptions.s3a(StorageOptions.bucket(warehouse), storage).forEach(conf::set);
    }
  }

  @Override
  public String name() {
    return name;
  }

  private String warehouse() {
    if (warehouse == null)
      throw new IllegalArgumentException("catalog '" + name + "' has no warehouse: set spark.sql.catalog." + name
          + ".warehouse to a directory (a local path, s3a://bucket/dir, hdfs://...), or name tables by path: "
          + name + ".`/path/to/table`");
    return warehouse;
  }

  static boolean isPath(Identifier ident) {
    String n = ident.name();
    return ident.namespace().length == 0 && (n.startsWith("/") || n.contains("://") || n.startsWith("file:"));
  }

  private String dir(String[] namespace) {
    StringBuilder b = new StringBuilder(warehouse());
    for (String n : namespace) b.append('/').append(n);
    return b.toString();
  }

  /** The table's location: the path itself for a path identifier, else warehouse/namespace/name. */
  String location(Identifier ident) {
    return isPath(ident) ? Location.normalize(ident.name()) : dir(ident.namespace()) + "/" + ident.name();
  }

  // ---- tables ----

  @Override
  public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
    String d = dir(namespace);
    if (!Location.isDirectory(d, Snapshots.hadoopConf())) throw new NoSuchNamespaceException(namespace);
    List<Identifier> out = new ArrayList<>();
    for (String t : Location.children(d, Snapshots.hadoopConf(), true)) out.add(Identifier.of(namespace, t));
    return out.toArray(new Identifier[0]);
  }

  private String display(Identifier ident) {
    return name + "." + (isPath(ident) ? "`" + ident.name() + "`" : ident.toString());
  }

  /** A table, or a metadata table {@code <table>.<kind>} of one (MetadataTable.KINDS), as of {@code asOf}. */
  private Table load(Identifier ident, AsOf asOf) throws NoSuchTableException {
    String[] ns = ident.namespace();
    if (ns.length > 0 && MetadataTable.KINDS.contains(ident.name())) {      // a table's directory holds no table
      Identifier parent = Identifier.of(Arrays.copyOf(ns, ns.length - 1), ns[ns.length - 1]);
      String loc = location(parent);
      LogReader log = Snapshots.reader(loc);
      if (Snapshots.isTable(log)) return new MetadataTable(display(parent), loc, ident.name(), asOf, log);
    }
    String loc = location(ident);
    LogReader log = Snapshots.reader(loc);       // one listing: the existence check and the open
    if (!Snapshots.isTable(log)) throw new NoSuchTableException(ident);
    return new CatalogTable(display(ident), loc, asOf, log);
  }

  /** A table, or a metadata table ({@code <table>.history}, {@code .rowsets}, ...) of one. */
  @Override
  public Table loadTable(Identifier ident) throws NoSuchTableException {
    return load(ident, null);
  }

  /** {@code VERSION AS OF 12} (a version) or {@code VERSION AS OF 'nightly'} (a tag, §8.2). */
  @Override
  public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
    return load(ident, versionAsOf(version));
  }

  /** {@code TIMESTAMP AS OF ...}: Spark gives microseconds since the epoch (UTC). */
  @Override
  public Table loadTable(Identifier ident, long timestamp) throws NoSuchTableException {
    return load(ident, AsOf.timestamp(timestamp));
  }

  static AsOf versionAsOf(String version) {
    String v = version.strip();
    // a version, negative too (refused by the resolver as VersionNotFoundError, not read as a tag name)
    if (v.matches("-?[0-9]+")) return AsOf.parse(v);
    return AsOf.parse(v.regionMatches(true, 0, "tag:", 0, 4) ? v : "tag:" + v);
  }

  @Override
  public boolean tableExists(Identifier ident) {
    try {
      return Location.isTable(location(ident), Snapshots.hadoopConf());
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  public Table createTable(Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties) {
    throw ReadOnly.refuse("CREATE TABLE", ReadOnly.CREATE);
  }

  @Override
  public Table alterTable(Identifier ident, TableChange... changes) {
    throw ReadOnly.refuse("ALTER TABLE", ReadOnly.ALTER);
  }

  @Override
  public boolean dropTable(Identifier ident) {
    throw ReadOnly.refuse("DROP TABLE", ReadOnly.DIRECTORY);
  }

  @Override
  public void renameTable(Identifier oldIdent, Identifier newIdent) {
    throw ReadOnly.refuse("ALTER TABLE ... RENAME", ReadOnly.DIRECTORY);
  }

  // ---- namespaces ----

  @Override
  public String[][] listNamespaces() {
    return listNamespaces(new String[0]);
  }

  @Override
  public String[][] listNamespaces(String[] namespace) {
    List<String[]> out = new ArrayList<>();
    for (String n : Location.children(dir(namespace), Snapshots.hadoopConf(), false)) {
      String[] ns = Arrays.copyOf(namespace, namespace.length + 1);
      ns[namespace.length] = n;
      out.add(ns);
    }
    return out.toArray(new String[0][]);
  }

  @Override
  public boolean namespaceExists(String[] namespace) {
    if (namespace.length == 0) return true;
    String d = dir(namespace);
    return Location.isDirectory(d, Snapshots.hadoopConf()) && !Location.isTable(d, Snapshots.hadoopConf());
  }

  @Override
  public Map<String, String> loadNamespaceMetadata(String[] namespace) throws NoSuchNamespaceException {
    if (!namespaceExists(namespace)) throw new NoSuchNamespaceException(namespace);
    return Map.of("location", dir(namespace));
  }

  @Override
  public void createNamespace(String[] namespace, Map<String, String> metadata) {
    throw ReadOnly.refuse("CREATE NAMESPACE", ReadOnly.NAMESPACE);
  }

  @Override
  public void alterNamespace(String[] namespace, NamespaceChange... changes) {
    throw ReadOnly.refuse("ALTER NAMESPACE", "A namespace is a plain directory: it has no properties to alter.");
  }

  @Override
  public boolean dropNamespace(String[] namespace, boolean cascade) {
    throw ReadOnly.refuse("DROP NAMESPACE", ReadOnly.DIRECTORY);
  }
}
