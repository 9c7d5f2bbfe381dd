package tableformat.commit;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.hadoop.ParquetReader;
import org.apache.parquet.hadoop.api.ReadSupport;
import org.apache.parquet.hadoop.example.GroupReadSupport;
import tableformat.commit.Matrix.Outcome;
import tableformat.log.CommitConflictError;
import tableformat.log.CorruptFileError;
import tableformat.log.DeltaFile;
import tableformat.log.DuplicateKeyError;
import tableformat.log.InvalidOptionError;
import tableformat.log.LogStore;
import tableformat.log.RowSet;
import tableformat.log.TableFormatError;
import tableformat.log.TableState;
import tableformat.log.TxnAlreadyCommittedError;
import tableformat.plan.BytesInputFile;
import tableformat.plan.ColumnType;
import tableformat.plan.KeyDecoder;
import tableformat.plan.PkIndexSeek;
import tableformat.plan.Schema;

/**
 * The requirements of the fragments this committer commits (specs/format.md §10.1), checked as
 * tableformat/log/requirements/ checks them: before the first attempt ({@link #precheck}) and
 * against exactly the commits that won a race ({@link #check}); a clash's outcome is the matrix's
 * cell (§10.2) for the write's kind and the winner's. The strictest answer wins.
 */
final class Requirements {
  private Requirements() {}

  /** The requirement kinds checked here: those of insert, insert_ignore, Spark insert, alter and
   *  delete fragments, and a txn's. */
  static final Set<String> KNOWN = Set.of("definition_unchanged", "keys_absent", "rowsets_disjoint", "of_kind",
      "skipped_keys_still_live", "txn_unseen", "no_rows_in_tablets", "data_unchanged", "rows_live");

  static void known(JsonNode r) {
    String k = r.path("kind").asText();
    if (!KNOWN.contains(k))
      throw new InvalidOptionError("the JVM committer does not check requirement '" + k + "': commit this fragment "
          + "with the engine's Table.commit_fragments");
    if (k.equals("of_kind")) known(r.path("requirement"));
  }

  record Verdict(Outcome outcome, String reason, TableFormatError error) {}

  static final Verdict REBASE = new Verdict(Outcome.REBASE, "", null);

  /** What a requirement may look at (Python's Context): the snapshot planned on, the state the
   *  winners start from, the winners, this write's own actions and its row of the matrix. */
  static final class Context {
    final LogStore store;
    final TableState snapshot, base;
    final List<JsonNode> winners, own;
    final String kind;
    final Map<String, List<byte[]>> keys;     // PK index keys read, by rowset id

    Context(LogStore store, TableState snapshot, TableState base, List<JsonNode> winners, List<JsonNode> own,
            String kind, Map<String, List<byte[]>> keys) {
      this.store = store;
      this.snapshot = snapshot;
      this.base = base;
      this.winners = winners;
      this.own = own;
      this.kind = kind;
      this.keys = keys;
    }

    Context as(String kind) {
      return new Context(store, snapshot, base, winners, own, kind, keys);
    }

    Outcome decide(JsonNode winner) {
      return Matrix.decide(kind, winner);
    }

    List<byte[]> keysOf(RowSet r) {
      return keys.computeIfAbsent(r.id(), id -> PkIndexSeek.keys(store, r.pkIndex()));
    }
  }

  static Verdict strictest(List<Verdict> vs) {
    Verdict best = REBASE;
    for (Verdict v : vs) if (v.outcome.ordinal() > best.outcome.ordinal()) best = v;
    return best;
  }

  /** The strictest answer of all requirements (fail, then restart, then rebase). */
  static Verdict checkAll(List<JsonNode> reqs, Context ctx, boolean before) {
    Verdict restart = null;
    for (JsonNode r : reqs) {
      Verdict v = before ? precheck(r, ctx) : check(r, ctx);
      if (v.outcome == Outcome.FAIL) return v;
      if (v.outcome == Outcome.RESTART && restart == null) restart = v;
    }
    return restart != null ? restart : REBASE;
  }

  static Verdict precheck(JsonNode r, Context ctx) {
    return switch (r.path("kind").asText()) {
      case "of_kind" -> precheck(r.get("requirement"), ctx.as(r.path("write_kind").asText()));
      case "keys_absent" -> r.path("own_rowsets").asBoolean(false) ? disjoint(ctx) : REBASE;
      case "rowsets_disjoint" -> disjoint(ctx);
      case "txn_unseen" -> {
        String app = r.path("app_id").asText();
        long v = r.path("version").asLong(), seen = ctx.base.txnVersion(app);
        yield seen >= v ? txnCommitted(app, v, seen, "version " + ctx.base.version()) : REBASE;
      }
      default -> REBASE;
    };
  }

  static Verdict check(JsonNode r, Context ctx) {
    List<Verdict> vs = new ArrayList<>();
    switch (r.path("kind").asText()) {
      case "of_kind" -> {
        return check(r.get("requirement"), ctx.as(r.path("write_kind").asText()));
      }
      case "definition_unchanged" -> {
        for (JsonNode c : ctx.winners)
          if (Matrix.has(c, "metadata", "alter"))
            vs.add(new Verdict(ctx.decide(c), "the table definition changed (ALTER TABLE)",
                new CommitConflictError("the table definition changed concurrently; run it again")));
      }
      case "keys_absent" -> {
        return keysAbsent(r, ctx);
      }
      case "rows_live" -> {
        return rowsLive(r, ctx);
      }
      case "skipped_keys_still_live" -> {
        for (JsonNode c : ctx.winners)
          if (Matrix.dataChange(c) && deletes(c))
            vs.add(new Verdict(ctx.decide(c), "rows were deleted concurrently: a skipped key may be gone", null));
      }
      case "no_rows_in_tablets" -> {
        Set<String> tablets = new java.util.HashSet<>();
        for (JsonNode t : r.path("tablets")) tablets.add(t.asText());
        for (JsonNode c : ctx.winners)
          for (RowSet n : newRowsets(ctx, List.of(c)))
            if (tablets.contains(n.tablet())) {
              vs.add(new Verdict(ctx.decide(c), "rows landed in a range being dropped", null));
              break;
            }
      }
      case "data_unchanged" -> {
        for (JsonNode c : ctx.winners)
          if (Matrix.dataChange(c) && Matrix.has(c, "add_rowset", "add_delta"))
            vs.add(new Verdict(ctx.decide(c), "data changed concurrently", null));
      }
      case "txn_unseen" -> {
        String app = r.path("app_id").asText();
        long v = r.path("version").asLong();
        for (JsonNode c : ctx.winners) {
          long seen = -1;
          for (JsonNode a : c.path("actions"))
            if (a.has("txn") && a.get("txn").path("app_id").asText().equals(app))
              seen = Math.max(seen, a.get("txn").path("version").asLong());
          if (seen >= v) return txnCommitted(app, v, seen, "the concurrent commit " + c.path("version").asLong());
        }
      }
      default -> { }       // rowsets_disjoint: before the first attempt only
    }
    return strictest(vs);
  }

  private static Verdict txnCommitted(String app, long version, long committed, String where) {
    return new Verdict(Outcome.FAIL, "txn '" + app + "' " + version + " already committed",
        new TxnAlreadyCommittedError("transaction " + version + " of application '" + app + "' is already committed ("
            + where + " records version " + committed + "); nothing was written", app, version, committed));
  }

  /** rows_live (Python's RowsLive): the rows this mutation changes (rowset -> rowids, and the rows
   *  of its own REDO files) are still live. A winner that deleted one gives its matrix cell (restart
   *  where the matrix says rebase: a deleted row cannot be carried over); one that removed such a
   *  rowset gives its cell, and rebases when it re-added the rowset under its id (a major delta
   *  compaction keeps rowids). A merging compaction of such a rowset (rebase in the matrix, the
   *  engine then remaps the REDO records by key onto its outputs) is refused here with
   *  CommitConflictError: this committer does not remap, so the statement runs again. */
  private static Verdict rowsLive(JsonNode r, Context ctx) {
    boolean chosenByValues = r.path("chosen_by_values").asBoolean(false);
    Map<String, BitSet> guarded = new HashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = r.path("rows").fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      BitSet b = new BitSet();
      for (long id : Fragment.unpackRowids(e.getValue().asText())) b.set(Math.toIntExact(id));
      guarded.put(e.getKey(), b);
    }
    for (JsonNode a : ctx.own)
      if (a.has("add_delta")) {
        DeltaFile d = DeltaFile.of(a.get("add_delta"));
        BitSet own = new BitSet();
        rowids(ctx.store, d, own);
        guarded.computeIfAbsent(d.rowset(), k -> new BitSet()).or(own);
      }
    List<Verdict> vs = new ArrayList<>();
    for (JsonNode c : ctx.winners) {
      Set<String> readded = new java.util.HashSet<>();
      for (JsonNode a : c.path("actions")) if (a.has("add_rowset")) readded.add(a.get("add_rowset").path("id").asText());
      for (JsonNode a : c.path("actions")) {
        if (a.has("remove_rowset")) {
          String id = a.get("remove_rowset").path("id").asText();
          if (!guarded.containsKey(id)) continue;
          Outcome o = ctx.decide(c);
          if (o != Outcome.REBASE) vs.add(new Verdict(o, "rowset " + id + " was removed", null));
          else if (!readded.contains(id))
            return new Verdict(Outcome.FAIL, "rowset " + id + " was rewritten by a merging compaction",
                new CommitConflictError("a compaction rewrote rowset " + id + " of table '" + ctx.base.name()
                    + "', whose rows this write changes, while it ran; the JVM committer does not remap its delta "
                    + "records onto the compaction's outputs: run the statement again"));
        } else if (a.has("add_delta")) {
          DeltaFile d = DeltaFile.of(a.get("add_delta"));
          BitSet mine = guarded.get(d.rowset());
          if (mine == null) continue;
          if (chosenByValues && d.isRedo()) {
            BitSet touched = new BitSet();
            rowids(ctx.store, d, touched);
            if (touched.intersects(mine))
              return new Verdict(Outcome.FAIL, "a row it chose by its values was changed concurrently",
                  new CommitConflictError("a concurrent commit changed a row of table '" + ctx.base.name()
                      + "' that this statement chose by its values (its condition read the row before the change); "
                      + "nothing was committed: run the statement again"));
          }
          if (d.deleteCount() + d.reinsertCount() == 0) continue;
          BitSet dead = new BitSet();
          ops(ctx.store, d, dead);
          if (dead.intersects(mine)) {
            Outcome o = ctx.decide(c);
            vs.add(new Verdict(o == Outcome.REBASE ? Matrix.fallback(ctx.kind) : o,
                "a row it changes was deleted concurrently", null));
          }
        }
      }
    }
    return strictest(vs);
  }

  private static boolean deletes(JsonNode c) {
    for (JsonNode a : c.path("actions"))
      if (a.has("add_delta") && a.get("add_delta").path("delete_count").asLong(0) > 0) return true;
    return false;
  }

  /** Rowsets the winners added that hold rows new to the table (a rowset a major delta compaction
   *  re-adds under its id is none). */
  static List<RowSet> newRowsets(Context ctx, List<JsonNode> winners) {
    List<RowSet> out = new ArrayList<>();
    for (JsonNode c : winners)
      for (JsonNode a : c.path("actions"))
        if (a.has("add_rowset")) {
          RowSet r = RowSet.of(a.get("add_rowset"));
          if (ctx.base.rowset(r.id()) == null) out.add(r);
        }
    return out;
  }

  static List<RowSet> ownRowsets(Context ctx) {
    List<RowSet> out = new ArrayList<>();
    for (JsonNode a : ctx.own) if (a.has("add_rowset")) out.add(RowSet.of(a.get("add_rowset")));
    return out;
  }

  /** Delta files the winners added, by rowset, in commit order. */
  private static Map<String, List<DeltaFile>> addedDeltas(List<JsonNode> winners) {
    Map<String, List<DeltaFile>> out = new HashMap<>();
    for (JsonNode c : winners)
      for (JsonNode a : c.path("actions"))
        if (a.has("add_delta")) {
          DeltaFile d = DeltaFile.of(a.get("add_delta"));
          out.computeIfAbsent(d.rowset(), k -> new ArrayList<>()).add(d);
        }
    return out;
  }

  private static boolean overlaps(RowSet a, RowSet b) {
    return a.tablet().equals(b.tablet()) && Arrays.compareUnsigned(a.maxKey(), b.minKey()) >= 0
        && Arrays.compareUnsigned(a.minKey(), b.maxKey()) <= 0;
  }

  /** keys_absent: no winner added a live row with one of the keys (own_rowsets: the keys of the
   *  rowsets this write adds). Each winner that did gives its matrix cell. */
  private static Verdict keysAbsent(JsonNode r, Context ctx) {
    Map<String, List<DeltaFile>> deltas = addedDeltas(ctx.winners);
    List<Verdict> vs = new ArrayList<>();
    for (JsonNode c : ctx.winners)
      if (!clashes(r, ctx, newRowsets(ctx, List.of(c)), deltas).isEmpty())
        vs.add(new Verdict(ctx.decide(c), "key(s) were inserted concurrently", null));
    if (vs.isEmpty()) return REBASE;
    List<byte[]> all = clashes(r, ctx, newRowsets(ctx, ctx.winners), deltas);
    all.sort(Arrays::compareUnsigned);
    List<byte[]> unique = new ArrayList<>();
    for (byte[] k : all) if (unique.isEmpty() || !Arrays.equals(unique.get(unique.size() - 1), k)) unique.add(k);
    Verdict v = strictest(vs);
    DuplicateKeyError err = new DuplicateKeyError(unique.size() + " key(s) were inserted concurrently in table '"
        + ctx.base.name() + "' (first: " + first(unique, ctx.base) + "); use insert_ignore or upsert", unique.size());
    return new Verdict(v.outcome, v.reason, err);
  }

  private static List<byte[]> clashes(JsonNode r, Context ctx, List<RowSet> added, Map<String, List<DeltaFile>> deltas) {
    List<byte[]> out = new ArrayList<>();
    if (r.path("own_rowsets").asBoolean(false)) {
      List<RowSet> mine = ownRowsets(ctx);
      for (RowSet theirs : added) {
        if (theirs.liveUntil() != null) continue;         // history-only: no key of it is live
        List<RowSet> ours = mine.stream().filter(o -> overlaps(o, theirs)).toList();
        if (ours.isEmpty()) continue;
        List<byte[]> live = liveKeys(ctx, theirs, deltas.getOrDefault(theirs.id(), List.of()));
        for (RowSet o : ours) out.addAll(intersect(live, ctx.keysOf(o)));
      }
    } else {
      for (Iterator<Map.Entry<String, JsonNode>> it = r.path("keys").fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        List<RowSet> theirs = added.stream().filter(x -> x.tablet().equals(e.getKey()) && x.liveUntil() == null).toList();
        if (theirs.isEmpty() || e.getValue().isEmpty()) continue;
        List<byte[]> keys = new ArrayList<>();
        for (JsonNode h : e.getValue()) keys.add(HexFormat.of().parseHex(h.asText()));
        keys.sort(Arrays::compareUnsigned);
        for (RowSet t : theirs) out.addAll(intersect(keys, liveKeys(ctx, t, deltas.getOrDefault(t.id(), List.of()))));
      }
    }
    return out;
  }

  /** rowsets_disjoint: the rowsets this commit adds share no key (fragments made apart). */
  private static Verdict disjoint(Context ctx) {
    Map<String, List<RowSet>> byTablet = new HashMap<>();
    for (RowSet r : ownRowsets(ctx)) byTablet.computeIfAbsent(r.tablet(), t -> new ArrayList<>()).add(r);
    long n = 0;
    for (List<RowSet> l : byTablet.values())
      for (int i = 1; i < l.size(); i++)
        for (int j = 0; j < i; j++)
          if (overlaps(l.get(i), l.get(j))) n += intersect(ctx.keysOf(l.get(i)), ctx.keysOf(l.get(j))).size();
    if (n == 0) return REBASE;
    return new Verdict(Outcome.FAIL, "duplicate keys across fragments", new DuplicateKeyError(n + " key(s) appear more "
        + "than once in the input of table '" + ctx.base.name() + "'; use insert_ignore semantics or deduplicate", n));
  }

  /** The keys of {@code a} (sorted) also in {@code b} (sorted). */
  static List<byte[]> intersect(List<byte[]> a, List<byte[]> b) {
    List<byte[]> out = new ArrayList<>();
    int i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
      int c = Arrays.compareUnsigned(a.get(i), b.get(j));
      if (c == 0) {
        out.add(a.get(i));
        i++;
        j++;
      } else if (c < 0) i++;
      else j++;
    }
    return out;
  }

  /** A rowset's keys less the rows its REDO files (in commit order) leave deleted. */
  private static List<byte[]> liveKeys(Context ctx, RowSet r, List<DeltaFile> deltas) {
    List<byte[]> keys = ctx.keysOf(r);
    BitSet dead = null;
    for (DeltaFile d : deltas) {
      if (!d.isRedo() || d.deleteCount() + d.reinsertCount() == 0) continue;
      if (dead == null) dead = new BitSet(keys.size());
      ops(ctx.store, d, dead);
    }
    if (dead == null || dead.isEmpty()) return keys;
    List<byte[]> out = new ArrayList<>(keys.size() - dead.cardinality());
    for (int i = 0; i < keys.size(); i++) if (!dead.get(i)) out.add(keys.get(i));
    return out;
  }

  private static final int DELETE = 2, REINSERT = 3;

  /** A REDO file's DELETEs set, its REINSERTs clear, their rows (§9 columns rowid, op). */
  private static void ops(LogStore store, DeltaFile d, BitSet dead) {
    read(store, d, dead, false);
  }

  /** Every row a delta file has a record of. */
  private static void rowids(LogStore store, DeltaFile d, BitSet rows) {
    read(store, d, rows, true);
  }

  private static void read(LogStore store, DeltaFile d, BitSet dead, boolean every) {
    byte[] raw = store.read(d.path());
    if (raw == null) throw new CorruptFileError("delta file " + d.path() + " is missing");
    try (ParquetReader<Group> rd = new ParquetReader.Builder<Group>(new BytesInputFile(raw)) {
      @Override
      protected ReadSupport<Group> getReadSupport() {
        return new GroupReadSupport();
      }
    }.build()) {
      for (Group g = rd.read(); g != null; g = rd.read()) {
        int op = g.getInteger("op", 0);
        int rowid = g.getInteger("rowid", 0);
        if (every || op == DELETE) dead.set(rowid);
        else if (op == REINSERT) dead.clear(rowid);
      }
    } catch (IOException | RuntimeException e) {
      throw new CorruptFileError("delta file " + d.path() + " is unreadable: " + e);
    }
  }

  /** Up to three keys as their values, for a message (Python's decoded_key). */
  private static String first(List<byte[]> keys, TableState s) {
    List<ColumnType> types = new Schema(s.schema()).key.stream().map(c -> c.type()).toList();
    List<String> out = new ArrayList<>();
    for (byte[] k : keys.subList(0, Math.min(3, keys.size()))) {
      List<Object> v = KeyDecoder.decode(k, types);
      if (v == null) out.add("'" + HexFormat.of().formatHex(k) + "'");
      else if (v.size() == 1) out.add(repr(v.get(0)));
      else out.add("(" + String.join(", ", v.stream().map(Requirements::repr).toList()) + ")");
    }
    return String.join(", ", out);
  }

  private static String repr(Object o) {
    if (o instanceof String s) return "'" + s + "'";
    if (o instanceof BigDecimal b) return "Decimal('" + b.toPlainString() + "')";
    if (o instanceof byte[] b) return "b'" + HexFormat.of().formatHex(b) + "'";
    return String.valueOf(o);
  }
}
