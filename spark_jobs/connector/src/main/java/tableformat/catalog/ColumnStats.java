package tableformat.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.read.colstats.ColumnStatistics;
import tableformat.log.DeltaFile;
import tableformat.plan.Column;
import tableformat.plan.Planner;

/**
 * Column statistics for Spark's optimizer from the rowsets' {@code stats} (§8.2): min and max of
 * integer, date and timestamp columns, and the null count, over the planned rowsets. A column is
 * left out when a planned rowset lacks its statistics or has a pending REDO file that updates it
 * or reinserts rows (values the statistics never saw); pending deletes keep min and max (bounds
 * still) but drop the null count (no longer exact). Reads at a cut report none.
 */
final class ColumnStats {
  private ColumnStats() {}

  static Map<NamedReference, ColumnStatistics> of(Planner.ReadPlan plan) {
    Map<NamedReference, ColumnStatistics> out = new HashMap<>();
    if (plan.state().readTs() != null) return out;
    for (Column c : plan.columns()) {
      String k = c.type().kind();
      if (!c.type().isInteger() && !k.equals("date") && !k.equals("unixtime_micros")) continue;
      ColumnStatistics s = column(plan, c);
      if (s != null) out.put(Expressions.column(c.name()), s);
    }
    return out;
  }

  private static ColumnStatistics column(Planner.ReadPlan plan, Column c) {
    Long lo = null, hi = null;
    long nulls = 0;
    boolean exactNulls = true;
    for (Planner.RowSetPlan r : plan.rowsets()) {
      if (!r.undo().isEmpty()) return null;
      JsonNode st = r.rowset().statsOf(c.id());
      if (st == null || !st.has("nulls")) return null;
      for (DeltaFile d : plan.state().deltasOf(r.rowset().id())) {
        if (!d.isRedo()) continue;
        if (d.updates(c.id()) || d.reinsertCount() != 0) return null;
        if (d.deleteCount() != 0) exactNulls = false;
      }
      long n = st.get("nulls").asLong();
      nulls += n;
      if (n >= r.rowset().numRows()) continue;               // all NULL: no min or max
      if (!st.has("min") || !st.has("max") || !st.get("min").isIntegralNumber() || !st.get("max").isIntegralNumber())
        return null;
      long mn = st.get("min").asLong(), mx = st.get("max").asLong();
      lo = lo == null ? mn : Math.min(lo, mn);
      hi = hi == null ? mx : Math.max(hi, mx);
    }
    final Object min = lo == null ? null : internal(c, lo), max = hi == null ? null : internal(c, hi);
    final OptionalLong nc = exactNulls ? OptionalLong.of(nulls) : OptionalLong.empty();
    return new ColumnStatistics() {
      @Override public Optional<Object> min() { return Optional.ofNullable(min); }
      @Override public Optional<Object> max() { return Optional.ofNullable(max); }
      @Override public OptionalLong nullCount() { return nc; }
    };
  }

  /** Catalyst's internal value of the Spark type the connector reads the column as. */
  private static Object internal(Column c, long v) {
    return switch (c.type().kind()) {
      case "int8" -> (byte) v;
      case "int16" -> (short) v;
      case "int32", "date" -> (int) v;
      default -> v;
    };
  }
}
