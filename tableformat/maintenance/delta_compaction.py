"""Delta compactions of one rowset (minor, major, UNDO GC) and the history records compactions write.

- Minor delta: a rowset's REDO files become one file (records keep their
  timestamps in a `ts` column). Rowids are kept.
- Major delta: the REDO updates of chosen columns are applied to base data,
  written as a new column-group file holding only those columns; their
  before-images become UNDO records; the other records (deletes, updates of
  other columns) go to one new REDO file.
- UNDO GC: UNDO files older than the ancient history mark are dropped.

The record helpers (reading every REDO/UNDO record of a rowset, inverting REDO
into UNDO, dropping records no reader can ask for, writing records back) are
shared with the merging compaction (`compaction.py`). Kudu's `delta_compaction.cc`.
See `specs/format.md`, section "Compaction".
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..log.actions import Action, AddDelta, AddRowSet, RemoveDelta, RemoveRowSet, SetHistory
from .compaction_policy import ancient_undo
from ..format.cfile_set import field_name
from ..read.delta_tracker import apply_deltas, redo_order
from ..format.deltafile import (DELETE, REDO, REINSERT, UNDO, UPDATE, DeltaFileMeta, flag_name, read_delta,
                                write_delta_file)
from ..format.constants import rowset_dir
from ..format.base_writer import write_base_file
from ..format.diskrowset import read_base_columns
from ..format.metadata import RowSetMeta, TableState
from ..log.mvcc import gc_floor, kept_by_tags, retention_points
from ..format.schema import Column
from ..format.storage import Storage


@dataclass
class Prepared:
    """Files written by a compaction and the actions that would commit them."""

    actions: list[Action]
    written: list[str]
    inputs: set[str]
    outputs: list[RowSetMeta] = field(default_factory=list)


def read_all_deltas(storage: Storage, st: TableState, rs: RowSetMeta, kind: str = REDO) \
        -> tuple[pa.Table | None, list]:
    """Every record of a rowset's REDO (or UNDO) files, in (rowid, ts) order, with a ts column
    and all columns."""
    files = redo_order([d for d in st.deltas_of(rs.id) if d.kind == kind])
    ids = [c.id for c in st.schema.columns if c.id not in {k.id for k in st.schema.key_columns}]
    parts = []
    for d in files:
        t = read_delta(storage, d, ids, st.schema.key_columns)
        if "ts" not in t.column_names:
            t = t.append_column("ts", pa.array(np.full(t.num_rows, d.max_ts, np.int64)))
        parts.append(t)
    if not parts:
        return None, files
    t = pa.concat_tables(parts, promote_options="default")
    if len(parts) > 1:
        t = t.take(pc.sort_indices(t, sort_keys=[("rowid", "ascending"), ("ts", "ascending")]))
    return t, files


def write_records(storage: Storage, st: TableState, rs: RowSetMeta, t: pa.Table, keep_cols: set[int] | None,
                  kind: str = REDO) -> DeltaFileMeta | None:
    """Records (as `read_all_deltas` gives them) as one delta file of `rs`, with only the cells of
    `keep_cols` (all when None); None when there are no records."""
    if t is None or t.num_rows == 0:
        return None
    rowid = t.column("rowid").to_numpy().astype(np.int64)
    ts = t.column("ts").to_numpy()
    op = t.column("op").to_numpy()
    keys = pa.table({c.name: t.column(field_name(c.id)) for c in st.schema.key_columns})
    updates = {}
    for c in st.schema.columns:
        if flag_name(c.id) in t.column_names and (keep_cols is None or c.id in keep_cols):
            flags = t.column(flag_name(c.id)).fill_null(False).to_numpy(zero_copy_only=False)
            updates[c.id] = (flags, t.column(field_name(c.id)))
    return write_delta_file(storage, st.schema, rs, rowid, op, keys, updates, kind, ts)


def _before_values(records: pa.Table, flags: np.ndarray, base: pa.Array, cid: int) -> pa.Array:
    """Per record, the value of column `cid` just before it: the previous record of the same row
    that set the column, else the base value (records sorted by rowid, ts)."""
    rowid = records.column("rowid").to_numpy().astype(np.int64)
    m = len(rowid)
    if not m:
        return pa.array([], base.type)
    last_set = np.maximum.accumulate(np.where(flags, np.arange(m), -1))
    prev = np.r_[-1, last_set[:-1]]
    same = (prev >= 0) & (rowid[np.maximum(prev, 0)] == rowid)
    from_base = base.take(pa.array(rowid))
    if flag_name(cid) not in records.column_names or not same.any():
        return from_base
    from_prev = records.column(field_name(cid)).take(pa.array(np.maximum(prev, 0))).cast(base.type)
    return pc.if_else(pa.array(same), from_prev, from_base)


def undo_of(records: pa.Table, base: dict[int, pa.Array], cols: Sequence[Column], final_delete: np.ndarray) \
        -> pa.Table:
    """UNDO records inverting REDO `records` (sorted by rowid, ts) over `base` values.

    UPDATE -> UPDATE holding the before-images of the cells it set; DELETE -> REINSERT of the
    row's values before it; REINSERT -> DELETE. Records flagged `final_delete` (a row's last
    DELETE, which stays a REDO record) are skipped.
    """
    op = records.column("op").to_numpy()
    keep = ~final_delete
    out_op = np.select([op == DELETE, op == REINSERT], [REINSERT, DELETE], UPDATE).astype(np.int8)
    arrays = {"rowid": records.column("rowid"), "op": pa.array(out_op), "ts": records.column("ts")}
    for name in records.column_names:
        if name[1:].isdigit() and name == field_name(int(name[1:])) and flag_name(int(name[1:])) not in records.column_names:
            arrays[name] = records.column(name)           # key columns
    for c in cols:
        if c.id not in base or flag_name(c.id) not in records.column_names and field_name(c.id) in arrays:
            continue                                      # absent, or a key column (never changes)
        present = flag_name(c.id) in records.column_names
        sets = records.column(flag_name(c.id)).fill_null(False).to_numpy(zero_copy_only=False) & (op != DELETE) \
            if present else np.zeros(len(op), bool)
        want = (sets & (op == UPDATE)) | (op == DELETE)
        if not want.any():
            continue
        arrays[flag_name(c.id)] = pa.array(want)
        arrays[field_name(c.id)] = _before_values(records, sets, base[c.id], c.id)
    t = pa.table(arrays)
    return t.filter(pa.array(keep))


def gc_records(t: pa.Table | None, ahm: int | None, st: TableState) -> pa.Table | None:
    """Drop history records at or before the ancient history mark that no tagged version needs
    (mvcc.kept_by_tags): no reader can ask for them."""
    if t is None or ahm is None or t.num_rows == 0:
        return t
    keep = t.column("ts").to_numpy() > ahm
    points = retention_points(st)
    if len(points) and not keep.all():
        keep |= _needed_by_tags(t, points)
    return t if keep.all() else t.filter(pa.array(keep))


def _needed_by_tags(t: pa.Table, points) -> np.ndarray:
    """UNDO records a read as of a tagged time takes: per row, the first existence record
    (DELETE / REINSERT) after it, and per column the first record setting the column after it."""
    rowid = t.column("rowid").to_numpy().astype(np.int64)
    ts = t.column("ts").to_numpy().astype(np.int64)
    op = t.column("op").to_numpy()
    order = np.lexsort((ts, rowid))
    r, s_ts, s_op = rowid[order], ts[order], op[order]
    chains = [(s_op == DELETE) | (s_op == REINSERT)]
    for name in t.column_names:
        if name[1:].isdigit() and name == flag_name(int(name[1:])):
            chains.append(t.column(name).fill_null(False).to_numpy(zero_copy_only=False)[order] & (s_op != DELETE))
    needed = np.zeros(len(order), bool)
    for m in chains:
        idx = np.flatnonzero(m)
        if not len(idx):
            continue
        prev = np.full(len(idx), -1, np.int64)
        same = np.r_[False, r[idx][1:] == r[idx][:-1]]
        prev[same] = s_ts[idx][:-1][same[1:]]
        needed[idx] |= kept_by_tags(s_ts[idx], prev, points)
    out = np.zeros(len(order), bool)
    out[order] = needed
    return out


def history_action(ahm: int | None) -> list[Action]:
    """A compaction that dropped history before `ahm` records the new horizon."""
    return [] if ahm is None else [SetHistory(gc_before_ts=ahm)]


def prepare_undo_gc(st: TableState, rs: RowSetMeta, ahm: int | None) -> Prepared:
    """Drop a rowset's UNDO files older than the ancient history mark (no data is read or written);
    a history-only rowset whose rows were all deleted by then is history as a whole: it goes."""
    floor = gc_floor(st, ahm)          # a tagged version older than live_until still sees its rows
    if rs.history_only and floor is not None and rs.live_until <= floor:
        return Prepared([RemoveRowSet(rs.id)] + history_action(ahm), [], {rs.id})
    old = ancient_undo(st, rs.id, ahm)
    actions: list[Action] = [RemoveDelta(rs.id, d.path) for d in old]
    return Prepared(actions + (history_action(ahm) if old else []), [], {rs.id})


def prepare_minor(storage: Storage, st: TableState, rs: RowSetMeta) -> Prepared:
    """A rowset's REDO files as one (records keep their timestamps; rowids are kept)."""
    t, redo = read_all_deltas(storage, st, rs)
    meta = write_records(storage, st, rs, t, None)
    actions: list[Action] = [RemoveDelta(rs.id, d.path) for d in redo]
    if meta is not None:
        actions.append(AddDelta(meta))
    return Prepared(actions, [meta.path] if meta else [], {rs.id})


def prepare_major(storage: Storage, st: TableState, rs: RowSetMeta, column_ids: Sequence[int],
                  ahm: int | None = None) -> Prepared:
    """Bake the REDO updates of `column_ids` into a new column group; their before-images become
    UNDO records (so reads as of earlier times stay exact), UNDO files older than `ahm` go."""
    cols = [st.schema.by_id(c) for c in column_ids if st.schema.has_id(c)]
    base = read_base_columns(storage, rs, cols)
    base = {k: v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v for k, v in base.items()}
    redo = [d for d in st.deltas_of(rs.id) if d.kind == REDO]
    applied, _ = apply_deltas(storage, rs, redo, cols, base, 0, rs.num_rows)
    written: list[str] = []
    arrays = [applied[c.id].combine_chunks() if isinstance(applied[c.id], pa.ChunkedArray) else applied[c.id]
              for c in cols]
    ref, col_stats = write_base_file(storage, rowset_dir(rs.tablet, rs.id), cols, arrays,
                                     st.properties["row_group_rows"])
    written.append(ref.path)
    stats = dict(rs.stats)
    stats.update(col_stats)
    done = {c.id for c in cols}
    # a column group all of whose columns the new one holds is superseded: it leaves the rowset
    # (older versions keep it until vacuum; the new file and its UNDO records reproduce them)
    kept = tuple(f for f in rs.base if not f.column_ids or not set(f.column_ids) <= done)
    new_rs = replace(rs, base=kept + (ref,), stats=stats)
    t, _ = read_all_deltas(storage, st, rs)
    remaining = undo_meta = None
    if t is not None:
        op = t.column("op").to_numpy()
        other = np.zeros(t.num_rows, dtype=bool)
        mine = np.zeros(t.num_rows, dtype=bool)
        for c in st.schema.columns:
            if flag_name(c.id) in t.column_names:
                f = t.column(flag_name(c.id)).fill_null(False).to_numpy(zero_copy_only=False)
                if c.id in done:
                    mine |= f
                else:
                    other |= f
        # What stays REDO: deletes, reinserts and updates of the other columns.
        remaining = t.filter(pa.array((op != UPDATE) | other))
        # UNDO: the compacted cells' before-images, at the times they changed.
        changed = t.filter(pa.array(mine & (op != DELETE)))
        undo = undo_of(changed, base, cols, np.zeros(changed.num_rows, bool))    # only `cols` are in base
        # existence stays with the REDO records: keep only the cell before-images
        undo = gc_records(undo.filter(pc.equal(undo.column("op"), UPDATE)), ahm, st)
        undo_meta = write_records(storage, st, rs, undo, done, UNDO)
    meta = write_records(storage, st, rs, remaining, {c.id for c in st.schema.columns} - done)
    written += [m.path for m in (meta, undo_meta) if m is not None]
    floor = gc_floor(st, ahm)
    old_undo = [d for d in st.deltas_of(rs.id) if d.kind == UNDO and floor is not None and d.max_ts <= floor]
    actions = [AddRowSet(new_rs)] + [RemoveDelta(rs.id, d.path) for d in redo + old_undo] + \
        [AddDelta(m) for m in (meta, undo_meta) if m is not None] + history_action(ahm)
    return Prepared(actions, written, {rs.id})
