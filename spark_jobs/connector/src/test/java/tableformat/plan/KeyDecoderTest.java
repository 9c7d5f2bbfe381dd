package tableformat.plan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.math.BigDecimal;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Encoded keys (§4.1) decoded back to their values: KeyEncoder's inverse. */
class KeyDecoderTest {
  private static final List<ColumnType> HOST_TIME = List.of(ColumnType.parse("string"), ColumnType.parse("int64"));

  @Test
  void aCompositeKeyRoundTrips() {
    List<Object> key = List.of("h\u0000x\u00e9", -5L);        // a 00 byte inside a non-last string is escaped
    byte[] enc = KeyEncoder.encode(key, HOST_TIME, true);
    assertEquals(key, KeyDecoder.decode(enc, HOST_TIME));
  }

  @Test
  void fixedWidthKindsRoundTrip() {
    List<ColumnType> types = List.of(ColumnType.parse("int8"), ColumnType.parse("decimal(20,3)"),
        ColumnType.parse("binary"));
    List<Object> key = List.of(-128L, new BigDecimal("-12345678901234567.891"), new byte[] {0, 1, 2});
    List<Object> got = KeyDecoder.decode(KeyEncoder.encode(key, types, true), types);
    assertEquals(-128L, got.get(0));
    assertEquals(new BigDecimal("-12345678901234567.891"), got.get(1));
    assertArrayEquals(new byte[] {0, 1, 2}, (byte[]) got.get(2));
  }

  @Test
  void bytesThatAreNoSuchKeyDecodeToNull() {
    assertNull(KeyDecoder.decode(new byte[] {1, 2, 3}, List.of(ColumnType.parse("int64"))));
    assertNull(KeyDecoder.decode(new byte[] {'a', 0, 5}, HOST_TIME));
  }
}
