package tableformat.log;

import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;

/**
 * Log files parsed as Python's {@code json.loads} parses them, so the checksum sees the same
 * values: integers exact (int, long, or BigInteger beyond a long: Jackson picks the smallest),
 * other numbers as doubles, NaN / Infinity accepted, and
 * anything but whitespace after the value refused (json.loads's "Extra data"): a corrupt file.
 */
public final class Json {
  private Json() {}

  public static final ObjectMapper MAPPER = JsonMapper.builder()
      .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
      .disable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .build();

  /** The JSON of a log file, or CorruptFileError naming it. */
  public static JsonNode parse(byte[] raw, String what) {
    try {
      JsonNode n = MAPPER.readTree(raw);
      if (n == null || n.isMissingNode()) throw new CorruptFileError(what + " is empty");
      return n;
    } catch (IOException e) {
      throw new CorruptFileError(what + " is corrupt or truncated: " + e.getMessage());
    }
  }

  public static String write(Object value) {
    try {
      return MAPPER.writeValueAsString(value);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
