package tableformat.log;

/** A version whose history is no longer retained (history_max_age, history_gc_ts: §12). */
public class HistoryExpiredError extends TableFormatError {
  public HistoryExpiredError(String message) {
    super(message);
  }
}
