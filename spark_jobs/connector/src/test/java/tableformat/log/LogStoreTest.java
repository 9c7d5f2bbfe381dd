package tableformat.log;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A table's files through Hadoop with any characters in its location (issue #44 item 7): taken
 *  as they are, never decoded, parsed as a java.net.URI or globbed. */
class LogStoreTest {
  @TempDir Path dir;

  private static final byte[] COMMIT = "{\"commitInfo\":{}}".getBytes(StandardCharsets.UTF_8);
  private static final String FIRST = "_log/00000000000000000000.json";

  private Path table(String name) throws IOException {
    Path t = dir.resolve(name).resolve("t");
    Files.createDirectories(t.resolve("_log"));
    Files.write(t.resolve(FIRST), COMMIT);
    return t;
  }

  @ParameterizedTest
  @ValueSource(strings = {"with space", "br[ack]et{s}", "pct%20kept", "a[b]c {d} %41", "x?y*z"})
  void readsAndListsUnderAnyDirectoryName(String name) throws IOException {
    String t = table(name).toString();
    for (String uri : List.of(t, "file:" + t, "file://" + t, t + "/", "file://" + t + "//")) {
      LogStore s = new LogStore(uri, new Configuration());
      assertArrayEquals(COMMIT, s.read(FIRST), uri);
      assertNull(s.read("_log/00000000000000000001.json"), uri);
      List<FileStatus> listed = s.listStatus("_log");
      assertEquals(1, listed.size(), uri);
      assertEquals("00000000000000000000.json", listed.get(0).getPath().getName());
      assertArrayEquals(COMMIT, s.read(listed.get(0)), uri);
      assertEquals(0, s.listStatus("tablets").size());
    }
  }

  @Test
  void normalizeKeepsEveryCharacterAndOnlyFixesTheSchemeAndTrailingSlashes() {
    assertEquals("file://" + dir + "/with space/t", LogStore.normalize(dir + "/with space/t/"));
    assertEquals("s3a://bucket/with space/br[ack]et{s}/100%25", LogStore.normalize("s3://bucket/with space/br[ack]et{s}/100%25/"));
    assertEquals("hdfs://nn:8020/a b/%20", LogStore.normalize("hdfs://nn:8020/a b/%20//"));
    assertEquals("file:/a b", LogStore.normalize("file:/a b"));
  }

  @Test
  void aHadoopUriKeepsItsPathAsWritten() {
    for (String uri : List.of("s3a://bucket/with space/br[ack]et{s}/%20", "hdfs://nn:8020/with space/br[ack]et{s}/%20")) {
      org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(LogStore.normalize(uri) + "/_log");
      assertEquals("/with space/br[ack]et{s}/%20/_log", p.toUri().getPath());
      assertEquals(uri + "/_log", p.toString());
    }
  }
}
