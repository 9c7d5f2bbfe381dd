package tableformat.catalog;

import tableformat.log.PlainSparkError;

/**
 * What the catalog refuses (UPDATE and MERGE until #46's JVM writes exist; renames), with what does it instead. A
 * {@link PlainSparkError}, so that {@code spark-sql} prints its one-line message once, without the
 * stack trace it prints (and logs) for an exception Spark does not know.
 */
public final class ReadOnly extends UnsupportedOperationException implements PlainSparkError {
  /** SQLSTATE 0A000: feature not supported. */
  public static final String SQL_STATE = "0A000";

  private ReadOnly(String message) {
    super(message);
  }

  /** "{@code what} is refused": the statement, then the remedy, a full sentence. */
  static ReadOnly refuse(String what, String remedy) {
    return new ReadOnly("tableformat's Spark catalog: " + what + " is refused. " + remedy);
  }

  static final String INSERT = "Insert rows with the Spark job spark_jobs.insert.partitioned_insert, "
      + "or with the engine's Table.insert.";
  static final String MERGE = "Change rows with the Spark job spark_jobs.merge.mutation_merge (updates, deletes "
      + "and upserts), or with the engine's Table.update, Table.delete or Table.upsert.";
  static final String CREATE = "Create tables with the engine: tableformat.create_table, or `tableformat create`.";
  static final String ALTER = "Alter tables with the engine: Table.alter, or `tableformat alter`.";
  static final String DIRECTORY = "A table is its directory and a namespace a directory of the warehouse: "
      + "rename or delete it with the storage's own tools.";
  static final String NAMESPACE = "A namespace is a directory of the warehouse: create a table in a new "
      + "directory with tableformat.create_table, and the namespace exists.";

  @Override
  public String getSqlState() {
    return SQL_STATE;
  }
}
