package tableformat.plan;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.time.LocalDate;
import tableformat.log.LogStore;

/**
 * A read plan as the connector takes it today ({@code spark_jobs/connector/plan.py}, read by
 * ReadPlan.java): file URIs, column IDs, Spark types, read defaults in Catalyst's physical form,
 * ranks and the cut; plus each rowset's tablet and native flag.
 */
public final class PlanJson {
  private PlanJson() {}

  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  public static ObjectNode of(LogStore store, Planner.ReadPlan plan) {
    ObjectNode o = F.objectNode();
    o.put("version", plan.state().version());
    if (plan.state().readTs() == null) o.putNull("read_ts");
    else o.put("read_ts", plan.state().readTs());
    ArrayNode cols = o.putArray("columns");
    for (Column c : plan.columns()) {
      ObjectNode j = cols.addObject();
      j.put("id", c.id());
      j.put("name", c.name());
      j.put("type", c.type().sparkType());
      j.put("nullable", true);
      j.set("default", physical(c.type(), c.readDefault()));
    }
    ArrayNode rowsets = o.putArray("rowsets");
    for (Planner.RowSetPlan r : plan.rowsets()) {
      ObjectNode j = rowsets.addObject();
      j.put("id", r.rowset().id());
      j.put("num_rows", r.rowset().numRows());
      ArrayNode base = j.putArray("base");
      for (Planner.BasePlan b : r.base()) {
        ObjectNode f = base.addObject();
        f.put("path", store.uri(b.file().path()));
        f.put("size", b.file().size());
        ArrayNode ids = f.putArray("columns");
        b.columns().forEach(ids::add);
        Long crc = b.file().crc32();         // a read of every column (and row) of the file checks it (§8.2)
        if (crc != null && b.columns().size() == b.file().columnIds().size()) f.put("crc32", crc);
        else f.putNull("crc32");
      }
      ArrayNode redo = j.putArray("redo");
      for (Planner.DeltaPlan d : r.redo()) delta(store, redo.addObject(), d);
      ArrayNode undo = j.putArray("undo");
      for (Planner.DeltaPlan d : r.undo()) delta(store, undo.addObject(), d);
      ArrayNode missing = j.putArray("missing");
      r.missing().forEach(missing::add);
      j.put("tablet", r.rowset().tablet());
      j.put("native", r.nativeRead());
    }
    return o;
  }

  private static void delta(LogStore store, ObjectNode f, Planner.DeltaPlan d) {
    f.put("path", store.uri(d.file().path()));
    f.put("size", d.file().size());
    f.put("order", d.order());
    f.put("min_ts", d.file().minTs());
    f.put("max_ts", d.file().maxTs());
    f.put("has_ts", d.file().hasTsColumn());
    ArrayNode ups = f.putArray("updates");
    d.updates().forEach(ups::add);
    f.put("deletes", d.deletes());
  }

  /** A read default (JSON value encoding, §2.2) in Catalyst's physical form, as plan.py writes it. */
  static JsonNode physical(ColumnType t, JsonNode v) {
    if (v == null || v.isNull()) return F.nullNode();
    switch (t.kind()) {
      case "date":
        return F.numberNode(v.isIntegralNumber() ? v.asLong() : LocalDate.parse(v.asText()).toEpochDay());
      case "decimal":
        return F.textNode(pyDecimal(new BigDecimal(v.asText()).setScale(t.scale())));
      case "float":
      case "double": {
        double d = v.isTextual() ? Locate.parseFloat(v.asText()) : v.asDouble();
        if (t.kind().equals("float")) d = (float) d;
        if (Double.isNaN(d)) return F.textNode("NaN");
        if (Double.isInfinite(d)) return F.textNode(d > 0 ? "Infinity" : "-Infinity");
        return F.numberNode(d);
      }
      default:
        return v;
    }
  }

  /** Python's str(Decimal): plain unless the exponent is positive or the adjusted exponent below -6. */
  static String pyDecimal(BigDecimal d) {
    int exp = -d.scale();
    String digits = d.unscaledValue().abs().toString();
    int adjusted = exp + digits.length() - 1;
    if (exp <= 0 && adjusted >= -6) return d.toPlainString();
    String sign = d.signum() < 0 ? "-" : "";
    String mant = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
    return sign + mant + "E" + (adjusted >= 0 ? "+" : "") + adjusted;
  }
}
