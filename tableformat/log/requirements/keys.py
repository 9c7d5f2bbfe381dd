"""Requirements on keys and rows (specs/format.md §10, §10.2, §10.3): keys found absent are
still absent, skipped keys still live, changed rows still live (remapped by key onto a
compaction's outputs, `remap`), and the fragments of one commit do not contradict each other."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar, Mapping

import numpy as np
import pyarrow as pa

from ..actions import AddDelta, AddRowSet, RemoveRowSet, added_deltas
from ...format.deltafile import DELETE, read_delta
from ...format.diskrowset import read_pk_index
from ...format.errors import CommitConflictError, ContradictoryFragmentsError, DuplicateKeyError
from ...read.delta_tracker import deleted_mask
from ...read.keyprobe import probe
from ..matrix import Outcome
from ..remap import remap_by_key
from .base import (REBASE, Context, Requirement, Verdict, decoded_key, new_rowsets, no_rebase, pack_rowids,
                   schema_name, strictest, unpack_rowids)
from .rowsets import RowSetsDisjoint


@dataclass(frozen=True, eq=False)
class KeysAbsent(Requirement):
    """Keys the write found absent (and inserts, or skipped as missing) are still absent: no
    winner added a live row with one of them. `keys` maps tablet -> encoded keys; with
    `own_rowsets`, the keys are those of the rowsets this transaction adds (a distributed insert,
    whose keys the driver never holds)."""

    keys: Mapping[str, pa.Array] = field(default_factory=dict)
    own_rowsets: bool = False
    kind: ClassVar[str] = "keys_absent"

    def check(self, ctx: Context) -> Verdict:
        deltas_of = added_deltas(ctx.winners)    # ghost rows (format 3 merges) carry their DELETE: not live
        verdicts = []
        for c in ctx.winners:
            hit = self._clashes(ctx, new_rowsets(ctx, [c]), deltas_of)
            if hit:
                verdicts.append(Verdict(ctx.decide(c), f"{len(hit)} key(s) were inserted concurrently"))
        if not verdicts:
            return REBASE
        # the error counts each key once: a key an insert added and a merge then rewrote is in both
        clashes = self._clashes(ctx, new_rowsets(ctx), deltas_of)
        schema = ctx.base.schema
        first = ", ".join(repr(decoded_key(k, schema)) for k in sorted(clashes)[:3])
        err = DuplicateKeyError(f"{len(clashes)} key(s) were inserted concurrently in table {schema_name(ctx)!r} "
                                f"(first: {first}); use insert_ignore or upsert", len(clashes))
        v = strictest(verdicts)
        return Verdict(v.outcome, v.reason, err)

    def _clashes(self, ctx: Context, added: list, deltas_of) -> list[bytes]:
        """The keys this write relies on being absent that live rows of `added` hold."""
        clashes: list[bytes] = []
        if self.own_rowsets:
            mine = [a.rowset for a in ctx.own if isinstance(a, AddRowSet)]
            for r in added:
                if r.history_only:
                    continue                      # every row deleted: no key of it is live
                ours = [o for o in mine if o.tablet == r.tablet and not (o.max_key < r.min_key or o.min_key > r.max_key)]
                if not ours:
                    continue
                keys = read_pk_index(ctx.storage, r)
                dead = deleted_mask(ctx.storage, r, deltas_of(r.id))
                if dead is not None:
                    keys = keys.filter(pa.array(~dead))
                hit = probe(ctx.storage, ours, keys)[0] >= 0
                clashes += keys.filter(pa.array(hit)).to_pylist()
        else:
            for tablet, keys in self.keys.items():
                theirs = [r for r in added if r.tablet == tablet]
                if theirs and len(keys):
                    hit = probe(ctx.storage, theirs, keys, deltas_of)[0] >= 0
                    clashes += keys.filter(pa.array(hit)).to_pylist()
        return clashes

    def precheck(self, ctx: Context) -> Verdict:
        """A distributed insert: tasks not split by tablet and key can hold one key twice (a
        plain df.write); two rowsets of this write must not share a key."""
        return RowSetsDisjoint().precheck(ctx) if self.own_rowsets else REBASE

    def _body(self) -> dict:
        return {"keys": {t: [k.hex() for k in v.to_pylist()] for t, v in self.keys.items()},
                "own_rowsets": self.own_rowsets}

    @classmethod
    def from_body(cls, d: dict) -> "KeysAbsent":
        keys = {t: pa.array([bytes.fromhex(k) for k in v], pa.binary()) for t, v in d["keys"].items()}
        return cls(keys, d["own_rowsets"])


@dataclass(frozen=True, eq=False)
class OfKind(Requirement):
    """A requirement of one fragment in a commit of fragments of several kinds (an insert and a
    mutation, specs/format.md §10.2): checked as that fragment's row of the matrix, so each
    fragment gets the outcome it would get alone, and the strictest of them decides the commit."""

    write_kind: str = "mutation"
    requirement: Requirement | None = None
    kind: ClassVar[str] = "of_kind"

    def check(self, ctx: Context) -> Verdict:
        return self.requirement.check(replace(ctx, kind=self.write_kind))

    def precheck(self, ctx: Context) -> Verdict:
        return self.requirement.precheck(replace(ctx, kind=self.write_kind))

    def _body(self) -> dict:
        return {"write_kind": self.write_kind, "requirement": self.requirement.to_json()}

    @classmethod
    def from_body(cls, d: dict) -> "OfKind":
        return cls(d["write_kind"], Requirement.from_json(d["requirement"]))


@dataclass(frozen=True, eq=False)
class InsertsUnread(Requirement):
    """No key an insert fragment of this commit adds is one a mutation fragment of the same
    commit found absent (and skipped, or inserted itself). The fragments read one snapshot and
    have no order between them, so "insert K" beside "delete_ignore K" has no one meaning:
    refused before the first attempt (specs/format.md §10.3). `inserted`: the rowset ids the
    insert fragments add; `keys`: tablet -> encoded keys the mutation fragments found absent."""

    inserted: tuple[str, ...] = ()
    keys: Mapping[str, pa.Array] = field(default_factory=dict)
    kind: ClassVar[str] = "inserts_unread"

    def check(self, ctx: Context) -> Verdict:
        return REBASE

    def precheck(self, ctx: Context) -> Verdict:
        mine = [a.rowset for a in ctx.own if isinstance(a, AddRowSet) and a.rowset.id in self.inserted]
        hit: list[bytes] = []
        for tablet, keys in self.keys.items():
            ours = [r for r in mine if r.tablet == tablet]
            if ours and len(keys):
                hit += keys.filter(pa.array(probe(ctx.storage, ours, keys)[0] >= 0)).to_pylist()
        if not hit:
            return REBASE
        first = ", ".join(repr(decoded_key(k, ctx.base.schema)) for k in sorted(hit)[:3])
        return Verdict(Outcome.FAIL, "fragments of one commit contradict each other", ContradictoryFragmentsError(
            f"{len(hit)} key(s) of table {ctx.base.name!r} are inserted by one fragment of this commit and "
            f"updated, deleted or upserted by another (first: {first}); fragments of one commit all read "
            "the same snapshot and have no order: write these keys in separate commits", len(hit)))

    def _body(self) -> dict:
        return {"inserted": list(self.inserted),
                "keys": {t: [k.hex() for k in v.to_pylist()] for t, v in self.keys.items()}}

    @classmethod
    def from_body(cls, d: dict) -> "InsertsUnread":
        keys = {t: pa.array([bytes.fromhex(k) for k in v], pa.binary()) for t, v in d["keys"].items()}
        return cls(tuple(d["inserted"]), keys)


@dataclass(frozen=True, eq=False)
class SkippedKeysStillLive(Requirement):
    """insert_ignore skipped keys as existing: a concurrent delete may have removed one, and
    then the key must be inserted after all. `rows` (rowset -> rowids of the live rows it
    skipped) lets a commit of fragments refuse a skip beside another fragment's change of that
    row (specs/format.md §10.3); the check against winners stays coarse (any delete)."""

    rows: Mapping[str, np.ndarray] = field(default_factory=dict)
    kind: ClassVar[str] = "skipped_keys_still_live"

    def _body(self) -> dict:
        return {"rows": {r: pack_rowids(v) for r, v in self.rows.items()}}

    @classmethod
    def from_body(cls, d: dict) -> "SkippedKeysStillLive":
        # fragments written before the rows were recorded carry none
        return cls({r: unpack_rowids(v) for r, v in d.get("rows", {}).items()})

    def check(self, ctx: Context) -> Verdict:
        return strictest(Verdict(ctx.decide(c), "rows were deleted concurrently: a skipped key may be gone")
                         for c in ctx.winners if c.data_change and any(a.delta.delete_count for a in c.of(AddDelta)))


@dataclass(frozen=True, eq=False)
class RowsLive(Requirement):
    """The rows a mutation changes (rowset -> rowids) are still live. A merging compaction that
    rewrote their rowset is rebased over: the mutation's REDO records carry their keys, so they
    are remapped by key onto the compaction's outputs (rowids change, timestamps are the commit's).
    A row it read but did not change (an insert that found its key) in a rewritten rowset, or a
    row deleted meanwhile, makes it plan again."""

    rows: Mapping[str, np.ndarray] = field(default_factory=dict)
    kind: ClassVar[str] = "rows_live"

    def check(self, ctx: Context) -> Verdict:
        own = {}
        for a in ctx.own:
            if isinstance(a, AddDelta):
                own.setdefault(a.delta.rowset, []).append(a)
        changed: dict[str, np.ndarray] = {}

        def changed_rows(rid: str) -> np.ndarray:
            if rid not in changed:
                changed[rid] = np.concatenate([read_delta(ctx.storage, a.delta).column("rowid").to_numpy()
                                               for a in own.get(rid, ())] or [np.zeros(0, np.int64)])
            return changed[rid]

        def guarded(rid: str) -> np.ndarray | None:
            """Rowids this write relies on in rowset `rid` (its own remapped REDO rows included)."""
            if rid in self.rows:
                return self.rows[rid]
            return changed_rows(rid) if rid in own else None

        removed: list[str] = []
        for c in ctx.winners:
            for a in c.actions:
                if isinstance(a, RemoveRowSet) and guarded(a.rowset_id) is not None:
                    outcome = ctx.decide(c)
                    if outcome is not Outcome.REBASE:
                        return Verdict(outcome, f"rowset {a.rowset_id} was removed")
                    if not np.isin(guarded(a.rowset_id), changed_rows(a.rowset_id)).all():
                        # a row it only read moved: no REDO record of its own carries it over
                        return Verdict(ctx.fallback(), f"rowset {a.rowset_id} was rewritten")
                    removed.append(a.rowset_id)
                elif isinstance(a, AddDelta) and guarded(a.delta.rowset) is not None and \
                        (a.delta.delete_count or a.delta.reinsert_count):
                    t = read_delta(ctx.storage, a.delta)
                    deleted = t.column("rowid").to_numpy()[t.column("op").to_numpy() == DELETE]
                    if np.isin(guarded(a.delta.rowset), deleted).any():
                        return Verdict(no_rebase(ctx, c), "a row it changes was deleted concurrently")
        if not removed:
            return REBASE
        mine = [a for rid in removed for a in own.get(rid, ())]
        gone = {a.rowset_id for a in ctx.winner_actions if isinstance(a, RemoveRowSet)}
        outputs = [a for a in ctx.winner_actions if isinstance(a, AddRowSet) and a.rowset.id not in gone
                   and a.rowset.id not in ctx.base.rowsets]
        try:
            extra = remap_by_key(ctx.storage, ctx.snapshot, outputs + [a for a in ctx.winner_actions
                                                                      if isinstance(a, AddDelta)],
                                 [(None, a.delta) for a in mine], ctx.written, commit_ts=True)
        except CommitConflictError as e:
            return Verdict(ctx.fallback(), str(e))
        return Verdict(Outcome.REBASE, "REDO records remapped by key onto a compaction's outputs",
                       extra=extra, dropped=mine)

    def _body(self) -> dict:
        return {"rows": {r: pack_rowids(v) for r, v in self.rows.items()}}

    @classmethod
    def from_body(cls, d: dict) -> "RowsLive":
        return cls({r: unpack_rowids(v) for r, v in d["rows"].items()})
