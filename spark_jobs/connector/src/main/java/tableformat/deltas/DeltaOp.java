package tableformat.deltas;

import java.util.LinkedHashMap;
import java.util.Map;

/** The {@code op} codes of delta records (specs/format.md §9), Python's
 *  {@code tableformat.format.DeltaOp}: tests/spark/test_connector_units.py compares the two. */
public final class DeltaOp {
  private DeltaOp() {}

  static final byte UPDATE = 1, DELETE = 2, REINSERT = 3;

  /** name -> code, for the test that ties them to Python's. */
  public static Map<String, Integer> codes() {
    Map<String, Integer> m = new LinkedHashMap<>();
    m.put("UPDATE", (int) UPDATE);
    m.put("DELETE", (int) DELETE);
    m.put("REINSERT", (int) REINSERT);
    return m;
  }
}
