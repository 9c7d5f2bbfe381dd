package tableformat.plan;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import tableformat.log.InvalidFilterError;
import tableformat.log.UnknownScanColumnError;

/**
 * A filter (a conjunction of {@code [column, op, value]} terms, the language of Python's
 * {@code parse_filter}) normalized as §13 says: every value placed exactly by {@link Locate},
 * a value the type cannot hold turned into its neighbour or "matches nothing".
 */
public final class FilterParser {
  private FilterParser() {}

  private static final Map<String, String> OPS = Map.ofEntries(Map.entry("=", "="), Map.entry("==", "="),
      Map.entry("!=", "!="), Map.entry("<>", "!="), Map.entry("<", "<"), Map.entry("<=", "<="),
      Map.entry(">", ">"), Map.entry(">=", ">="), Map.entry("in", "in"), Map.entry("is null", "is null"),
      Map.entry("is not null", "is not null"), Map.entry("is_null", "is null"),
      Map.entry("is_not_null", "is not null"));

  /** null or JSON null: no filter; one term or a list of terms. */
  public static List<Predicate> parse(Schema schema, JsonNode f) {
    List<Predicate> out = new ArrayList<>();
    if (f == null || f.isNull()) return out;
    if (!f.isArray()) throw new InvalidFilterError("filter must be a (column, op, value) term or a list of them");
    if (f.size() > 0 && f.get(0).isTextual()) return parse(schema, com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.arrayNode().add(f));
    for (JsonNode p : f) {
      if (!p.isArray() || p.size() < 2 || p.size() > 3)
        throw new InvalidFilterError("filter term " + p + " must be (column, op, value) or (column, 'is null')");
      String name = p.get(0).asText();
      if (!p.get(0).isTextual() || !schema.has(name))
        throw new UnknownScanColumnError("filter names unknown column " + p.get(0));
      String op = OPS.get(p.get(1).asText().strip().toLowerCase());
      if (op == null) throw new InvalidFilterError("unknown filter operator " + p.get(1));
      Column c = schema.column(name);
      if (op.startsWith("is")) {
        out.add(new Predicate(c, op, null, null));
        continue;
      }
      if (p.size() != 3) throw new InvalidFilterError("filter term " + p + " needs a value");
      out.add(normalize(c, op, p.get(2)));
    }
    return out;
  }

  static Predicate normalize(Column c, String op, JsonNode value) {
    String what = "filter on '" + c.name() + "'";
    if (op.equals("in")) {
      if (!value.isArray()) throw new InvalidFilterError("'in' needs a list of values, got " + value);
      TreeMap<Object, Object> keep = new TreeMap<>(Domain::compare);
      for (JsonNode v : value) {
        if (v.isNull()) continue;
        Object exact = Locate.of(c.type(), v, what).exact();
        if (exact != Locate.NOT_REPRESENTABLE) keep.putIfAbsent(exact, exact);
      }
      return keep.isEmpty() ? new Predicate(c, "none", null, null)
          : new Predicate(c, "in", null, new ArrayList<>(keep.values()));
    }
    if (value.isNull()) throw new InvalidFilterError("compare with None is never true; use (\"" + c.name() + "\", \"is null\")");
    Locate l = Locate.of(c.type(), value, what);
    if (Domain.isNaN(l.exact())) {
      if (op.equals(">=")) return new Predicate(c, "=", l.exact(), null);
      if (op.equals(">")) return new Predicate(c, "none", null, null);
      return new Predicate(c, op, l.exact(), null);
    }
    if (l.exact() != Locate.NOT_REPRESENTABLE) return new Predicate(c, op, l.exact(), null);
    return switch (op) {
      case "=" -> new Predicate(c, "none", null, null);
      case "!=" -> new Predicate(c, "is not null", null, null);
      case "<", "<=" -> l.below() != null ? new Predicate(c, "<=", l.below(), null) : new Predicate(c, "none", null, null);
      default -> l.above() != null ? new Predicate(c, ">=", l.above(), null) : new Predicate(c, "none", null, null);
    };
  }
}
