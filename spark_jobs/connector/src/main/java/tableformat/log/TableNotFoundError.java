package tableformat.log;

/** No table at the path: no commits in _log/ (§8.3). */
public class TableNotFoundError extends TableFormatError {
  public TableNotFoundError(String message) {
    super(message);
  }
}
