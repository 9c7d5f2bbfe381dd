package tableformat.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.LocalDate;
import java.util.Map;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.And;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampType;
import tableformat.plan.Column;
import tableformat.plan.ColumnType;
import tableformat.plan.Schema;

/**
 * Spark's pushed predicates (DSv2 {@link Predicate}s) as the planner's filter terms
 * ({@code [column, op, value]}, Python's {@code parse_filter}), for pruning only (§9.4 rule 1).
 * The planner follows §13, which is Spark's order (NULL matches no comparison, {@code NaN = NaN}
 * and NaN above every number, {@code -0.0 = 0.0}). Literals arrive as Catalyst's internal values:
 * a date as its day number and a timestamp as its UTC microseconds, both proleptic Gregorian as the
 * format stores them (§2.1), so no calendar conversion and no time zone enters here (Spark's V1
 * {@code java.sql.Date} cannot tell 1582-10-10 from 1582-10-20). A {@code TIMESTAMP_NTZ'...'} or
 * string literal compared with a timestamp column reaches us already cast by Spark to a TIMESTAMP
 * in the session's time zone. A predicate this cannot translate (an OR, a NOT, a cast of the
 * column, a binary literal, a nested column) prunes nothing; Spark evaluates every predicate
 * above the scan anyway.
 */
final class SparkFilters {
  private SparkFilters() {}

  private static final JsonNodeFactory F = JsonNodeFactory.instance;
  /** A comparison with its literal on the left, turned round. */
  static final Map<String, String> FLIP = Map.of("=", "=", "<=>", "<=>", "<", ">", "<=", ">=",
      ">", "<", ">=", "<=");

  /** The terms of the predicates that translate; the others are left out (the scan reads more, never less). */
  static ArrayNode terms(Schema schema, Predicate[] predicates) {
    ArrayNode out = F.arrayNode();
    for (Predicate p : predicates) add(schema, p, out);
    return out;
  }

  private static void add(Schema schema, Predicate p, ArrayNode out) {
    Expression[] c = p.children();
    String op = p.name();
    if (p instanceof And a) {
      add(schema, a.left(), out);
      add(schema, a.right(), out);
    } else if (op.equals("IS_NULL") || op.equals("IS_NOT_NULL")) {
      Column col = column(schema, c[0]);
      if (col != null) out.add(F.arrayNode().add(col.name()).add(op.equals("IS_NULL") ? "is null" : "is not null"));
    } else if (op.equals("IN") && c.length > 1) {
      in(schema, c, out);
    } else if (FLIP.containsKey(op) && c.length == 2) {
      boolean flipped = column(schema, c[0]) == null;
      Column col = column(schema, c[flipped ? 1 : 0]);
      JsonNode v = col == null ? null : value(col.type(), c[flipped ? 0 : 1]);
      if (v == null) return;
      String o = flipped ? FLIP.get(op) : op;
      out.add(F.arrayNode().add(col.name()).add(o.equals("<=>") ? "=" : o).add(v));
    }
  }

  /** {@code col IN (literals)}: a NULL member matches nothing; a member we cannot say, no pruning. */
  private static void in(Schema schema, Expression[] c, ArrayNode out) {
    Column col = column(schema, c[0]);
    if (col == null) return;
    ArrayNode values = F.arrayNode();
    for (int i = 1; i < c.length; i++) {
      if (c[i] instanceof Literal<?> l && l.value() == null) continue;
      JsonNode v = value(col.type(), c[i]);
      if (v == null) return;
      values.add(v);
    }
    out.add(F.arrayNode().add(col.name()).add("in").add(values));
  }

  /** The table column a top-level reference names, or null. */
  private static Column column(Schema schema, Expression e) {
    if (!(e instanceof NamedReference r) || r.fieldNames().length != 1 || !schema.has(r.fieldNames()[0])) return null;
    return schema.column(r.fieldNames()[0]);
  }

  /** A literal in the planner's JSON value encoding (Locate) when its Spark type is one the column's
   *  type is read as, or null (not a literal, NULL, or another type: no pruning). */
  static JsonNode value(ColumnType t, Expression e) {
    if (!(e instanceof Literal<?> l) || l.value() == null) return null;
    Object v = l.value();
    DataType d = l.dataType();
    String k = t.kind();
    boolean number = t.isInteger() || t.isFloat() || k.equals("decimal");
    if (number && (d instanceof ByteType || d instanceof ShortType || d instanceof IntegerType || d instanceof LongType))
      return F.numberNode(((Number) v).longValue());
    if (number && (d instanceof FloatType || d instanceof DoubleType)) return floating(((Number) v).doubleValue());
    if (number && d instanceof DecimalType) return tagged("decimal", ((Decimal) v).toJavaBigDecimal().toPlainString());
    if (k.equals("bool") && d instanceof BooleanType) return F.booleanNode((Boolean) v);
    if (t.isText() && d instanceof StringType) return F.textNode(v.toString());     // a UTF8String
    if (k.equals("date") && d instanceof DateType) return tagged("date", LocalDate.ofEpochDay((Integer) v).toString());
    if (k.equals("unixtime_micros") && d instanceof TimestampType) return F.numberNode((Long) v);
    return null;
  }

  private static JsonNode floating(double d) {
    if (Double.isNaN(d)) return tagged("float", "nan");
    if (Double.isInfinite(d)) return tagged("float", d > 0 ? "inf" : "-inf");
    return F.numberNode(d);     // a Float widened exactly; -0.0 kept (§13: equal to 0.0)
  }

  private static ObjectNode tagged(String tag, String s) {
    ObjectNode o = F.objectNode();
    o.put(tag, s);
    return o;
  }
}
