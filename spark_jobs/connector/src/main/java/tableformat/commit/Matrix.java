package tableformat.commit;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The conflict matrix (specs/format.md §10.2), as tableformat/log/matrix.py holds it: the outcome
 * for a write of one kind (row) against a winner of another (column), when both touch the same
 * data. A winner's kind is read from its actions: a commit records none.
 */
final class Matrix {
  private Matrix() {}

  enum Outcome { REBASE, RESTART, FAIL }

  static final List<String> OPERATIONS = List.of("insert", "insert_ignore", "mutation", "alter", "minor_delta",
      "major_delta", "merge", "undo_gc", "vacuum", "spark_insert", "spark_merge", "restore", "tag", "untag");
  static final List<String> WINNERS = OPERATIONS.stream().filter(k -> !k.equals("restore")).toList();
  static final Set<String> RESTARTABLE = Set.of("insert", "insert_ignore", "mutation", "alter", "spark_insert",
      "spark_merge", "restore");
  /** Kinds that write rows: they may share one commit (§10.2). */
  static final Set<String> DATA_WRITES = Set.of("insert", "insert_ignore", "mutation", "spark_insert", "spark_merge");

  private static final Map<String, Outcome[]> ROWS = new HashMap<>();

  private static void row(String kind, String cells) {
    Outcome[] o = new Outcome[cells.length()];
    for (int i = 0; i < o.length; i++)
      o[i] = switch (cells.charAt(i)) { case 'R' -> Outcome.REBASE; case 'S' -> Outcome.RESTART; default -> Outcome.FAIL; };
    ROWS.put(kind, o);
  }

  static {
    //                    ins ins_ig mut alter minor major merge undo vac sp_ins sp_mrg tag untag
    row("insert",        "FFFSRRRRRFFRR");
    row("insert_ignore", "SSSSRRRRRSSRR");
    row("mutation",      "SSSSRRRRRSSRR");
    row("alter",         "SSSSRRSRRSSRR");
    row("minor_delta",   "RRRFFFFFRRRFR");
    row("major_delta",   "RRRFFFFFRRRFR");
    row("merge",         "RRRFFFFFRRRFR");
    row("undo_gc",       "RRRFFFFFRRRFR");
    row("vacuum",        "RRRRRRRRRRRFR");
    row("spark_insert",  "SSSSRRRRRSSRR");
    row("spark_merge",   "SSSSRRRRRSSRR");
    row("restore",       "SSSSRRRRRSSRR");
    row("tag",           "RRRRRFFFFRRFR");
    row("untag",         "RRRRRRRRRRRRF");
  }

  static Outcome cell(String kind, String winnerKind) {
    return ROWS.get(kind)[WINNERS.indexOf(winnerKind)];
  }

  /** The outcome for a write of {@code kind} whose requirement found {@code winner} touched its data. */
  static Outcome decide(String kind, JsonNode winner) {
    return cell(kind, winnerKind(winner));
  }

  /** The outcome when the matrix says rebase but the requirement cannot carry the write over. */
  static Outcome fallback(String kind) {
    return RESTARTABLE.contains(kind) ? Outcome.RESTART : Outcome.FAIL;
  }

  /** A winner's column, from its actions (Python's winner_kind): data writes share one column. */
  static String winnerKind(JsonNode commit) {
    if (has(commit, "metadata", "alter")) return "alter";
    if (has(commit, "tag")) return "tag";
    if (has(commit, "untag")) return "untag";
    if (dataChange(commit) && has(commit, "add_rowset", "add_delta", "remove_rowset")) return "mutation";
    if (has(commit, "remove_rowset") && has(commit, "add_rowset")) return "merge";
    if (has(commit, "add_rowset")) return "major_delta";
    if (has(commit, "history") && has(commit, "remove_delta", "remove_rowset")) return "undo_gc";
    if (has(commit, "remove_delta", "add_delta")) return "minor_delta";
    return "vacuum";
  }

  static boolean dataChange(JsonNode commit) {
    JsonNode d = commit.get("data_change");
    return d == null || d.isNull() || d.asBoolean(true);
  }

  /** Whether the commit holds an action of one of these keys. */
  static boolean has(JsonNode commit, String... keys) {
    for (JsonNode a : commit.path("actions"))
      for (String k : keys) if (a.has(k)) return true;
    return false;
  }

  /** How strict a row is (its fail cells, then its restart cells): a commit of several kinds is
   *  known by its strictest. */
  static int strictness(String kind) {
    int fail = 0, restart = 0;
    for (Outcome o : ROWS.get(kind)) {
      if (o == Outcome.FAIL) fail++;
      if (o == Outcome.RESTART) restart++;
    }
    return fail * 100 + restart;
  }
}
