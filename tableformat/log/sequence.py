"""Ordered upserts: the `sequence_column` table property (specs/format.md §14).

CDC pipelines deliver events late and out of order. With a sequence column (an
event time, a source LSN) an update or upsert whose sequence is lower than the
row's current one is skipped instead of overwriting newer data (Hudi's
ordering field, Paimon's `sequence.field`); an equal or higher one wins. In one
batch the highest sequence per key wins. The row-operation planner (`row_ops`)
asks this module for the stored sequences and applies the rule round by round;
skipped rows are counted (`ignored`, `stale`) and recorded in a small Parquet
file the commit names (`skipped` action), so `changes(skipped=True)` can show
them with their reason. The write's requirement is `requirements.SequencesCurrent`.
"""
from __future__ import annotations

import uuid
import zlib
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..format.cfile_set import verified_parquet_file
from ..read.delta_tracker import apply_deltas
from ..format.constants import TABLETS_DIR
from ..format.diskrowset import read_base_columns
from ..format.errors import SequenceColumnError
from ..format.metadata import FileRef, RowSetMeta, TableState, property_value
from ..format.parallel import pmap
from ..format.schema import Schema
from ..format.storage import Storage

PROPERTY = "sequence_column"
# Types with a total order that a CDC source uses for positions: integers, times, decimals.
# Floats (NaN) and strings (an LSN like '0/16B6C50' does not sort as text) are refused.
ORDERABLE_KINDS = ("int8", "int16", "int32", "int64", "date", "unixtime_micros", "decimal")
STALE = "stale_sequence"          # the reason recorded for a skipped row
SKIPPED_DIR = f"{TABLETS_DIR}/_skipped"  # under tablets/, so vacuum frees it once the history horizon passes its commit


def sequence_column(state: TableState) -> str | None:
    return state.properties.get(PROPERTY)


def check_sequence_column(schema: Schema, properties: Mapping[str, Any]) -> None:
    """The property names a non-null, non-key column of an orderable type."""
    name = properties.get(PROPERTY)
    if name is None:
        return
    if not schema.has_column(name):
        raise SequenceColumnError(f"sequence_column {name!r} is not a column; columns are {schema.names}")
    if name in schema.primary_key:
        raise SequenceColumnError(f"sequence_column {name!r} is a primary key column; a key never changes, "
                                  "so it cannot order the versions of a row")
    col = schema.column(name)
    if col.type.kind not in ORDERABLE_KINDS:
        raise SequenceColumnError(f"sequence_column {name!r} is {col.type.name}; it must be one of "
                                  f"{', '.join(ORDERABLE_KINDS)} (a type with a total order)")
    if col.nullable:
        raise SequenceColumnError(f"sequence_column {name!r} is nullable; a row without a sequence cannot be "
                                  "ordered (make the column non-null)")


def stored_sequences(storage: Storage, state: TableState, column: str, rowsets: Sequence[RowSetMeta],
                     which: np.ndarray, rowid: np.ndarray) -> pa.Array:
    """The current value of `column` of each located row (null where which < 0): per touched
    rowset, one column read over the rowid span of its hits, or (sparse hits) one per block of
    `row_group_rows` holding a hit, with its deltas applied."""
    col = state.schema.column(column)
    out_idx: list[np.ndarray] = []
    parts: list[pa.Array] = []

    block = int(property_value(state.properties, "row_group_rows"))

    def read(rs: RowSetMeta, ids: np.ndarray, lo: int, hi: int) -> pa.Array:
        arrays = read_base_columns(storage, rs, [col], lo, hi)
        deltas = state.deltas_of(rs.id)
        if deltas:
            arrays, _ = apply_deltas(storage, rs, deltas, [col], arrays, lo, hi, state.read_ts)
        a = arrays[col.id]
        a = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
        return a.take(pa.array(ids - lo))

    def one(i: int):
        sel = np.flatnonzero(which == i)
        rs = rowsets[i]
        order = np.argsort(rowid[sel], kind="stable")
        sel = sel[order]
        ids = rowid[sel]
        lo, hi = int(ids[0]), int(ids[-1]) + 1
        if len(ids) * 4 >= hi - lo:
            return sel, read(rs, ids, lo, hi)
        blocks = ids // block
        parts = [read(rs, ids[blocks == b], int(b * block), int(min(rs.num_rows, (b + 1) * block)))
                 for b in np.unique(blocks)]
        return sel, pa.concat_arrays(parts)
    for sel, vals in pmap(one, [int(i) for i in np.unique(which[which >= 0])]):
        out_idx.append(sel)
        parts.append(vals)
    n = len(which)
    if not parts:
        return pa.nulls(n, col.arrow_type)
    pos = np.concatenate(out_idx)
    vals = pa.concat_arrays(parts).cast(col.arrow_type)
    # scatter: position i of the output takes vals[k] where pos[k] == i, null elsewhere
    src = np.full(n, -1, dtype=np.int64)
    src[pos] = np.arange(len(pos))
    return vals.take(pa.array(np.where(src >= 0, src, 0), mask=src < 0))


def ranks(stored: pa.Array, incoming: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Dense ranks of stored and incoming sequences on one scale, so the planner compares int64s
    whatever the column type (-1 for a null)."""
    both = pa.concat_arrays([stored, incoming.cast(stored.type)])
    r = pc.rank(both, sort_keys="ascending", tiebreaker="dense").to_numpy().astype(np.int64)
    r[pc.is_null(both).to_numpy(zero_copy_only=False)] = -1
    return r[:len(stored)], r[len(stored):]


def write_skipped(storage: Storage, batch: pa.Table, rows: np.ndarray, reason: str) -> FileRef:
    """The skipped input rows and their reason, as one Parquet file the commit names."""
    t = batch.take(pa.array(rows)).append_column("_reason", pa.array([reason] * len(rows), pa.string()))
    sink = pa.BufferOutputStream()
    pq.write_table(t, sink, compression="LZ4", write_page_checksum=True)
    buf = sink.getvalue()
    path = f"{SKIPPED_DIR}/skipped-{uuid.uuid4().hex}.parquet"
    size = storage.write(path, buf)
    return FileRef(path, size, crc32=zlib.crc32(buf))


def read_skipped(storage: Storage, ref: FileRef) -> pa.Table:
    return verified_parquet_file(storage, ref, "skipped rows file").read()
