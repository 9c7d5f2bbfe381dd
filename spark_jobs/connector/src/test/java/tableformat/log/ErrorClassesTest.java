package tableformat.log;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** One condition, one class, the engine's (specs/format.md §9.5): the JVM reader's refusals carry the
 *  class name and the version the engine's do, which PySpark maps back (spark_jobs/errors.py). */
class ErrorClassesTest {
  @TempDir Path dir;

  @Test
  void aNegativeVersionIsAVersionNotFoundErrorNotATagName() throws Exception {
    assertEquals(AsOf.version(-1), AsOf.parse("-1"));
    for (String zero : new String[] {"-0", " -000 "}) {   // version 0 before: the engine refuses it alike
      VersionNotFoundError z = assertThrows(VersionNotFoundError.class, () -> AsOf.parse(zero));
      assertEquals("version " + zero.strip() + " does not exist; versions start at 0", z.getMessage());
    }
    LogReader r = TestLog.standard(dir).reader();
    for (String big : new String[] {"-99999999999999999999", "0099999999999999999999"}) {   // was Long.MAX_VALUE
      VersionNotFoundError b = assertThrows(VersionNotFoundError.class, () -> Mvcc.stateAt(r, AsOf.parse(big)));
      assertEquals("version " + big.replace("00", "") + " does not exist; versions are 0..4", b.getMessage());
    }
    VersionNotFoundError e = assertThrows(VersionNotFoundError.class, () -> Mvcc.stateAt(r, AsOf.parse("-1")));
    assertEquals(VersionNotFoundError.class, e.getClass());
    assertEquals("version -1 does not exist; versions are 0..4", e.getMessage());
    assertEquals("VersionNotFoundError", e.errorName());
  }

  @Test
  void anUnknownTagIsATagNotFoundErrorBareOrNot() throws Exception {
    LogReader r = TestLog.standard(dir).reader();
    TagNotFoundError bare = assertThrows(TagNotFoundError.class, () -> Mvcc.stateAt(r, AsOf.parse("weekly")));
    assertTrue(bare.getMessage().contains("'weekly'") && bare.getMessage().contains("(tags: nightly)"),
        bare.getMessage());
    TagNotFoundError named = assertThrows(TagNotFoundError.class, () -> Mvcc.stateAt(r, AsOf.parse("tag:weekly")));
    assertEquals("no tag 'weekly' in this table (tags: nightly)", named.getMessage());
    assertEquals("TagNotFoundError", named.errorName());
  }

  @Test
  void aMissingCommitZeroIsNamedNotTakenForNoTable() throws Exception {
    TestLog log = TestLog.standard(dir);
    Files.delete(log.root().resolve(LogReader.commitPath(0)));
    CorruptFileError e = assertThrows(CorruptFileError.class, () -> log.reader().load(null));
    assertTrue(e.getMessage().startsWith("commit file _log/00000000000000000000.json of the table at"), e.getMessage());
    assertTrue(e.getMessage().contains("is missing, while _log/ holds 4 commits (versions 1..4)"), e.getMessage());
    TableNotFoundError none = assertThrows(TableNotFoundError.class,
        () -> new TestLog(dir.resolve("none")).reader().load(null));
    assertTrue(none.getMessage().endsWith("(no _log/ commits)"), none.getMessage());
  }
}
