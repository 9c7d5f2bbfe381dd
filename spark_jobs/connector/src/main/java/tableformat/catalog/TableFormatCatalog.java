package tableformat.catalog;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.TableCatalogCapability;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.catalog.constraints.Constraint;
import tableformat.commit.Committer;
import tableformat.log.InvalidOptionError;
import tableformat.log.Json;
import tableformat.log.RestartRequiredException;
import tableformat.log.TableExistsError;
import tableformat.log.TableState;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import tableformat.log.AsOf;
import tableformat.log.LogReader;

/**
 * A Spark catalog of tableformat tables: {@code spark.sql.catalog.<name>=tableformat.catalog.TableFormatCatalog}
 * with {@code spark.sql.catalog.<name>.warehouse} a local path or a Hadoop URI (s3a://, hdfs://).
 * Namespaces are directories of the warehouse, tables the directories holding {@code _log/}
 * (specs/format.md §1); {@code <name>.`/abs/path`} or {@code <name>.`s3a://bucket/t`} names a
 * table by its location, as Delta's {@code delta.`path`}. Time travel: {@code VERSION AS OF n},
 * {@code VERSION AS OF 'tag'}, {@code TIMESTAMP AS OF ...} (§8.2). DDL: specs/format.md §17.
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

  /** CREATE TABLE with a key (PRIMARY KEY constraint, or TBLPROPERTIES primary_key) and DEFAULTs. */
  @Override
  public Set<TableCatalogCapability> capabilities() {
    return Set.of(TableCatalogCapability.SUPPORT_TABLE_CONSTRAINT, TableCatalogCapability.SUPPORT_COLUMN_DEFAULT_VALUE);
  }

  @Override
  public Table createTable(Identifier ident, Column[] columns, Transform[] partitions, Map<String, String> properties)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    return create(ident, columns, partitions, properties, new Constraint[0]);
  }

  /** Spark 4.1+: the definition with its constraints (a PRIMARY KEY). */
  @Override
  public Table createTable(Identifier ident, TableInfo info) throws TableAlreadyExistsException, NoSuchNamespaceException {
    return create(ident, info.columns(), info.partitions(), info.properties(), info.constraints());
  }

  /** The version-0 commit of a new table (specs/format.md §17): the definition checked first, then
   *  one put-if-absent, so a CREATE that fails leaves nothing, and two racing CREATEs make one table. */
  private Table create(Identifier ident, Column[] columns, Transform[] partitions, Map<String, String> properties,
                       Constraint[] constraints) throws TableAlreadyExistsException, NoSuchNamespaceException {
    String loc = location(ident);
    if (!isPath(ident)) {
      TableDefinition.identifier(ident.name(), "table");
      if (ident.namespace().length > 0 && !namespaceExists(ident.namespace())) throw new NoSuchNamespaceException(ident.namespace());
    }
    String given = properties.get(TableCatalog.PROP_LOCATION);
    if (given != null && !Location.normalize(given).equals(loc))
      throw new InvalidOptionError("LOCATION '" + given + "' is refused: a table of catalog '" + name + "' lives at " + loc
          + "; name a table by its path as " + name + ".`" + Location.normalize(given) + "`");
    if (Location.isTable(loc, Snapshots.hadoopConf())) throw new TableAlreadyExistsException(ident);
    String tableName = isPath(ident) ? new org.apache.hadoop.fs.Path(loc).getName() : ident.name();
    var meta = TableDefinition.create(tableName, columns, partitions, properties, constraints);
    try {
      new Committer(loc, Snapshots.hadoopConf()).create(Json.write(meta), "CREATE TABLE");
    } catch (TableExistsError e) {
      throw new TableAlreadyExistsException(ident);
    }
    try {
      return loadTable(ident);
    } catch (NoSuchTableException e) {      // dropped again by a concurrent DROP TABLE
      throw new IllegalStateException("table " + display(ident) + " was dropped as it was created", e);
    }
  }

  /** ALTER TABLE: columns added, renamed, dropped, properties set and range partitions added or
   *  dropped, in one {@code alter} commit (§11, §17); planned again on the newest state when a
   *  concurrent commit changed the definition. */
  @Override
  public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
    String loc = location(ident);
    for (int attempt = 0; ; attempt++) {
      LogReader log = Snapshots.reader(loc);
      if (!Snapshots.isTable(log)) throw new NoSuchTableException(ident);
      TableState state = Snapshots.open(log, null);
      String actions = Json.write(AlterDefinition.apply(state, changes));
      try {
        new Committer(loc, Snapshots.hadoopConf()).alter(actions, state.version());
        return loadTable(ident);
      } catch (RestartRequiredException e) {
        if (attempt >= 30) throw e;
      }
    }
  }

  /** DROP TABLE deletes the table's directory: its log (every version, tag and the change history)
   *  and every file of it, as a managed table's drop does. A table named by its path is not the
   *  catalog's to delete: refused, as Delta refuses {@code DROP TABLE delta.`path`}. */
  @Override
  public boolean dropTable(Identifier ident) {
    if (isPath(ident))
      throw ReadOnly.refuse("DROP TABLE of a table named by its path", "Delete its directory " + ident.name()
          + " with your storage's tools, after every reader and writer of it has stopped.");
    String loc = location(ident);
    if (!Location.isTable(loc, Snapshots.hadoopConf())) return false;
    Location.delete(loc, Snapshots.hadoopConf());
    return true;
  }

  @Override
  public boolean purgeTable(Identifier ident) {
    return dropTable(ident);
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

  /** A namespace is a directory of the warehouse (never inside a table). */
  @Override
  public void createNamespace(String[] namespace, Map<String, String> metadata) throws NamespaceAlreadyExistsException {
    for (String n : namespace) TableDefinition.identifier(n, "namespace");
    for (String k : metadata.keySet())
      if (!k.equals("owner"))       // Spark adds the owner itself
        throw new InvalidOptionError("namespace property '" + k + "' is refused: a namespace is a plain directory "
            + "of the warehouse, with no properties or location of its own");
    for (int i = 1; i <= namespace.length; i++) {
      String d = dir(Arrays.copyOf(namespace, i));
      if (Location.isTable(d, Snapshots.hadoopConf()))
        throw new InvalidOptionError("namespace " + String.join(".", Arrays.copyOf(namespace, i)) + " is a table");
    }
    if (namespaceExists(namespace)) throw new NamespaceAlreadyExistsException(namespace);
    Location.mkdirs(dir(namespace), Snapshots.hadoopConf());
  }

  @Override
  public void alterNamespace(String[] namespace, NamespaceChange... changes) {
    throw ReadOnly.refuse("ALTER NAMESPACE", "A namespace is a plain directory: it has no properties to alter.");
  }

  /** DROP NAMESPACE deletes its directory: when empty, or with CASCADE, with every table in it. */
  @Override
  public boolean dropNamespace(String[] namespace, boolean cascade) throws NoSuchNamespaceException, NonEmptyNamespaceException {
    if (namespace.length == 0) throw new InvalidOptionError("the warehouse itself is not a namespace to drop");
    if (!namespaceExists(namespace)) return false;
    String d = dir(namespace);
    if (!cascade && Location.hasChildren(d, Snapshots.hadoopConf())) throw new NonEmptyNamespaceException(namespace);
    Location.delete(d, Snapshots.hadoopConf());
    return true;
  }
}
