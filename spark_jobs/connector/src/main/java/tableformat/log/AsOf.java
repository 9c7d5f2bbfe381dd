package tableformat.log;

import java.math.BigInteger;
import java.time.DateTimeException;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a read is {@code as_of} (specs/format.md §8.2, §9.1): a version (digits), a timestamp
 * ({@code ts:<micros>} or an ISO date-time, naive meaning UTC), or a tag ({@code tag:<name>},
 * or a bare name that is no date-time). Null or blank: the latest version.
 */
public record AsOf(Kind kind, long value, String tag, boolean explicitTag) {
  public enum Kind { VERSION, TIMESTAMP, TAG }

  static final Pattern TAG_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_.\\-]{0,127}");

  public static AsOf version(long v) {
    return new AsOf(Kind.VERSION, v, null, false);
  }

  public static AsOf timestamp(long micros) {
    return new AsOf(Kind.TIMESTAMP, micros, null, false);
  }

  /** Digits only, ASCII (Python's engine reads the same: specs/format.md §9.1). */
  static final Pattern DIGITS = Pattern.compile("[0-9]+");

  /** The one date-time grammar of as_of (specs/format.md §9.1), the engine's ISO_AS_OF (mvcc.py):
   * YYYY-MM-DD[(T|t| )HH:MM[:SS[.f{1,9}]][Z|z|±HH:MM|±HHMM]]. */
  static final Pattern ISO = Pattern.compile("([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[Tt ]([0-9]{2}):([0-9]{2})"
      + "(?::([0-9]{2})(?:\\.([0-9]{1,9}))?)?(?:([Zz])|([+-])([0-9]{2}):?([0-9]{2}))?)?");

  /** The parsed as_of, or null for "latest"; InvalidOptionError for none of the forms. */
  public static AsOf parse(String text) {
    if (text == null || text.isBlank()) return null;
    String s = text.strip();
    if (DIGITS.matcher(s).matches()) return version(s, clamped(s));
    // "-1" is a version no log holds: the resolver refuses it (VersionNotFoundError), as the engine does
    if (s.startsWith("-") && DIGITS.matcher(s.substring(1)).matches()) {
      long n = clamped(s.substring(1));
      // "-0" named version 0: refused as the engine refuses it (mvcc.parse_as_of)
      if (n == 0) throw new VersionNotFoundError("version " + s + " does not exist; versions start at 0");
      return version(s, -n);
    }
    if (s.length() > 3 && s.substring(0, 3).equalsIgnoreCase("ts:")) {
      String m = s.substring(3).strip();
      if (DIGITS.matcher(m).matches()) return timestamp(clamped(m));
    }
    if (s.length() >= 4 && s.substring(0, 4).equalsIgnoreCase("tag:")) {
      String name = s.substring(4).strip();
      if (!TAG_NAME.matcher(name).matches())
        throw new InvalidTagNameError("tag name must start with a letter or underscore and hold only letters, "
            + "digits, '_', '.' and '-' (at most 128), got '" + name + "'");
      return new AsOf(Kind.TAG, 0, name, true);
    }
    Matcher m = ISO.matcher(s);
    if (m.matches()) {
      Long micros = isoMicros(m);
      if (micros != null) return timestamp(micros);
    } else if (TAG_NAME.matcher(s).matches()) {
      return new AsOf(Kind.TAG, 0, s, false);
    }
    throw new InvalidOptionError("as_of '" + text + "' is not a version number, ts:<microseconds>, an ISO "
        + "date-time such as 2024-05-01T12:00:00Z or tag:<name>");
  }

  /** A version number past a long keeps its text (in {@code tag}): the resolver's message names the
   * version the engine's names (§9.5), not Long.MAX_VALUE. */
  private static AsOf version(String text, long v) {
    if (Math.abs(v) != Long.MAX_VALUE) return version(v);
    return new AsOf(Kind.VERSION, v, new BigInteger(text).toString(), false);
  }

  /** The version as the engine's messages name it. */
  public String versionText() {
    return tag != null ? tag : Long.toString(value);
  }

  /** A number past a long names no version or time of any table: Long.MAX_VALUE, which the
   * resolver refuses as the engine does (VersionNotFoundError / TimestampAfterLatestError). */
  private static long clamped(String digits) {
    BigInteger n = new BigInteger(digits);
    return n.compareTo(BigInteger.valueOf(Long.MAX_VALUE)) > 0 ? Long.MAX_VALUE : n.longValue();
  }

  /** Microseconds since the epoch (UTC): naive means UTC, fractions cut to microseconds, offsets at
   * most ±18:00; null for a date or time that does not exist (2024-02-30), as in the engine. */
  private static Long isoMicros(Matcher m) {
    int year = Integer.parseInt(m.group(1));
    if (year < 1) return null;                       // Python's datetime has no year 0
    LocalDateTime t;
    try {
      t = LocalDateTime.of(year, Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3)),
          m.group(4) == null ? 0 : Integer.parseInt(m.group(4)), m.group(5) == null ? 0 : Integer.parseInt(m.group(5)),
          m.group(6) == null ? 0 : Integer.parseInt(m.group(6)));
    } catch (DateTimeException e) {
      return null;
    }
    long off = 0;
    if (m.group(9) != null) {
      int oh = Integer.parseInt(m.group(10));
      int om = Integer.parseInt(m.group(11));
      if (om > 59 || oh * 60 + om > 18 * 60) return null;
      off = (oh * 60L + om) * 60L * (m.group(9).equals("+") ? 1 : -1);
    }
    String frac = m.group(7) == null ? "0" : m.group(7);
    long micros = Long.parseLong((frac + "00000").substring(0, 6));
    return (t.toEpochSecond(ZoneOffset.UTC) - off) * 1_000_000L + micros;
  }

  /** A timestamp in microseconds as error messages show it: ISO-8601 UTC, with microseconds only
   *  when there are some, the year as `uuuu` (4 digits, + above 9999): the engine's Timestamp.iso. */
  public static String iso(long micros) {
    java.time.Instant t = java.time.Instant.EPOCH.plus(micros, java.time.temporal.ChronoUnit.MICROS);
    String s = java.time.format.DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss").withZone(ZoneOffset.UTC).format(t);
    long frac = Math.floorMod(micros, 1_000_000L);
    return s + (frac == 0 ? "Z" : String.format(".%06dZ", frac));
  }
}
