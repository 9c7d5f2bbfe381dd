"""Batch lookups by primary key: interval -> bloom -> PK index, then only the row groups
holding hits (Kudu's point lookup, over a whole batch of keys at once).

Keys are located as a write's key check locates them (`keyprobe.probe_hashed`:
key interval, bloom filter, PK index, or the PK index's cached hash index once
built), minus rows deleted as of the snapshot; each rowset's hits are read from the base
row groups that hold them (`base_rows.read_base_rows`) and its deltas applied to
those rows alone (`delta_tracker.apply_deltas`), as of the snapshot's time. No
scan, no per-key loop. See specs/format.md §6 and §9.1.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..format.batch import convert_column, to_arrow_table
from .delta_tracker import apply_deltas
from ..format.base_rows import read_base_rows
from ..format.cfile_set import FILE_CACHE
from ..format.errors import (InvalidOptionError, MissingColumnError, NullValueError,
                             UnknownScanColumnError)
from ..format.keyencoder import encode_keys
from .keyprobe import probe_hashed
from ..format.metadata import RowSetMeta, TableState
from ..format.parallel import pmap
from ..format.schema import Column
from ..format.storage import Storage

FOUND = "_found"
MISSING = ("omit", "null")


def key_table(state: TableState, data: Any, what: str = "lookup keys") -> pa.Table:
    """The key columns of `data` (Arrow, pandas, a dict of lists, a list of dicts), converted to the
    schema's key types; other columns are ignored."""
    t = to_arrow_table(data)
    schema = state.schema
    missing = [k for k in schema.primary_key if k not in t.column_names]
    if missing:
        raise MissingColumnError(f"{what} lack primary key column(s) {missing} of table {state.name!r}; "
                                 f"the key is {list(schema.primary_key)}")
    arrays = []
    for c in schema.key_columns:
        arr = convert_column(t.column(c.name), c, check_nulls=False)
        if arr.null_count:
            raise NullValueError(f"{what}: key column {c.name!r} has {arr.null_count} NULL value(s); a primary "
                                 "key is never NULL")
        arrays.append(arr)
    return pa.table(arrays, names=list(schema.primary_key))


def lookup(storage: Storage, state: TableState, data: Any, columns: Sequence[str] | None = None,
           missing: str = "omit") -> pa.Table:
    """The live rows of `state` for the keys of `data`, in input order (a key given twice comes
    back twice). missing="omit" leaves absent keys out; "null" gives them a row of NULLs (the
    key columns keep the key), with a `_found` column."""
    schema = state.schema
    out_cols = _output_columns(state, columns, missing)
    keys_in = key_table(state, data)
    read_cols = [c for c in out_cols if c.name not in schema.primary_key]
    key_id, uniq, distinct = _distinct_keys(state, keys_in)
    u = len(uniq)
    tablet_pos = state.partitioning.assign(schema, distinct, strict=False)[0] if u else np.zeros(0, np.int64)
    with FILE_CACHE.operation():        # its row groups never evict the PK indexes it just used
        hits = _locate(storage, state, uniq, tablet_pos)
        found_at, values = _read_hits(storage, state, hits, read_cols, u)
    return _assemble(state, out_cols, keys_in, found_at[key_id], values, missing)


def _output_columns(state: TableState, columns: Sequence[str] | None, missing: str) -> list[Column]:
    """The columns to return; bad options fail before any key is read."""
    schema = state.schema
    if missing not in MISSING:
        raise InvalidOptionError(f"missing must be one of {MISSING}, got {missing!r}")
    if columns is not None:
        unknown = [c for c in columns if not schema.has_column(c)]
        if unknown:
            raise UnknownScanColumnError(f"lookup names unknown column(s) {unknown}; columns are {schema.names}")
    out_names = list(columns) if columns is not None else schema.names
    return [schema.column(c) for c in out_names]


def _distinct_keys(state: TableState, keys_in: pa.Table) -> tuple[np.ndarray, pa.Array, pa.Table]:
    """Each distinct key is located once: (key_id per input row, encoded distinct keys, their key columns)."""
    n = keys_in.num_rows
    kcols = state.schema.key_columns
    enc = encode_keys([keys_in.column(c.name) for c in kcols], [c.type for c in kcols])
    if n == 1:                     # a point lookup: one key is its own distinct set
        return np.zeros(1, np.int64), enc, keys_in
    dict_enc = pc.dictionary_encode(enc)
    key_id = dict_enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    uniq = dict_enc.dictionary
    u = len(uniq)
    first = np.full(u, n, np.int64)
    np.minimum.at(first, key_id, np.arange(n))
    distinct = keys_in if u == n and (first == np.arange(n)).all() else keys_in.take(pa.array(first))
    return key_id, uniq, distinct


def _locate(storage: Storage, state: TableState, uniq: pa.Array, tablet_pos: np.ndarray) -> list:
    """Where each distinct key lives: [(unique-key positions, rowset, rowids)], rowids sorted."""
    tablet_ids = state.partitioning.tablet_ids()

    # rowsets a read of this version sees (an insert after it added none of its rows)
    def visible(rs: RowSetMeta) -> bool:
        return state.read_ts is None or (rs.created_ts or 0) <= state.read_ts

    groups = []
    for t in np.unique(tablet_pos[tablet_pos >= 0]).tolist():
        rowsets = [r for r in state.rowsets_in(tablet_ids[t]) if visible(r)]
        if rowsets:
            groups.append((np.flatnonzero(tablet_pos == t), rowsets))

    def locate(g):
        rows, rowsets = g
        w, r = probe_hashed(storage, rowsets, uniq.take(pa.array(rows)), state.deltas_of, state.read_ts)
        return rows, w, r, rowsets

    hits = []                      # (unique-key positions, rowset, rowids), rowids sorted
    for rows, w, r, rowsets in (pmap(locate, groups) if len(groups) > 1 else map(locate, groups)):
        for i in np.unique(w[w >= 0]).tolist():
            sel = w == i
            order = np.argsort(r[sel], kind="stable")
            hits.append((rows[sel][order], rowsets[i], r[sel][order]))
    return hits


def _read_hits(storage: Storage, state: TableState, hits: list, read_cols: list[Column],
               u: int) -> tuple[np.ndarray, dict[int, pa.Array]]:
    """The hit rows' non-key columns as of the snapshot, read from only the row groups holding them.

    Returns (unique key -> row of the concatenated hits or -1, column id -> values).
    """
    def read(h):
        pos, rs, rowids = h
        arrays = read_base_rows(storage, rs, read_cols, rowids)
        deltas = state.deltas_of(rs.id)
        if deltas and read_cols:
            arrays, _ = apply_deltas(storage, rs, deltas, read_cols, arrays, 0, 0, state.read_ts, rowids)
        return pos, arrays

    found_at = np.full(u, -1, np.int64)          # unique key -> row of the concatenated hits
    parts = pmap(read, hits) if len(hits) > 1 else [read(h) for h in hits]
    offset = 0
    for pos, _ in parts:
        found_at[pos] = offset + np.arange(len(pos))
        offset += len(pos)
    def gather(c) -> pa.Array:
        got = [a[c.id] if a[c.id].type == c.arrow_type else a[c.id].cast(c.arrow_type) for _, a in parts]
        return got[0] if len(got) == 1 else pa.concat_arrays(got) if got else pa.array([], c.arrow_type)
    return found_at, {c.id: gather(c) for c in read_cols}


def _assemble(state: TableState, out_cols: list[Column], keys_in: pa.Table, row_hit: np.ndarray,
              values: dict[int, pa.Array], missing: str) -> pa.Table:
    """One output row per input row found (or per input row, `missing="null"`), in input order.

    `row_hit` is, per input row, its row of the hits or -1 if absent.
    """
    schema = state.schema
    n = keys_in.num_rows
    found = row_hit >= 0
    if missing == "omit":
        take_in = np.flatnonzero(found)
        take_hit = pa.array(row_hit[take_in])
    else:
        take_in = np.arange(n)
        take_hit = pa.array(np.where(found, row_hit, 0), mask=~found)
    # one hit per input row, in order: the hits are the answer as they are (a single key)
    as_is = found.all() and (row_hit == np.arange(n)).all()
    arrays, fields = [], []
    for c in out_cols:
        if c.name in schema.primary_key:
            arr = keys_in.column(c.name)
            arr = arr if len(take_in) == n else arr.take(pa.array(take_in))
            arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
        elif as_is:
            arr = values[c.id]
        else:
            arr = values[c.id].take(take_hit) if len(values[c.id]) or missing == "omit" else \
                pa.nulls(len(take_in), c.arrow_type)
        arrays.append(arr)
        fields.append(pa.field(c.name, c.arrow_type, nullable=c.nullable or missing == "null"))
    if missing == "null":
        arrays.append(pa.array(found))
        fields.append(pa.field(FOUND, pa.bool_(), nullable=False))
    if not arrays:      # columns=[]: no columns, but a row per key found (an existence check)
        return pa.table({"_": pa.nulls(len(take_in))}).select([])
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
