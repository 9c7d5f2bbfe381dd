package tableformat.plan;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import tableformat.log.DeltaFile;
import tableformat.log.FileRef;
import tableformat.log.RowSet;
import tableformat.log.TableState;

/**
 * The read plan of one snapshot (specs/format.md §9.4, Python's {@code Snapshot.read_plan}):
 * the rowsets a scan needs (rule 1: live, visible at the cut, not pruned), per rowset the base
 * file of each column read (rule 2), the REDO files ranked by max_ts then log order with the cut
 * (rule 3), the UNDO files newer than the cut (rule 6) and whether the rowset is native.
 * Pruning uses only the log unless a {@link KeySeek} is given: a key interval that falls between
 * two keys of a rowset is seen only by seeking its PK index, as the engine does.
 */
public final class Planner {
  private Planner() {}

  /** A delta file of the plan with its rank and the read columns it changes. */
  public record DeltaPlan(DeltaFile file, int order, List<Integer> updates, boolean deletes) {}

  /** A base file and the read columns it provides. */
  public record BasePlan(FileRef file, List<Integer> columns) {}

  public record RowSetPlan(RowSet rowset, List<BasePlan> base, List<DeltaPlan> redo, List<DeltaPlan> undo,
                           List<Integer> missing, boolean nativeRead, String reason) {}

  public record ReadPlan(TableState state, Schema schema, List<Column> columns, List<RowSetPlan> rowsets) {}

  /** The plan of a scan of {@code state}: {@code columns} null for all, {@code filter} as FilterParser takes;
   * pruned from the log alone. */
  public static ReadPlan plan(TableState state, List<String> columns, JsonNode filter) {
    return plan(state, columns, filter, null);
  }

  /** The plan, with {@code seek} (null: none) dropping rowsets that hold no key of the filter's key
   * interval although their bounds straddle it, as the engine's scan does. */
  public static ReadPlan plan(TableState state, List<String> columns, JsonNode filter, KeySeek seek) {
    Schema schema = new Schema(state.schema());
    List<Column> cols = new ArrayList<>();
    if (columns == null) cols.addAll(schema.columns);
    else for (String n : columns) cols.add(schema.column(n));
    List<Predicate> preds = FilterParser.parse(schema, filter);
    Map<String, Bounds> bounds = Bounds.of(preds);
    List<RowSetPlan> out = new ArrayList<>();
    for (RowSet rs : rowsets(state, schema, bounds, seek)) out.add(rowsetPlan(state, rs, cols));
    return new ReadPlan(state, schema, cols, out);
  }

  /** Rule 1: live rowsets visible at the cut, less those pruned by tablet, key range and statistics. */
  static List<RowSet> rowsets(TableState state, Schema schema, Map<String, Bounds> bounds, KeySeek seek) {
    List<RowSet> out = new ArrayList<>();
    for (Bounds b : bounds.values()) if (b.empty) return out;
    Set<String> tablets = new HashSet<>(Pruning.tablets(schema, state.partitioning(), bounds));
    byte[][] range = Pruning.keyRange(schema.key, bounds);
    Long readTs = state.readTs();
    for (RowSet rs : state.rowsets()) {
      if (!tablets.contains(rs.tablet())) continue;
      if (readTs != null && (rs.createdTs() == null ? 0 : rs.createdTs()) > readTs) continue;
      if (!rs.visibleAt(readTs)) continue;
      if (range[0] != null && Arrays.compareUnsigned(rs.maxKey(), range[0]) < 0) continue;
      if (range[1] != null && Arrays.compareUnsigned(rs.minKey(), range[1]) >= 0) continue;
      Set<Integer> updated = new HashSet<>();
      for (DeltaFile d : state.deltasOf(rs.id()))
        for (Map.Entry<Integer, Long> e : d.updateCounts().entrySet()) if (e.getValue() != 0) updated.add(e.getKey());
      boolean may = true;
      for (Map.Entry<String, Bounds> e : bounds.entrySet()) {
        Column c = schema.column(e.getKey());
        if (updated.contains(c.id())) continue;
        if (!Pruning.statsMayMatch(c, rs.statsOf(c.id()), rs.numRows(), e.getValue())) {
          may = false;
          break;
        }
      }
      if (!may || rs.numRows() == 0) continue;
      if (seek != null && (range[0] != null || range[1] != null) && !seek.anyKeyIn(rs, range[0], range[1])) continue;
      out.add(rs);
    }
    return out;
  }

  static RowSetPlan rowsetPlan(TableState state, RowSet rs, List<Column> cols) {
    Set<Integer> wanted = new HashSet<>();
    List<Integer> missing = new ArrayList<>();
    Map<String, List<Integer>> byFile = new LinkedHashMap<>();
    for (Column c : cols) {
      wanted.add(c.id());
      FileRef f = rs.baseFileFor(c.id());
      if (f == null) missing.add(c.id());
      else byFile.computeIfAbsent(f.path(), k -> new ArrayList<>()).add(c.id());
    }
    List<BasePlan> base = new ArrayList<>();
    for (FileRef f : rs.base()) if (byFile.containsKey(f.path())) base.add(new BasePlan(f, byFile.remove(f.path())));
    if (base.isEmpty()) base.add(new BasePlan(rs.base().get(0), List.of()));
    List<DeltaFile> deltas = state.deltasOf(rs.id());
    Long readTs = state.readTs();
    List<DeltaFile> redoFiles = new ArrayList<>();
    for (DeltaFile d : deltas) if (d.isRedo()) redoFiles.add(d);
    redoFiles.sort((a, b) -> Long.compare(a.maxTs(), b.maxTs()));          // stable: ties in log order
    List<DeltaPlan> redo = new ArrayList<>();
    for (int i = 0; i < redoFiles.size(); i++) {
      DeltaFile d = redoFiles.get(i);
      if (readTs != null && d.minTs() > readTs) continue;
      DeltaPlan p = deltaPlan(d, i, wanted);
      if (!p.updates().isEmpty() || p.deletes()) redo.add(p);
    }
    List<DeltaPlan> undo = new ArrayList<>();
    boolean undoNeeded = false;
    int rank = 0;
    for (DeltaFile d : deltas) {
      if (d.isRedo() || readTs == null || d.maxTs() <= readTs) continue;
      undoNeeded = true;
      DeltaPlan p = deltaPlan(d, rank++, wanted);
      if (!p.updates().isEmpty() || p.deletes()) undo.add(p);
    }
    String reason = undoNeeded ? "version " + state.version() + " is behind the history horizon and needs UNDO records" : null;
    return new RowSetPlan(rs, base, redo, undo, missing, !undoNeeded, reason);
  }

  private static DeltaPlan deltaPlan(DeltaFile d, int order, Set<Integer> wanted) {
    List<Integer> ups = new ArrayList<>();
    for (int c : wanted) if (d.updates(c)) ups.add(c);
    ups.sort(null);
    return new DeltaPlan(d, order, ups, d.deleteCount() != 0 || d.reinsertCount() != 0);
  }
}
