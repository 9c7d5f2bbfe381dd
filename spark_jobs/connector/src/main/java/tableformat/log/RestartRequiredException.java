package tableformat.log;

/** Commits that won the race invalidated what a write planned (specs/format.md §10, the matrix's
 *  restart): plan the job again on a new snapshot. Named {@code RestartRequired} as the engine
 *  names it, so PySpark hands it back as that class (spark_jobs/errors.py). */
public class RestartRequiredException extends CommitConflictError {
  public RestartRequiredException(String message) {
    super(message);
  }

  @Override
  public String errorName() {
    return "RestartRequired";
  }
}
