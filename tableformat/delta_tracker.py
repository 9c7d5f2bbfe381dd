"""The delta tracker: a rowset's REDO and UNDO files applied to its base data (Kudu's
delta_tracker.cc and delta_applier.cc).

A read of the latest version applies REDO records oldest first; a read as of an
earlier time (behind the history horizon) first rolls the base back with UNDO
records newer than it, then applies only the REDO records at or before it.
`deleted_mask` says which rows are deleted as of a time; `apply_deltas` gives a
row range's column values and liveness. Whole columns at a time: one masked
placement per column and delta file. See specs/format.md §9.1 and §12.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .cfile_set import FILE_CACHE, field_name
from . import deltafile
from .deltafile import DELETE, REDO, REINSERT, UNDO, flag_name
from .errors import CorruptFileError
from .metadata import DeltaFileMeta, RowSetMeta
from .schema import Column
from .storage import Storage


def _visible_redo(d: DeltaFileMeta, t: pa.Table, read_ts: int | None) -> pa.Table:
    """The records of a REDO file committed at or before `read_ts` (all of them when None)."""
    if read_ts is None or d.max_ts <= read_ts:
        return t
    if "ts" not in t.column_names:
        return t.slice(0, 0)
    return t.filter(pc.less_equal(t.column("ts"), read_ts))


def files_read(deltas: Sequence[DeltaFileMeta], column_ids: Sequence[int], read_ts: int | None) \
        -> tuple[DeltaFileMeta, ...]:
    """The delta files a read of `column_ids` as of `read_ts` needs: REDO files that change one
    of the columns or delete/reinsert rows (none committed after `read_ts`), and, only for a
    read as of an earlier time, UNDO files newer than it. A current read never needs UNDO."""
    def matters(d: DeltaFileMeta) -> bool:
        return bool(d.delete_count or d.reinsert_count) or any(d.updates(c) for c in column_ids)
    redo = [d for d in deltas if d.kind == REDO and (read_ts is None or d.min_ts <= read_ts)]
    return tuple(d for d in redo + _undo_files(deltas, read_ts) if matters(d))


def _undo_files(deltas: Sequence[DeltaFileMeta], read_ts: int | None) -> list[DeltaFileMeta]:
    return [] if read_ts is None else [d for d in deltas if d.kind == UNDO and d.max_ts > read_ts]


def _undo_records(storage: Storage, rowset: RowSetMeta, deltas: Sequence[DeltaFileMeta], read_ts: int,
                  column_ids: Sequence[int] = ()) -> pa.Table | None:
    """UNDO records newer than `read_ts`, sorted by (rowid, ts): the earliest one per row and
    column holds the value as of `read_ts` (it is the before-image of the first later change)."""
    parts = []
    for d in _undo_files(deltas, read_ts):
        t = deltafile.read_delta(storage, d, column_ids)
        _check_rowids(t.column("rowid").to_numpy(), rowset, d)
        t = t.filter(pc.greater(t.column("ts"), read_ts))
        parts.append(t.select(["rowid", "op", "ts"] + [c for n in column_ids
                                                         for c in (flag_name(n), field_name(n))
                                                         if c in t.column_names]))
    parts = [p for p in parts if p.num_rows]
    if not parts:
        return None
    t = pa.concat_tables(parts, promote_options="default") if len(parts) > 1 else parts[0]
    if len(parts) > 1:
        t = t.take(pc.sort_indices(t, sort_keys=[("rowid", "ascending"), ("ts", "ascending")]))
    return t


def _first_per_row(rowid: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """Indices of the first selected record of each rowid (records sorted by rowid, ts)."""
    idx = np.flatnonzero(sel)
    if not len(idx):
        return idx
    r = rowid[idx]
    return idx[np.r_[True, r[1:] != r[:-1]]]


def deleted_mask(storage: Storage, rowset: RowSetMeta, deltas: Sequence[DeltaFileMeta],
                 read_ts: int | None = None) -> np.ndarray | None:
    """Rows deleted as of `read_ts` (latest when None); None if no row can be.

    UNDO records newer than `read_ts` decide first (a row inserted later was absent, a row
    deleted later was there); a REDO DELETE / REINSERT at or before `read_ts` is newer still.
    """
    relevant = [d for d in deltas if d.kind == REDO and (d.delete_count or d.reinsert_count)]
    undo = [d for d in _undo_files(deltas, read_ts) if d.delete_count or d.reinsert_count]
    if not relevant and not undo:
        return None
    key = rowset.id + "#deleted#" + ",".join(d.path for d in relevant + undo) + f"@{read_ts}"
    cached = FILE_CACHE.get(storage, key)
    if cached is not None:
        return cached
    deleted = np.zeros(rowset.num_rows, dtype=bool)
    u = _undo_records(storage, rowset, undo, read_ts) if undo else None
    if u is not None:
        rowid, op = u.column("rowid").to_numpy(), u.column("op").to_numpy()
        first = _first_per_row(rowid, (op == DELETE) | (op == REINSERT))
        deleted[rowid[first]] = op[first] == DELETE      # an UNDO DELETE: the row was inserted later
    for d in redo_order(relevant):
        t = _visible_redo(d, deltafile.read_delta(storage, d), read_ts)
        rowid = t.column("rowid").to_numpy()
        op = t.column("op").to_numpy()
        _check_rowids(rowid, rowset, d)
        # records are sorted by (rowid, ts): the last DELETE / REINSERT of a row decides
        sel = (op == DELETE) | (op == REINSERT)
        r, o = rowid[sel], op[sel]
        last = np.r_[r[1:] != r[:-1], True] if len(r) else np.zeros(0, bool)
        deleted[r[last]] = o[last] == DELETE
    FILE_CACHE.put(storage, key, deleted, deleted.nbytes)
    return deleted


def redo_order(deltas: Sequence[DeltaFileMeta]) -> list[DeltaFileMeta]:
    """REDO files in timestamp order: a compaction's merged file (older records) may be
    listed after a concurrent mutation's file (newer)."""
    return sorted(deltas, key=lambda d: d.max_ts)


def _check_rowids(rowid: np.ndarray, rowset: RowSetMeta, d: DeltaFileMeta) -> None:
    if len(rowid) and int(rowid.max()) >= rowset.num_rows:
        raise CorruptFileError(f"delta file {d.path} has rowid {int(rowid.max())} beyond its rowset's "
                               f"{rowset.num_rows} rows")


def _sparse_positions(rowids: np.ndarray, records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For records' rowids, whether each is among the sorted unique `rowids`, and its position there."""
    idx = np.minimum(np.searchsorted(rowids, records), max(len(rowids) - 1, 0))
    hit = rowids[idx] == records if len(rowids) else np.zeros(len(records), bool)
    return hit, idx


def apply_deltas(storage: Storage, rowset: RowSetMeta, deltas: Sequence[DeltaFileMeta], columns: Sequence[Column],
               arrays: dict[int, pa.Array], start: int, stop: int, read_ts: int | None = None,
               rowids: np.ndarray | None = None) -> tuple[dict[int, pa.Array], np.ndarray | None]:
    """Apply delta files to base values of rows [start, stop): the rows as of `read_ts`.

    With `rowids` (sorted, unique: a key lookup's hits), `arrays` hold those rows only and
    start/stop are ignored; records of other rows are skipped.

    With `read_ts` None (a snapshot read from its own files) every REDO file
    applies, oldest first. Otherwise (a version read from a later version's
    files) UNDO records newer than `read_ts` roll values back first, then REDO
    records at or before it roll forward. Whole-column: each file's changes are
    placed in one pass per column (_place); files that touch none of
    `columns` and delete nothing are not read. Returns the new arrays and the
    live-row mask (None when every row is live).
    """
    if rowids is not None:
        rowids = np.asarray(rowids, np.int64)
        start, stop = 0, len(rowids)
    out = dict(arrays)
    # Gather every file's changes per column, then place each column in one pass (_place).
    pending: dict[int, list[tuple[np.ndarray, pa.Array]]] = {}
    undo_ids = [c.id for c in columns if any(d.updates(c.id) for d in _undo_files(deltas, read_ts))]
    u = _undo_records(storage, rowset, deltas, read_ts, undo_ids) if undo_ids else None
    if u is not None:
        rowid = u.column("rowid").to_numpy().astype(np.int64)
        op = u.column("op").to_numpy()
        if rowids is not None:
            hit, pos = _sparse_positions(rowids, rowid)
            rowid = np.where(hit, pos, -1)      # records of other rows fall outside [0, n)
        for cid in undo_ids:
            if flag_name(cid) not in u.column_names:
                continue
            flags = u.column(flag_name(cid)).fill_null(False).to_numpy(zero_copy_only=False) & (op != DELETE)
            first = _first_per_row(rowid, flags)
            first = first[(rowid[first] >= start) & (rowid[first] < stop)]
            if len(first):
                pending.setdefault(cid, []).append((rowid[first] - start,
                                                    u.column(field_name(cid)).take(pa.array(first)).combine_chunks()))
    for d in redo_order(deltas):
        if d.kind != REDO or (read_ts is not None and d.min_ts > read_ts):
            continue
        wanted = [c.id for c in columns if d.updates(c.id)]
        if not wanted:
            continue
        t = _visible_redo(d, deltafile.read_delta(storage, d, wanted), read_ts)
        rowid = t.column("rowid").to_numpy().astype(np.int64)
        _check_rowids(rowid, rowset, d)
        if rowids is not None:
            hit, pos = _sparse_positions(rowids, rowid)
            t, rowid = t.filter(pa.array(hit)), pos[hit]
        lo, hi = np.searchsorted(rowid, [start, stop])
        if lo == hi:
            continue
        pos = rowid[lo:hi] - start
        op = t.column("op").to_numpy()[lo:hi]
        for cid in wanted:
            flags = t.column(flag_name(cid)).to_numpy()[lo:hi] & (op != DELETE)
            if flags.any():
                values = t.column(field_name(cid)).slice(lo, hi - lo).filter(pa.array(flags)).combine_chunks()
                pending.setdefault(cid, []).append((pos[flags], values))
    for cid, changes in pending.items():
        base = out[cid]
        if isinstance(base, pa.ChunkedArray):
            base = base.combine_chunks()
        if len(changes) == 1 and bool((np.diff(changes[0][0]) > 0).all()):     # sorted, one per row
            pos, values = changes[0]
        else:
            allpos = np.concatenate([p for p, _ in changes])
            allvals = pa.concat_arrays([v.cast(base.type) for _, v in changes])
            # the last change to a row wins: unique over the reversed order, then ascending rowid
            rev = allpos[::-1]
            uniq, first_in_rev = np.unique(rev, return_index=True)
            pos, values = uniq, allvals.take(pa.array(len(allpos) - 1 - first_in_rev))
        out[cid] = _place(base, pos, values.cast(base.type))
    deleted = deleted_mask(storage, rowset, deltas, read_ts)
    live = None if deleted is None else ~(deleted[rowids] if rowids is not None else deleted[start:stop])
    if live is not None and live.all():
        live = None
    return out, live


def _place(base: pa.Array, pos: np.ndarray, values: pa.Array) -> pa.Array:
    """`base` with `values` at positions `pos` (sorted, unique), in one pass over the column.

    Variable-width columns are gathered with one take over [base, values] (measured 2.3x
    faster than replace_with_mask, which rebuilds the value buffer byte by byte)."""
    n = len(base)
    if (pa.types.is_integer(base.type) or pa.types.is_floating(base.type)) and \
            not base.null_count and not values.null_count:
        # no validity bitmap to merge: one numpy copy and a scatter (measured 2.8x faster)
        out = base.to_numpy().copy()
        out[pos] = values.to_numpy()
        return pa.array(out, base.type)
    if pa.types.is_binary(base.type) or pa.types.is_string(base.type):
        idx = np.arange(n, dtype=np.int64)
        idx[pos] = n + np.arange(len(pos))
        return pa.concat_arrays([base, values]).take(pa.array(idx))
    mask = np.zeros(n, dtype=bool)
    mask[pos] = True
    return pc.replace_with_mask(base, pa.array(mask), values)


def updated_columns(deltas: Sequence[DeltaFileMeta]) -> set[int]:
    out: set[int] = set()
    for d in deltas:
        out.update(k for k, v in d.update_counts.items() if v)
    return out
