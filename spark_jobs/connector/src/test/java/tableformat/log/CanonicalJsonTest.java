package tableformat.log;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The checksum's canonical text (§8.1) against Python's own: the expected strings and CRC were
 *  printed by CPython 3.11's json.dumps(x, sort_keys=True, separators=(",", ":")) and zlib.crc32. */
class CanonicalJsonTest {
  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "0.1|0.1", "1e16|1e+16", "1e-5|1e-05", "0.0001|0.0001", "123456789012345.6|123456789012345.6",
      "1e22|1e+22", "4.9e-324|5e-324", "1.7976931348623157e308|1.7976931348623157e+308", "-0.0|-0.0",
      "2.5|2.5", "0.3333333333333333|0.3333333333333333", "100|100.0", "9007199254740993|9007199254740992.0",
      "0.30000000000000004|0.30000000000000004", "2e-3|0.002"})
  void floatsAreWrittenAsPythonsRepr(String javaLiteral, String python) {
    assertEquals(python, PythonFloat.repr(Double.parseDouble(javaLiteral)));
  }

  @Test
  void nonFiniteFloatsAreWrittenAsJsonDumpsWritesThem() {
    assertEquals("NaN", PythonFloat.repr(Double.NaN));
    assertEquals("-Infinity", PythonFloat.repr(Double.NEGATIVE_INFINITY));
  }

  private static final String DOC = "{\"b\":[1,2.5,null,true],\"a\":\"h\\u00e9\\u2603\\ud83d\\ude00\\n\\\"\","
      + "\"A\":{\"z\":-0.0,\"y\":12345678901234567890},\"\\u00e9\":1e-07}";

  @Test
  void theCanonicalTextIsPythonsSortedCompactAsciiDump() throws Exception {
    String python = "{\"A\":{\"y\":12345678901234567890,\"z\":-0.0},\"a\":\"h\\u00e9\\u2603\\ud83d\\ude00\\n\\\"\","
        + "\"b\":[1,2.5,null,true],\"\\u00e9\":1e-07}";
    assertEquals(python, CanonicalJson.write(TestLog.JSON.readTree(DOC)));
    assertEquals(64929831L, Checksum.crc32(TestLog.JSON.readTree(DOC)));
  }

  @Test
  void keysSortByCodePointNotByUtf16Unit() {
    // U+FF5E is one UTF-16 unit above the surrogates of U+1F600 but a lower code point
    assertTrue(CanonicalJson.compareCodePoints("\uff5e", "\ud83d\ude00") < 0);
    assertTrue("\uff5e".compareTo("\ud83d\ude00") > 0);
  }

  @Test
  void aFileChecksumCoversEverythingButTheChecksumFromFormat3() throws Exception {
    ObjectNode f = (ObjectNode) TestLog.json("{'format_version':5,'version':1,'actions':[{'tag':1}]}");
    f.put("checksum", Checksum.expected(f, "actions"));
    assertTrue(Checksum.matches(f, "actions"));
    f.put("operation", "X");                       // outside `actions`: still covered from format 3
    assertFalse(Checksum.matches(f, "actions"));
    ObjectNode old = (ObjectNode) TestLog.json("{'format_version':2,'version':1,'actions':[{'tag':1}]}");
    old.put("checksum", Checksum.expected(old, "actions"));
    old.put("operation", "X");                     // format 2 covers `actions` alone
    assertTrue(Checksum.matches(old, "actions"));
  }
}
