package tableformat.log;

/** A version (or a time) the log does not hold (§9.1). */
public class VersionNotFoundError extends TableFormatError {
  public VersionNotFoundError(String message) {
    super(message);
  }
}
