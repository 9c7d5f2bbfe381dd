package tableformat.catalog;

/** What the catalog refuses until a JVM writer exists, with the Spark job that does it instead. */
final class ReadOnly {
  private ReadOnly() {}

  static UnsupportedOperationException refuse(String what, String job) {
    return new UnsupportedOperationException("tableformat's Spark catalog is read-only: " + what
        + " is not supported through it; use the Spark job " + job + " (or the Python engine, tableformat)");
  }
}
