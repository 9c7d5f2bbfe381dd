package tableformat.plan;

import java.util.List;

/** One normalized filter term (§13): op is =, !=, <, <=, >, >=, in, is null, is not null, or
 * "none" (matches no row); value a domain value ({@link Domain}), a list of them for "in". */
public record Predicate(Column column, String op, Object value, List<Object> values) {}
