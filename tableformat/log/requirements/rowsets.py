"""Requirements on the table's definition and its rowsets: what an ALTER, a compaction and a
restore rely on, and that one commit's rowsets share no key (specs/format.md §10). A compaction's
inputs must not be rewritten under it; REDO records committed to a merge's inputs meanwhile are
remapped onto its outputs (`remap`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

from ..actions import Action, AddDelta, AddRowSet
from ...format.diskrowset import read_pk_index
from ...format.errors import CommitConflictError, DuplicateKeyError
from ...read.keyprobe import probe
from ..matrix import Outcome
from ..remap import remap_by_key
from .base import REBASE, Context, Requirement, Verdict, new_rowsets, no_rebase, strictest


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
class DefinitionUnchanged(Requirement):
    """The schema, partitioning and properties the plan used still hold."""

    kind: ClassVar[str] = "definition_unchanged"

    def check(self, ctx: Context) -> Verdict:
        return strictest(Verdict(ctx.decide(c), "the table definition changed (ALTER TABLE)",
                                 CommitConflictError("the table definition changed concurrently; run it again"))
                         for c in ctx.winners if c.changes_definition)


@dataclass(frozen=True)
class NoRowsInTablets(Requirement):
    """No winner added rows to these tablets (an ALTER dropping their range partitions)."""

    tablets: tuple[str, ...] = ()
    kind: ClassVar[str] = "no_rows_in_tablets"

    def check(self, ctx: Context) -> Verdict:
        return strictest(Verdict(ctx.decide(c), "rows landed in a range being dropped")
                         for c in ctx.winners if any(r.tablet in self.tablets for r in new_rowsets(ctx, [c])))


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
        return strictest(Verdict(ctx.decide(c), "the rowset changed under the compaction",
                                 CommitConflictError("the rowset changed under the compaction"))
                         for c in ctx.winners
                         if c.changes_definition or any(_touches(a, self.rowsets) for a in c.actions))


@dataclass(frozen=True)
class MergeInputsRemappable(Requirement):
    """A merging compaction's inputs were not rewritten by another compaction; REDO records
    committed to them meanwhile are remapped, by the keys they carry, onto the outputs."""

    inputs: tuple[str, ...] = ()
    kind: ClassVar[str] = "merge_inputs_remappable"

    def check(self, ctx: Context) -> Verdict:
        for c in ctx.winners:
            if c.changes_definition:
                return Verdict(ctx.decide(c), "the table definition changed during the compaction",
                               CommitConflictError("the table definition changed during the compaction"))
            if any(_touches(a, self.inputs) for a in c.actions):
                # another compaction rewrote an input (its base, REDO or UNDO files): remapping its
                # files would apply history twice, so this merge gives up and is planned again
                return Verdict(no_rebase(ctx, c), "another compaction rewrote the same rowsets",
                               CommitConflictError("another compaction rewrote the same rowsets"))
        late = [(c, a.delta) for c in ctx.winners for a in c.of(AddDelta) if a.delta.rowset in self.inputs]
        if not late:
            return REBASE
        try:
            extra = remap_by_key(ctx.storage, ctx.snapshot, ctx.own, late, ctx.written)
        except CommitConflictError as e:
            return Verdict(ctx.fallback(), str(e), e)
        return Verdict(Outcome.REBASE, "concurrent REDO records remapped onto the outputs", extra=extra)


@dataclass(frozen=True)
class DataUnchanged(Requirement):
    """No winner changed data (a restore: any concurrent write may undo part of it)."""

    kind: ClassVar[str] = "data_unchanged"

    def check(self, ctx: Context) -> Verdict:
        return strictest(Verdict(ctx.decide(c), "data changed concurrently")
                         for c in ctx.winners if c.data_change and c.of(AddRowSet, AddDelta))
