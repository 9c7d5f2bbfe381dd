package tableformat.log;

/** Rows a write cannot take as given (unsorted input to a task, a value that does not fit): the engine's InvalidDataError. */
public class InvalidDataError extends TableFormatError {
  public InvalidDataError(String message) {
    super(message);
  }
}
