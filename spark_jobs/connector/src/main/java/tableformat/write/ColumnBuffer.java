package tableformat.write;

import java.math.BigInteger;
import java.util.Arrays;
import org.apache.parquet.column.ColumnWriter;
import org.apache.parquet.io.api.Binary;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;
import tableformat.plan.ColumnType;
import tableformat.plan.Murmur2;

/**
 * One column of the rows waiting for a row group (§5), in primitive arrays: rows are copied in
 * cell by cell (string cells of an {@link UnsafeRow} read in place), and written out to a
 * Parquet {@link ColumnWriter} a column at a time. Grown by doubling up to its capacity as
 * rows come (strings grow their byte buffer as needed).
 */
final class ColumnBuffer {
  enum Store { BOOL, INT, LONG, FLOAT, DOUBLE, WIDE, BYTES }

  final WriteColumn column;
  final Store store;
  final int width;             // FIXED_LEN_BYTE_ARRAY length of a wide decimal
  private final int pos;       // row ordinal
  private final int precision, scale;
  private final int kind;      // INT/LONG stores: how a cell is read (K_*)
  private final double arrowWidth;   // Arrow bytes of a cell (a variable cell: its offset; the bytes are added)
  private static final int K_PLAIN = 0, K_INT8 = 1, K_INT16 = 2, K_DECIMAL = 3;
  boolean[] nulls;
  boolean[] bools;
  int[] ints;
  long[] longs;
  float[] floats;
  double[] doubles;
  byte[] bytes;                // WIDE: 16 bytes a row (big-endian two's complement); BYTES: the values
  int[] offsets;               // BYTES: row i is bytes[offsets[i], offsets[i+1])
  int size;

  ColumnBuffer(WriteColumn column, int pos, int capacity) {
    this.column = column;
    this.pos = pos;
    ColumnType t = column.type();
    this.precision = t.precision();
    this.scale = t.scale();
    this.store = storeOf(t);
    this.width = store == Store.WIDE ? flbaWidth(precision) : 0;
    this.kind = switch (t.kind()) {
      case "int8" -> K_INT8;
      case "int16" -> K_INT16;
      case "decimal" -> K_DECIMAL;
      default -> K_PLAIN;
    };
    this.arrowWidth = switch (t.kind()) {
      case "bool" -> 0.125;
      case "int8" -> 1;
      case "int16" -> 2;
      case "int32", "date", "float" -> 4;
      case "decimal" -> 16;
      case "string", "varchar", "binary" -> 4;
      default -> 8;
    };
    this.capacity = capacity;
    allocate(Math.min(capacity, INITIAL_ROWS));
  }

  /** Rows the arrays first hold: they grow to {@code capacity} only as rows come, so a task that
   *  meets many tablets (each with its writer) holds what it was given, not a full sample each. */
  static final int INITIAL_ROWS = 1024;
  private int capacity;

  /**
   * Hold at most {@code rows} rows from now on (the rows waiting fit): once its base file is open a
   * rowset writer needs a row group's rows, not the dictionary sample's, and a task holds a writer
   * per tablet it meets, so the sample's arrays (large enough to be humongous objects to G1,
   * and to start its concurrent cycles) are given back.
   */
  void shrink(int rows) {
    if (size > rows) throw new IllegalStateException(size + " rows wait; cannot shrink to " + rows);
    capacity = rows;
    if (nulls.length <= rows) return;
    if (store == Store.BYTES) bytes = Arrays.copyOf(bytes, Math.max(offsets[size], Math.min(bytes.length, 16 * rows)));
    allocate(rows);
  }

  private void allocate(int rows) {
    nulls = nulls == null ? new boolean[rows] : Arrays.copyOf(nulls, rows);
    switch (store) {
      case BOOL -> bools = bools == null ? new boolean[rows] : Arrays.copyOf(bools, rows);
      case INT -> ints = ints == null ? new int[rows] : Arrays.copyOf(ints, rows);
      case LONG -> longs = longs == null ? new long[rows] : Arrays.copyOf(longs, rows);
      case FLOAT -> floats = floats == null ? new float[rows] : Arrays.copyOf(floats, rows);
      case DOUBLE -> doubles = doubles == null ? new double[rows] : Arrays.copyOf(doubles, rows);
      case WIDE -> bytes = bytes == null ? new byte[16 * rows] : Arrays.copyOf(bytes, 16 * rows);
      case BYTES -> {
        if (bytes == null) bytes = new byte[Math.max(1024, 16 * rows)];
        offsets = offsets == null ? new int[rows + 1] : Arrays.copyOf(offsets, rows + 1);
      }
    }
  }

  static Store storeOf(ColumnType t) {
    return switch (t.kind()) {
      case "bool" -> Store.BOOL;
      case "int8", "int16", "int32", "date" -> Store.INT;
      case "int64", "unixtime_micros" -> Store.LONG;
      case "float" -> Store.FLOAT;
      case "double" -> Store.DOUBLE;
      case "decimal" -> t.precision() <= 9 ? Store.INT : t.precision() <= 18 ? Store.LONG : Store.WIDE;
      default -> Store.BYTES;
    };
  }

  /** Bytes of a FIXED_LEN_BYTE_ARRAY decimal of this precision: the fewest that hold it, as pyarrow writes. */
  static int flbaWidth(int precision) {
    int bits = BigInteger.TEN.pow(precision).subtract(BigInteger.ONE).bitLength() + 1;
    return (bits + 7) / 8;
  }

  /** Arrow bytes of a cell as the Python writer counts a batch's size (fixed width, or offset + bytes). */
  double arrowBytes(int i) {
    return store == Store.BYTES && !nulls[i] ? arrowWidth + (offsets[i + 1] - offsets[i]) : arrowWidth;
  }

  void append(InternalRow row) {
    if (size == nulls.length) allocate(Math.min(Math.max(capacity, size + 1), 2 * size));
    int i = size++;
    if (row.isNullAt(pos)) {
      nulls[i] = true;
      if (store == Store.BYTES) offsets[i + 1] = offsets[i];
      return;
    }
    nulls[i] = false;
    switch (store) {
      case BOOL -> bools[i] = row.getBoolean(pos);
      case INT -> ints[i] = switch (kind) {
        case K_INT8 -> row.getByte(pos);
        case K_INT16 -> row.getShort(pos);
        case K_DECIMAL -> (int) decimalLong(row);
        default -> row.getInt(pos);
      };
      case LONG -> longs[i] = kind == K_DECIMAL ? decimalLong(row) : row.getLong(pos);
      case FLOAT -> floats[i] = row.getFloat(pos);
      case DOUBLE -> doubles[i] = row.getDouble(pos);
      case WIDE -> {
        BigInteger n = row.getDecimal(pos, precision, scale).toJavaBigDecimal().unscaledValue();
        byte[] b = n.toByteArray();
        byte fill = n.signum() < 0 ? (byte) 0xFF : 0;
        int pad = 16 - b.length;
        for (int j = 0; j < 16; j++) bytes[16 * i + j] = j < pad ? fill : b[j - pad];
      }
      case BYTES -> appendBytes(row, i);
    }
  }

  private long decimalLong(InternalRow row) {
    return row instanceof UnsafeRow ? row.getLong(pos) : row.getDecimal(pos, precision, scale).toUnscaledLong();
  }

  private void appendBytes(InternalRow row, int i) {
    Object base;
    long off;
    int n;
    if (row instanceof UnsafeRow u) {
      long offsetAndSize = u.getLong(pos);
      base = u.getBaseObject();
      off = u.getBaseOffset() + (offsetAndSize >>> 32);
      n = (int) offsetAndSize;
    } else if (column.type().kind().equals("binary")) {
      byte[] b = row.getBinary(pos);
      base = b;
      off = Platform.BYTE_ARRAY_OFFSET;
      n = b.length;
    } else {
      UTF8String s = row.getUTF8String(pos);
      base = s.getBaseObject();
      off = s.getBaseOffset();
      n = s.numBytes();
    }
    int at = offsets[i];
    if (at + n > bytes.length) bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, at + n));
    Platform.copyMemory(base, off, bytes, Platform.BYTE_ARRAY_OFFSET + at, n);
    offsets[i + 1] = at + n;
  }

  /** Write rows [from, to) to a Parquet column writer (definition level 1 = present when nullable). */
  void writeTo(ColumnWriter w, int from, int to) {
    int d = column.nullable() ? 1 : 0;
    // one loop per store: the store is the column's, not the row's
    switch (store) {
      case BOOL -> { for (int i = from; i < to; i++) if (nulls[i]) w.writeNull(0, 0); else w.write(bools[i], 0, d); }
      case INT -> { for (int i = from; i < to; i++) if (nulls[i]) w.writeNull(0, 0); else w.write(ints[i], 0, d); }
      case LONG -> { for (int i = from; i < to; i++) if (nulls[i]) w.writeNull(0, 0); else w.write(longs[i], 0, d); }
      case FLOAT -> { for (int i = from; i < to; i++) if (nulls[i]) w.writeNull(0, 0); else w.write(floats[i], 0, d); }
      case DOUBLE -> { for (int i = from; i < to; i++) if (nulls[i]) w.writeNull(0, 0); else w.write(doubles[i], 0, d); }
      case WIDE -> {
        for (int i = from; i < to; i++) {
          if (nulls[i]) w.writeNull(0, 0);
          else w.write(Binary.fromReusedByteArray(bytes, 16 * i + 16 - width, width), 0, d);
        }
      }
      case BYTES -> {
        for (int i = from; i < to; i++) {
          if (nulls[i]) w.writeNull(0, 0);
          else w.write(Binary.fromReusedByteArray(bytes, offsets[i], offsets[i + 1] - offsets[i]), 0, d);
        }
      }
    }
  }

  /** Keep rows [from, size) as rows [0, size - from). */
  void shift(int from) {
    int n = size - from;
    System.arraycopy(nulls, from, nulls, 0, n);
    switch (store) {
      case BOOL -> System.arraycopy(bools, from, bools, 0, n);
      case INT -> System.arraycopy(ints, from, ints, 0, n);
      case LONG -> System.arraycopy(longs, from, longs, 0, n);
      case FLOAT -> System.arraycopy(floats, from, floats, 0, n);
      case DOUBLE -> System.arraycopy(doubles, from, doubles, 0, n);
      case WIDE -> System.arraycopy(bytes, 16 * from, bytes, 0, 16 * n);
      case BYTES -> {
        int base = offsets[from];
        System.arraycopy(bytes, base, bytes, 0, offsets[size] - base);
        for (int j = 0; j <= n; j++) offsets[j] = offsets[from + j] - base;
      }
    }
    size = n;
  }

  /** A 64-bit identity of row i's value, for counting distinct values (a hash for bytes). */
  long identity(int i) {
    return switch (store) {
      case BOOL -> bools[i] ? 1 : 0;
      case INT -> ints[i];
      case LONG -> longs[i];
      case FLOAT -> Float.floatToIntBits(floats[i]);
      case DOUBLE -> Double.doubleToLongBits(doubles[i]);
      case WIDE -> Murmur2.hash64(bytes, 16 * i, 16, 0);
      case BYTES -> Murmur2.hash64(bytes, offsets[i], offsets[i + 1] - offsets[i], 0);
    };
  }

  /**
   * Kudu's dictionary fallback (§5, diskrowset._high_cardinality): more than half of a sample of
   * up to 65,536 of the first {@code size} rows are distinct (NULLs count in the sample, not as values).
   */
  boolean highCardinality(int sampleRows) {
    int n = size;
    if (n < 64) return false;
    int m = Math.min(n, sampleRows);
    long[] ids = new long[m];
    int k = 0;
    for (int j = 0; j < m; j++) {
      int i = n <= sampleRows ? j : (j == m - 1 ? n - 1 : (int) (j * ((double) (n - 1) / (m - 1))));
      if (!nulls[i]) ids[k++] = identity(i);
    }
    Arrays.sort(ids, 0, k);
    int distinct = 0;
    for (int j = 0; j < k; j++) if (j == 0 || ids[j] != ids[j - 1]) distinct++;
    return distinct > 0.5 * m;
  }

  /** Whether rows [0, size) hold a NaN (a float column's footer statistics rule, §5). */
  boolean hasNaN() {
    for (int i = 0; i < size; i++) {
      if (nulls[i]) continue;
      if (store == Store.FLOAT && Float.isNaN(floats[i])) return true;
      if (store == Store.DOUBLE && Double.isNaN(doubles[i])) return true;
    }
    return false;
  }
}
