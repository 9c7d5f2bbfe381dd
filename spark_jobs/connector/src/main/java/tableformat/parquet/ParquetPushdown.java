package tableformat.parquet;

import java.util.ArrayList;
import java.util.List;
import org.apache.parquet.filter2.predicate.FilterApi;
import org.apache.parquet.filter2.predicate.FilterPredicate;
import org.apache.parquet.filter2.predicate.Operators;
import org.apache.parquet.io.api.Binary;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
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
import tableformat.connector.ReadPlan;

/**
 * Filters pushed into a rowset's Parquet scan (row-group and page skipping), by §9.4 rule 7:
 * only on columns no delta file of the rowset changes and that its single base file holds, and
 * only where Parquet's statistics decide exactly (integers and strings; never floats, whose
 * statistics leave NaN out and order -0.0 before 0.0). Spark evaluates every filter again above
 * the scan, so a filter left out only costs reading more rows.
 */
public final class ParquetPushdown {
  private ParquetPushdown() {}

  /** Whether a filter can ever be pushed (the scan builder reports these to Spark). */
  public static boolean supported(Filter f, ReadPlan plan) {
    String attr = attribute(f);
    if (attr == null) return false;
    ReadPlan.ColumnPlan c = plan.column(attr);
    return c != null && exactType(c.type) && (value(f) != null || f instanceof IsNull || f instanceof IsNotNull);
  }

  public static FilterPredicate predicate(Filter[] filters, ReadPlan.RowSetPlan rs, List<ReadPlan.ColumnPlan> cols) {
    if (filters == null || filters.length == 0) return null;
    List<FilterPredicate> ps = new ArrayList<>();
    for (Filter f : filters) {
      String attr = attribute(f);
      ReadPlan.ColumnPlan c = null;
      for (ReadPlan.ColumnPlan x : cols) if (x.name.equals(attr)) c = x;
      if (c == null || !exactType(c.type) || rs.changes(c.id) || rs.baseOf(c.id) == null) continue;
      FilterPredicate p = convert(f, "c" + c.id, c.type);
      if (p != null) ps.add(p);
    }
    FilterPredicate out = null;
    for (FilterPredicate p : ps) out = out == null ? p : FilterApi.and(out, p);
    return out;
  }

  private static boolean exactType(DataType t) {
    return t instanceof IntegerType || t instanceof LongType || t instanceof ShortType || t instanceof ByteType
        || t instanceof StringType;
  }

  private static String attribute(Filter f) {
    if (f instanceof EqualTo) return ((EqualTo) f).attribute();
    if (f instanceof GreaterThan) return ((GreaterThan) f).attribute();
    if (f instanceof GreaterThanOrEqual) return ((GreaterThanOrEqual) f).attribute();
    if (f instanceof LessThan) return ((LessThan) f).attribute();
    if (f instanceof LessThanOrEqual) return ((LessThanOrEqual) f).attribute();
    if (f instanceof IsNull) return ((IsNull) f).attribute();
    if (f instanceof IsNotNull) return ((IsNotNull) f).attribute();
    return null;
  }

  private static Object value(Filter f) {
    if (f instanceof EqualTo) return ((EqualTo) f).value();
    if (f instanceof GreaterThan) return ((GreaterThan) f).value();
    if (f instanceof GreaterThanOrEqual) return ((GreaterThanOrEqual) f).value();
    if (f instanceof LessThan) return ((LessThan) f).value();
    if (f instanceof LessThanOrEqual) return ((LessThanOrEqual) f).value();
    return null;
  }

  private static FilterPredicate convert(Filter f, String field, DataType t) {
    Object raw = value(f);
    if (t instanceof LongType) {
      return compare(f, FilterApi.longColumn(field), raw instanceof Number ? ((Number) raw).longValue() : null);
    }
    if (t instanceof StringType) {
      return compare(f, FilterApi.binaryColumn(field), raw instanceof String ? Binary.fromString((String) raw) : null);
    }
    return compare(f, FilterApi.intColumn(field), raw instanceof Number ? ((Number) raw).intValue() : null);
  }

  private static <T extends Comparable<T>, C extends Operators.Column<T> & Operators.SupportsLtGt>
      FilterPredicate compare(Filter f, C col, T v) {
    if (f instanceof IsNull) return FilterApi.eq(col, null);
    if (f instanceof IsNotNull) return FilterApi.notEq(col, null);
    if (v == null) return null;
    if (f instanceof EqualTo) return FilterApi.eq(col, v);
    if (f instanceof GreaterThan) return FilterApi.gt(col, v);
    if (f instanceof GreaterThanOrEqual) return FilterApi.gtEq(col, v);
    if (f instanceof LessThan) return FilterApi.lt(col, v);
    if (f instanceof LessThanOrEqual) return FilterApi.ltEq(col, v);
    return null;
  }
}
