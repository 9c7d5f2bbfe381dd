package tableformat.log;

/** A file written by a newer format than this reader knows (specs/format.md, the header). */
public class UnsupportedFormatVersionError extends TableFormatError {
  public UnsupportedFormatVersionError(String message) {
    super(message);
  }
}
