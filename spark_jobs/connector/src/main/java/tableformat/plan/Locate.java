package tableformat.plan;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.time.LocalDate;
import java.util.Base64;
import tableformat.log.InvalidFilterError;

/**
 * A filter value placed in a column type's domain (specs/format.md §13, Python's
 * {@code comparison.locate}): the value itself when the type holds it exactly, else the nearest
 * values below and above (null: none). Never rounded; a value of the wrong kind is an
 * InvalidFilterError. Values arrive as JSON: numbers, strings, booleans, and
 * {@code {"float": "nan"|"inf"|"-inf"}}, {@code {"decimal": "1.5"}}, {@code {"date": "2024-01-03"}},
 * {@code {"binary": "<base64>"}} for what JSON cannot say directly.
 */
public record Locate(Object exact, Object below, Object above) {
  /** Marker: the value lies between two values of the type, or beyond all of them. */
  public static final Object NOT_REPRESENTABLE = new Object() {
    @Override public String toString() { return "NOT_REPRESENTABLE"; }
  };

  public static Locate of(ColumnType t, JsonNode v, String what) {
    String k = t.kind();
    if (k.equals("bool")) {
      if (v.isBoolean()) return same(v.booleanValue());
      throw wrong(t, v, what, "use True or False");
    }
    if (t.isInteger()) {
      Object x = number(v);
      if (x == null) throw wrong(t, v, what, "use a number");
      return integral(x, t.bits());
    }
    if (t.isFloat()) {
      Object x = number(v);
      if (x == null) throw wrong(t, v, what, "use a number");
      return asDouble(x);
    }
    if (k.equals("decimal")) {
      Object x = number(v);
      if (x == null) throw wrong(t, v, what, "use a number or a decimal");
      return asDecimal(t, x);
    }
    if (k.equals("date")) {
      if (v.isObject() && v.has("date")) {
        long days = LocalDate.parse(v.get("date").asText()).toEpochDay();
        return same(days);
      }
      throw wrong(t, v, what, "use a date");
    }
    if (k.equals("unixtime_micros")) {
      if (v.isIntegralNumber()) return integral(new BigDecimal(v.bigIntegerValue()), 64);
      throw wrong(t, v, what, "use a datetime or integer microseconds since the epoch");
    }
    if (t.isText()) {
      if (v.isTextual()) return same(v.textValue());
      throw wrong(t, v, what, "use a str");
    }
    if (v.isObject() && v.has("binary")) return same(Base64.getDecoder().decode(v.get("binary").asText()));
    throw wrong(t, v, what, "use bytes");
  }

  private static Locate same(Object x) {
    return new Locate(x, x, x);
  }

  private static InvalidFilterError wrong(ColumnType t, JsonNode v, String what, String why) {
    return new InvalidFilterError(what + ": " + v + " is not a valid " + t.kind() + "; " + why);
  }

  /** A JSON number as BigDecimal (exact), or a Double for NaN and the infinities; null for no number. */
  static Object number(JsonNode v) {
    if (v.isIntegralNumber()) return new BigDecimal(v.bigIntegerValue());
    if (v.isNumber()) return v.doubleValue();      // a JSON float is Python's float: a double
    if (v.isObject() && v.has("float")) return parseFloat(v.get("float").asText());
    if (v.isObject() && v.has("decimal")) {
      String s = v.get("decimal").asText().strip();
      try {
        return new BigDecimal(s);
      } catch (NumberFormatException e) {
        Double d = parseFloat(s);     // Decimal('NaN'), Decimal('Infinity')
        if (d != null && !Double.isFinite(d)) return d;
        return null;
      }
    }
    return null;
  }

  /** Python's float() of a JSON value string: "nan", "inf", "-inf", or a number. */
  static Double parseFloat(String s) {
    String l = s.strip().toLowerCase();
    if (l.equals("nan") || l.equals("+nan") || l.equals("-nan")) return Double.NaN;
    if (l.equals("inf") || l.equals("+inf") || l.equals("infinity") || l.equals("+infinity")) return Double.POSITIVE_INFINITY;
    if (l.equals("-inf") || l.equals("-infinity")) return Double.NEGATIVE_INFINITY;
    try {
      return Double.parseDouble(s);
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /** (exact, below, above) of a number among the integers of a signed width. */
  static Locate integral(Object x, int bits) {
    BigInteger lo = BigInteger.ONE.shiftLeft(bits - 1).negate(), hi = BigInteger.ONE.shiftLeft(bits - 1).subtract(BigInteger.ONE);
    if (x instanceof Double d) {
      if (d.isNaN() || d == Double.POSITIVE_INFINITY) return new Locate(NOT_REPRESENTABLE, hi.longValue(), null);
      if (d == Double.NEGATIVE_INFINITY) return new Locate(NOT_REPRESENTABLE, null, lo.longValue());
      x = new BigDecimal(d);
    }
    BigDecimal b = (BigDecimal) x;
    BigInteger f = b.setScale(0, RoundingMode.FLOOR).toBigIntegerExact();
    BigInteger c = b.setScale(0, RoundingMode.CEILING).toBigIntegerExact();
    Object below = f.compareTo(lo) >= 0 ? (Object) f.min(hi).longValue() : null;
    Object above = c.compareTo(hi) <= 0 ? (Object) c.max(lo).longValue() : null;
    Object exact = f.equals(c) && f.compareTo(lo) >= 0 && f.compareTo(hi) <= 0 ? (Object) f.longValue() : NOT_REPRESENTABLE;
    return new Locate(exact, below, above);
  }

  /** (exact, below, above) of a number among the doubles (Spark's order, NaN largest). */
  static Locate asDouble(Object x) {
    if (x instanceof Double d) return same(d);
    BigDecimal b = (BigDecimal) x;
    double f = Double.parseDouble(b.toString());
    int c = Double.isInfinite(f) ? (f > 0 ? 1 : -1) : new BigDecimal(f).compareTo(b);
    if (c == 0) return same(f);
    if (c > 0) return new Locate(NOT_REPRESENTABLE, Math.nextDown(f), f);
    return new Locate(NOT_REPRESENTABLE, f, Math.nextUp(f));
  }

  /** (exact, below, above) of a number among decimal(p, s). */
  static Locate asDecimal(ColumnType t, Object x) {
    BigDecimal top = new BigDecimal(BigInteger.TEN.pow(t.precision()).subtract(BigInteger.ONE), t.scale());
    if (x instanceof Double d) {
      if (d.isNaN() || d == Double.POSITIVE_INFINITY) return new Locate(NOT_REPRESENTABLE, top, null);
      if (d == Double.NEGATIVE_INFINITY) return new Locate(NOT_REPRESENTABLE, null, top.negate());
      x = new BigDecimal(d);
    }
    BigDecimal b = (BigDecimal) x;
    if (b.compareTo(top) > 0) return new Locate(NOT_REPRESENTABLE, top, null);
    if (b.compareTo(top.negate()) < 0) return new Locate(NOT_REPRESENTABLE, null, top.negate());
    BigDecimal f = b.setScale(t.scale(), RoundingMode.FLOOR), c = b.setScale(t.scale(), RoundingMode.CEILING);
    Object exact = f.compareTo(c) == 0 && f.compareTo(b) == 0 ? f : NOT_REPRESENTABLE;
    return new Locate(exact, f, c);
  }
}
