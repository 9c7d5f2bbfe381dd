package tableformat.catalog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A warehouse whose path holds a space, brackets, braces or a literal %20 (issue #44 item 7). */
class LocationTest {
  @TempDir Path dir;

  @ParameterizedTest
  @ValueSource(strings = {"with space", "br[ack]et{s}", "pct%20kept", "a[b]c {d} %41"})
  void namespacesAndTablesAreFoundUnderAnyName(String name) throws IOException {
    Path wh = dir.resolve(name);
    Files.createDirectories(wh.resolve("ns").resolve("t one").resolve("_log"));
    Files.createDirectories(wh.resolve("ns").resolve("sub [x]"));
    Configuration conf = new Configuration();
    for (String w : List.of(wh.toString(), "file:" + wh, "file://" + wh + "/")) {
      String uri = Location.normalize(w);
      assertTrue(Location.isDirectory(uri, conf), w);
      assertEquals(List.of("ns"), Location.children(uri, conf, false));
      assertEquals(List.of("t one"), Location.children(uri + "/ns", conf, true));
      assertEquals(List.of("sub [x]"), Location.children(uri + "/ns", conf, false));
      assertTrue(Location.isTable(uri + "/ns/t one", conf));
      assertFalse(Location.isTable(uri + "/ns/sub [x]", conf));
      assertFalse(Location.isDirectory(uri + "/missing", conf));
    }
  }
}
