"""The change stream's columns across ALTERs (spark_jobs/stream.py): fixed when the query starts,
every micro-batch given in them, matched by column ID (specs/format.md §11).

A Spark query's schema is fixed when it is defined, while each micro-batch is planned at its own
end version, whose columns an ALTER may have renamed, dropped or added to. As Delta's source keeps
a stream's schema from its start, a batch is cast to the stream's columns, never refused for its
own, so no ALTER stops a stream and a restart (new columns) always reads on:

- the stream's columns are the table's latest when the query starts;
- a column renamed since keeps the stream's name (same ID), in `_changed_columns` too;
- a column the batch's end version lacks (dropped by then, or added after it) is NULL, as
  Table.changes() up to that version has no such column;
- a column added after the query started is not in the stream until it is restarted.

A batch is Table.changes() over its own versions, so where it ends decides what it holds for such
columns: one ending before a drop still has the column's values; one ending before an add has
NULL there, not the column's read default (changes() over a range past the add gives that).

The engine has no type changes (§11), so a column ID has one type for good.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import tableformat as tf

from .changes import arrow_schema

CHANGED = "_changed_columns"
BEFORE = "_before_"


@dataclass(frozen=True)
class Projection:
    """One batch piece's rows into the stream's columns: for each stream field the piece's field
    that feeds it (None: NULL), and the piece's data column names to the stream's (by ID)."""

    target: pa.Schema
    sources: tuple              # the piece's field name, or None, for each field of `target`
    names: tuple                # ((piece name, stream name), ...) of the columns both have

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        n = batch.num_rows
        cols = []
        for f, src in zip(self.target, self.sources):
            if src is None:
                cols.append(pa.nulls(n, f.type))
            elif f.name == CHANGED:
                cols.append(renamed_lists(batch.column(src), dict(self.names)))
            else:
                cols.append(batch.column(src).cast(f.type))
        return pa.RecordBatch.from_arrays(cols, schema=self.target)


def renamed_lists(lists: pa.Array, names: dict) -> pa.Array:
    """Lists of column names renamed by `names`, names it lacks left out (a column the stream does
    not have); whole columns at once: the flattened names mapped, the offsets rebuilt."""
    flat = pc.list_flatten(lists)
    idx = pc.index_in(flat, value_set=pa.array(list(names), pa.string()))
    keep = pc.is_valid(idx)
    values = pa.array(list(names.values()), pa.string()).take(pc.filter(idx, keep))
    parents = pc.filter(pc.list_parent_indices(lists), keep).to_numpy(zero_copy_only=False)
    counts = np.bincount(parents.astype(np.int64), minlength=len(lists))
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    return pa.ListArray.from_arrays(offsets, values, type=lists.type, mask=pc.is_null(lists))


class StreamColumns:
    """The stream's columns: the output fields of a change read at the query's start, and the
    column ID behind each data column name."""

    def __init__(self, head: tf.ChangePlan, columns: str):
        self.columns = columns
        self.target = arrow_schema(head, columns)
        self.ids = {c.name: c.id for c in head.schema.columns}

    def projection(self, head: tf.ChangePlan) -> Projection | None:
        """How a piece planned with `head` (its end version's columns) becomes the stream's rows;
        None when it already has them: the same fields and the same column IDs (names alike after a
        drop and a rename are other columns)."""
        source = arrow_schema(head, self.columns)
        piece = {c.id: c.name for c in head.schema.columns}
        if source.equals(self.target) and {n: i for i, n in piece.items()} == self.ids:
            return None
        names = {piece[i]: n for n, i in self.ids.items() if i in piece}
        by_stream = {n: p for p, n in names.items()}
        sources = []
        for f in self.target:
            if f.name in self.ids:
                src = by_stream.get(f.name)
            elif f.name.startswith(BEFORE) and f.name[len(BEFORE):] in self.ids:
                old = by_stream.get(f.name[len(BEFORE):])
                src = None if old is None else BEFORE + old
            else:
                src = f.name if f.name in source.names else None
            sources.append(src)
        return Projection(self.target, tuple(sources), tuple(names.items()))


__all__ = ["Projection", "StreamColumns", "renamed_lists"]
