package tableformat.log;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;

/**
 * The checksum of a commit or checkpoint (specs/format.md §8.1, §8.3): CRC-32 of the canonical
 * serialization of the whole file without {@code checksum} (format 3 and later), or of
 * {@code actions} (commits) / {@code state} (checkpoints) alone (formats 1 and 2).
 */
public final class Checksum {
  private Checksum() {}

  public static final int WHOLE_FILE_FROM = 3;

  public static long crc32(JsonNode x) {
    return crc32(CanonicalJson.write(x));
  }

  private static long crc32(String canonical) {
    CRC32 crc = new CRC32();
    crc.update(canonical.getBytes(StandardCharsets.US_ASCII));
    return crc.getValue();
  }

  /** What a file of this kind and format must carry; {@code part} is "actions" or "state". */
  public static long expected(JsonNode file, String part) {
    int fv = file.path("format_version").asInt(1);
    if (fv >= WHOLE_FILE_FROM) {
      if (!file.isObject()) throw new CorruptFileError("not a JSON object");
      return crc32(CanonicalJson.writeWithout(file, "checksum"));
    }
    JsonNode p = file.get(part);
    if (p == null) throw new CorruptFileError("no " + part);
    return crc32(p);
  }

  /** Whether the file's recorded checksum (a JSON integer) equals the expected one. */
  public static boolean matches(JsonNode file, String part) {
    JsonNode c = file.get("checksum");
    if (c == null || !c.isIntegralNumber()) return false;
    return c.bigIntegerValue().equals(java.math.BigInteger.valueOf(expected(file, part)));
  }
}
