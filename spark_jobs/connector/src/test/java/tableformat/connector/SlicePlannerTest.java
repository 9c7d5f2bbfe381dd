package tableformat.connector;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Tasks sized and packed as Spark's own file scans pack files (FilePartition.getFilePartitions). */
class SlicePlannerTest {
  /** A plan of rowsets with one base file each, of these sizes. */
  private static List<ReadPlan.RowSetPlan> rowsets(long... sizes) {
    StringBuilder rs = new StringBuilder();
    for (int i = 0; i < sizes.length; i++) {
      if (i > 0) rs.append(',');
      rs.append("{\"id\":\"r").append(i).append("\",\"num_rows\":10,\"base\":[{\"path\":\"file:/b").append(i)
          .append("\",\"size\":").append(sizes[i]).append(",\"columns\":[1],\"crc32\":null}],\"redo\":[],\"undo\":[],")
          .append("\"missing\":[],\"tablet\":\"t\",\"native\":true}");
    }
    return ReadPlan.parse("{\"version\":1,\"read_ts\":null,\"columns\":[{\"id\":1,\"name\":\"v\",\"type\":\"double\","
        + "\"nullable\":true,\"default\":null}],\"rowsets\":[" + rs + "]}").rowsets;
  }

  private static List<List<String>> tasks(List<RowSetPartition> parts) {
    List<List<String>> out = new ArrayList<>();
    for (RowSetPartition p : parts) {
      List<String> t = new ArrayList<>();
      for (RowSetPartition.Slice s : p.slices) t.add(s.rowset.id + (s.length < 0 ? "" : "@" + s.start + "+" + s.length));
      out.add(t);
    }
    return out;
  }

  @Test
  void smallRowsetsArePackedNextFitDecreasing() {
    // split = min(maxBytes 100, max(openCost 4, total 105 + 4 * 4)) = 100; largest first: 40, 30 (task
    // at 40 + 30 + 2 * 4 = 78), then 25 does not fit (78 + 25 > 100: the open costs in the task count)
    List<RowSetPartition> parts = SlicePlanner.plan(rowsets(10, 40, 30, 25), 100, 4, 1, 0);
    assertEquals(List.of(List.of("r1", "r2"), List.of("r3", "r0")), tasks(parts));
    assertEquals(40 + 30 + 2 * 4, parts.get(0).bytes);
  }

  @Test
  void aLargeSingleFileRowsetIsSplitIntoByteRanges() {
    List<RowSetPartition> parts = SlicePlanner.plan(rowsets(250, 10), 100, 4, 1, 0);
    assertEquals(List.of(List.of("r0@0+100"), List.of("r0@100+100"), List.of("r0@200+50", "r1")), tasks(parts));
  }

  @Test
  void moreParallelismMeansSmallerSplits() {
    // total 4 * (50 + 4) = 216 over 4 tasks: split 54, one rowset per task
    assertEquals(4, SlicePlanner.plan(rowsets(50, 50, 50, 50), 1000, 4, 4, 0).size());
    assertEquals(1, SlicePlanner.plan(rowsets(50, 50, 50, 50), 1000, 4, 1, 0).size());
  }

  @Test
  void maxPartitionNumRepacksTheSameSlices() {
    List<RowSetPartition> parts = SlicePlanner.plan(rowsets(30, 30, 30, 30, 30, 30), 40, 4, 1, 2);
    assertEquals(2, parts.size());
    assertEquals(6, parts.stream().mapToInt(p -> p.slices.size()).sum());
  }
}
