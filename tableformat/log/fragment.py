"""Write fragments: what one writer planned and wrote on one snapshot, as plain data.

Executors (threads, Spark tasks) produce fragments; a driver commits them with
`Table.commit_fragments`, which checks exactly the requirements a local write
checks. A fragment is immutable once made; `kind` is its row of the conflict
matrix (`matrix`). specs/format.md §10.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from .actions import Action, AddRowSet, action_from_json
from .conflicts import (InsertsUnread, KeysAbsent, OfKind, Requirement, RowsLive, RowSetsDisjoint,
                        SkippedKeysStillLive)
from . import retention, sequence, txn  # noqa: F401  (their requirements register for from_json)
from .matrix import MATRIX, OPERATIONS, Outcome
from ..format.errors import ContradictoryFragmentsError, InvalidOptionError, TableFormatError


@dataclass(frozen=True)
class WriteFragment:
    """What one writer planned and wrote on one snapshot: files, actions, counts, requirements.

    `rejected` (batch row numbers a lenient write skipped) stays with the process that made it;
    everything else round-trips through to_json / from_json."""

    operation: str
    read_version: int
    actions: Sequence[Action] = ()
    files: Sequence[str] = ()
    counts: dict[str, int] = field(default_factory=dict)
    requirements: Sequence[Requirement] = ()
    data_change: bool = True
    rejected: Any = None
    table_id: str | None = None       # the table it was planned on: never committed to another
    kind: str = "mutation"            # its row of the conflict matrix

    def __post_init__(self):
        if self.kind not in OPERATIONS:
            raise InvalidOptionError(f"a write fragment's kind must be one of {OPERATIONS}, got {self.kind!r}")
        for name in ("actions", "files", "requirements"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "counts", dict(self.counts))

    @property
    def empty(self) -> bool:
        return not self.actions

    def to_json(self) -> dict:
        return {"operation": self.operation, "read_version": self.read_version,
                "actions": [a.to_json() for a in self.actions], "files": list(self.files),
                "counts": dict(self.counts), "requirements": [r.to_json() for r in self.requirements],
                "data_change": self.data_change, "table_id": self.table_id, "kind": self.kind}

    @classmethod
    def from_json(cls, d: dict) -> "WriteFragment":
        try:
            return cls._from_json(d)
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            if isinstance(e, TableFormatError):
                raise
            raise InvalidOptionError(f"not a write fragment's to_json(): {type(e).__name__} {e}") from None

    @classmethod
    def _from_json(cls, d: dict) -> "WriteFragment":
        return cls(d["operation"], d["read_version"], [action_from_json(a) for a in d["actions"]],
                             list(d["files"]), dict(d["counts"]),
                             [Requirement.from_json(r) for r in d["requirements"]], d.get("data_change", True),
                             table_id=d.get("table_id"), kind=d.get("kind", "mutation"))

    @staticmethod
    def combine(fragments: Sequence["WriteFragment"], operation: str | None = None,
                counts: dict | None = None) -> "WriteFragment":
        """Fragments of one distributed write (same snapshot) as one; `counts` (a job's totals)
        replace the fragments' summed counts."""
        if not isinstance(fragments, (list, tuple)) or not fragments:
            raise InvalidOptionError(f"fragments must be a non-empty list of write fragments, got "
                                     f"{type(fragments).__name__} {fragments!r:.60}")
        bad = [f for f in fragments if not isinstance(f, WriteFragment)]
        if bad:
            raise InvalidOptionError(f"fragments must be tf.WriteFragment (or their to_json() dicts), got "
                                     f"{type(bad[0]).__name__}")
        if operation is not None and not isinstance(operation, str):
            raise InvalidOptionError(f"operation must be a string or None, got {type(operation).__name__}")
        versions = {f.read_version for f in fragments}
        if len(versions) != 1:
            raise InvalidOptionError(f"write fragments were planned on different versions {sorted(versions)}; "
                                     "plan every fragment of one commit on one snapshot")
        tables = {f.table_id for f in fragments} - {None}
        if len(tables) > 1:
            raise InvalidOptionError(f"write fragments were planned on different tables {sorted(tables)}")
        kinds = sorted({f.kind for f in fragments}, key=OPERATIONS.index)
        if len(kinds) > 1 and not set(kinds) <= DATA_WRITES:
            raise InvalidOptionError(f"write fragments of kinds {kinds} make no one commit: only data writes "
                                     f"({sorted(DATA_WRITES)}) share a commit")
        summed: dict[str, int] = {}
        reqs: list[Requirement] = []
        if sum(1 for f in fragments if f.rowsets) > 1:
            reqs.append(RowSetsDisjoint())      # rows two fragments insert must not share a key
        for f in fragments:
            for k, v in f.counts.items():
                summed[k] = summed.get(k, 0) + v
        if len(fragments) > 1:
            _rows_once(fragments)
        if len(kinds) == 1:
            reqs = _merged(reqs + [r for f in fragments for r in f.requirements])
        else:       # each fragment's requirements answer as its own row of the matrix (§10.2)
            for kind in kinds:
                reqs += [OfKind(kind, r) for r in _merged([r for f in fragments if f.kind == kind
                                                           for r in f.requirements])]
        reqs += _inserts_unread(fragments)
        return WriteFragment(operation or fragments[0].operation, fragments[0].read_version,
                             [a for f in fragments for a in f.actions], [p for f in fragments for p in f.files],
                             summed if counts is None else dict(counts), reqs,
                             all(f.data_change for f in fragments), table_id=next(iter(tables), None),
                             kind=max(kinds, key=_strictness))

    @property
    def rowsets(self) -> list:
        """The rowsets this fragment adds."""
        return [a.rowset for a in self.actions if isinstance(a, AddRowSet)]


# Kinds that write rows (inserts and mutations, local or Spark): they can share one commit.
DATA_WRITES = frozenset({"insert", "insert_ignore", "mutation", "spark_insert", "spark_merge"})
INSERTS = frozenset({"insert", "insert_ignore", "spark_insert"})


def _strictness(kind: str) -> tuple[int, int]:
    """How strict a matrix row is (its FAIL cells, then its RESTART cells): a commit of several
    kinds is known by its strictest (each requirement still answers as its own fragment's row)."""
    row = MATRIX[kind].values()
    return sum(o is Outcome.FAIL for o in row), sum(o is Outcome.RESTART for o in row)


def _inserts_unread(fragments: Sequence["WriteFragment"]) -> list[Requirement]:
    """A fragment that adds rows and another of the same commit must not meet on a key
    (specs/format.md §10.3): for each fragment F adding rowsets (an insert, or a mutation's upsert),
    the keys the OTHER mutation fragments found absent (skipped, or upserted) are checked against
    F's rowsets. F's own absent keys are not: an upsert finds its own new key absent. (Insert
    fragments' absent keys are the keys of their own rowsets, which `rowsets_disjoint` checks.)"""
    absent = [(i, _merged([r for r in f.requirements if isinstance(r, KeysAbsent) and not r.own_rowsets]))
              for i, f in enumerate(fragments) if f.kind not in INSERTS]
    absent = [(i, a[0].keys) for i, a in absent if a]
    out: list[Requirement] = []
    for i, f in enumerate(fragments):
        rowsets = f.rowsets
        tablets = {r.tablet for r in rowsets}     # a key can meet only rowsets of its own tablet
        others = [KeysAbsent(sub) for j, k in absent if j != i
                  for sub in [{t: v for t, v in k.items() if t in tablets}] if sub]
        keys = _merged(others)[0].keys if others else {}
        if keys:
            out.append(InsertsUnread(tuple(r.id for r in rowsets), keys))
    return out


def _rows_once(fragments: Sequence["WriteFragment"]) -> None:
    """Two fragments of one commit must not change one live row (specs/format.md §10.3): they read
    one snapshot and have no order, so an update beside a delete of one key has no one meaning.
    Each fragment's rows (its `rows_live`, and the live rows an insert_ignore skipped) are made
    unique, and a rowid found in two fragments' rows refuses the commit before anything is written.
    Two insert_ignore fragments that skipped one live key agree (both skip): not a contradiction."""
    per_rowset: dict[str, list[np.ndarray]] = {}
    skipped: dict[str, list[np.ndarray]] = {}
    for f in fragments:
        live: dict[str, list[np.ndarray]] = {}
        skip: dict[str, list[np.ndarray]] = {}
        for r in f.requirements:
            if isinstance(r, RowsLive):
                for rid, ids in r.rows.items():
                    live.setdefault(rid, []).append(np.asarray(ids, np.int64))
            elif isinstance(r, SkippedKeysStillLive):
                for rid, ids in r.rows.items():
                    skip.setdefault(rid, []).append(np.asarray(ids, np.int64))
        for rid, arrs in live.items():
            per_rowset.setdefault(rid, []).append(np.unique(np.concatenate(arrs)))
        for rid, arrs in skip.items():
            # a row one fragment skipped and itself changes cannot be: count the fragment once
            own = np.concatenate(live[rid]) if rid in live else np.zeros(0, np.int64)
            skipped.setdefault(rid, []).append(np.setdiff1d(np.concatenate(arrs), own))
    hits = 0
    for rid, arrs in per_rowset.items():
        changed = np.concatenate(arrs)
        if len(arrs) > 1:
            _, n = np.unique(changed, return_counts=True)
            hits += int((n > 1).sum())
        if rid in skipped:
            hits += len(np.intersect1d(np.unique(changed), np.concatenate(skipped[rid])))
    if hits:
        raise ContradictoryFragmentsError(
            f"{hits} row(s) are changed by one fragment of this commit and changed or skipped as live by "
            "another; fragments of one commit all read the same snapshot and have no order: write these "
            "keys in separate commits", hits)


def _merged(reqs: list[Requirement]) -> list[Requirement]:
    """Requirements of one kind that hold per-fragment data (keys, rows) merged into one."""
    out: list[Requirement] = []
    keys: dict[tuple, dict] = {}
    rows: dict = {}
    skipped: dict = {}
    skips = False
    for r in reqs:
        if isinstance(r, KeysAbsent) and not r.own_rowsets:
            acc = keys.setdefault((), {})
            for t, k in r.keys.items():
                acc[t] = pa.concat_arrays([acc[t], k]) if t in acc else k
        elif isinstance(r, RowsLive):
            for rid, ids in r.rows.items():
                rows[rid] = np.union1d(rows[rid], ids) if rid in rows else ids
        elif isinstance(r, SkippedKeysStillLive):
            for rid, ids in r.rows.items():
                skipped[rid] = np.union1d(skipped[rid], ids) if rid in skipped else ids
            skips = True
        elif all(o.to_json() != r.to_json() for o in out):
            out.append(r)
    out += [KeysAbsent(v, False) for v in keys.values()]
    if rows:
        out.append(RowsLive(rows))
    if skips:
        out.append(SkippedKeysStillLive(skipped))
    return out
