package tableformat.parquet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tableformat.log.CorruptFileError;

/** The whole-file check of a base file (specs/format.md §8.2): its bytes against the log's CRC-32. */
class ParquetFilesTest {
  @TempDir Path dir;

  private FileStatus status(Path p) throws Exception {
    org.apache.hadoop.fs.Path hp = new org.apache.hadoop.fs.Path(p.toUri());
    return hp.getFileSystem(new Configuration()).getFileStatus(hp);
  }

  private static long crc(byte[] b) {
    CRC32 c = new CRC32();
    c.update(b);
    return c.getValue();
  }

  @Test
  void aFileWithTheRecordedCrcIsReadWhole() throws Exception {
    byte[] bytes = "PAR1 some column chunks and a footer PAR1".getBytes();
    Path p = Files.write(dir.resolve("base-a.parquet"), bytes);
    assertArrayEquals(bytes, ParquetFiles.readVerified(new Configuration(), status(p), crc(bytes)));
  }

  @Test
  void anotherFileOfTheSameLengthFailsByName() throws Exception {
    byte[] bytes = "PAR1 some column chunks and a footer PAR1".getBytes();
    Path p = Files.write(dir.resolve("base-b.parquet"), bytes);
    long recorded = crc(bytes);
    bytes[7] ^= 1;                                           // one bit of another, same-length file
    Files.write(p, bytes);
    CorruptFileError e = assertThrows(CorruptFileError.class,
        () -> ParquetFiles.readVerified(new Configuration(), status(p), recorded));
    assertTrue(e.getMessage().contains("base-b.parquet") && e.getMessage().contains("fails its checksum"),
        e.getMessage());
  }
}
