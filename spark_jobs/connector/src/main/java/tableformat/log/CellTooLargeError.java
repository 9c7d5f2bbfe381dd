package tableformat.log;

/** A string or binary cell over 64 KiB, or an encoded primary key over 16 KiB (specs/format.md §2.1):
 *  the engine's CellTooLargeError. */
public class CellTooLargeError extends InvalidDataError {
  public CellTooLargeError(String message) {
    super(message);
  }
}
