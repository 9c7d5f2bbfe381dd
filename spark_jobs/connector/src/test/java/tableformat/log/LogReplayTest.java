package tableformat.log;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Log replay (§8.2) and the state a read as of a version, tag or timestamp sees (§9.1), over the
 *  log TestLog.standard writes. */
class LogReplayTest {
  @TempDir Path dir;

  private static List<String> ids(TableState s) {
    return s.rowsets().stream().map(RowSet::id).toList();
  }

  @Test
  void theLatestStateFoldsEveryCommit() throws Exception {
    LogReader.Loaded l = TestLog.standard(dir).reader().load(null);
    TableState s = l.state();
    assertEquals(4, s.version());
    assertEquals(5000, s.timestamp());
    assertEquals(List.of("c", "d"), ids(s));
    assertEquals(List.of(), s.deltasOf("a"));          // removed with its rowset
    assertEquals(1, s.deltasOf("c").size());
    DeltaFile d = s.deltasOf("c").get(0);
    assertEquals(4000, d.maxTs());                      // a REDO file without ts column takes its commit's
    assertTrue(d.updates(1));
    assertEquals(1000 * 2, s.rowsets().get(0).createdTs());   // stamped at replay
    assertArrayEquals(new long[] {1, 2000}, s.tags().get("nightly"));
    assertEquals(List.of("CREATE TABLE", "INSERT", "TAG", "DELETE", "COMPACT"),
        l.history().stream().map(CommitInfo::operation).toList());
  }

  @Test
  void anOlderVersionIsReplayedUpToItself() throws Exception {
    TableState s = TestLog.standard(dir).reader().load(3L).state();
    assertEquals(List.of("a", "b", "c"), ids(s));
    assertEquals(5, s.deltasOf("a").get(0).deleteCount());
  }

  @Test
  void asOfResolvesVersionsTagsAndTimestamps() throws Exception {
    LogReader r = TestLog.standard(dir).reader();
    assertEquals(1, Mvcc.stateAt(r, AsOf.parse("nightly")).version());
    assertEquals(2, Mvcc.stateAt(r, AsOf.parse("ts:3500")).version());
    assertEquals(3, Mvcc.stateAt(r, AsOf.version(3)).version());
    assertThrows(TimestampAfterLatestError.class, () -> Mvcc.stateAt(r, AsOf.parse("ts:99999")));
    assertThrows(VersionNotFoundError.class, () -> Mvcc.stateAt(r, AsOf.version(9)));
    assertThrows(TableFormatError.class, () -> Mvcc.stateAt(r, AsOf.parse("weekly")));
  }

  @Test
  void anAlteredCommitFailsItsChecksum() throws Exception {
    TestLog log = TestLog.standard(dir);
    Path p = dir.resolve(LogReader.commitPath(3));
    Files.writeString(p, Files.readString(p).replace("\"delete_count\":5", "\"delete_count\":4"));
    CorruptFileError e = assertThrows(CorruptFileError.class, () -> log.reader().load(null));
    assertTrue(e.getMessage().contains("fails its checksum"), e.getMessage());
  }

  @Test
  void aNewerFormatVersionIsRefusedByName() throws Exception {
    TestLog log = TestLog.standard(dir);
    Path p = dir.resolve(LogReader.commitPath(4));
    int newer = LogReader.FORMAT_VERSION + 1;
    Files.writeString(p, Files.readString(p).replace("\"format_version\":5", "\"format_version\":" + newer));
    UnsupportedFormatVersionError e = assertThrows(UnsupportedFormatVersionError.class, () -> log.reader().load(null));
    assertTrue(e.getMessage().contains("format version " + newer), e.getMessage());
  }

  @Test
  void eachCommitDeclaresTheFormatItNeedsAndNeverLessThanTheOneBefore() throws Exception {
    TestLog log = TestLog.standard(dir);                   // format 5 throughout: no txn
    log.formatVersion = 6;
    log.commit("STREAM UPSERT", TestLog.txn("q", 0), TestLog.addRedo("c", "r1", "redo-3.parquet", 0, 1));
    LogReader.Loaded l = log.reader().load(null);
    assertEquals(5, l.state().version());
    assertEquals(5, l.state().formatVersion());            // the format the table was created in
    assertEquals(4, log.reader().load(4L).state().version());
    log.formatVersion = 5;                                 // a 5 after a 6: relabelled to an older rule
    log.commit("DELETE", TestLog.addRedo("c", "r1", "redo-4.parquet", 1, 0));
    CorruptFileError e = assertThrows(CorruptFileError.class, () -> log.reader().load(null));
    assertTrue(e.getMessage().contains("format version 5 after a commit of format version 6"), e.getMessage());
  }

  @Test
  void aCommitOfAnotherTableIsATableReplaced() throws Exception {
    TestLog log = TestLog.standard(dir);
    TestLog other = new TestLog(dir, 5);
    other.tableId = "t1";
    other.commit("DELETE", TestLog.addRedo("c", "r1", "redo-3.parquet", 1, 0));
    TableReplacedError e = assertThrows(TableReplacedError.class, () -> log.reader().load(null));
    assertTrue(e.getMessage().contains("belongs to table t1"), e.getMessage());
  }

  @Test
  void aDeltaOfAnUnknownRowsetIsACorruptLog() throws Exception {
    TestLog log = new TestLog(dir);
    log.commit("CREATE TABLE", TestLog.metadata());
    log.commit("DELETE", TestLog.addRedo("zz", "r0", "redo.parquet", 1, 0));
    assertThrows(CorruptFileError.class, () -> log.reader().load(null));
  }

  @Test
  void noLogIsTableNotFound() {
    assertThrows(TableNotFoundError.class, () -> new TestLog(dir).reader().load(null));
    assertNull(new TestLog(dir).reader().readCommit(0));
  }
}
