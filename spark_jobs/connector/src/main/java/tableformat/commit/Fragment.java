package tableformat.commit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import tableformat.log.CanonicalJson;
import tableformat.log.ContradictoryFragmentsError;
import tableformat.log.InvalidOptionError;
import tableformat.log.Json;

/**
 * A write fragment (specs/format.md §10.2): what one writer planned and wrote on one snapshot, as
 * Python's {@code WriteFragment.to_json} writes it, and {@link #combine} of the fragments of one
 * commit as Python's {@code WriteFragment.combine} (one snapshot, one table; several kinds only
 * among data writes, each requirement then answering as its own fragment's row of the matrix).
 */
record Fragment(String operation, long readVersion, List<JsonNode> actions, List<String> files,
                Map<String, Long> counts, List<JsonNode> requirements, boolean dataChange, String tableId, String kind) {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /** The kinds this committer commits: the rows a JVM writer makes now (§10.2), deletes among
   *  them (a mutation's {@code rows_live}; one whose REDO records a merging compaction would have
   *  to remap is refused, {@link Requirements}). The others (compactions) rewrite delta files,
   *  which only the engine (Python's {@code Table.commit_fragments}) does. */
  static final Set<String> KINDS = Set.of("insert", "insert_ignore", "spark_insert", "alter", "mutation",
      "spark_merge");

  static Fragment parse(String json) {
    JsonNode d;
    try {
      d = Json.MAPPER.readTree(json);
    } catch (IOException e) {
      throw new InvalidOptionError("not a write fragment's to_json(): " + e.getMessage());
    }
    try {
      String kind = d.path("kind").asText("mutation");
      if (!Matrix.OPERATIONS.contains(kind))
        throw new InvalidOptionError("a write fragment's kind must be one of " + Matrix.OPERATIONS + ", got '" + kind + "'");
      if (!KINDS.contains(kind))
        throw new InvalidOptionError("the JVM committer commits fragments of kinds " + new TreeSet<>(KINDS) + ", got '"
            + kind + "': commit it with the engine's Table.commit_fragments");
      List<JsonNode> actions = new ArrayList<>();
      for (JsonNode a : need(d, "actions")) actions.add(a);
      List<String> files = new ArrayList<>();
      for (JsonNode f : need(d, "files")) files.add(f.asText());
      Map<String, Long> counts = new LinkedHashMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = need(d, "counts").fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        counts.put(e.getKey(), e.getValue().asLong());
      }
      List<JsonNode> reqs = new ArrayList<>();
      for (JsonNode r : need(d, "requirements")) {
        Requirements.known(r);
        reqs.add(r);
      }
      JsonNode rv = need(d, "read_version");
      if (!rv.isIntegralNumber()) throw new InvalidOptionError("not a write fragment's to_json(): read_version " + rv);
      JsonNode tid = d.get("table_id");
      return new Fragment(need(d, "operation").asText(), rv.asLong(), actions, files, counts, reqs,
          d.path("data_change").asBoolean(true), tid == null || tid.isNull() ? null : tid.asText(), kind);
    } catch (NullPointerException | ClassCastException e) {
      throw new InvalidOptionError("not a write fragment's to_json(): " + e);
    }
  }

  private static JsonNode need(JsonNode d, String key) {
    JsonNode v = d.get(key);
    if (v == null) throw new InvalidOptionError("not a write fragment's to_json(): KeyError '" + key + "'");
    return v;
  }

  boolean empty() {
    return actions.isEmpty();
  }

  boolean addsRowsets() {
    for (JsonNode a : actions) if (a.has("add_rowset")) return true;
    return false;
  }

  /** The fragments of one commit as one; {@code counts} (a job's totals) replace the summed ones. */
  static Fragment combine(List<Fragment> fragments, String operation, Map<String, Long> counts) {
    if (fragments == null || fragments.isEmpty())
      throw new InvalidOptionError("fragments must be a non-empty list of write fragments");
    Set<Long> versions = new TreeSet<>();
    Set<String> tables = new TreeSet<>();
    List<String> kinds = new ArrayList<>();
    for (Fragment f : fragments) {
      versions.add(f.readVersion);
      if (f.tableId != null) tables.add(f.tableId);
      if (!kinds.contains(f.kind)) kinds.add(f.kind);
    }
    if (versions.size() != 1)
      throw new InvalidOptionError("write fragments were planned on different versions " + versions
          + "; plan every fragment of one commit on one snapshot");
    if (tables.size() > 1) throw new InvalidOptionError("write fragments were planned on different tables " + tables);
    kinds.sort(Comparator.comparingInt(Matrix.OPERATIONS::indexOf));
    if (kinds.size() > 1 && !Matrix.DATA_WRITES.containsAll(kinds))
      throw new InvalidOptionError("write fragments of kinds " + kinds + " make no one commit: only data writes "
          + new TreeSet<>(Matrix.DATA_WRITES) + " share a commit");
    Map<String, Long> summed = new LinkedHashMap<>();
    for (Fragment f : fragments) for (Map.Entry<String, Long> e : f.counts.entrySet()) summed.merge(e.getKey(), e.getValue(), Long::sum);
    if (fragments.size() > 1) {
      rowsOnce(fragments);
      absentKeysBesideInserts(fragments);
    }
    List<JsonNode> reqs = new ArrayList<>();
    if (fragments.stream().filter(Fragment::addsRowsets).count() > 1)
      reqs.add(F.objectNode().put("kind", "rowsets_disjoint"));     // rows two fragments insert must not share a key
    if (kinds.size() == 1) {
      List<JsonNode> all = new ArrayList<>(reqs);
      for (Fragment f : fragments) all.addAll(f.requirements);
      reqs = merged(all);
    } else {
      for (String k : kinds) {
        List<JsonNode> of = new ArrayList<>();
        for (Fragment f : fragments) if (f.kind.equals(k)) of.addAll(f.requirements);
        for (JsonNode r : merged(of)) {
          ObjectNode w = F.objectNode().put("kind", "of_kind").put("write_kind", k);
          w.set("requirement", r);
          reqs.add(w);
        }
      }
    }
    List<JsonNode> actions = new ArrayList<>();
    List<String> files = new ArrayList<>();
    boolean dataChange = true;
    for (Fragment f : fragments) {
      actions.addAll(f.actions);
      files.addAll(f.files);
      dataChange &= f.dataChange;
    }
    String kind = kinds.stream().max(Comparator.comparingInt(Matrix::strictness)).orElseThrow();
    return new Fragment(operation != null ? operation : fragments.get(0).operation, fragments.get(0).readVersion,
        actions, files, counts == null ? summed : new LinkedHashMap<>(counts), reqs, dataChange,
        tables.isEmpty() ? null : tables.iterator().next(), kind);
  }

  /** Python's _rows_once (§10.3): two fragments of one commit must not change one live row (their
   *  {@code rows_live}), nor may one change a row another skipped as live; refused before anything
   *  is committed with ContradictoryFragmentsError. */
  static void rowsOnce(List<Fragment> fragments) {
    Map<String, List<Set<Long>>> live = new LinkedHashMap<>();
    Map<String, Set<Long>> skipped = new LinkedHashMap<>();
    for (Fragment f : fragments) {
      Map<String, Set<Long>> mine = rowsOf(f, "rows_live");
      for (Map.Entry<String, Set<Long>> e : mine.entrySet())
        live.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(e.getValue());
      for (Map.Entry<String, Set<Long>> e : rowsOf(f, "skipped_keys_still_live").entrySet()) {
        Set<Long> s = new TreeSet<>(e.getValue());
        s.removeAll(mine.getOrDefault(e.getKey(), Set.of()));      // a fragment's own rows count once
        skipped.computeIfAbsent(e.getKey(), k -> new TreeSet<>()).addAll(s);
      }
    }
    long hits = 0;
    for (Map.Entry<String, List<Set<Long>>> e : live.entrySet()) {
      Set<Long> seen = new HashSet<>(), twice = new HashSet<>();
      for (Set<Long> s : e.getValue()) for (long id : s) if (!seen.add(id)) twice.add(id);
      hits += twice.size();
      for (long id : skipped.getOrDefault(e.getKey(), Set.of())) if (seen.contains(id)) hits++;
    }
    if (hits > 0)
      throw new ContradictoryFragmentsError(hits + " row(s) are changed by one fragment of this commit and changed or "
          + "skipped as live by another; fragments of one commit all read the same snapshot and have no order: "
          + "write these keys in separate commits", hits);
  }

  /** A mutation's keys found absent beside another fragment's rowsets need {@code inserts_unread}
   *  (§10.2), which only the engine checks: such a commit is refused here, nothing written. */
  private static void absentKeysBesideInserts(List<Fragment> fragments) {
    for (int i = 0; i < fragments.size(); i++) {
      Fragment f = fragments.get(i);
      if (!f.kind.equals("mutation") && !f.kind.equals("spark_merge")) continue;
      boolean absent = false;
      for (JsonNode r : f.requirements)
        if (r.path("kind").asText().equals("keys_absent") && !r.path("own_rowsets").asBoolean(false)
            && r.path("keys").size() > 0) absent = true;
      if (!absent) continue;
      for (int j = 0; j < fragments.size(); j++)
        if (j != i && fragments.get(j).addsRowsets())
          throw new InvalidOptionError("a mutation fragment's keys found absent beside another fragment's rowsets "
              + "need inserts_unread, which the JVM committer does not check: commit them with the engine's "
              + "Table.commit_fragments");
    }
  }

  private static Map<String, Set<Long>> rowsOf(Fragment f, String kind) {
    Map<String, Set<Long>> out = new LinkedHashMap<>();
    for (JsonNode r : f.requirements)
      if (r.path("kind").asText().equals(kind))
        for (Iterator<Map.Entry<String, JsonNode>> it = r.path("rows").fields(); it.hasNext(); ) {
          Map.Entry<String, JsonNode> e = it.next();
          Set<Long> s = out.computeIfAbsent(e.getKey(), k -> new TreeSet<>());
          for (long id : unpackRowids(e.getValue().asText())) s.add(id);
        }
    return out;
  }

  /** Python's _merged: keys found absent merged into one requirement, skipped rows likewise, rows
   *  a mutation changes likewise, the others once each. */
  static List<JsonNode> merged(List<JsonNode> reqs) {
    List<JsonNode> out = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    Map<String, LinkedHashSet<String>> keys = null;
    Map<String, TreeSet<Long>> skipped = null, live = null;
    boolean byValues = false;
    for (JsonNode r : reqs) {
      String k = r.path("kind").asText();
      if (k.equals("keys_absent") && !r.path("own_rowsets").asBoolean(false)) {
        if (keys == null) keys = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = r.path("keys").fields(); it.hasNext(); ) {
          Map.Entry<String, JsonNode> e = it.next();
          LinkedHashSet<String> s = keys.computeIfAbsent(e.getKey(), t -> new LinkedHashSet<>());
          for (JsonNode h : e.getValue()) s.add(h.asText());
        }
      } else if (k.equals("rows_live")) {
        if (live == null) live = new LinkedHashMap<>();
        byValues |= r.path("chosen_by_values").asBoolean(false);
        for (Iterator<Map.Entry<String, JsonNode>> it = r.path("rows").fields(); it.hasNext(); ) {
          Map.Entry<String, JsonNode> e = it.next();
          TreeSet<Long> s = live.computeIfAbsent(e.getKey(), t -> new TreeSet<>());
          for (long id : unpackRowids(e.getValue().asText())) s.add(id);
        }
      } else if (k.equals("skipped_keys_still_live")) {
        if (skipped == null) skipped = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = r.path("rows").fields(); it.hasNext(); ) {
          Map.Entry<String, JsonNode> e = it.next();
          TreeSet<Long> s = skipped.computeIfAbsent(e.getKey(), t -> new TreeSet<>());
          for (long id : unpackRowids(e.getValue().asText())) s.add(id);
        }
      } else if (seen.add(CanonicalJson.write(r))) {
        out.add(r);
      }
    }
    if (keys != null) {
      ObjectNode r = F.objectNode().put("kind", "keys_absent");
      ObjectNode ks = r.putObject("keys");
      for (Map.Entry<String, LinkedHashSet<String>> e : keys.entrySet()) {
        ArrayNode a = ks.putArray(e.getKey());
        for (String h : e.getValue()) a.add(h);
      }
      r.put("own_rowsets", false);
      out.add(r);
    }
    if (live != null) {
      ObjectNode r = F.objectNode().put("kind", "rows_live");
      ObjectNode rows = r.putObject("rows");
      for (Map.Entry<String, TreeSet<Long>> e : live.entrySet()) rows.put(e.getKey(), packRowids(e.getValue()));
      if (byValues) r.put("chosen_by_values", true);
      out.add(r);
    }
    if (skipped != null) {
      ObjectNode r = F.objectNode().put("kind", "skipped_keys_still_live");
      ObjectNode rows = r.putObject("rows");
      for (Map.Entry<String, TreeSet<Long>> e : skipped.entrySet()) rows.put(e.getKey(), packRowids(e.getValue()));
      out.add(r);
    }
    return out;
  }

  /** Rowids as the engine packs them: little-endian int64, base64 (requirements/base.py). */
  static long[] unpackRowids(String s) {
    ByteBuffer b = ByteBuffer.wrap(Base64.getDecoder().decode(s)).order(ByteOrder.LITTLE_ENDIAN);
    long[] out = new long[b.remaining() / 8];
    for (int i = 0; i < out.length; i++) out[i] = b.getLong();
    return out;
  }

  static String packRowids(Set<Long> ids) {
    ByteBuffer b = ByteBuffer.allocate(ids.size() * 8).order(ByteOrder.LITTLE_ENDIAN);
    for (long id : ids) b.putLong(id);
    return Base64.getEncoder().encodeToString(b.array());
  }
}
