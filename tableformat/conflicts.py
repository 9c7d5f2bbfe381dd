"""Requirements: what a write relies on, checked against exactly the commits that won.

A writer plans on a snapshot. If another commit lands first, each requirement
of the loser looks at the winners and answers one of Lance's three outcomes:

- REBASE: still valid; commit on top of the winners (maybe with remapped actions);
- RESTART: the plan may be wrong now; plan again on the new snapshot;
- FAIL: the write can never succeed; a typed error.

`MATRIX` is the conflict matrix of specs/format.md §10 in data: for each pair
(later writer, earlier winner) that touch the same rows, the outcome. The
requirement types below implement it, and tests/test_conflict_matrix.py checks
every cell against both. Requirements are plain data (to_json / from_json), so
a Spark executor can make them and a driver can check them.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np
import pyarrow as pa

from .actions import AddDelta, AddRowSet, AddTag, Action, Commit, RemoveRowSet, RemoveTag, SetHistory, added_deltas
from .cfile_set import field_name
from .delta_tracker import deleted_mask
from .deltafile import DELETE, REDO, flag_name, read_delta, write_delta_file
from .diskrowset import read_pk_index
from .errors import CommitConflictError, DuplicateKeyError, HistoryExpiredError, TagExistsError, TagNotFoundError
from .keyencoder import decode_key, encode_keys
from .keyprobe import probe
from .metadata import DeltaFileMeta, TableState
from .storage import Storage


class Outcome(str, Enum):
    REBASE = "rebase"
    RESTART = "restart"
    FAIL = "fail"


# The operations of the matrix, as specs/format.md §10 names them.
OPERATIONS = ("insert", "insert_ignore", "mutation", "alter", "minor_delta", "major_delta", "merge",
              "undo_gc", "vacuum", "spark_insert", "spark_merge")

_R, _S, _F = Outcome.REBASE, Outcome.RESTART, Outcome.FAIL
# MATRIX[later][earlier]: the later writer's outcome when the earlier one committed first, both
# touching the same rows (same keys, same rowsets). Disjoint writes always rebase.
MATRIX: dict[str, dict[str, Outcome]] = {
    #                insert ins_ign mutation alter minor major merge undo_gc vacuum sp_ins sp_merge
    "insert":        dict(zip(OPERATIONS, (_F, _F, _F, _S, _R, _R, _R, _R, _R, _F, _F))),
    "insert_ignore": dict(zip(OPERATIONS, (_S, _S, _S, _S, _R, _R, _R, _R, _R, _S, _S))),
    "mutation":      dict(zip(OPERATIONS, (_S, _S, _S, _S, _R, _R, _R, _R, _R, _S, _S))),
    "alter":         dict(zip(OPERATIONS, (_S, _S, _S, _S, _R, _R, _S, _R, _R, _S, _S))),
    "minor_delta":   dict(zip(OPERATIONS, (_R, _R, _R, _F, _F, _F, _F, _F, _R, _R, _R))),
    "major_delta":   dict(zip(OPERATIONS, (_R, _R, _R, _F, _F, _F, _F, _F, _R, _R, _R))),
    "merge":         dict(zip(OPERATIONS, (_R, _R, _R, _F, _F, _F, _F, _F, _R, _R, _R))),
    "undo_gc":       dict(zip(OPERATIONS, (_R, _R, _R, _F, _F, _F, _F, _F, _R, _R, _R))),
    "vacuum":        dict(zip(OPERATIONS, (_R, _R, _R, _R, _R, _R, _R, _R, _R, _R, _R))),
    "spark_insert":  dict(zip(OPERATIONS, (_F, _F, _F, _S, _R, _R, _R, _R, _R, _F, _F))),
    "spark_merge":   dict(zip(OPERATIONS, (_S, _S, _S, _S, _R, _R, _R, _R, _R, _S, _S))),
}


@dataclass
class Verdict:
    outcome: Outcome
    reason: str = ""
    error: Exception | None = None
    extra: list[Action] = field(default_factory=list)      # remapped actions, on REBASE
    dropped: list[Action] = field(default_factory=list)    # own actions the remapped ones replace


@dataclass
class Context:
    """What a requirement may look at: the snapshot the write planned on, the state the winners
    start from, the winners, and this transaction's own actions."""

    storage: Storage
    snapshot: TableState
    base: TableState
    winners: list[Commit]
    own: list[Action]
    written: list[str]                  # a requirement that writes files (remapping) appends them

    @property
    def winner_actions(self) -> list[Action]:
        return [a for c in self.winners for a in c.actions]


REBASE = Verdict(Outcome.REBASE)
_TYPES: dict[str, type] = {}


class Requirement:
    """A condition a write relies on. `check` answers REBASE, RESTART or FAIL."""

    kind: ClassVar[str] = ""

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        _TYPES[cls.kind] = cls

    def check(self, ctx: Context) -> Verdict:
        raise NotImplementedError

    def precheck(self, ctx: Context) -> Verdict:
        """Checked once before the first commit attempt, on the write itself."""
        return REBASE

    def to_json(self) -> dict:
        return {"kind": self.kind, **self._body()}

    def _body(self) -> dict:
        """Plain JSON of the fields: tuples as lists, outcomes by value."""
        return {f.name: (list(v) if isinstance(v, tuple) else v.value if isinstance(v, Outcome) else v)
                for f in fields(self) for v in [getattr(self, f.name)]}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Requirement":
        d = dict(d)
        return _TYPES[d.pop("kind")]._from_body(d)

    @classmethod
    def _from_body(cls, d: dict) -> "Requirement":
        return cls(**{k: tuple(v) if isinstance(v, list) else Outcome(v) if k.startswith("on_") else v
                      for k, v in d.items()})


@dataclass(frozen=True)
class DefinitionUnchanged(Requirement):
    """The schema, partitioning and properties the plan used still hold."""

    on_change: Outcome = Outcome.RESTART
    kind: ClassVar[str] = "definition_unchanged"

    def check(self, ctx: Context) -> Verdict:
        if any(c.changes_definition for c in ctx.winners):
            return Verdict(self.on_change, "the table definition changed (ALTER TABLE)",
                           CommitConflictError("the table definition changed concurrently; run it again"))
        return REBASE


def _pack_rowids(a: np.ndarray) -> str:
    return base64.b64encode(np.asarray(a, np.int64).tobytes()).decode()


def _unpack_rowids(s: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(s), np.int64)


@dataclass(frozen=True, eq=False)
class KeysAbsent(Requirement):
    """Keys the write found absent (and inserts, or skipped as missing) are still absent: no
    winner added a live row with one of them. `keys` maps tablet -> encoded keys; with
    `own_rowsets`, the keys are those of the rowsets this transaction adds (a distributed insert,
    whose keys the driver never holds)."""

    keys: Mapping[str, pa.Array] = field(default_factory=dict)
    own_rowsets: bool = False
    on_clash: Outcome = Outcome.RESTART
    kind: ClassVar[str] = "keys_absent"

    def check(self, ctx: Context) -> Verdict:
        added = new_rowsets(ctx)
        if not added:
            return REBASE
        deltas_of = added_deltas(ctx.winners)    # ghost rows (format 3 merges) carry their DELETE: not live
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
        if not clashes:
            return REBASE
        schema = ctx.base.schema
        first = ", ".join(repr(_decoded(k, schema)) for k in sorted(clashes)[:3])
        err = DuplicateKeyError(f"{len(clashes)} key(s) were inserted concurrently in table {schema_name(ctx)!r} "
                                f"(first: {first}); use insert_ignore or upsert", len(clashes))
        return Verdict(self.on_clash, f"{len(clashes)} key(s) were inserted concurrently", err)

    def precheck(self, ctx: Context) -> Verdict:
        """A distributed insert: tasks not split by tablet and key can hold one key twice (a
        plain df.write); two rowsets of this write must not share a key."""
        return RowSetsDisjoint().precheck(ctx) if self.own_rowsets else REBASE

    def _body(self) -> dict:
        return {"keys": {t: [k.hex() for k in v.to_pylist()] for t, v in self.keys.items()},
                "own_rowsets": self.own_rowsets, "on_clash": self.on_clash.value}

    @classmethod
    def _from_body(cls, d: dict) -> "KeysAbsent":
        keys = {t: pa.array([bytes.fromhex(k) for k in v], pa.binary()) for t, v in d["keys"].items()}
        return cls(keys, d["own_rowsets"], Outcome(d["on_clash"]))


def schema_name(ctx: Context) -> str:
    return ctx.base.name


def _decoded(key: bytes, schema) -> Any:
    try:
        t = decode_key(key, [c.type for c in schema.key_columns])
        return t[0] if len(t) == 1 else t
    except ValueError:
        return key.hex()


def new_rowsets(ctx: Context) -> list:
    """Rowsets the winners added that hold rows new to the table: a major delta compaction
    re-adds a rowset under its id with a new column group, and that is no new row."""
    return [a.rowset for a in ctx.winner_actions if isinstance(a, AddRowSet) and a.rowset.id not in ctx.base.rowsets]


@dataclass(frozen=True)
class RowSetsDisjoint(Requirement):
    """The rowsets one commit adds share no key: fragments made apart (Spark tasks not split by
    tablet and key, or several fragments inserting one new key) are checked before committing."""

    kind: ClassVar[str] = "rowsets_disjoint"

    def check(self, ctx: Context) -> Verdict:
        return REBASE

    def precheck(self, ctx: Context) -> Verdict:
        by_tablet: dict[str, list] = {}
        for a in ctx.own:
            if isinstance(a, AddRowSet):
                by_tablet.setdefault(a.rowset.tablet, []).append(a.rowset)
        n = 0
        for lst in by_tablet.values():
            for i in range(1, len(lst)):
                r = lst[i]
                mine = [o for o in lst[:i] if not (o.max_key < r.min_key or o.min_key > r.max_key)]
                if mine:
                    n += int((probe(ctx.storage, mine, read_pk_index(ctx.storage, r))[0] >= 0).sum())
        if not n:
            return REBASE
        return Verdict(Outcome.FAIL, "duplicate keys across fragments", DuplicateKeyError(
            f"{n} key(s) appear more than once in the input of table {ctx.base.name!r}; use insert_ignore "
            "semantics or deduplicate", n))


@dataclass(frozen=True)
class SkippedKeysStillLive(Requirement):
    """insert_ignore skipped keys as existing: a concurrent delete may have removed one, and
    then the key must be inserted after all."""

    kind: ClassVar[str] = "skipped_keys_still_live"

    def check(self, ctx: Context) -> Verdict:
        for c in ctx.winners:
            if c.data_change and any(a.delta.delete_count for a in c.of(AddDelta)):
                return Verdict(Outcome.RESTART, "rows were deleted concurrently: a skipped key may be gone")
        return REBASE


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
        for a in ctx.winner_actions:
            if isinstance(a, RemoveRowSet) and guarded(a.rowset_id) is not None:
                if not np.isin(guarded(a.rowset_id), changed_rows(a.rowset_id)).all():
                    return Verdict(Outcome.RESTART, f"rowset {a.rowset_id} was rewritten")
                removed.append(a.rowset_id)
            elif isinstance(a, AddDelta) and guarded(a.delta.rowset) is not None and \
                    (a.delta.delete_count or a.delta.reinsert_count):
                t = read_delta(ctx.storage, a.delta)
                deleted = t.column("rowid").to_numpy()[t.column("op").to_numpy() == DELETE]
                if np.isin(guarded(a.delta.rowset), deleted).any():
                    return Verdict(Outcome.RESTART, "a row it changes was deleted concurrently")
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
            return Verdict(Outcome.RESTART, str(e))
        return Verdict(Outcome.REBASE, "REDO records remapped by key onto a compaction's outputs",
                       extra=extra, dropped=mine)

    def _body(self) -> dict:
        return {"rows": {r: _pack_rowids(v) for r, v in self.rows.items()}}

    @classmethod
    def _from_body(cls, d: dict) -> "RowsLive":
        return cls({r: _unpack_rowids(v) for r, v in d["rows"].items()})


@dataclass(frozen=True, eq=False)
class SequencesCurrent(Requirement):
    """An ordered upsert compared its sequences with these rows' stored ones (rowset -> rowids):
    a winner that updated the sequence column of one of them makes the comparison stale, so the
    write is planned again against the new value (specs/format.md §14)."""

    rows: Mapping[str, np.ndarray] = field(default_factory=dict)
    column_id: int = -1
    kind: ClassVar[str] = "sequences_current"

    def check(self, ctx: Context) -> Verdict:
        readded = {a.rowset.id for a in ctx.winner_actions if isinstance(a, AddRowSet)}
        if any(isinstance(a, RemoveRowSet) and a.rowset_id in self.rows and a.rowset_id not in readded
               for a in ctx.winner_actions):
            # a merging compaction moved the rows: a sequence updated on its outputs since is not
            # found by rowid, so compare again
            return Verdict(Outcome.RESTART, "a rowset whose sequences it compared was rewritten concurrently")
        for a in ctx.winner_actions:
            if isinstance(a, AddDelta) and a.delta.kind == REDO and a.delta.rowset in self.rows and \
                    a.delta.updates(self.column_id):
                t = read_delta(ctx.storage, a.delta, [self.column_id])
                flags = t.column(flag_name(self.column_id)).fill_null(False).to_numpy(zero_copy_only=False)
                changed = t.column("rowid").to_numpy()[flags]
                if np.isin(self.rows[a.delta.rowset], changed).any():
                    return Verdict(Outcome.RESTART, "the sequence of a row it compared was updated concurrently")
        return REBASE

    def _body(self) -> dict:
        return {"rows": {r: _pack_rowids(v) for r, v in self.rows.items()}, "column_id": self.column_id}

    @classmethod
    def _from_body(cls, d: dict) -> "SequencesCurrent":
        return cls({r: _unpack_rowids(v) for r, v in d["rows"].items()}, d["column_id"])


@dataclass(frozen=True)
class NoRowsInTablets(Requirement):
    """No winner added rows to these tablets (an ALTER dropping their range partitions)."""

    tablets: tuple[str, ...] = ()
    kind: ClassVar[str] = "no_rows_in_tablets"

    def check(self, ctx: Context) -> Verdict:
        if any(r.tablet in self.tablets for r in new_rowsets(ctx)):
            return Verdict(Outcome.RESTART, "rows landed in a range being dropped")
        return REBASE


def _touches(a: Action, rowsets: Sequence[str]) -> bool:
    rid = a.rowset.id if isinstance(a, AddRowSet) else getattr(a, "rowset_id", None)
    return rid in rowsets and not isinstance(a, AddDelta)


@dataclass(frozen=True)
class RowSetsUnchanged(Requirement):
    """A delta compaction's input rowset was not rewritten (new REDO files on it are fine:
    rowids do not change, so they apply on top of the compaction's output)."""

    rowsets: tuple[str, ...] = ()
    kind: ClassVar[str] = "rowsets_unchanged"

    def check(self, ctx: Context) -> Verdict:
        if any(c.changes_definition for c in ctx.winners) or \
                any(_touches(a, self.rowsets) for a in ctx.winner_actions):
            return Verdict(Outcome.FAIL, "the rowset changed under the compaction",
                           CommitConflictError("the rowset changed under the compaction"))
        return REBASE


@dataclass(frozen=True)
class MergeInputsRemappable(Requirement):
    """A merging compaction's inputs were not rewritten by another compaction; REDO records
    committed to them meanwhile are remapped, by the keys they carry, onto the outputs."""

    inputs: tuple[str, ...] = ()
    kind: ClassVar[str] = "merge_inputs_remappable"

    def check(self, ctx: Context) -> Verdict:
        for c in ctx.winners:
            if c.changes_definition:
                return Verdict(Outcome.FAIL, "the table definition changed during the compaction",
                               CommitConflictError("the table definition changed during the compaction"))
            if any(_touches(a, self.inputs) for a in c.actions):
                # another compaction rewrote an input (its base, REDO or UNDO files): remapping its
                # files would apply history twice, so this merge gives up and is planned again
                return Verdict(Outcome.FAIL, "another compaction rewrote the same rowsets",
                               CommitConflictError("another compaction rewrote the same rowsets"))
        late = [(c, a.delta) for c in ctx.winners for a in c.of(AddDelta) if a.delta.rowset in self.inputs]
        if not late:
            return REBASE
        try:
            extra = remap_by_key(ctx.storage, ctx.snapshot, ctx.own, late, ctx.written)
        except CommitConflictError as e:
            return Verdict(Outcome.FAIL, str(e), e)
        return Verdict(Outcome.REBASE, "concurrent REDO records remapped onto the outputs", extra=extra)


def remap_by_key(storage: Storage, snapshot: TableState, own: list[Action], late: list[tuple[Commit, DeltaFileMeta]],
                 written: list[str], commit_ts: bool = False) -> list[Action]:
    """REDO files committed to a merge's inputs after its snapshot, rewritten onto its outputs.

    Delta records carry their row's key, so each finds its row in the outputs by key (the live
    copy, in a main output: history-only outputs are not probed). Rowids change; timestamps do not
    (commit_ts: files not committed yet stay without timestamps, so they get their commit's)."""
    schema = snapshot.schema
    outputs = [a.rowset for a in own if isinstance(a, AddRowSet)]
    own_deltas = added_deltas([Commit(0, 0, "", tuple(own))])
    key_cols = list(schema.key_columns)
    out: list[Action] = []
    for _c, m in late:
        t = read_delta(storage, m, [x.id for x in schema.columns], key_cols)
        keys = encode_keys([t.column(field_name(k.id)) for k in key_cols], [k.type for k in key_cols])
        which, rowid = probe(storage, outputs, keys, own_deltas)
        if (which < 0).any():
            raise CommitConflictError("a concurrent change touched a row the compaction dropped")
        ts = t.column("ts").to_numpy() if "ts" in t.column_names else np.full(t.num_rows, m.max_ts, np.int64)
        ops = t.column("op").to_numpy()
        for o in np.unique(which):
            sel = which == o
            sub = t.filter(pa.array(sel))
            updates = {x.id: (sub.column(flag_name(x.id)).fill_null(False).to_numpy(zero_copy_only=False),
                              sub.column(field_name(x.id)))
                       for x in schema.columns if flag_name(x.id) in sub.column_names}
            keys_t = pa.table({k.name: sub.column(field_name(k.id)) for k in key_cols})
            meta = write_delta_file(storage, schema, outputs[int(o)], rowid[sel], ops[sel], keys_t, updates,
                                    REDO, None if commit_ts else ts[sel].astype(np.int64))
            written.append(meta.path)
            out.append(AddDelta(meta))
    return out


@dataclass(frozen=True)
class DataUnchanged(Requirement):
    """No winner changed data (a restore: any concurrent write may undo part of it)."""

    kind: ClassVar[str] = "data_unchanged"

    def check(self, ctx: Context) -> Verdict:
        if any(c.data_change and (c.of(AddRowSet, AddDelta)) for c in ctx.winners):
            return Verdict(Outcome.RESTART, "data changed concurrently")
        return REBASE


def _tag_after_winners(ctx: Context, name: str) -> bool | None:
    """Whether the winners leave tag `name` present (True) or absent (False); None: untouched."""
    last = None
    for a in ctx.winner_actions:
        if isinstance(a, (AddTag, RemoveTag)) and a.name == name:
            last = isinstance(a, AddTag)
    return last


@dataclass(frozen=True)
class TagAbsent(Requirement):
    """The winners did not leave a tag of this name (a tag)."""

    name: str = ""
    kind: ClassVar[str] = "tag_absent"

    def check(self, ctx: Context) -> Verdict:
        if _tag_after_winners(ctx, self.name):
            return Verdict(Outcome.FAIL, f"tag {self.name!r} was created concurrently",
                           TagExistsError(f"tag {self.name!r} was created concurrently; untag it first"))
        return REBASE


@dataclass(frozen=True)
class TagPresent(Requirement):
    """The winners did not leave the tag removed (an untag; a tag moved meanwhile is still there)."""

    name: str = ""
    kind: ClassVar[str] = "tag_present"

    def check(self, ctx: Context) -> Verdict:
        if _tag_after_winners(ctx, self.name) is False:
            return Verdict(Outcome.FAIL, f"tag {self.name!r} was removed concurrently",
                           TagNotFoundError(f"tag {self.name!r} was removed concurrently"))
        return REBASE


@dataclass(frozen=True)
class HistoryKept(Requirement):
    """The history a new tag needs is still there: no winner garbage-collected history (a
    compaction's UNDO GC, a vacuum passing an aged-out ALTER) at or after the time until which
    the tagged version was valid (-1: it was the newest when planned, valid until the first winner)."""

    valid_until: int = -1
    kind: ClassVar[str] = "history_kept"

    def check(self, ctx: Context) -> Verdict:
        gc = max((a.gc_before_ts or 0 for a in ctx.winner_actions if isinstance(a, SetHistory)), default=0)
        # a tagged version that was the newest stopped being valid at the first winner's commit
        until = self.valid_until if self.valid_until >= 0 else \
            min((c.timestamp for c in ctx.winners), default=-1)
        if until >= 0 and gc >= until:
            return Verdict(Outcome.FAIL, "the history the tag needs was garbage-collected concurrently",
                           HistoryExpiredError("the history the tagged version needs was garbage-collected "
                                               "concurrently (history_max_age passed it)"))
        return REBASE


@dataclass(frozen=True)
class TagsRetained(Requirement):
    """A write that garbage-collects history before `gc_before_ts` (compaction, vacuum) planned
    without the tags added since: it gives up if one of them is a time it may have dropped."""

    gc_before_ts: int = 0
    kind: ClassVar[str] = "tags_retained"

    def check(self, ctx: Context) -> Verdict:
        if any(isinstance(a, AddTag) and a.timestamp < self.gc_before_ts for a in ctx.winner_actions):
            return Verdict(Outcome.FAIL, "a tag needing the history it drops was created concurrently",
                           CommitConflictError("a tag needing the history this drops was created concurrently"))
        return REBASE


def check_all(requirements: Sequence[Requirement], ctx: Context, before: bool = False) -> Verdict:
    """The strictest answer of all requirements (FAIL over RESTART over REBASE); REBASE carries
    every requirement's remapped actions. before=True runs the prechecks instead."""
    extra: list[Action] = []
    dropped: list[Action] = []
    restart = None
    for r in requirements:
        v = r.precheck(ctx) if before else r.check(ctx)
        if v.outcome is Outcome.FAIL:
            return v
        if v.outcome is Outcome.RESTART and restart is None:
            restart = v
        extra += v.extra
        dropped += v.dropped
    return restart or Verdict(Outcome.REBASE, extra=extra, dropped=dropped)
