package tableformat.catalog;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.time.LocalDate;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import tableformat.plan.Column;
import tableformat.plan.Schema;

/**
 * Spark's pushed filters as the planner's filter terms ({@code [column, op, value]}, Python's
 * {@code parse_filter}), for pruning only (§9.4 rule 1): the planner follows §13, which is Spark's
 * order (NULL matches no comparison, {@code NaN = NaN} and NaN above every number, {@code -0.0 = 0.0}),
 * and places a literal outside the column's type exactly. A filter this cannot translate (an
 * {@code OR}, a NOT, a timestamp or binary literal, a nested column) simply prunes nothing; Spark
 * evaluates every filter above the scan anyway.
 */
final class SparkFilters {
  private SparkFilters() {}

  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /** The terms of the filters that translate; the others are left out (the scan reads more, never less). */
  static ArrayNode terms(Schema schema, Filter[] filters) {
    ArrayNode out = F.arrayNode();
    for (Filter f : filters) add(schema, f, out);
    return out;
  }

  private static void add(Schema schema, Filter f, ArrayNode out) {
    if (f instanceof And a) {
      add(schema, a.left(), out);
      add(schema, a.right(), out);
    } else if (f instanceof EqualTo e) {
      term(schema, e.attribute(), "=", e.value(), out);
    } else if (f instanceof EqualNullSafe e && e.value() != null) {
      term(schema, e.attribute(), "=", e.value(), out);
    } else if (f instanceof GreaterThan g) {
      term(schema, g.attribute(), ">", g.value(), out);
    } else if (f instanceof GreaterThanOrEqual g) {
      term(schema, g.attribute(), ">=", g.value(), out);
    } else if (f instanceof LessThan l) {
      term(schema, l.attribute(), "<", l.value(), out);
    } else if (f instanceof LessThanOrEqual l) {
      term(schema, l.attribute(), "<=", l.value(), out);
    } else if (f instanceof IsNull n && schema.has(n.attribute())) {
      out.add(F.arrayNode().add(n.attribute()).add("is null"));
    } else if (f instanceof IsNotNull n && schema.has(n.attribute())) {
      out.add(F.arrayNode().add(n.attribute()).add("is not null"));
    } else if (f instanceof In in && schema.has(in.attribute())) {
      ArrayNode values = F.arrayNode();
      for (Object v : in.values()) {
        if (v == null) continue;                          // SQL: a NULL member matches nothing
        Object j = value(v);
        if (j == null) return;                            // a member we cannot say: no pruning by this IN
        values.add((com.fasterxml.jackson.databind.JsonNode) j);
      }
      out.add(F.arrayNode().add(in.attribute()).add("in").add(values));
    }
  }

  private static void term(Schema schema, String attr, String op, Object v, ArrayNode out) {
    if (v == null || !schema.has(attr)) return;
    Column c = schema.column(attr);
    Object j = value(v);
    if (j == null || !fits(c, v)) return;
    out.add(F.arrayNode().add(attr).add(op).add((com.fasterxml.jackson.databind.JsonNode) j));
  }

  /** Whether the planner takes a value of this Java class for this column type (else: no pruning). */
  private static boolean fits(Column c, Object v) {
    var t = c.type();
    if (t.isInteger() || t.isFloat() || t.kind().equals("decimal")) return v instanceof Number;
    if (t.kind().equals("bool")) return v instanceof Boolean;
    if (t.kind().equals("date")) return v instanceof LocalDate || v instanceof java.sql.Date;
    if (t.isText()) return v instanceof String;
    return false;
  }

  /** A literal in the planner's JSON value encoding (Locate), or null when it has none here. */
  private static Object value(Object v) {
    if (v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long)
      return F.numberNode(((Number) v).longValue());
    if (v instanceof Float || v instanceof Double) {
      double d = ((Number) v).doubleValue();
      if (Double.isNaN(d)) return floatNode("nan");
      if (Double.isInfinite(d)) return floatNode(d > 0 ? "inf" : "-inf");
      return F.numberNode(d);     // a Float widened exactly; -0.0 kept (§13: equal to 0.0)
    }
    if (v instanceof BigDecimal b) {
      ObjectNode o = F.objectNode();
      o.put("decimal", b.toPlainString());
      return o;
    }
    if (v instanceof Boolean b) return F.booleanNode(b);
    if (v instanceof String s) return F.textNode(s);
    if (v instanceof LocalDate d) return dateNode(d);
    if (v instanceof java.sql.Date d) return dateNode(d.toLocalDate());
    return null;
  }

  private static ObjectNode floatNode(String s) {
    ObjectNode o = F.objectNode();
    o.put("float", s);
    return o;
  }

  private static ObjectNode dateNode(LocalDate d) {
    ObjectNode o = F.objectNode();
    o.put("date", d.toString());
    return o;
  }
}
