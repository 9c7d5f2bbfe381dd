package tableformat.log;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Opening a table from one listing of {@code _log/} (§8.3): the newest usable checkpoint at or
 * before the version read, every commit after it (one missing: a damaged log), and no file read
 * that the state does not need (no probe past the latest, no commit before the checkpoint).
 */
class ListingTest {
  @TempDir Path dir;

  private static final String[] OPS = {"CREATE TABLE", "INSERT", "INSERT", "INSERT", "INSERT"};
  private static final JsonNode A = TestLog.addRowset("a", "r0", 0, 9, 0, 1), B = TestLog.addRowset("b", "r0", 10, 19, 0, 1),
      C = TestLog.addRowset("c", "r1", 100, 109, 0, 1), D = TestLog.addRowset("d", "r1", 110, 119, 0, 1);

  /** v0 create; v1..v4 insert rowsets a, b, c, d; checkpoints at 1 and 3. */
  private TestLog fourInserts() throws Exception {
    TestLog log = new TestLog(dir);
    log.commit("CREATE TABLE", TestLog.metadata());
    for (JsonNode r : List.of(A, B, C, D)) log.commit("INSERT", r);
    log.checkpoint(1, OPS, new long[] {2000}, A);
    log.checkpoint(3, OPS, new long[] {2000, 3000, 4000}, A, B, C);
    return log;
  }

  private static LogStore store(Path root) {
    return new LogStore(root.toString(), new Configuration());
  }

  private static List<String> ids(TableState s) {
    return s.rowsets().stream().map(RowSet::id).toList();
  }

  @Test
  void theLatestIsTheNewestCheckpointAndTheCommitsAfterItFromOneListing() throws Exception {
    fourInserts();
    LogStore store = store(dir);
    LogReader.Loaded l = new LogReader(store).load(null);
    assertEquals(4, l.state().version());
    assertEquals(List.of("a", "b", "c", "d"), ids(l.state()));
    assertEquals(5, l.history().size());
    assertEquals(1, store.lists());
    assertEquals(2, store.reads());              // checkpoint 3 and commit 4: no _last_checkpoint, no probe of 5
  }

  @Test
  void aVersionAsOfReadsTheNewestCheckpointAtOrBeforeItAndNothingPastIt() throws Exception {
    fourInserts();
    LogStore store = store(dir);
    TableState s = new LogReader(store).load(2L).state();
    assertEquals(List.of("a", "b"), ids(s));
    assertEquals(2, store.reads());              // checkpoint 1 and commit 2; not 3 nor 4
  }

  @Test
  void statesOfOneQueryShareItsListingAndItsReads() throws Exception {
    fourInserts();
    LogStore store = store(dir);
    LogReader r = new LogReader(store);
    assertEquals(3, Mvcc.stateAt(r, AsOf.version(3)).version());    // the head, then version 3 from checkpoint 3
    assertEquals(4, r.load(null).state().version());
    assertEquals(1, store.lists());
    assertEquals(2, store.reads());
    assertEquals(List.of("a"), ids(r.load(1L).state()));           // checkpoint 1: read once more
    assertEquals(3, store.reads());
  }

  @Test
  void aBrokenNewestCheckpointFallsBackToAnOlderOne() throws Exception {
    fourInserts();
    Path cp3 = dir.resolve(LogReader.checkpointPath(3));
    Files.writeString(cp3, Files.readString(cp3).replace("\"num_rows\":10", "\"num_rows\":11"));
    LogStore store = store(dir);
    TableState s = new LogReader(store).load(null).state();
    assertEquals(List.of("a", "b", "c", "d"), ids(s));
    assertEquals(10, s.rowsets().get(2).numRows());
    assertEquals(5, store.reads());              // checkpoint 3 (refused), checkpoint 1, commits 2..4
  }

  @Test
  void aGapAfterTheStartingCheckpointIsADamagedLogNeverItsEnd() throws Exception {
    fourInserts();
    Files.delete(dir.resolve(LogReader.checkpointPath(3)));
    Files.delete(dir.resolve(LogReader.commitPath(3)));
    LogReader r = new LogReader(store(dir));
    CorruptFileError e = assertThrows(CorruptFileError.class, () -> r.load(null));    // commit 4 exists
    assertTrue(e.getMessage().contains(LogReader.commitPath(3)) && e.getMessage().contains("backup"), e.getMessage());
    assertThrows(CorruptFileError.class, () -> r.load(4L));
    assertThrows(CorruptFileError.class, () -> r.load(3L));
    assertEquals(List.of("a", "b"), ids(r.load(2L).state()));     // before the gap: read
    assertThrows(VersionNotFoundError.class, () -> r.load(5L));
  }

  @Test
  void aGapBeforeTheCheckpointIsNeverRead() throws Exception {
    fourInserts();
    Files.delete(dir.resolve(LogReader.commitPath(2)));
    LogStore store = store(dir);
    LogReader r = new LogReader(store);
    assertEquals(4, r.load(null).state().version());
    assertEquals(2, store.reads());
    assertEquals(List.of("a", "b", "c"), ids(r.load(3L).state()));  // checkpoint 3 itself
    assertThrows(CorruptFileError.class, () -> r.load(2L));        // checkpoint 1, then commit 2: missing
    assertEquals(List.of("a"), ids(r.load(1L).state()));
  }

  @Test
  void theHintNeverDecidesTheState() throws Exception {
    // checkpoints 1 and 3, commit 2 missing: whatever _last_checkpoint names, the latest is 4
    fourInserts();
    Files.delete(dir.resolve(LogReader.commitPath(2)));
    for (String hint : new String[] {"{\"version\":1}", "{\"version\":3}", "{\"version\":99}", "junk", null}) {
      Path h = dir.resolve("_log/_last_checkpoint");
      Files.deleteIfExists(h);
      if (hint != null) new TestLog(dir).write("_log/_last_checkpoint", hint);
      LogStore store = store(dir);
      assertEquals(List.of("a", "b", "c", "d"), ids(new LogReader(store).load(null).state()), hint);
      assertEquals(2, store.reads(), hint);                          // checkpoint 3, commit 4: no hint read
    }
  }

  @Test
  void aMissingFirstCommitIsADamagedLogUnlessACheckpointCoversIt() throws Exception {
    fourInserts();
    Files.delete(dir.resolve(LogReader.commitPath(0)));
    LogReader r = new LogReader(store(dir));
    assertEquals(4, r.load(null).state().version());
    assertEquals(List.of("a"), ids(r.load(1L).state()));
    CorruptFileError e = assertThrows(CorruptFileError.class, () -> r.load(0L));
    assertTrue(e.getMessage().contains(LogReader.commitPath(0)), e.getMessage());
    Files.delete(dir.resolve(LogReader.checkpointPath(1)));
    Files.delete(dir.resolve(LogReader.checkpointPath(3)));
    assertThrows(CorruptFileError.class, () -> new LogReader(store(dir)).load(null));
  }

  @Test
  void aCheckpointPastTheNewestCommitIsNotTheLatest() throws Exception {
    // the latest version is the newest listed commit: a checkpoint named past it is no version
    TestLog log = fourInserts();
    String[] ops = {"CREATE TABLE", "INSERT", "INSERT", "INSERT", "INSERT", "INSERT", "INSERT", "INSERT"};
    log.checkpoint(7, ops, new long[] {2000, 3000, 4000, 5000}, A, B, C, D);
    LogReader r = new LogReader(store(dir));
    assertEquals(4, r.load(null).state().version());
    assertThrows(VersionNotFoundError.class, () -> r.load(7L));
  }

  @Test
  void aRefreshOverANewGapFindsWhatAFreshReaderFinds() throws Exception {
    TestLog log = fourInserts();
    LogReader r = new LogReader(store(dir));
    assertEquals(4, r.load(null).state().version());
    TestLog w = new TestLog(dir, 5);
    for (int i = 0; i < 3; i++) w.commit("INSERT");
    Files.delete(dir.resolve(LogReader.commitPath(6)));
    r.refresh();
    assertThrows(CorruptFileError.class, () -> r.load(null));
    assertThrows(CorruptFileError.class, () -> new LogReader(store(dir)).load(null));
  }

  @Test
  void aRefreshReadsOnlyTheCommitsMadeSince() throws Exception {
    TestLog log = fourInserts();
    LogStore store = store(dir);
    LogReader r = new LogReader(store);
    assertEquals(4, r.load(null).state().version());
    new TestLog(dir, 5).commit("INSERT", TestLog.addRowset("e", "r1", 120, 129, 0, 1));
    assertEquals(4, r.load(null).state().version());               // this query's listing
    r.refresh();
    assertEquals(List.of("a", "b", "c", "d", "e"), ids(r.load(null).state()));
    assertEquals(2, store.lists());
    assertEquals(3, store.reads());              // checkpoint 3, commit 4, then commit 5 alone
    r.refresh();
    assertEquals(5, r.load(null).state().version());
    assertEquals(3, store.reads());              // nothing new: nothing read
  }

  @Test
  void aRefreshAfterTheTableWasReplacedReadsTheNewTable() throws Exception {
    fourInserts();
    LogReader r = new LogReader(store(dir));
    assertEquals("t0", r.load(null).state().tableId());
    for (Path p : Files.list(dir.resolve("_log")).toList()) Files.delete(p);
    TestLog other = new TestLog(dir);
    other.tableId = "another";
    JsonNode meta = TestLog.json(TestLog.metadata().toString().replace("\"t0\"", "\"another\""));
    other.commit("CREATE TABLE", meta);
    r.refresh();
    TableState s = r.load(null).state();
    assertEquals("another", s.tableId());
    assertEquals(0, s.version());
  }

  @Test
  void aCommitOfAnotherTableAfterTheCheckpointIsATableReplaced() throws Exception {
    fourInserts();
    TestLog other = new TestLog(dir, 5);
    other.tableId = "t1";
    other.commit("INSERT", TestLog.addRowset("e", "r1", 120, 129, 0, 1));
    assertThrows(TableReplacedError.class, () -> new LogReader(store(dir)).load(null));
  }

  @Test
  void namesThatAreNoVersionsAreNotCommits() throws Exception {
    fourInserts();
    new TestLog(dir).write("_log/_last_checkpoint", "{\"version\":3}");
    new TestLog(dir).write("_log/.tmp-abc", "x");
    new TestLog(dir).write("_log/123456789012345678901234567890.json", "x");
    Listing l = new LogReader(store(dir)).listing();
    assertEquals(List.of(0L, 1L, 2L, 3L, 4L), List.copyOf(l.commits().keySet()));
    assertEquals(List.of(1L, 3L), List.copyOf(l.checkpoints().keySet()));
  }

  @Test
  void onlyCanonicalNamesAreVersions() throws Exception {
    // §8.1: commit v is _log/<v:020d>.json; Python's reader opens that name and no other, so a
    // stray "5.json" (or a 21-digit name) is no commit 5 and "3.checkpoint.json" no checkpoint 3.
    TestLog log = fourInserts();
    Files.delete(dir.resolve(LogReader.checkpointPath(3)));
    new TestLog(dir, 5).commit("INSERT", TestLog.addRowset("e", "r1", 120, 129, 0, 1));
    Files.move(dir.resolve(LogReader.commitPath(5)), dir.resolve("_log/5.json"));
    new TestLog(dir).write("_log/3.checkpoint.json", "{}");
    new TestLog(dir).write("_log/" + "0".repeat(20) + "2.json", "not a commit");
    LogReader r = new LogReader(store(dir));
    assertEquals(List.of(0L, 1L, 2L, 3L, 4L), List.copyOf(r.listing().commits().keySet()));
    assertEquals(List.of(1L), List.copyOf(r.listing().checkpoints().keySet()));
    TableState s = r.load(null).state();
    assertEquals(4, s.version());
    assertEquals(List.of("a", "b", "c", "d"), ids(s));
    assertThrows(VersionNotFoundError.class, () -> r.load(5L));
  }

  @Test
  void aReaderHeldAcrossManyCommitsHoldsNoGrowingLog() throws Exception {
    // a view (a Spark Table) refreshes its reader for each scan: the commits it read for earlier
    // queries must not pile up in memory (a streaming table's log grows without end)
    fourInserts();
    LogReader r = new LogReader(store(dir));
    assertEquals(4, r.load(null).state().version());
    TestLog w = new TestLog(dir, 5);
    for (int i = 0; i < 40; i++) {
      w.commit("INSERT");
      r.refresh();
      assertEquals(5 + i, r.load(null).state().version());
    }
    assertEquals(List.of("a", "b", "c", "d"), ids(r.load(null).state()));
    assertEquals(44, r.load(null).history().get(44).version());
    assertTrue(r.heldCommits() <= 1, "commits held: " + r.heldCommits());
    assertEquals(List.of("a", "b"), ids(r.load(2L).state()));     // an older version is still read
  }
}
