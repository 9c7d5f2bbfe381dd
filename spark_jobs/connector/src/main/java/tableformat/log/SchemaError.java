package tableformat.log;

/** A table definition the engine refuses (specs/format.md §2): a column, its type, the key or an option. */
public class SchemaError extends TableFormatError {
  public SchemaError(String message) {
    super(message);
  }
}
