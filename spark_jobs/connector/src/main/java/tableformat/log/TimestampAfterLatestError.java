package tableformat.log;

/** A read as of a time after the newest commit: its answer could still change (§9.1). */
public class TimestampAfterLatestError extends VersionNotFoundError {
  public TimestampAfterLatestError(String message) {
    super(message);
  }
}
