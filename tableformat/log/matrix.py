"""The conflict matrix (Lance's, specs/format.md §10): what a lost commit race means.

`MATRIX[later][earlier]` is the later writer's outcome when the earlier one
committed first and both touch the same data (same keys, rowsets, tag or
history). A requirement (`requirements`) finds whether a winner touched what the
write relies on; the matrix decides the outcome, from the write's kind
(`WriteFragment.kind`) and the winner's (`winner_kind`, read from its actions).
Disjoint writes always rebase. A REBASE the requirement cannot carry out (a
row it only read was rewritten, a REDO record lost its row) falls back to
`fallback(kind)`: a data write plans again, anything else gives up.
"""
from __future__ import annotations

from enum import Enum

from .actions import AddDelta, AddRowSet, AddTag, Commit, RemoveDelta, RemoveRowSet, RemoveTag, SetHistory


class Outcome(str, Enum):
    REBASE = "rebase"      # still valid: commit on top of the winners (maybe with remapped actions)
    RESTART = "restart"    # the plan may be wrong now: plan again on the new snapshot
    FAIL = "fail"          # the write can never succeed as planned: a typed error


# The operations of the matrix, as specs/format.md §10 names them: a fragment's kind (a row).
OPERATIONS = ("insert", "insert_ignore", "mutation", "alter", "minor_delta", "major_delta", "merge",
              "undo_gc", "vacuum", "spark_insert", "spark_merge", "restore", "tag", "untag")
# The winners (columns): a restore commits ordinary row operations, so it wins as a data write.
WINNERS = tuple(k for k in OPERATIONS if k != "restore")
# Kinds that plan again after RESTART (transaction.run); the others give up instead.
RESTARTABLE = frozenset({"insert", "insert_ignore", "mutation", "alter", "spark_insert", "spark_merge",
                         "restore"})

_R, _S, _F = Outcome.REBASE, Outcome.RESTART, Outcome.FAIL
MATRIX: dict[str, dict[str, Outcome]] = {
    #                ins ins_ig mut alter minor major merge undo vac sp_ins sp_mrg tag untag
    "insert":        dict(zip(WINNERS, (_F, _F, _F, _S, _R, _R, _R, _R, _R, _F, _F, _R, _R))),
    "insert_ignore": dict(zip(WINNERS, (_S, _S, _S, _S, _R, _R, _R, _R, _R, _S, _S, _R, _R))),
    "mutation":      dict(zip(WINNERS, (_S, _S, _S, _S, _R, _R, _R, _R, _R, _S, _S, _R, _R))),
    "alter":         dict(zip(WINNERS, (_S, _S, _S, _S, _R, _R, _S, _R, _R, _S, _S, _R, _R))),
    "minor_delta":   dict(zip(WINNERS, (_R, _R, _R, _F, _F, _F, _F, _F, _R, _R, _R, _F, _R))),
    "major_delta":   dict(zip(WINNERS, (_R, _R, _R, _F, _F, _F, _F, _F, _R, _R, _R, _F, _R))),
    "merge":         dict(zip(WINNERS, (_R, _R, _R, _F, _F, _F, _F, _F, _R, _R, _R, _F, _R))),
    "undo_gc":       dict(zip(WINNERS, (_R, _R, _R, _F, _F, _F, _F, _F, _R, _R, _R, _F, _R))),
    "vacuum":        dict(zip(WINNERS, (_R, _R, _R, _R, _R, _R, _R, _R, _R, _R, _R, _F, _R))),
    "spark_insert":  dict(zip(WINNERS, (_S, _S, _S, _S, _R, _R, _R, _R, _R, _S, _S, _R, _R))),
    "spark_merge":   dict(zip(WINNERS, (_S, _S, _S, _S, _R, _R, _R, _R, _R, _S, _S, _R, _R))),
    "restore":       dict(zip(WINNERS, (_S, _S, _S, _S, _R, _R, _R, _R, _R, _S, _S, _R, _R))),
    "tag":           dict(zip(WINNERS, (_R, _R, _R, _R, _R, _F, _F, _F, _F, _R, _R, _F, _R))),
    "untag":         dict(zip(WINNERS, (_R, _R, _R, _R, _R, _R, _R, _R, _R, _R, _R, _R, _F))),
}


def winner_kind(c: Commit) -> str:
    """The matrix column of a commit that won a race, from its actions (a commit records no
    kind). Data writes all share one column's outcomes, so any data write reads as "mutation"."""
    if c.changes_definition:
        return "alter"
    if c.of(AddTag):
        return "tag"
    if c.of(RemoveTag):
        return "untag"
    if c.data_change and c.of(AddRowSet, AddDelta, RemoveRowSet):
        return "mutation"
    if c.of(RemoveRowSet) and c.of(AddRowSet):
        return "merge"
    if c.of(AddRowSet):
        return "major_delta"
    if c.of(SetHistory) and c.of(RemoveDelta, RemoveRowSet):
        return "undo_gc"
    if c.of(RemoveDelta, AddDelta):
        return "minor_delta"
    return "vacuum"


def decide(kind: str, winner: Commit) -> Outcome:
    """The outcome for a write of `kind` whose requirement found `winner` touched its data."""
    return MATRIX[kind][winner_kind(winner)]


def fallback(kind: str) -> Outcome:
    """The outcome when the matrix says REBASE but the requirement cannot carry the write over."""
    return Outcome.RESTART if kind in RESTARTABLE else Outcome.FAIL
