package tableformat.catalog;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.And;
import org.apache.spark.sql.connector.expressions.filter.Not;
import org.apache.spark.sql.connector.expressions.filter.Or;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
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
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;

/**
 * Spark's pushed DSv2 predicates as the V1 filters the connector's Parquet pushdown takes (§9.4
 * rule 7), each one meaning exactly what its predicate means, never less: Parquet skips row groups
 * and pages on them, so a filter that dropped an OR's other side would lose that side's rows. Only
 * a top-level column compared with a literal of its own integer or string type, IS [NOT] NULL, an
 * IN of such literals, and AND, OR and NOT of predicates that all convert, are said; anything else
 * (a cast or function of the column, a second column, a date, timestamp or float literal) is not
 * pushed to Parquet. A top-level AND gives its convertible sides, each implied by the whole. Not
 * Spark's internal {@code PredicateUtils.toV1}, which turns {@code a > b OR k = 1} into {@code k = 1}.
 */
final class ExactFilters {
  private ExactFilters() {}

  /** The filters for the connector's Parquet pushdown; Spark still evaluates every predicate. */
  static Filter[] of(StructType schema, Predicate[] predicates) {
    List<Filter> out = new ArrayList<>();
    for (Predicate p : predicates) conjuncts(schema, p, out);
    return out.toArray(new Filter[0]);
  }

  private static void conjuncts(StructType schema, Predicate p, List<Filter> out) {
    if (p instanceof And a) {
      conjuncts(schema, a.left(), out);
      conjuncts(schema, a.right(), out);
      return;
    }
    Filter f = exact(schema, p);
    if (f != null) out.add(f);
  }

  /** The V1 filter that means exactly `p`, or null. */
  static Filter exact(StructType schema, Predicate p) {
    Expression[] c = p.children();
    if (p instanceof And a) return both(exact(schema, a.left()), exact(schema, a.right()), true);
    if (p instanceof Or o) return both(exact(schema, o.left()), exact(schema, o.right()), false);
    if (p instanceof Not n) {
      Filter f = exact(schema, n.child());
      return f == null ? null : new org.apache.spark.sql.sources.Not(f);
    }
    String op = p.name();
    if ((op.equals("IS_NULL") || op.equals("IS_NOT_NULL")) && c.length == 1) {
      String col = column(schema, c[0]);
      if (col == null) return null;
      return op.equals("IS_NULL") ? new IsNull(col) : new IsNotNull(col);
    }
    if (op.equals("IN") && c.length > 1) return in(schema, c);
    if (SparkFilters.FLIP.containsKey(op) && c.length == 2) {
      boolean flipped = column(schema, c[0]) == null;
      String col = column(schema, c[flipped ? 1 : 0]);
      Object v = col == null ? null : value(schema, col, c[flipped ? 0 : 1]);
      return v == null ? null : compare(flipped ? SparkFilters.FLIP.get(op) : op, col, v);
    }
    return null;
  }

  private static Filter both(Filter l, Filter r, boolean and) {
    if (l == null || r == null) return null;
    return and ? new org.apache.spark.sql.sources.And(l, r) : new org.apache.spark.sql.sources.Or(l, r);
  }

  private static Filter in(StructType schema, Expression[] c) {
    String col = column(schema, c[0]);
    if (col == null) return null;
    Object[] values = new Object[c.length - 1];
    for (int i = 1; i < c.length; i++) {
      values[i - 1] = value(schema, col, c[i]);
      if (values[i - 1] == null) return null;      // a NULL or another type: not said
    }
    return new In(col, values);
  }

  private static Filter compare(String op, String col, Object v) {
    return switch (op) {
      case "=" -> new EqualTo(col, v);
      case "<=>" -> new EqualNullSafe(col, v);
      case "<" -> new LessThan(col, v);
      case "<=" -> new LessThanOrEqual(col, v);
      case ">" -> new GreaterThan(col, v);
      default -> new GreaterThanOrEqual(col, v);
    };
  }

  /** The name of the table's top-level column that `e` references, or null. */
  private static String column(StructType schema, Expression e) {
    if (!(e instanceof NamedReference r) || r.fieldNames().length != 1) return null;
    String name = r.fieldNames()[0];
    return schema.getFieldIndex(name).isDefined() ? name : null;
  }

  /** A non-NULL literal of exactly the column's own integer or string type, as a V1 value, or null. */
  private static Object value(StructType schema, String col, Expression e) {
    if (!(e instanceof Literal<?> l) || l.value() == null) return null;
    DataType t = schema.apply(col).dataType();
    if (!l.dataType().equals(t)) return null;
    if (t instanceof StringType) return l.value().toString();       // a UTF8String
    boolean integer = t instanceof ByteType || t instanceof ShortType || t instanceof IntegerType || t instanceof LongType;
    return integer ? l.value() : null;
  }
}
