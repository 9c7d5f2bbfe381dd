package tableformat.commit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tableformat.log.CanonicalJson;
import tableformat.log.Checksum;
import tableformat.log.Json;
import tableformat.log.LogReader;
import tableformat.log.LogStore;
import tableformat.log.TableExistsError;
import tableformat.log.TableReplacedError;
import tableformat.log.TestLog;
import tableformat.log.TxnAlreadyCommittedError;

/** The JVM committer's log files (specs/format.md §8.1, §8.3) read back by the JVM reader, and the
 *  matrix it decides with equal to the one specs/format.md §10.2 prints. The engine reading JVM
 *  commits and racing them is tests/spark/test_jvm_committer.py. */
class CommitterTest {
  @TempDir Path dir;

  private static final String FRAGMENT = "{\"operation\":\"INSERT\",\"read_version\":%d,\"actions\":[],"
      + "\"files\":[],\"counts\":{\"inserted\":0},\"requirements\":[{\"kind\":\"definition_unchanged\"}],"
      + "\"data_change\":true,\"table_id\":\"%s\",\"kind\":\"spark_insert\"}";

  private Committer table() throws Exception {
    JsonNode meta = new TestLog(dir).metadata().get("metadata");
    ((ObjectNode) meta).put("format_version", 5);
    ((ObjectNode) ((ObjectNode) meta).get("properties")).put("checkpoint_interval", 2);
    Committer c = new Committer(dir.toString(), new Configuration());
    assertEquals(0, c.create(Json.write(meta), "CREATE TABLE"));
    return c;
  }

  @Test
  void createWritesVersionZeroOnceAndTheReaderReadsIt() throws Exception {
    Committer c = table();
    LogReader r = new LogReader(new LogStore(dir.toString(), new Configuration()));
    assertEquals(0, r.load(null).state().version());
    assertEquals(TestLog.TABLE_ID, r.load(null).state().tableId());
    assertThrows(TableExistsError.class, () -> c.create(Json.write(new TestLog(dir).metadata()), "CREATE TABLE"));
  }

  @Test
  void aCommitFileIsCanonicalChecksummedAndCheckpointedAtTheInterval() throws Exception {
    Committer c = table();
    String tid = TestLog.TABLE_ID;
    // a txn makes a non-empty commit of format 6 (§8.2)
    CommitResult one = c.commit(List.of(String.format(FRAGMENT, 0, tid)), "INSERT", null, "app", 1);
    CommitResult two = c.commit(List.of(String.format(FRAGMENT, 1, tid)), "INSERT", null, "app", 2);
    assertEquals(1, one.version());
    assertEquals(2, two.version());
    assertTrue(two.timestamp() > one.timestamp());
    byte[] raw = Files.readAllBytes(dir.resolve(LogReader.commitPath(2)));
    JsonNode d = Json.parse(raw, "commit");
    assertEquals(CanonicalJson.write(d), new String(raw, StandardCharsets.US_ASCII));
    assertTrue(Checksum.matches(d, "actions"));
    assertEquals(6, d.get("format_version").asInt());
    assertTrue(Files.exists(dir.resolve(LogReader.checkpointPath(2))));
    // a fresh reader opens from the checkpoint and finds the txns it keeps
    LogReader r = new LogReader(new LogStore(dir.toString(), new Configuration()));
    assertEquals(2, r.load(null).state().txnVersion("app"));
    assertEquals(3, r.load(null).history().size());
    assertThrows(TxnAlreadyCommittedError.class,
        () -> c.commit(List.of(String.format(FRAGMENT, 2, tid)), "INSERT", null, "app", 2));
    assertThrows(TableReplacedError.class,
        () -> c.commit(List.of(String.format(FRAGMENT, 2, "other")), "INSERT", null, "app", 3));
    // planned on version 0, it rebases over versions 1 and 2 (definition unchanged)
    assertEquals(3, c.commit(List.of(String.format(FRAGMENT, 0, tid)), "INSERT", null, "app", 3).version());
  }

  @Test
  void theMatrixIsTheSpecsTable() throws Exception {
    List<String> lines = Files.readAllLines(Path.of("../../specs/format.md"));
    int start = lines.indexOf(lines.stream().filter(l -> l.startsWith("| later \\ earlier |")).findFirst().orElseThrow());
    List<String> cols = cells(lines.get(start));
    assertEquals(Matrix.WINNERS, cols.subList(1, cols.size()));
    int rows = 0;
    for (String l : lines.subList(start + 2, lines.size())) {
      if (!l.startsWith("|")) break;
      List<String> c = cells(l);
      String kind = c.get(0).replace("*", "");
      for (int i = 1; i < c.size(); i++)
        assertEquals(c.get(i).toUpperCase(), Matrix.cell(kind, cols.get(i)).name(), kind + " x " + cols.get(i));
      rows++;
    }
    assertEquals(Matrix.OPERATIONS.size(), rows);
  }

  private static List<String> cells(String line) {
    List<String> out = new ArrayList<>();
    for (String s : line.split("\\|")) if (!s.isBlank()) out.add(s.strip());
    return out;
  }

  @Test
  void tabletIdsAreTheEnginesNames() throws Exception {
    JsonNode p = Json.MAPPER.readTree("{\"hash\":[{\"buckets\":2},{\"buckets\":3}],\"ranges\":[{\"id\":4}]}");
    assertEquals(List.of("r4-h0-h0", "r4-h0-h1", "r4-h0-h2", "r4-h1-h0", "r4-h1-h1", "r4-h1-h2"), Committer.tabletIds(p));
  }
}
