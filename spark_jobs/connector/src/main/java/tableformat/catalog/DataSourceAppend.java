package tableformat.catalog;

import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tableformat.log.InvalidOptionError;
import tableformat.log.LogStore;

/**
 * The Python data source's append ({@code df.write.format("tableformat").mode("append").save(uri)},
 * spark_jobs/datasource.py) run by the JVM writer and committer: the write's table, Spark's
 * {@code PythonTable}, is replaced by the table at the same path as the catalog opens it
 * ({@link CatalogTable#atPath}), whose write is {@code INSERT INTO}'s ({@link TableWrite}: a
 * key-enforced insert, one commit, {@code DuplicateKeyError} on a key that exists or repeats). The
 * rows then never cross into Python (issue #45 item 5). The rule of {@code spark_jobs.insert.
 * partitioned_insert}: the JVM when it can, else the Python writer, and one log line says which.
 * Option {@code writePath}: {@code auto} (default), {@code jvm} (InvalidOptionError naming why it
 * cannot) or {@code python}.
 */
public final class DataSourceAppend extends Rule<LogicalPlan> {
  private static final Logger LOG = LoggerFactory.getLogger(DataSourceAppend.class);
  /** The Python data source's name (spark_jobs/datasource.py NAME). */
  static final String SOURCE = "tableformat";
  static final String OPTION = "writePath";
  /** Hadoop file systems every Spark build carries, and s3a (spark_jobs/jvm_paths.py's list). */
  private static final java.util.Set<String> SCHEMES = java.util.Set.of("file", "hdfs", "webhdfs", "swebhdfs", "viewfs", "s3a");
  private static volatile String last = "";

  /** The log line of the last append this JVM planned (which path, and why not the JVM). */
  public static String lastDecision() {
    return last;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!(plan instanceof AppendData append) || !(append.table() instanceof DataSourceV2Relation rel)) return plan;
    Table table = rel.table();
    if (!table.getClass().getName().endsWith(".python.PythonTable") || !SOURCE.equalsIgnoreCase(table.name()))
      return plan;
    Map<String, String> options = rel.options().asCaseSensitiveMap();
    String uri = rel.options().get("path");
    String mode = rel.options().getOrDefault(OPTION, "auto").toLowerCase(Locale.ROOT);
    if (!mode.equals("auto") && !mode.equals("jvm") && !mode.equals("python"))
      throw new InvalidOptionError("option " + OPTION + " must be auto, jvm or python, got '" + mode + "'");
    checkChunkBytes(rel.options());
    String why = mode.equals("python") ? OPTION + "=python" : reason(uri, options);
    CatalogTable target = why == null ? CatalogTable.atPath(jvmUri(uri), null) : null;
    if (why == null) why = typeReason(append.query(), target.schema());
    if (why != null && mode.equals("jvm"))
      throw new InvalidOptionError("the append into " + uri + " cannot run in the JVM: " + why);
    if (why != null) {
      log("data source append into " + uri + ": Python path (" + why + ")");
      return plan;
    }
    log("data source append into " + uri + ": JVM path (tableformat.write.InsertTask, tableformat.commit.Committer)");
    return append.makeCopy(replaceFirst(append, rel.makeCopy(replaceFirst(rel, target))));
  }

  private static void log(String line) {
    last = line;
    LOG.info(line);
  }

  /** The case class's constructor arguments with the first (the table) replaced: one copy for Spark 4.2 and 4.3. */
  private static Object[] replaceFirst(scala.Product p, Object first) {
    Object[] args = new Object[p.productArity()];
    for (int i = 0; i < args.length; i++) args[i] = p.productElement(i);
    args[0] = first;
    return args;
  }

  /** A path without a scheme is local, as the Python engine reads it (not Hadoop's default file system). */
  static String jvmUri(String uri) {
    return uri.contains("://") || uri.startsWith("file:") ? uri : new java.io.File(uri).getAbsoluteFile().toURI().toString();
  }

  /** Why the input's columns are not exactly the table's, as Spark types (null: they are). Casts are
   *  the Python engine's rules (a decimal for a double column is refused there, where Spark's
   *  INSERT would cast it): such an input goes to the Python writer, as in partitioned_insert. The
   *  table's schema is the log's: the write's relation, Spark's Python table, takes the input's. */
  static String typeReason(LogicalPlan query, org.apache.spark.sql.types.StructType schema) {
    var given = scala.jdk.javaapi.CollectionConverters.asJava(query.output());
    var fields = schema.fields();
    if (given.size() != fields.length) return "the input's columns are not exactly the table's";
    for (int i = 0; i < fields.length; i++) {
      var a = given.get(i);
      // the JVM writer takes the rows in the table's column order
      if (!a.name().equals(fields[i].name())) return "the input's columns are not the table's, in its order";
      var t = fields[i].dataType();
      if (!t.sameType(a.dataType()))
        return "column '" + a.name() + "' is given as " + a.dataType().simpleString() + ", not as the table's type";
    }
    return null;
  }

  /** The Python writer's option {@code write_chunk_bytes} (spark_jobs/datasource.py _positive_int):
   *  the JVM writer bounds its memory its own way and ignores the value, but a bad one is refused
   *  on either path, in the Python writer's words, before anything is written. */
  static void checkChunkBytes(Map<String, String> options) {
    String raw = options.get("write_chunk_bytes");
    if (raw == null) return;
    long v;
    try {
      v = Long.parseLong(raw.trim());
    } catch (NumberFormatException e) {
      v = 0;
    }
    if (v <= 0)
      throw new InvalidOptionError("option 'write_chunk_bytes' must be a positive integer, got '" + raw + "'");
  }

  /** Why the JVM cannot run this append (null: it can). */
  static String reason(String uri, Map<String, String> options) {
    if (uri == null) return "no path";
    for (String k : options.keySet())
      if (k.equalsIgnoreCase("storage_options") || k.toLowerCase(Locale.ROOT).startsWith("storage."))
        return "storage options are fsspec's, read by the Python engine";
    String full = jvmUri(uri);
    String scheme = full.substring(0, full.indexOf(':')).toLowerCase(Locale.ROOT);
    if (!SCHEMES.contains(scheme)) return "the JVM is not known to read " + scheme + ":// URIs";
    if (!tableformat.write.SparkInsert.available()) return "the connector has no JVM rowset writer";
    try {
      Configuration conf = tableformat.parquet.ParquetFiles.hadoopConf(
          (org.apache.spark.sql.classic.SparkSession) org.apache.spark.sql.SparkSession.active());
      LogStore.fileSystem(full, conf);
    } catch (RuntimeException | LinkageError e) {
      return "the JVM cannot open " + scheme + ":// (" + e.getMessage() + ")";
    }
    return null;
  }
}
