package tableformat.log;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.hadoop.conf.Configuration;

/**
 * A table log written by a test (specs/format.md §8): commit files of format version 5 (or
 * {@link #formatVersion}) with their
 * checksums, for a table keyed by int64 {@code k} with a double {@code v}, in two range partitions
 * ({@code r0}: k below 100, {@code r1}: from 100). No data file exists: the log alone is replayed.
 */
public final class TestLog {
  public static final ObjectMapper JSON = new ObjectMapper();
  public static final String TABLE_ID = "t0";
  private final Path root;
  private long next;
  /** The table_id the next commits carry (another one: a replaced table, §8.2). */
  public String tableId = TABLE_ID;
  /** The format version the next commits declare (each declares what its contents need, §8.1). */
  public int formatVersion = 5;

  public TestLog(Path root) {
    this.root = root;
  }

  /** A writer of the commits after the log's {@code next - 1}. */
  public TestLog(Path root, long next) {
    this.root = root;
    this.next = next;
  }

  public LogReader reader() {
    return new LogReader(new LogStore(root.toString(), new Configuration()));
  }

  public Path root() {
    return root;
  }

  /** Writes the next commit (timestamp 1000 * (version + 1)) with these actions; returns its version. */
  public long commit(String operation, JsonNode... actions) throws IOException {
    long v = next++;
    ObjectNode c = JSON.createObjectNode();
    c.put("format_version", formatVersion).put("version", v).put("timestamp", 1000 * (v + 1)).put("operation", operation);
    c.put("table_id", tableId);
    ArrayNode a = c.putArray("actions");
    for (JsonNode x : actions) a.add(x);
    c.put("checksum", Checksum.expected(c, "actions"));
    write(LogReader.commitPath(v), JSON.writeValueAsString(c));
    return v;
  }

  /**
   * Writes checkpoint {@code v} (§8.3, format 5, its whole-file checksum) of a state holding
   * {@code rowsets} (add_rowset actions, stamped as created at their own versions' timestamps in
   * {@code createdAt}) and no delta, with the history of versions 0..v under {@code operations}.
   */
  public void checkpoint(long v, String[] operations, long[] createdAt, JsonNode... rowsets) throws IOException {
    ObjectNode st = ((ObjectNode) metadata().get("metadata").deepCopy());
    st.put("table_id", tableId).put("version", v).put("timestamp", 1000 * (v + 1));
    ArrayNode rs = st.putArray("rowsets");
    for (int i = 0; i < rowsets.length; i++)
      rs.add(((ObjectNode) rowsets[i].get("add_rowset").deepCopy()).put("created_ts", createdAt[i]));
    ObjectNode c = JSON.createObjectNode();
    c.put("format_version", 5).put("version", v).set("state", st);
    ArrayNode h = c.putArray("history");
    for (int i = 0; i <= v; i++)
      h.addArray().add(i).add(1000 * (i + 1)).add(operations[i]).add(JSON.createObjectNode()).addNull();
    c.put("checksum", Checksum.expected(c, "state"));
    write(LogReader.checkpointPath(v), JSON.writeValueAsString(c));
  }

  public void write(String rel, String text) throws IOException {
    Path p = root.resolve(rel);
    Files.createDirectories(p.getParent());
    Files.writeString(p, text, StandardCharsets.UTF_8);
  }

  public static JsonNode json(String text) {
    try {
      return JSON.readTree(text.replace('\'', '"'));
    } catch (IOException e) {
      throw new IllegalArgumentException(e);
    }
  }

  /** Version 0's metadata action. */
  public static JsonNode metadata() {
    return json("{'metadata':{'format_version':5,'table_id':'t0','name':'t','schema':{'columns':["
        + "{'id':0,'name':'k','type':'int64','nullable':false,'default':null,'read_default':null},"
        + "{'id':1,'name':'v','type':'double','nullable':true,'default':null,'read_default':null}],"
        + "'primary_key':['k'],'next_column_id':2},'partitioning':{'hash':[],'range_column_ids':[0],'ranges':["
        + "{'id':0,'lower':null,'upper':'8000000000000064','lower_values':null,'upper_values':[100]},"
        + "{'id':1,'lower':'8000000000000064','upper':null,'lower_values':[100],'upper_values':null}],"
        + "'next_range_id':2},'properties':{'history_max_age':-1}}}");
  }

  /** The order-preserving key of an int64 (§4.1): big-endian with the sign bit flipped, as hex. */
  public static String key(long k) {
    return String.format("%016x", k ^ Long.MIN_VALUE);
  }

  /** An add_rowset of keys lo..hi in {@code tablet}, with min/max statistics of k and v. */
  public static JsonNode addRowset(String id, String tablet, long lo, long hi, double vmin, double vmax) {
    String dir = "tablets/" + tablet + "/" + id + "/";
    return json("{'add_rowset':{'id':'" + id + "','tablet':'" + tablet + "','num_rows':" + (hi - lo + 1)
        + ",'min_key':'" + key(lo) + "','max_key':'" + key(hi) + "','base':[{'path':'" + dir + "base.parquet',"
        + "'size':1000,'column_ids':[0,1],'crc32':1}],'pk_index':{'path':'" + dir + "pkindex.parquet','size':500,"
        + "'crc32':2},'bloom':{'path':'" + dir + "bloom.bin','size':56,'crc32':3},'stats':{'0':{'nulls':0,'min':" + lo
        + ",'max':" + hi + "},'1':{'nulls':0,'nan':0,'min':" + vmin + ",'max':" + vmax + "}}}}");
  }

  /** A REDO delta of {@code rowset}: {@code deletes} deletes, {@code updates} updates of v. */
  public static JsonNode addRedo(String rowset, String tablet, String name, int deletes, int updates) {
    return json("{'add_delta':{'path':'tablets/" + tablet + "/" + rowset + "/" + name + "','size':400,"
        + "'kind':'redo','rowset':'" + rowset + "','num_records':" + (deletes + updates) + ",'delete_count':"
        + deletes + ",'reinsert_count':0,'update_counts':{" + (updates > 0 ? "'1':" + updates : "") + "},"
        + "'min_ts':0,'max_ts':0,'has_ts_column':false,'crc32':4}}");
  }

  public static JsonNode removeRowset(String id) {
    return json("{'remove_rowset':{'id':'" + id + "'}}");
  }

  /** A streaming batch's record (format 6, §8.2). */
  public static JsonNode txn(String appId, long version) {
    return json("{'txn':{'app_id':'" + appId + "','version':" + version + "}}");
  }

  public static JsonNode tag(String name, long version, long ts) {
    return json("{'tag':{'name':'" + name + "','version':" + version + ",'timestamp':" + ts + "}}");
  }

  /**
   * The standard history: v0 create; v1 inserts rowsets a (k 0..49, r0), b (50..99, r0) and
   * c (100..199, r1); v2 tags v1 "nightly"; v3 deletes 5 rows of a and updates v in 3 rows of c;
   * v4 compacts a and b into d (k 0..99, r0), the delta of a gone with it.
   */
  public static TestLog standard(Path root) throws IOException {
    TestLog log = new TestLog(root);
    log.commit("CREATE TABLE", metadata());
    log.commit("INSERT", addRowset("a", "r0", 0, 49, -1.0, 0.5), addRowset("b", "r0", 50, 99, 0.25, 2.0),
        addRowset("c", "r1", 100, 199, 10.0, 20.0));
    log.commit("TAG", tag("nightly", 1, 2000));
    log.commit("DELETE", addRedo("a", "r0", "redo-1.parquet", 5, 0), addRedo("c", "r1", "redo-2.parquet", 0, 3));
    log.commit("COMPACT", removeRowset("a"), removeRowset("b"), addRowset("d", "r0", 0, 99, -1.0, 2.0));
    return log;
  }
}
