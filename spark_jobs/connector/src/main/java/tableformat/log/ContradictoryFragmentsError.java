package tableformat.log;

/** Fragments of one commit write one key with no single meaning (specs/format.md §10.3). */
public class ContradictoryFragmentsError extends DuplicateKeyError {
  public ContradictoryFragmentsError(String message, long count) {
    super(message, count);
  }
}
