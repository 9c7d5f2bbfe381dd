package tableformat.plan;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Domain values and their order (specs/format.md §13, Python's {@code comparison.order_key}):
 * Long for integers, date days and timestamp micros, Double for float/double (NaN equal to
 * itself and above every number, -0.0 = 0.0), BigDecimal, String (code point order, as
 * UTF-8 bytes), byte[] (unsigned), Boolean.
 */
public final class Domain {
  private Domain() {}

  public static boolean isNaN(Object v) {
    return v instanceof Double d && d.isNaN();
  }

  public static int compare(Object a, Object b) {
    if (isNaN(a) || isNaN(b)) return Boolean.compare(isNaN(a), isNaN(b));
    if (a instanceof Double x && b instanceof Double y) return x == 0 && y == 0 ? 0 : Double.compare(x, y);
    if (a instanceof Long x && b instanceof Long y) return Long.compare(x, y);
    if (a instanceof BigDecimal x && b instanceof BigDecimal y) return x.compareTo(y);
    if (a instanceof String x && b instanceof String y)
      return Arrays.compareUnsigned(x.getBytes(StandardCharsets.UTF_8), y.getBytes(StandardCharsets.UTF_8));
    if (a instanceof byte[] x && b instanceof byte[] y) return Arrays.compareUnsigned(x, y);
    if (a instanceof Boolean x && b instanceof Boolean y) return Boolean.compare(x, y);
    throw new IllegalArgumentException("values of different kinds: " + a + ", " + b);
  }
}
