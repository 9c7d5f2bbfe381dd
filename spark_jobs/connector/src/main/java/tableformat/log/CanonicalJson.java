package tableformat.log;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The canonical serialization a log checksum covers (specs/format.md §8.1): Python's
 * {@code json.dumps(x, sort_keys=True, separators=(",", ":"))} of the parsed file: compact,
 * object keys sorted by code point, every character outside printable ASCII as a lowercase
 * {@code \\uXXXX} escape (UTF-16 units), integers in full, floats as {@link PythonFloat}.
 */
public final class CanonicalJson {
  private CanonicalJson() {}

  private static final char[] HEX = "0123456789abcdef".toCharArray();

  public static String write(JsonNode node) {
    StringBuilder sb = new StringBuilder();
    write(node, sb);
    return sb.toString();
  }

  /** The canonical text of an object without one of its members (a file without its checksum). */
  public static String writeWithout(JsonNode object, String key) {
    StringBuilder sb = new StringBuilder();
    write(object, sb, key);
    return sb.toString();
  }

  static void write(JsonNode n, StringBuilder sb) {
    write(n, sb, null);
  }

  private static void write(JsonNode n, StringBuilder sb, String skip) {
    switch (n.getNodeType()) {
      case OBJECT -> object(n, sb, skip);
      case ARRAY -> {
        sb.append('[');
        for (int i = 0; i < n.size(); i++) {
          if (i > 0) sb.append(',');
          write(n.get(i), sb);
        }
        sb.append(']');
      }
      case STRING -> string(n.textValue(), sb);
      case NUMBER -> {
        if (n.isInt() || n.isLong()) sb.append(n.longValue());
        else sb.append(n.isIntegralNumber() ? n.bigIntegerValue().toString() : PythonFloat.repr(n.doubleValue()));
      }
      case BOOLEAN -> sb.append(n.booleanValue() ? "true" : "false");
      case NULL -> sb.append("null");
      default -> throw new CorruptFileError("a value JSON cannot hold: " + n.getNodeType());
    }
  }

  /** An object with its keys in code-point order: as written (Python's writer sorts them), else sorted. */
  private static void object(JsonNode n, StringBuilder sb, String skip) {
    List<Map.Entry<String, JsonNode>> fields = new ArrayList<>(n.size());
    boolean sorted = true;
    for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      if (e.getKey().equals(skip)) continue;
      if (sorted && !fields.isEmpty() && compareCodePoints(fields.get(fields.size() - 1).getKey(), e.getKey()) > 0)
        sorted = false;
      fields.add(e);
    }
    if (!sorted) fields.sort((a, b) -> compareCodePoints(a.getKey(), b.getKey()));
    sb.append('{');
    for (int i = 0; i < fields.size(); i++) {
      if (i > 0) sb.append(',');
      string(fields.get(i).getKey(), sb);
      sb.append(':');
      write(fields.get(i).getValue(), sb);
    }
    sb.append('}');
  }

  /** Python's str order: by code point (Java's String order is by UTF-16 unit). */
  static int compareCodePoints(String a, String b) {
    int i = 0, j = 0;
    while (i < a.length() && j < b.length()) {
      int ca = a.codePointAt(i), cb = b.codePointAt(j);
      if (ca != cb) return Integer.compare(ca, cb);
      i += Character.charCount(ca);
      j += Character.charCount(cb);
    }
    return Integer.compare(a.length() - i, b.length() - j);
  }

  /** json.dumps's ensure_ascii string: " and \\ escaped, \\n \\r \\t \\b \\f short, the rest of
   * what is not printable ASCII (0x20-0x7e) as \\uXXXX. */
  static void string(String s, StringBuilder sb) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        case '\b' -> sb.append("\\b");
        case '\f' -> sb.append("\\f");
        default -> {
          if (c >= 0x20 && c <= 0x7e) sb.append(c);
          else {
            sb.append("\\u");
            for (int shift = 12; shift >= 0; shift -= 4) sb.append(HEX[(c >> shift) & 0xf]);
          }
        }
      }
    }
    sb.append('"');
  }
}
