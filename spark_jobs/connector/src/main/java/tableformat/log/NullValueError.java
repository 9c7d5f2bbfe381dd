package tableformat.log;

/** A NULL in a column that is not nullable (a key column, §2): the engine's NullValueError. */
public class NullValueError extends TableFormatError {
  public NullValueError(String message) {
    super(message);
  }
}
