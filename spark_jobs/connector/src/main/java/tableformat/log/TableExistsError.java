package tableformat.log;

/** A table already exists where one is created (Python's TableExistsError). */
public class TableExistsError extends TableFormatError {
  public TableExistsError(String message) {
    super(message);
  }
}
