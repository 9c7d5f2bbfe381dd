package tableformat.log;

/** A partitioning §4 does not allow: hash levels, range columns, bounds or splits. */
public class PartitionSchemaError extends TableFormatError {
  public PartitionSchemaError(String message) {
    super(message);
  }
}
