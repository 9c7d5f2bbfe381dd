package tableformat.write;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import tableformat.connector.ReadPlan;
import tableformat.deltas.DeltaLoader;
import tableformat.deltas.RowIdSet;
import tableformat.log.CorruptFileError;
import tableformat.parquet.BatchSource;
import tableformat.parquet.ParquetFiles;

/**
 * Are these keys live in the snapshot? (specs/format.md §6, §7, §8.4; Python's {@code keyprobe.probe}
 * with the snapshot's deltas.) One tablet's rowsets visible at the snapshot (history-only ones are
 * never given: {@link InsertPlan} leaves them out), each probed for a sorted run of keys at once:
 * the keys inside its [min, max] are one slice of the run (two binary searches), each passes its
 * bloom filter or is absent, and a survivor is sought in its PK index; a row found counts only when
 * no REDO record of the snapshot deleted it, so a key deleted and inserted again has one live copy.
 * Bloom, index and deleted rows are read once per rowset for the task's life, the first time a
 * key reaches them (most inserts never open an index: the interval or the bloom answers).
 */
public final class KeyCheck {
  /** One rowset as a key check needs it: bounds, index and bloom files (URIs, recorded sizes and
   *  CRC-32s), and its delta files for the rows deleted as of the snapshot (null: none delete). */
  public record Probed(String id, String tablet, long numRows, byte[] minKey, byte[] maxKey, String pkIndex,
                       long pkIndexSize, Long pkIndexCrc, String bloom, long bloomSize, Long bloomCrc,
                       ReadPlan.RowSetPlan deltas) implements Serializable {}

  private final Configuration conf;
  private final List<Probed> rowsets;
  private final Long readTs;
  private final Map<String, BloomProbe> blooms = new HashMap<>();
  private final Map<String, SortedKeys> indexes = new HashMap<>();
  private final Map<String, RowIdSet> deleted = new HashMap<>();

  public KeyCheck(Configuration conf, List<Probed> rowsets, Long readTs) {
    this.conf = conf;
    this.rowsets = List.copyOf(rowsets);
    this.readTs = readTs;
  }

  public List<Probed> rowsets() {
    return rowsets;
  }

  /** Whether a key in [lo, hi] may be in some rowset (the interval check alone, no file read). */
  public boolean anyInterval(byte[] lo, byte[] hi) {
    for (Probed r : rowsets)
      if (Arrays.compareUnsigned(r.minKey(), hi) <= 0 && Arrays.compareUnsigned(r.maxKey(), lo) >= 0) return true;
    return false;
  }

  /**
   * The live row of each of {@code keys[from, to)} (ascending, a key at most once): {@code which[i]} the
   * index into {@link #rowsets()} (-1: not live), {@code rowid[i]} its row.
   */
  public void find(byte[][] keys, int from, int to, int[] which, long[] rowid) {
    Arrays.fill(which, from, to, -1);
    Arrays.fill(rowid, from, to, -1L);
    if (from >= to) return;
    for (int r = 0; r < rowsets.size(); r++) {
      Probed rs = rowsets.get(r);
      int lo = lowerBound(keys, from, to, rs.minKey(), false), hi = lowerBound(keys, lo, to, rs.maxKey(), true);
      if (lo >= hi) continue;
      BloomProbe bloom = bloom(rs);
      SortedKeys index = null;
      RowIdSet dead = null;
      for (int i = lo; i < hi; i++) {
        if (!bloom.mayContain(keys[i])) continue;
        if (index == null) {
          index = index(rs);
          dead = deleted(rs);
        }
        long id = index.find(keys[i]);
        if (id >= 0 && (dead == null || !dead.get(id))) {
          which[i] = r;
          rowid[i] = id;
        }
      }
    }
  }

  /** First i in [from, to) with keys[i] >= key (after: > key). */
  static int lowerBound(byte[][] keys, int from, int to, byte[] key, boolean after) {
    int lo = from, hi = to;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      int c = Arrays.compareUnsigned(keys[mid], key);
      if (c < 0 || (after && c == 0)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private BloomProbe bloom(Probed rs) {
    return blooms.computeIfAbsent(rs.id(), k -> BloomProbe.of(bytes(rs.bloom(), rs.bloomSize(), rs.bloomCrc(),
        "bloom filter"), rs.bloom()));
  }

  private SortedKeys index(Probed rs) {
    return indexes.computeIfAbsent(rs.id(), k -> readIndex(rs));
  }

  private RowIdSet deleted(Probed rs) {
    if (rs.deltas() == null) return null;
    if (!deleted.containsKey(rs.id())) {
      try {
        deleted.put(rs.id(), DeltaLoader.load(conf, rs.deltas(), List.of(), readTs).deleted);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return deleted.get(rs.id());
  }

  /** A file's bytes, its size and CRC-32 checked against what the log recorded (§8.2). */
  private byte[] bytes(String uri, long size, Long crc32, String what) {
    try {
      Path p = new Path(uri);
      byte[] raw;
      try (var in = p.getFileSystem(conf).open(p)) {
        raw = in.readAllBytes();
      }
      if (raw.length != size)
        throw new CorruptFileError(what + " file " + uri + " has " + raw.length + " bytes, the log records " + size);
      if (crc32 != null) {
        CRC32 c = new CRC32();
        c.update(raw);
        if (c.getValue() != crc32)
          throw new CorruptFileError(what + " file " + uri + " fails its CRC-32: the file was altered or damaged");
      }
      return raw;
    } catch (java.io.FileNotFoundException e) {
      throw new CorruptFileError(what + " file " + uri + " is missing");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The whole PK index (§6), verified, decoded by Spark's vectorized reader into one sorted run. */
  private SortedKeys readIndex(Probed rs) {
    byte[] raw = bytes(rs.pkIndex(), rs.pkIndexSize(), rs.pkIndexCrc(), "PK index");
    StructType schema = new StructType(new StructField[] {
        new StructField("key", DataTypes.BinaryType, true, Metadata.empty())});
    SortedKeys out = new SortedKeys(rs.numRows());
    try {
      FileStatus st = ParquetFiles.checkedStatus(conf, rs.pkIndex(), rs.pkIndexSize());
      try (BatchSource src = ParquetFiles.open(conf, st, schema, 0, st.getLen(), 4096, null, raw)) {
        ColumnarBatch b;
        while ((b = src.next()) != null) {
          ColumnVector v = b.column(0);
          for (int i = 0; i < b.numRows(); i++) out.add(v.getBinary(i));
        }
      }
    } catch (IOException | RuntimeException e) {
      if (e instanceof CorruptFileError c) throw c;
      throw new CorruptFileError("PK index file " + rs.pkIndex() + " is unreadable: " + e);
    }
    if (out.n != rs.numRows())
      throw new CorruptFileError("PK index file " + rs.pkIndex() + " has " + out.n + " keys, its rowset " + rs.numRows());
    return out;
  }

  /** A rowset's keys in rowid order (ascending), packed in one array: a binary search per key. */
  static final class SortedKeys {
    private byte[] data = new byte[1 << 12];
    private long[] ends;
    private int n, used;

    SortedKeys(long rows) {
      ends = new long[(int) Math.max(1, rows)];
    }

    void add(byte[] k) {
      if (used + k.length > data.length) data = Arrays.copyOf(data, Math.max(data.length * 2, used + k.length));
      System.arraycopy(k, 0, data, used, k.length);
      used += k.length;
      if (n == ends.length) ends = Arrays.copyOf(ends, n * 2);
      ends[n++] = used;
    }

    long find(byte[] key) {
      int lo = 0, hi = n;
      while (lo < hi) {
        int mid = (lo + hi) >>> 1;
        int s = mid == 0 ? 0 : (int) ends[mid - 1], e = (int) ends[mid];
        int c = Arrays.compareUnsigned(data, s, e, key, 0, key.length);
        if (c < 0) lo = mid + 1;
        else if (c > 0) hi = mid;
        else return mid;
      }
      return -1;
    }
  }

  /** The key checks of every tablet of a plan, by tablet id. */
  public static Map<String, KeyCheck> of(Configuration conf, Map<String, List<Probed>> byTablet, Long readTs) {
    Map<String, KeyCheck> m = new HashMap<>();
    for (Map.Entry<String, List<Probed>> e : byTablet.entrySet())
      m.put(e.getKey(), new KeyCheck(conf, new ArrayList<>(e.getValue()), readTs));
    return m;
  }
}
