package tableformat.plan;

import tableformat.log.RowSet;

/** Whether a rowset holds a key in [lower, upper) (null: unbounded), by its PK index (§6). */
public interface KeySeek {
  boolean anyKeyIn(RowSet rowset, byte[] lower, byte[] upper);
}
