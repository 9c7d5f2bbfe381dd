package tableformat.log;

/** A log or data file fails its checks (checksum, size, shape): specs/format.md §8.1-§8.3. */
public class CorruptFileError extends TableFormatError {
  public CorruptFileError(String message) {
    super(message);
  }
}
