package tableformat.plan;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.hadoop.ParquetReader;
import org.apache.parquet.hadoop.api.ReadSupport;
import org.apache.parquet.hadoop.example.GroupReadSupport;
import tableformat.log.CorruptFileError;
import tableformat.log.FileRef;
import tableformat.log.LogStore;
import tableformat.log.RowSet;

/**
 * The engine's PK index seek at planning (specs/format.md §6, Python's {@code keyprobe.seek}):
 * a rowset whose key bounds straddle the key interval is kept only when a key of its index
 * falls in it. Only such rowsets are read, whole, with the size and CRC-32 the log records
 * checked (§6: a format-3 index is verified whole); rowsets the interval covers at either end
 * need no read. Opt-in: it opens files, which log-only pruning never does.
 */
public final class PkIndexSeek implements KeySeek {
  private final LogStore store;

  public PkIndexSeek(LogStore store) {
    this.store = store;
  }

  @Override
  public boolean anyKeyIn(RowSet rs, byte[] lower, byte[] upper) {
    List<byte[]> keys = new ArrayList<>();
    long start = position(rs, lower, 0, keys), stop = position(rs, upper, rs.numRows(), keys);
    return start < stop;
  }

  /** The rowid of the first key at or above {@code key} (Python's position in seek). */
  private long position(RowSet rs, byte[] key, long dflt, List<byte[]> keys) {
    if (key == null) return dflt;
    if (Arrays.compareUnsigned(key, rs.minKey()) <= 0) return 0;
    if (Arrays.compareUnsigned(key, rs.maxKey()) > 0) return rs.numRows();
    if (keys.isEmpty()) keys.addAll(keys(store, rs.pkIndex()));
    int lo = 0, hi = keys.size();
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (Arrays.compareUnsigned(keys.get(mid), key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Every key of a PK index in rowid order (so sorted), the file's size and CRC-32 checked (§6). */
  public static List<byte[]> keys(LogStore store, FileRef ref) {
    byte[] raw = store.read(ref.path());
    if (raw == null) throw new CorruptFileError("PK index file " + ref.path() + " is missing");
    if (raw.length != ref.size())
      throw new CorruptFileError("PK index file " + ref.path() + " has " + raw.length + " bytes, the log records "
          + ref.size());
    if (ref.crc32() != null) {
      CRC32 crc = new CRC32();
      crc.update(raw);
      if (crc.getValue() != ref.crc32())
        throw new CorruptFileError("PK index file " + ref.path() + " fails its CRC-32: the file was altered or damaged");
    }
    List<byte[]> out = new ArrayList<>();
    try (ParquetReader<Group> r = new ParquetReader.Builder<Group>(new BytesInputFile(raw)) {
      @Override
      protected ReadSupport<Group> getReadSupport() {
        return new GroupReadSupport();
      }
    }.build()) {
      for (Group g = r.read(); g != null; g = r.read()) out.add(g.getBinary("key", 0).getBytes());
    } catch (IOException | RuntimeException e) {
      throw new CorruptFileError("PK index file " + ref.path() + " is unreadable: " + e);
    }
    return out;
  }
}
