package tableformat.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.format.PageHeader;
import org.apache.parquet.format.Util;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tableformat.log.NoRangePartitionError;
import tableformat.plan.Murmur2;

/** The JVM writers' pieces against the Python engine's outputs (specs/format.md §3, §4, §5, §7). */
class RowSetWriterTest {
  @TempDir Path dir;

  private static WriteSchema schema(String json) {
    return WriteSchema.of(json.replace('\'', '"'));
  }

  @Test
  void keysEncodeAsThePythonEncoderDoes() {
    WriteSchema s = schema("{'columns': [{'id': 0, 'name': 'a', 'type': 'int8'}, {'id': 1, 'name': 'b', 'type': 'int16'},"
        + "{'id': 2, 'name': 'c', 'type': 'date'}, {'id': 3, 'name': 'd', 'type': 'decimal(9,2)'},"
        + "{'id': 4, 'name': 'e', 'type': 'decimal(38,0)'}, {'id': 5, 'name': 'f', 'type': 'string'},"
        + "{'id': 6, 'name': 'g', 'type': 'unixtime_micros'}, {'id': 7, 'name': 'h', 'type': 'binary'}],"
        + "'primary_key': ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']}");
    KeyEncoder e = KeyEncoder.primaryKey(s);
    // tableformat.format.keyencoder.encoded_keys of the same rows
    GenericInternalRow r1 = new GenericInternalRow(new Object[] {(byte) -128, (short) -2, -1,
        Decimal.apply(new BigDecimal("-1.50"), 9, 2), Decimal.apply(new BigDecimal("-1E+37").setScale(0), 38, 0),
        UTF8String.fromString("a\u0000b"), -5L, new byte[] {0, 1}});
    GenericInternalRow r2 = new GenericInternalRow(new Object[] {(byte) 5, (short) 300, 19000,
        Decimal.apply(new BigDecimal("12.34"), 9, 2), Decimal.apply(new BigDecimal(7), 38, 0),
        UTF8String.fromString(""), 1700000000000000L, "xyz".getBytes()});
    assertEquals("007ffe7fffffff7fffff6a787a11ef2a25b926ff0bc960000000006100016200007ffffffffffffffb0001",
        HexFormat.of().formatHex(e.encode(r1)));
    assertEquals("85812c80004a38800004d280000000000000000000000000000007000080060a24181e400078797a",
        HexFormat.of().formatHex(e.encode(r2)));
    assertThrows(IllegalArgumentException.class, () -> e.encode(new GenericInternalRow(new Object[8])));
  }

  private static final String METRICS = "{'columns': [{'id': 0, 'name': 'host', 'type': 'string', 'nullable': false},"
      + "{'id': 1, 'name': 't', 'type': 'int64', 'nullable': false},"
      + "{'id': 2, 'name': 'v', 'type': 'double', 'nullable': true, 'encoding': 'plain', 'compression': 'lz4'},"
      + "{'id': 3, 'name': 's', 'type': 'string', 'nullable': true, 'encoding': 'dictionary', 'compression': 'zstd'}],"
      + "'primary_key': ['host', 't']}";

  @Test
  void rowsGoToTheirTabletByHashAndRange() throws Exception {
    WriteSchema s = schema(METRICS);
    TabletRouter r = TabletRouter.of(s, ("{'hash': [{'column_ids': [0], 'buckets': 4, 'seed': 7}], 'range_column_ids': [1],"
        + "'ranges': [{'id': 3, 'lower': '8000000000000000', 'upper': '8000000000000064'},"
        + "{'id': 5, 'lower': '8000000000000064', 'upper': null}], 'next_range_id': 6}").replace('\'', '"'));
    assertEquals(List.of("r3-h0", "r3-h1", "r3-h2", "r3-h3", "r5-h0", "r5-h1", "r5-h2", "r5-h3"), r.tabletIds());
    int bucket = Murmur2.bucket("web1".getBytes(), 7, 4);     // the host is the level's last column: raw bytes
    assertEquals(bucket, r.tabletOrdinal(row("web1", 5)));
    assertEquals(4 + bucket, r.tabletOrdinal(row("web1", 100)));
    NoRangePartitionError e = assertThrows(NoRangePartitionError.class, () -> r.tabletOrdinal(row("web1", -1)));
    assertTrue(e.getMessage().contains("(t)"), e.getMessage());
  }

  @Test
  void aRouterReusesABucketOnlyForEqualHashColumns() {
    WriteSchema s = schema(METRICS);
    TabletRouter r = TabletRouter.of(s, ("{'hash': [{'column_ids': [0], 'buckets': 4, 'seed': 7}], 'range_column_ids': [1],"
        + "'ranges': [{'id': 0, 'lower': null, 'upper': null}], 'next_range_id': 1}").replace('\'', '"'));
    // runs of one host (the bucket remembered), a change back, a prefix of the last host, a longer one
    String[] hosts = {"web1", "web1", "web2", "web2", "web1", "web", "web10000000000000000", "web1", "", "web1"};
    for (int i = 0; i < hosts.length; i++)
      assertEquals(Murmur2.bucket(hosts[i].getBytes(), 7, 4), r.tabletOrdinal(row(hosts[i], i)), hosts[i]);
  }

  @Test
  void aColumnBufferShrunkPastTheSampleKeepsItsRowsAndGrowsToTheNewCapacityOnly() {
    WriteSchema s = schema(METRICS);
    ColumnBuffer host = new ColumnBuffer(s.columns().get(0), 0, 65536), t = new ColumnBuffer(s.columns().get(1), 1, 65536);
    for (int i = 0; i < 5000; i++) {
      host.append(row("h" + i, i));
      t.append(row("h" + i, i));
    }
    host.shift(4990);
    t.shift(4990);
    host.shrink(16);
    t.shrink(16);
    assertEquals(16, t.longs.length);
    for (int i = 0; i < 6; i++) {
      host.append(row("h" + (5000 + i), 5000 + i));
      t.append(row("h" + (5000 + i), 5000 + i));
    }
    assertEquals(16, host.size);
    assertEquals(16, t.longs.length);
    for (int i = 0; i < 16; i++) {
      assertEquals(4990 + i, t.longs[i]);
      assertEquals("h" + (4990 + i), new String(host.bytes, host.offsets[i], host.offsets[i + 1] - host.offsets[i]));
    }
    assertThrows(IllegalStateException.class, () -> t.shrink(8));
  }

  @Test
  void murmurOfASliceIsMurmurOfItsBytes() {
    byte[] data = new byte[40];
    for (int i = 0; i < data.length; i++) data[i] = (byte) (i * 37 + 11);
    for (int off = 0; off < 9; off++)
      for (int len = 0; off + len <= data.length; len++)
        assertEquals(Murmur2.hash64(Arrays.copyOfRange(data, off, off + len), 5), Murmur2.hash64(data, off, len, 5));
  }

  private static GenericInternalRow row(String host, long t) {
    return new GenericInternalRow(new Object[] {UTF8String.fromString(host), t, (double) t / 3,
        t % 3 == 0 ? null : UTF8String.fromString("s" + (t % 5))});
  }

  @Test
  void theBloomFilterAnswersEveryKeyWrittenAndFewOthers() {
    int n = 20000;
    long[] h = new long[n];
    for (int i = 0; i < n; i++) h[i] = SplitBlockBloom.hash(("k" + i).getBytes());
    byte[] f = SplitBlockBloom.build(h, n);
    assertEquals("TFBLOOM2", new String(f, 0, 8));
    assertEquals(24 + 32 * ((n * 27L + 255) / 256), f.length);
    for (int i = 0; i < n; i++) assertTrue(SplitBlockBloom.mayContain(f, ("k" + i).getBytes()));
    int fp = 0;
    for (int i = 0; i < 100000; i++) if (SplitBlockBloom.mayContain(f, ("absent" + i).getBytes())) fp++;
    assertTrue(fp < 50, "false positives: " + fp);                // expected ~9 (8.8e-5, §7)
  }

  @Test
  void aRowsetsFilesCarryPageCrcsAndTheirCrc32AndAbortDeletesThem() throws Exception {
    WriteSchema s = schema(METRICS);
    TableFiles files = new TableFiles(dir.toString(), new Configuration());
    RollingRowSetWriter w = new RollingRowSetWriter(files, s, new RowSetProperties(1L << 40, 1000, 256), "r0");
    KeyEncoder keys = KeyEncoder.primaryKey(s);
    for (int i = 0; i < 70000; i++) {
      GenericInternalRow r = row("h", i);
      w.write(r, keys.encode(r));
    }
    List<Map<String, Object>> rowsets = w.finish();
    assertEquals(1, rowsets.size());
    Map<String, Object> d = rowsets.get(0);
    assertEquals(70000L, d.get("num_rows"));
    @SuppressWarnings("unchecked")
    Map<String, Object> base = ((List<Map<String, Object>>) d.get("base")).get(0);
    Path file = dir.resolve((String) base.get("path"));
    byte[] bytes = Files.readAllBytes(file);
    CRC32 crc = new CRC32();
    crc.update(bytes);
    assertEquals(crc.getValue(), base.get("crc32"));
    assertEquals((long) bytes.length, base.get("size"));
    ParquetMetadata md;
    try (ParquetFileReader r = ParquetFileReader.open(HadoopInputFile.fromPath(
        new org.apache.hadoop.fs.Path(file.toUri()), new Configuration()))) {
      md = r.getFooter();
    }
    assertEquals(70, md.getBlocks().size());
    for (BlockMetaData b : md.getBlocks()) {
      for (ColumnChunkMetaData c : b.getColumns()) {
        long at = c.hasDictionaryPage() ? c.getDictionaryPageOffset() : c.getFirstDataPageOffset();
        PageHeader h = Util.readPageHeader(new ByteArrayInputStream(bytes, (int) at, bytes.length - (int) at));
        assertTrue(h.isSetCrc(), c.getPath() + " has no page CRC");
      }
    }
    Map<?, ?> stats = new ObjectMapper().convertValue(d.get("stats"), Map.class);
    assertEquals(Map.of("nulls", 0L, "min", 0L, "max", 69999L), Map.copyOf((Map<?, ?>) stats.get("1")));
    List<String> written = w.files();
    assertEquals(3, written.size());
    w.abort();
    for (String p : written) assertFalse(Files.exists(dir.resolve(p)), p);
  }
}
