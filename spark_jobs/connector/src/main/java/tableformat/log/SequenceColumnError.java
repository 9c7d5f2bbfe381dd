package tableformat.log;

/** A sequence_column (specs/format.md §14) that is not a non-null, non-key column of an orderable type. */
public class SequenceColumnError extends SchemaError {
  public SequenceColumnError(String message) {
    super(message);
  }
}
