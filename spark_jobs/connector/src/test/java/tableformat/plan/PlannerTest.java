package tableformat.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tableformat.log.AsOf;
import tableformat.log.Mvcc;
import tableformat.log.TableState;
import tableformat.log.TestLog;

/** §9.4's planning over the log TestLog.standard writes: which rowsets, base files and deltas a read needs. */
class PlannerTest {
  @TempDir Path dir;

  private static List<String> ids(Planner.ReadPlan p) {
    return p.rowsets().stream().map(r -> r.rowset().id()).toList();
  }

  @Test
  void aFullReadPlansEveryLiveRowsetWithItsRedoDeltas() throws Exception {
    TableState s = TestLog.standard(dir).reader().load(null).state();
    Planner.ReadPlan p = Planner.plan(s, null, null);
    assertEquals(List.of("c", "d"), ids(p));
    Planner.RowSetPlan c = p.rowsets().get(0);
    assertEquals(1, c.redo().size());
    assertEquals(List.of(1), c.redo().get(0).updates());
    assertTrue(c.nativeRead());
    assertEquals(List.of(0, 1), c.base().get(0).columns());
  }

  @Test
  void aDeltaThatChangesNoReadColumnIsLeftOut() throws Exception {
    TableState s = TestLog.standard(dir).reader().load(null).state();
    Planner.ReadPlan p = Planner.plan(s, List.of("k"), null);
    assertEquals(List.of(), p.rowsets().get(0).redo());
    assertEquals(List.of(0), p.rowsets().get(0).base().get(0).columns());
  }

  @Test
  void filtersPruneByTabletKeyIntervalAndStatistics() throws Exception {
    TableState s = TestLog.standard(dir).reader().load(3L).state();    // a (0..49), b (50..99), c (100..199)
    assertEquals(List.of("b"), ids(Planner.plan(s, null, TestLog.json("[['k','>=',60],['k','<',100]]"))));
    assertEquals(List.of("a", "b", "c"), ids(Planner.plan(s, null, TestLog.json("[['k','>=',0]]"))));
    // v: a -1..0.5, b 0.25..2, c 10..20, but c has a pending update of v: its statistics no longer bound it
    assertEquals(List.of("b", "c"), ids(Planner.plan(s, null, TestLog.json("[['v','>',1.0]]"))));
    assertEquals(List.of(), ids(Planner.plan(s, null, TestLog.json("[['k','>',5],['k','<',3]]"))));
  }

  @Test
  void aTaggedVersionPlansItsOwnRowsets() throws Exception {
    TableState s = Mvcc.stateAt(TestLog.standard(dir).reader(), AsOf.parse("nightly"));
    Planner.ReadPlan p = Planner.plan(s, null, null);
    assertEquals(List.of("a", "b", "c"), ids(p));
    assertTrue(p.rowsets().stream().allMatch(r -> r.redo().isEmpty()));
  }
}
