package tableformat.log;

/** A row's range key falls in no range partition of the table (specs/format.md §4). */
public class NoRangePartitionError extends TableFormatError {
  public NoRangePartitionError(String message) {
    super(message);
  }
}
