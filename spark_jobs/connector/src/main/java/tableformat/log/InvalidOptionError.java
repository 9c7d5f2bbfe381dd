package tableformat.log;

/** An as_of (or another option) that is none of the accepted forms (§8.2, §9.1). */
public class InvalidOptionError extends TableFormatError {
  public InvalidOptionError(String message) {
    super(message);
  }
}
