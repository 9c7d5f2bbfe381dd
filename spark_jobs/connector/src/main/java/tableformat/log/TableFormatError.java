package tableformat.log;

/**
 * An error of the engine, named as the engine names it ({@code tableformat/errors.py}): the JVM
 * reader raises the same kinds the Python engine does (specs/format.md §8, §9.1, §12).
 */
public class TableFormatError extends RuntimeException {
  public TableFormatError(String message) {
    super(message);
  }

  /** The engine's name of this error (the simple class name, as in Python). */
  public String errorName() {
    return getClass().getSimpleName();
  }
}
