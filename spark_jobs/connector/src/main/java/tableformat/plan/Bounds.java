package tableformat.plan;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** What the predicates say about one column, for pruning (Python's {@code predicate.Bounds}). */
public final class Bounds {
  List<Object> values;          // from = and in: the only possible values (sorted)
  Object lo;
  boolean loIncl = true;
  Object hi;
  boolean hiIncl = true;
  boolean isNull, notNull, empty;

  Object lower() {
    if (values != null) return values.isEmpty() ? null : values.get(0);
    return lo;
  }

  Object upper() {
    if (values != null) return values.isEmpty() ? null : values.get(values.size() - 1);
    return hi;
  }

  boolean upperIncl() {
    return values != null || hiIncl;
  }

  boolean admits(Object v) {
    return (lo == null || Domain.compare(v, lo) > 0 || (loIncl && Domain.compare(v, lo) == 0))
        && (hi == null || Domain.compare(v, hi) < 0 || (hiIncl && Domain.compare(v, hi) == 0));
  }

  /** Per column name, the bounds of a conjunction of predicates. */
  public static Map<String, Bounds> of(List<Predicate> preds) {
    Map<String, Bounds> out = new LinkedHashMap<>();
    for (Predicate p : preds) {
      Bounds b = out.computeIfAbsent(p.column().name(), k -> new Bounds());
      switch (p.op()) {
        case "=", "in" -> {
          TreeMap<Object, Object> vals = new TreeMap<>(Domain::compare);
          for (Object v : p.op().equals("=") ? List.of(p.value()) : p.values()) vals.putIfAbsent(v, v);
          if (b.values == null) b.values = new ArrayList<>(vals.values());
          else b.values.removeIf(v -> !vals.containsKey(v));
        }
        case ">", ">=" -> {
          if (b.lo == null || Domain.compare(p.value(), b.lo) > 0
              || (Domain.compare(p.value(), b.lo) == 0 && p.op().equals(">"))) {
            b.lo = p.value();
            b.loIncl = p.op().equals(">=");
          }
        }
        case "<", "<=" -> {
          if (b.hi == null || Domain.compare(p.value(), b.hi) < 0
              || (Domain.compare(p.value(), b.hi) == 0 && p.op().equals("<"))) {
            b.hi = p.value();
            b.hiIncl = p.op().equals("<=");
          }
        }
        case "none" -> b.empty = true;
        case "is null" -> b.isNull = true;
        case "is not null" -> b.notNull = true;
        default -> { }          // != prunes nothing
      }
    }
    for (Bounds b : out.values()) {
      if (b.empty) continue;
      if (b.values != null) {
        b.values.removeIf(v -> !b.admits(v));
        b.empty = b.values.isEmpty();
      } else if (b.lo != null && b.hi != null) {
        int c = Domain.compare(b.lo, b.hi);
        b.empty = c > 0 || (c == 0 && !(b.loIncl && b.hiIncl));
      }
      if (b.isNull && (b.notNull || b.values != null || b.lo != null || b.hi != null)) b.empty = true;
    }
    return out;
  }
}
