"""The requirement of an ordered upsert (the `sequence_column` property, specs/format.md §14):
the stored sequences it compared are still current when it commits."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Mapping

import numpy as np

from ..actions import AddDelta, AddRowSet, RemoveRowSet
from ...format.deltafile import REDO, flag_name, read_delta
from .base import REBASE, Context, Requirement, Verdict, no_rebase, pack_rowids, unpack_rowids


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
        for c in ctx.winners:
            if any(isinstance(a, RemoveRowSet) and a.rowset_id in self.rows and a.rowset_id not in readded
                   for a in c.actions):
                # a merging compaction moved the rows: a sequence updated on its outputs since is not
                # found by rowid, so compare again
                return Verdict(no_rebase(ctx, c), "a rowset whose sequences it compared was rewritten concurrently")
            for a in c.of(AddDelta):
                if a.delta.kind == REDO and a.delta.rowset in self.rows and a.delta.updates(self.column_id):
                    t = read_delta(ctx.storage, a.delta, [self.column_id])
                    flags = t.column(flag_name(self.column_id)).fill_null(False).to_numpy(zero_copy_only=False)
                    changed = t.column("rowid").to_numpy()[flags]
                    if np.isin(self.rows[a.delta.rowset], changed).any():
                        return Verdict(no_rebase(ctx, c), "the sequence of a row it compared was updated "
                                                           "concurrently")
        return REBASE

    def _body(self) -> dict:
        return {"rows": {r: pack_rowids(v) for r, v in self.rows.items()}, "column_id": self.column_id}

    @classmethod
    def from_body(cls, d: dict) -> "SequencesCurrent":
        return cls({r: unpack_rowids(v) for r, v in d["rows"].items()}, d["column_id"])
