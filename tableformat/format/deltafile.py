"""Delta files: rowid-keyed REDO and UNDO records of one rowset (specs/format.md §9, specs/design/compaction.md).

A delta file holds records for exactly one rowset, sorted by rowid, at most one
per (rowid, timestamp). Each record has an operation (UPDATE / DELETE /
REINSERT) and, per changed column ID c, a flag `u<c>` ("this cell changed")
and the new value `c<c>` (NULL there is "set to NULL", distinct from "not
changed"). Key columns are stored too (`c<key id>`), so change history and
conflict checks never need the PK index. A REDO file written by a commit has
no timestamp column: every record takes the commit's timestamp. Files that
span several timestamps (compaction output, UNDO) carry a `ts` column.
Applying them to base data is `delta_tracker`'s. See `specs/format.md` §9.
"""
from __future__ import annotations

import uuid
import zlib
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .cfile_set import FILE_CACHE, PARQUET_CODEC, field_name, parquet_file, verified_parquet_file, wrap_read_error
from .errors import CorruptFileError
from .constants import DELETE, REDO, REINSERT, UNDO, UPDATE, DeltaOp, flag_name, rowset_dir  # noqa: F401  (re-exported)
from .metadata import DeltaFileMeta, RowSetMeta  # noqa: F401  (DeltaFileMeta: re-exported)
from .schema import Column, Schema
from .storage import Storage





def record_order(rowids: np.ndarray, ts: np.ndarray | None) -> np.ndarray | None:
    """The order that sorts records by (rowid, ts), stable; None when they are in it already.
    Records mostly come nearly sorted (a merge's UNDO: one sorted run per input), so one stable
    sort by rowid is tried before sorting by both."""
    if len(rowids) < 2:
        return None
    up = rowids[1:] >= rowids[:-1]
    if up.all() and (ts is None or not ((rowids[1:] == rowids[:-1]) & (ts[1:] < ts[:-1])).any()):
        return None
    order = np.argsort(rowids, kind="stable")
    if ts is not None:
        r, t = rowids[order], ts[order]
        if ((r[1:] == r[:-1]) & (t[1:] < t[:-1])).any():
            return np.lexsort((ts, rowids))
    return order


def _gather(col: pa.Array | pa.ChunkedArray, idx: pa.Array | None) -> pa.Array | pa.ChunkedArray:
    return col if idx is None else col.take(idx)


def write_delta_file(storage: Storage, schema: Schema, rowset: RowSetMeta, rowids: np.ndarray, ops: np.ndarray,
                     keys: pa.Table, updates: dict[int, tuple[np.ndarray, pa.Array]], kind: str = REDO,
                     ts: np.ndarray | None = None) -> DeltaFileMeta:
    """Write records sorted by rowid. `updates[col_id] = (changed mask, values)`; `keys` by column name."""
    order = record_order(rowids, ts)
    idx = pa.array(order) if order is not None else None
    if order is None:                        # already in order: no gather
        order = slice(None)
    names = ["rowid", "op"]
    arrays: list[pa.Array] = [pa.array(rowids[order].astype(np.uint32)), pa.array(ops[order].astype(np.int8))]
    fields = [pa.field("rowid", pa.uint32(), nullable=False), pa.field("op", pa.int8(), nullable=False)]
    if ts is not None:
        names.append("ts")
        arrays.append(pa.array(ts[order].astype(np.int64)))
        fields.append(pa.field("ts", pa.int64(), nullable=False))
    for c in schema.key_columns:
        arrays.append(_gather(keys.column(c.name), idx))
        fields.append(pa.field(field_name(c.id), c.arrow_type, nullable=False,
                               metadata={b"PARQUET:field_id": str(c.id).encode()}))
    codecs = {}
    update_counts = {}
    for cid, (mask, values) in sorted(updates.items()):
        col = schema.by_id(cid)
        m = mask[order]
        if not m.any():
            continue
        update_counts[cid] = int(m.sum())
        arrays.append(pa.array(m))
        fields.append(pa.field(flag_name(cid), pa.bool_(), nullable=False))
        arrays.append(_gather(values, idx))
        fields.append(pa.field(field_name(cid), col.arrow_type, nullable=True,
                               metadata={b"PARQUET:field_id": str(cid).encode()}))
        codecs[field_name(cid)] = PARQUET_CODEC[col.compression]
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    sink = pa.BufferOutputStream()
    # The footer is most of a small REDO file: no ARROW:schema (each field's Parquet type is its
    # type, §9) and no statistics (readers use the descriptor's, never the file's). Keys repeat
    # (few hosts, metrics): dictionary-encoded, as is `op`.
    dictionary = ["op"] + [field_name(c.id) for c in schema.key_columns]
    pq.write_table(table, sink, compression="LZ4", use_dictionary=dictionary, write_page_checksum=True,
                   store_decimal_as_integer=True, column_encoding={"rowid": "DELTA_BINARY_PACKED"},
                   row_group_size=1 << 20, store_schema=False, write_statistics=False)
    buf = sink.getvalue()
    path = f"{rowset_dir(rowset.tablet, rowset.id)}/{kind}-{uuid.uuid4().hex[:12]}.parquet"
    size = storage.write(path, buf)
    ops_sorted = ops[order]
    t_min = int(ts.min()) if ts is not None and len(ts) else 0
    t_max = int(ts.max()) if ts is not None and len(ts) else 0
    return DeltaFileMeta(path, size, kind, rowset.id, len(rowids), int((ops_sorted == DELETE).sum()),
                         int((ops_sorted == REINSERT).sum()), update_counts, t_min, t_max, ts is not None,
                         zlib.crc32(buf))


def read_delta(storage: Storage, meta: DeltaFileMeta, column_ids: Sequence[int] = (),
               keys: Sequence[Column] = ()) -> pa.Table:
    """rowid, op, (ts), the u/c pairs of the requested columns present in the file, and key columns."""
    ref = meta.ref
    if ref.crc32 is not None and FILE_CACHE.get(storage, meta.path + "#verified", ref.size) is None:
        # Delta files are small and mostly read whole: verify every byte once per process
        # (page CRCs miss page headers and the footer), then reads use the page CRCs.
        pf = verified_parquet_file(storage, ref, "delta file")
        FILE_CACHE.put(storage, meta.path + "#verified", True, 16, ref.size, index=True)
    else:
        pf = parquet_file(storage, ref)
    names = set(pf.schema_arrow.names)
    cols = ["rowid", "op"] + (["ts"] if "ts" in names else [])
    for cid in column_ids:
        if flag_name(cid) in names:
            cols += [flag_name(cid), field_name(cid)]
    cols += [field_name(c.id) for c in keys if field_name(c.id) in names]
    key = f"{meta.path}#" + ",".join(cols)
    cached = FILE_CACHE.get(storage, key, ref.size)
    if cached is not None:
        return cached
    try:
        t = pf.read(columns=cols, use_threads=False)
    except (OSError, pa.ArrowException) as e:
        raise wrap_read_error(meta.path, e) from None
    if t.num_rows != meta.num_records:
        raise CorruptFileError(f"delta file {meta.path} has {t.num_rows} records, the log says {meta.num_records}")
    FILE_CACHE.put(storage, key, t, t.nbytes, ref.size, index=True)      # every lookup of the rowset reads it
    return t
