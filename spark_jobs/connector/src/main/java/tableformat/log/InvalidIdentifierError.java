package tableformat.log;

/** A table, column or namespace name §2 does not allow. */
public class InvalidIdentifierError extends SchemaError {
  public InvalidIdentifierError(String message) {
    super(message);
  }
}
