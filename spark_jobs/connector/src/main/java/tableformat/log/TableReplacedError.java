package tableformat.log;

/** A commit of another table continues this state: the table at the path was re-created (§8.1). */
public class TableReplacedError extends TableNotFoundError {
  public TableReplacedError(String message) {
    super(message);
  }
}
