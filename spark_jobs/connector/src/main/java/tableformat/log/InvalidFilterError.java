package tableformat.log;

/** A filter term the planner cannot accept (§13). */
public class InvalidFilterError extends TableFormatError {
  public InvalidFilterError(String message) {
    super(message);
  }
}
