package tableformat.log;

/** A DataFrame or view made before a schema change is read after it: a column it names was dropped,
 *  renamed or re-typed since (or the table was replaced), so its rows no longer fit the plan Spark
 *  analysed (§11: columns are matched by ID). Define the DataFrame or view again, as Delta asks. */
public class SchemaChangedError extends TableFormatError {
  public SchemaChangedError(String message) {
    super(message);
  }
}
