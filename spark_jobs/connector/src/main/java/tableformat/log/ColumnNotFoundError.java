package tableformat.log;

/** A column the statement names is not in the table's schema (Python's ColumnNotFoundError). */
public class ColumnNotFoundError extends TableFormatError {
  public ColumnNotFoundError(String message) {
    super(message);
  }
}
