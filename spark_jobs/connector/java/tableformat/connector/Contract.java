package tableformat.connector;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.Map;
import tableformat.deltas.DeltaOp;

/** What the connector and the engine must agree on, printed as JSON for the test that compares
 *  it with Python's (tests/spark/test_connector_units.py): the delta op codes and the fields of
 *  each object of the read plan. */
public final class Contract {
  private Contract() {}

  public static void main(String[] args) throws Exception {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("delta_ops", DeltaOp.codes());
    out.put("plan_fields", ReadPlan.FIELDS);
    System.out.println(new ObjectMapper().writeValueAsString(out));
  }
}
