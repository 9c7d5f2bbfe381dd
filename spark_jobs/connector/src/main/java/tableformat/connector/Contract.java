package tableformat.connector;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.sql.types.DataType;
import tableformat.deltas.DeltaOp;
import tableformat.vectors.CellCopy;

/** What the connector and the engine must agree on, printed as JSON for the test that compares
 *  it with Python's (tests/spark/test_connector_units.py): the delta op codes, the fields of
 *  each object of the read plan, and the physical kind of each Spark type named in the
 *  arguments (Python's {@code TYPE_NAMES}: the type a plan's column names, as ReadPlan parses it). */
public final class Contract {
  private Contract() {}

  public static void main(String[] args) throws Exception {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("delta_ops", DeltaOp.codes());
    out.put("plan_fields", ReadPlan.FIELDS);
    Map<String, String> physical = new LinkedHashMap<>();
    for (String type : args) {
      physical.put(type, CellCopy.KIND_NAMES[CellCopy.kind(DataType.fromDDL(type))]);
    }
    out.put("physical", physical);
    System.out.println(new ObjectMapper().writeValueAsString(out));
  }
}
