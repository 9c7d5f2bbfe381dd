package tableformat.log;

/** Inserted keys already exist in the table, or appear twice in the input (specs/format.md §8.4,
 *  §10.1); {@code count} is how many, as the engine's message starts "N key(s)". */
public class DuplicateKeyError extends TableFormatError {
  private final long count;

  public DuplicateKeyError(String message, long count) {
    super(message);
    this.count = count;
  }

  public long count() {
    return count;
  }
}
