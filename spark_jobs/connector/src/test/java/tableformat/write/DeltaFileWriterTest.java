package tableformat.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.ParquetReader;
import org.apache.parquet.hadoop.example.GroupReadSupport;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The JVM's REDO DELETE file (specs/format.md §9) as the engine writes it; the engine reading it
 *  is tests/spark/test_jvm_delta_file.py. */
class DeltaFileWriterTest {
  @TempDir Path dir;

  private static final String SCHEMA = ("{'columns': [{'id': 0, 'name': 'host', 'type': 'string', 'nullable': false},"
      + "{'id': 1, 'name': 't', 'type': 'int64', 'nullable': false},"
      + "{'id': 2, 'name': 'v', 'type': 'double', 'nullable': true}], 'primary_key': ['host', 't']}").replace('\'', '"');

  private static GenericInternalRow key(String host, long t) {
    return new GenericInternalRow(new Object[] {UTF8String.fromString(host), t});
  }

  @Test
  void deletesAreSortedByRowidOncePerRowWithTheirKeys() throws Exception {
    TableFiles files = new TableFiles(dir.toString(), new Configuration());
    DeltaFileWriter w = new DeltaFileWriter(files, WriteSchema.of(SCHEMA), "r0-h1", "abc");
    w.delete(7, key("b", 7));
    w.delete(4000000000L, key("z", 9));           // past a signed int: a uint32
    w.delete(2, key("a", 2));
    w.delete(7, key("b", 7));                     // twice: one record
    Map<String, Object> d = w.finish();
    assertEquals(3L, d.get("num_records"));
    assertEquals(3L, d.get("delete_count"));
    assertEquals("redo", d.get("kind"));
    assertEquals("abc", d.get("rowset"));
    String path = (String) d.get("path");
    assertEquals(true, path.matches("tablets/r0-h1/abc/redo-[0-9a-f]{12}\\.parquet"), path);
    byte[] bytes = Files.readAllBytes(dir.resolve(path));
    CRC32 crc = new CRC32();
    crc.update(bytes);
    assertEquals(crc.getValue(), d.get("crc32"));
    assertEquals((long) bytes.length, d.get("size"));

    org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path(dir.resolve(path).toUri());
    ParquetMetadata md;
    try (ParquetFileReader r = ParquetFileReader.open(HadoopInputFile.fromPath(file, new Configuration()))) {
      md = r.getFooter();
    }
    MessageType s = md.getFileMetaData().getSchema();
    assertEquals(List.of("rowid", "op", "c0", "c1"), s.getFields().stream().map(f -> f.getName()).toList());
    assertEquals(LogicalTypeAnnotation.intType(32, false), s.getType("rowid").getLogicalTypeAnnotation());
    assertEquals(LogicalTypeAnnotation.intType(8, true), s.getType("op").getLogicalTypeAnnotation());
    assertEquals(0, s.getType("c0").getId().intValue());
    md.getBlocks().get(0).getColumns().forEach(c -> assertEquals(true, c.getStatistics().isEmpty(), c.getPath() + ""));

    List<String> seen = new ArrayList<>();
    try (ParquetReader<Group> r = ParquetReader.builder(new GroupReadSupport(), file).build()) {
      for (Group g = r.read(); g != null; g = r.read())
        seen.add(Integer.toUnsignedLong(g.getInteger("rowid", 0)) + ":" + g.getInteger("op", 0) + ":"
            + g.getString("c0", 0) + ":" + g.getLong("c1", 0));
    }
    assertEquals(List.of("2:2:a:2", "7:2:b:7", "4000000000:2:z:9"), seen);
  }

  @Test
  void aWriterWithoutRecordsWritesNothing() {
    TableFiles files = new TableFiles(dir.toString(), new Configuration());
    DeltaFileWriter w = new DeltaFileWriter(files, WriteSchema.of(SCHEMA), "r0", "abc");
    assertThrows(IllegalStateException.class, w::finish);
    assertThrows(IllegalArgumentException.class, () -> w.delete(-1, key("a", 1)));
    assertFalse(Files.exists(dir.resolve("tablets")));
  }
}
