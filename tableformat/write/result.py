"""Write results: what one committed write did, as the caller sees it.

Built from the commit that landed and the fragment it committed (counts come
from the planner; rowsets and bytes from the actions), so every write path
(local, Spark driver, compaction) reports the same way.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..log.actions import AddDelta, AddRowSet, Commit
from ..log.fragment import WriteFragment
from ..format.metadata import TableState
from ..log.mvcc import Timestamp

COUNTS = ("inserted", "updated", "deleted", "ignored")


@dataclass(frozen=True)
class WriteResult:
    """What one committed write did."""

    version: int
    timestamp: Timestamp
    operation: str
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    ignored: int = 0
    rowsets_added: int = 0
    bytes_written: int = 0


def write_result(commit: Commit | None, frag: WriteFragment | None, state: TableState,
                 operation: str) -> WriteResult:
    """The result of a write: its commit's, or the unchanged `state`'s when it had nothing to commit."""
    counts = frag.counts if frag is not None else {}
    c = {k: counts.get(k, 0) for k in COUNTS}
    if commit is None:
        return WriteResult(state.version, Timestamp(state.timestamp), operation, **c)
    rowsets = frag.rowsets
    deltas = [a.delta for a in frag.actions if isinstance(a, AddDelta)]
    return WriteResult(commit.version, Timestamp(commit.timestamp), commit.operation, **c,
                       rowsets_added=len(rowsets),
                       bytes_written=sum(r.size_bytes for r in rowsets) + sum(d.size for d in deltas))


def rewrite_result(commit: Commit) -> WriteResult:
    """A rewrite's result from what it committed: the rowsets it added and the bytes of every file it
    added (base, PK index and bloom files of the rowsets; UNDO and remapped REDO delta files)."""
    rowsets = [a.rowset for a in commit.of(AddRowSet)]
    return WriteResult(commit.version, Timestamp(commit.timestamp), commit.operation, rowsets_added=len(rowsets),
                       bytes_written=sum(r.size_bytes for r in rowsets) + sum(a.delta.size for a in commit.of(AddDelta)))
