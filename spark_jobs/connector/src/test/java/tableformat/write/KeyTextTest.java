package tableformat.write;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.math.BigDecimal;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/** Keys in DuplicateKeyError messages as Python's describe_keys shows them (expected texts from
 *  Python 3.11's repr / str of the same values). */
class KeyTextTest {
  static String one(Object v, DataType t) {
    InternalRow row = new GenericInternalRow(new Object[] {v});
    return KeyText.describe(row, new int[] {0}, new DataType[] {t});
  }

  @Test
  void datesTimestampsAndDecimalsAsPythonStrInQuotes() {
    assertEquals("'2024-01-31'", one(19753, DataTypes.DateType));
    assertEquals("'1969-12-31 23:59:59.999999+00:00'", one(-1L, DataTypes.TimestampType));
    assertEquals("'2024-01-31 10:00:00+00:00'", one(1706695200000000L, DataTypes.TimestampType));
    assertEquals("'1970-01-01 00:00:00.000123'", one(123L, DataTypes.TimestampNTZType));
    assertEquals("'-12.50'", one(Decimal.apply(new BigDecimal("-12.50")), DataTypes.createDecimalType(10, 2)));
    assertEquals("'1E-7'", one(Decimal.apply(new BigDecimal("1E-7")), DataTypes.createDecimalType(10, 7)));
  }

  @Test
  void stringsBytesAndNumbersAsPythonRepr() {
    assertEquals("\"it's\"", one(UTF8String.fromString("it's"), DataTypes.StringType));
    assertEquals("'a\"b\\'c\\n'", one(UTF8String.fromString("a\"b'c\n"), DataTypes.StringType));
    assertEquals("'tab\\there'", one(UTF8String.fromString("tab\there"), DataTypes.StringType));
    assertEquals("'\u00e9\\x7f'", one(UTF8String.fromString("\u00e9\u007f"), DataTypes.StringType));
    assertEquals("b\"\\x00a'\\xff\"", one(new byte[] {0, 'a', '\'', (byte) 0xff}, DataTypes.BinaryType));
    assertEquals("1e+20", one(1e20, DataTypes.DoubleType));
    assertEquals("0.10000000149011612", one(0.1f, DataTypes.FloatType));
    assertEquals("-7", one(-7L, DataTypes.LongType));
    assertEquals("True", one(true, DataTypes.BooleanType));
  }

  @Test
  void severalColumnsAsATuple() {
    InternalRow row = new GenericInternalRow(new Object[] {UTF8String.fromString("h1"), 5, null});
    assertEquals("('h1', 5, None)", KeyText.describe(row, new int[] {0, 1, 2},
        new DataType[] {DataTypes.StringType, DataTypes.IntegerType, DataTypes.LongType}));
  }
}
