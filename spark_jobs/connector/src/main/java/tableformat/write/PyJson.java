package tableformat.write;

import java.util.List;
import java.util.Map;

/** JSON text as Python's {@code json.dumps} writes it (", " and ": ", non-ASCII escaped): the
 *  key-value metadata of base files and PK indexes reads as the Python writer's. */
final class PyJson {
  private PyJson() {}

  static String list(List<String> items) {
    StringBuilder s = new StringBuilder("[");
    for (int i = 0; i < items.size(); i++) {
      if (i > 0) s.append(", ");
      string(s, items.get(i));
    }
    return s.append(']').toString();
  }

  static String object(Map<String, String> m) {
    StringBuilder s = new StringBuilder("{");
    boolean first = true;
    for (Map.Entry<String, String> e : m.entrySet()) {
      if (!first) s.append(", ");
      first = false;
      string(s, e.getKey());
      s.append(": ");
      string(s, e.getValue());
    }
    return s.append('}').toString();
  }

  static void string(StringBuilder s, String v) {
    s.append('"');
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      switch (c) {
        case '"' -> s.append("\\\"");
        case '\\' -> s.append("\\\\");
        case '\n' -> s.append("\\n");
        case '\r' -> s.append("\\r");
        case '\t' -> s.append("\\t");
        case '\b' -> s.append("\\b");
        case '\f' -> s.append("\\f");
        default -> {
          if (c < 0x20 || c > 0x7e) s.append(String.format("\\u%04x", (int) c));
          else s.append(c);
        }
      }
    }
    s.append('"');
  }
}
