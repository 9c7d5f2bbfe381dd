package tableformat.log;

import com.fasterxml.jackson.databind.JsonNode;

/** Required fields of log JSON, read strictly: a missing or mistyped one is a corrupt file. */
final class Fields {
  private Fields() {}

  static JsonNode get(JsonNode d, String key) {
    JsonNode v = d == null ? null : d.get(key);
    if (v == null) throw new CorruptFileError("missing field " + key);
    return v;
  }

  static String text(JsonNode d, String key) {
    JsonNode v = get(d, key);
    if (!v.isTextual()) throw new CorruptFileError("field " + key + " is not a string");
    return v.textValue();
  }

  static long integer(JsonNode d, String key) {
    JsonNode v = get(d, key);
    if (!v.isIntegralNumber()) throw new CorruptFileError("field " + key + " is not an integer");
    return v.longValue();
  }

  /** An optional integer: null when absent or JSON null. */
  static Long optInteger(JsonNode d, String key) {
    JsonNode v = d.get(key);
    if (v == null || v.isNull()) return null;
    if (!v.isIntegralNumber()) throw new CorruptFileError("field " + key + " is not an integer");
    return v.longValue();
  }
}
