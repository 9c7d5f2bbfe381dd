package tableformat.log;

/** A scan or filter naming a column the schema does not have. */
public class UnknownScanColumnError extends InvalidFilterError {
  public UnknownScanColumnError(String message) {
    super(message);
  }
}
