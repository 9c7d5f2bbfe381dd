package tableformat.write;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tableformat.connector.ReadPlan;
import tableformat.log.InvalidOptionError;
import tableformat.log.LogStore;
import tableformat.log.RowSet;
import tableformat.log.TableState;
import tableformat.plan.Column;
import tableformat.plan.PlanJson;
import tableformat.plan.Planner;
import tableformat.plan.Schema;

/**
 * An insert planned on the driver from one snapshot (a {@link TableState}), shipped to every task
 * (specs/format.md §10.2): the definition the writers need (schema, partitioning and properties as
 * the log's JSON), the read version and table id the fragments carry, on_duplicate, and per tablet
 * the rowsets a key check probes: those a read of the snapshot sees (history-only rowsets, §8.2
 * live_until, are never probed), with their REDO files for the rows deleted as of the snapshot.
 */
public final class InsertPlan implements Serializable {
  public final String root;
  public final long version;
  public final String tableId;
  public final String name;
  public final String schemaJson, partitioningJson, propertiesJson;
  public final boolean ignore;
  public final Long readTs;
  public final List<String> keyColumns;
  public final List<String> columns;
  /** Non-nullable columns' positions in the input rows (the table's column order). */
  public final int[] required;
  public final Map<String, List<KeyCheck.Probed>> rowsets;
  /** Per column position: a string/varchar/binary column's cell limit applies (§2.1), and a
   *  varchar's length n (0: not a varchar). */
  public final boolean[] variable;
  public final int[] varcharLength;

  private InsertPlan(TableState st, String root, boolean ignore, Map<String, List<KeyCheck.Probed>> rowsets) {
    this.root = root;
    this.version = st.version();
    this.tableId = st.tableId();
    this.name = st.name();
    this.schemaJson = st.schema().toString();
    this.partitioningJson = st.partitioning().toString();
    this.propertiesJson = st.properties().toString();
    this.ignore = ignore;
    this.readTs = st.readTs();
    Schema s = new Schema(st.schema());
    List<String> keys = new ArrayList<>(), cols = new ArrayList<>();
    for (Column c : s.key) keys.add(c.name());
    List<Integer> req = new ArrayList<>();
    int ncols = st.schema().get("columns").size();
    this.variable = new boolean[ncols];
    this.varcharLength = new int[ncols];
    for (JsonNode c : st.schema().get("columns")) {
      if (!c.path("nullable").asBoolean(true) || keys.contains(c.get("name").asText())) req.add(cols.size());
      String type = c.get("type").asText().strip().toLowerCase(java.util.Locale.ROOT);
      java.util.regex.Matcher m = java.util.regex.Pattern.compile("varchar\\((\\d+)\\)").matcher(type);
      variable[cols.size()] = m.matches() || type.equals("string") || type.equals("binary");
      varcharLength[cols.size()] = m.matches() ? Integer.parseInt(m.group(1)) : 0;
      cols.add(c.get("name").asText());
    }
    this.keyColumns = List.copyOf(keys);
    this.columns = List.copyOf(cols);
    this.required = req.stream().mapToInt(Integer::intValue).toArray();
    this.rowsets = rowsets;
  }

  /** The plan of an insert into {@code st} (the table at {@code store}'s root); on_duplicate fail or ignore. */
  public static InsertPlan of(TableState st, LogStore store, String onDuplicate) {
    if (!"fail".equals(onDuplicate) && !"ignore".equals(onDuplicate))
      throw new InvalidOptionError("on_duplicate must be fail or ignore in the JVM insert, got '" + onDuplicate + "'");
    Schema s = new Schema(st.schema());
    List<String> keys = new ArrayList<>();
    for (Column c : s.key) keys.add(c.name());
    Planner.ReadPlan p = Planner.plan(st, keys, null, null);
    ReadPlan connector = ReadPlan.of(PlanJson.of(store, p));
    Map<String, RowSet> byId = new LinkedHashMap<>();
    for (RowSet r : st.rowsets()) byId.put(r.id(), r);
    Map<String, List<KeyCheck.Probed>> out = new LinkedHashMap<>();
    for (ReadPlan.RowSetPlan rp : connector.rowsets) {
      RowSet r = byId.get(rp.id);
      boolean deletes = false;
      for (ReadPlan.FilePlan f : rp.redo) deletes |= f.deletes;
      for (ReadPlan.FilePlan f : rp.undo) deletes |= f.deletes;
      if (r.bloom() == null) throw new tableformat.log.CorruptFileError("rowset " + r.id() + " has no bloom filter");
      out.computeIfAbsent(r.tablet(), t -> new ArrayList<>()).add(new KeyCheck.Probed(r.id(), r.tablet(), r.numRows(),
          r.minKey(), r.maxKey(), store.uri(r.pkIndex().path()), r.pkIndex().size(), r.pkIndex().crc32(),
          store.uri(r.bloom().path()), r.bloom().size(), r.bloom().crc32(), deletes ? rp : null));
    }
    return new InsertPlan(st, LogStore.normalize(store.uri("")), "ignore".equals(onDuplicate), out);
  }

  public String operation() {
    return ignore ? "INSERT_IGNORE" : "INSERT";
  }
}
