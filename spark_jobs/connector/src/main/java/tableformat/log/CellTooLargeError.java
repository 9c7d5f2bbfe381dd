package tableformat.log;

/** A string or binary cell over 64 KiB, or an encoded primary key over 16 KiB (§2, §3): the engine's CellTooLargeError. */
public class CellTooLargeError extends TableFormatError {
  public CellTooLargeError(String message) {
    super(message);
  }
}
