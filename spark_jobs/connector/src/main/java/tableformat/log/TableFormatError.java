package tableformat.log;

/**
 * An error of the engine, named as the engine names it ({@code tableformat/errors.py}): the JVM
 * reader raises the same kinds the Python engine does (specs/format.md §8, §9.1, §12). A
 * {@link PlainSparkError}, so that {@code spark-sql} prints its message once, without the stack
 * trace it prints (and logs) for an exception Spark does not know.
 */
public class TableFormatError extends RuntimeException implements PlainSparkError {
  public TableFormatError(String message) {
    super(message);
  }

  /** The engine's name of this error (the simple class name, as in Python). */
  public String errorName() {
    return getClass().getSimpleName();
  }

  /** No SQLSTATE of Spark's list fits every engine error; Spark shows none. */
  @Override
  public String getSqlState() {
    return null;
  }
}
