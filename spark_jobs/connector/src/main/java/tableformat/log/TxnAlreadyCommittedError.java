package tableformat.log;

/** An application transaction (a streaming batch, specs/format.md §8.2 {@code txn}) is already in
 *  the table at this version or a newer one: nothing was written. */
public class TxnAlreadyCommittedError extends TableFormatError {
  private final String appId;
  private final long version, committed;

  public TxnAlreadyCommittedError(String message, String appId, long version, long committed) {
    super(message);
    this.appId = appId;
    this.version = version;
    this.committed = committed;
  }

  public String appId() { return appId; }
  public long version() { return version; }
  public long committed() { return committed; }
}
