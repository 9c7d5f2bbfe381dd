package tableformat.log;

/** tag:&lt;name&gt; naming no tag of the table (§8.2). */
public class TagNotFoundError extends VersionNotFoundError {
  public TagNotFoundError(String message) {
    super(message);
  }
}
