package tableformat.log;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;

/**
 * Python's {@code repr(float)}, which {@code json.dumps} writes for a float: the shortest
 * decimal that reads back as the same double (the nearest of that length when several do),
 * in fixed notation for decimal exponents -4..15 and {@code 1e+16} / {@code 1e-05} style
 * otherwise. The checksum of specs/format.md §8.1 covers that text, so a second
 * implementation must produce it exactly; JDK 17's {@code Double.toString} is not always
 * shortest, so the digits are found here with exact BigDecimal arithmetic.
 */
public final class PythonFloat {
  private PythonFloat() {}

  /** The text Python's json module writes for d (NaN and the infinities as json.dumps writes them). */
  public static String repr(double d) {
    if (Double.isNaN(d)) return "NaN";
    if (Double.isInfinite(d)) return d > 0 ? "Infinity" : "-Infinity";
    if (d == 0) return (1 / d < 0) ? "-0.0" : "0.0";
    String sign = d < 0 ? "-" : "";
    double a = Math.abs(d);
    if (a < 0x1p53 && a == Math.rint(a)) {
      // an integer below 2^53 is exact and no shorter decimal lies within half an ulp (<= 0.5) of it
      String u = Long.toString((long) a);
      int n = u.length();
      while (n > 1 && u.charAt(n - 1) == '0') n--;
      return sign + format(u.substring(0, n), u.length());
    }
    BigDecimal digits = shortest(a);
    String u = digits.unscaledValue().toString();
    // strip trailing zeros of the digit string
    int n = u.length();
    while (n > 1 && u.charAt(n - 1) == '0') n--;
    String ds = u.substring(0, n);
    // value = 0.ds * 10^decpt
    int decpt = u.length() - digits.scale();
    return sign + format(ds, decpt);
  }

  /** Python's float_repr_style 'short' layout of digits ds with the point after decpt digits. */
  static String format(String ds, int decpt) {
    int n = ds.length();
    if (decpt <= -4 || decpt > 16) {
      int exp = decpt - 1;
      String mant = n == 1 ? ds : ds.charAt(0) + "." + ds.substring(1);
      String e = Integer.toString(Math.abs(exp));
      if (e.length() < 2) e = "0" + e;
      return mant + "e" + (exp < 0 ? "-" : "+") + e;
    }
    if (decpt <= 0) return "0." + "0".repeat(-decpt) + ds;
    if (decpt >= n) return ds + "0".repeat(decpt - n) + ".0";
    return ds.substring(0, decpt) + "." + ds.substring(decpt);
  }

  /** The shortest decimal reading back as d (> 0, finite); of those, the nearest to d. Lengths
   * that read back form an upward-closed set, so the search starts next to the length of
   * Double.toString (which always reads back, if not always shortest) and walks down. */
  static BigDecimal shortest(double d) {
    String text = Double.toString(d);
    int start = significantDigits(text);
    // a normal double in at most 15 digits: shortest already. Every decimal of <= 15 significant
    // digits survives a round trip through a normal double (DBL_DIG), so two such decimals reading
    // back as one double are one number (subnormals hold fewer digits: searched below)
    if (start <= 15 && d >= Double.MIN_NORMAL) return new BigDecimal(text);
    BigDecimal exact = new BigDecimal(d);
    BigDecimal best = at(exact, d, start);
    if (best == null) {                  // Double.toString read back: this cannot happen, but be exact
      for (int p = start + 1; p <= 17 && best == null; p++) best = at(exact, d, p);
      return best == null ? exact.round(new MathContext(17, RoundingMode.HALF_EVEN)) : best;
    }
    for (int p = start - 1; p >= 1; p--) {
      BigDecimal shorter = at(exact, d, p);
      if (shorter == null) break;
      best = shorter;
    }
    return best;
  }

  /** The p-digit decimal nearest to d that reads back as d, or null when none does. */
  private static BigDecimal at(BigDecimal exact, double d, int p) {
    BigDecimal down = exact.round(new MathContext(p, RoundingMode.FLOOR));
    BigDecimal up = exact.round(new MathContext(p, RoundingMode.CEILING));
    boolean okDown = Double.parseDouble(down.toString()) == d;
    boolean okUp = Double.parseDouble(up.toString()) == d;
    if (okDown && okUp) {
      int c = exact.subtract(down).compareTo(up.subtract(exact));
      if (c < 0) return down;
      if (c > 0) return up;
      return down.unscaledValue().testBit(0) ? up : down;    // a tie: the even last digit
    }
    return okDown ? down : okUp ? up : null;
  }

  /** Significant digits of Double.toString's text ("1.25E-5", "0.0010"). */
  private static int significantDigits(String s) {
    int e = s.indexOf('E');
    String m = (e < 0 ? s : s.substring(0, e)).replace(".", "").replace("-", "");
    int i = 0, j = m.length();
    while (i < j - 1 && m.charAt(i) == '0') i++;
    while (j > i + 1 && m.charAt(j - 1) == '0') j--;
    return Math.min(17, Math.max(1, j - i));
  }
}
