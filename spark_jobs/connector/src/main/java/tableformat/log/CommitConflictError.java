package tableformat.log;

/** A commit lost too many races, or rebasing onto a concurrent commit is impossible (specs/format.md §10). */
public class CommitConflictError extends TableFormatError {
  public CommitConflictError(String message) {
    super(message);
  }
}
