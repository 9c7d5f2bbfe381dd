package tableformat.log;

import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
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

  /** The parsed as_of, or null for "latest"; InvalidOptionError for none of the forms. */
  public static AsOf parse(String text) {
    if (text == null || text.isBlank()) return null;
    String s = text.strip();
    if (s.chars().allMatch(Character::isDigit)) return version(Long.parseLong(s));
    if (s.length() > 3 && s.substring(0, 3).equalsIgnoreCase("ts:")) {
      String m = s.substring(3).strip();
      if (!m.isEmpty() && m.chars().allMatch(Character::isDigit)) return timestamp(Long.parseLong(m));
    }
    if (s.length() >= 4 && s.substring(0, 4).equalsIgnoreCase("tag:")) {
      String name = s.substring(4).strip();
      if (!TAG_NAME.matcher(name).matches())
        throw new InvalidTagNameError("tag name must start with a letter or underscore and hold only letters, "
            + "digits, '_', '.' and '-' (at most 128), got '" + name + "'");
      return new AsOf(Kind.TAG, 0, name, true);
    }
    Long micros = isoMicros(s);
    if (micros != null) return timestamp(micros);
    if (TAG_NAME.matcher(s).matches()) return new AsOf(Kind.TAG, 0, s, false);
    throw new InvalidOptionError("as_of '" + text + "' is not a version number, ts:<microseconds>, an ISO "
        + "date-time such as 2024-05-01T12:00:00Z or tag:<name>");
  }

  private static Long isoMicros(String s) {
    String t = s.endsWith("Z") || s.endsWith("z") ? s.substring(0, s.length() - 1) + "+00:00" : s;
    if (t.length() > 10 && t.charAt(10) == ' ') t = t.substring(0, 10) + "T" + t.substring(11);
    try {
      return micros(OffsetDateTime.parse(t));
    } catch (DateTimeParseException e) { /* next form */ }
    try {
      return micros(LocalDateTime.parse(t).atOffset(ZoneOffset.UTC));
    } catch (DateTimeParseException e) { /* next form */ }
    try {
      return micros(LocalDate.parse(t).atStartOfDay().atOffset(ZoneOffset.UTC));
    } catch (DateTimeParseException e) {
      return null;
    }
  }

  private static long micros(OffsetDateTime d) {
    return d.toEpochSecond() * 1_000_000L + d.getNano() / 1000;
  }
}
