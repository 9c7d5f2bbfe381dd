package tableformat.log;

/** A tag name outside [A-Za-z_][A-Za-z0-9_.-]{0,127} (§8.2). */
public class InvalidTagNameError extends InvalidOptionError {
  public InvalidTagNameError(String message) {
    super(message);
  }
}
