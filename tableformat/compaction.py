"""Compactions: minor delta, major delta and merging (tablet seed), each one commit.

- Minor delta: a rowset's REDO files become one file (records keep their
  timestamps in a `ts` column). Rowids are kept.
- Major delta: the REDO updates of chosen columns are applied to base data,
  written as a new column-group file holding only those columns; their
  before-images become UNDO records; the other records (deletes, updates of
  other columns) go to one new REDO file.
- Merging: overlapping (or small) rowsets of a tablet are rewritten as
  non-overlapping rowsets in key order, carrying each row's history as UNDO
  records; rows deleted before the ancient history mark are dropped, so
  their space is reclaimed.

History: as in Kudu, the base data is the newest state and UNDO records roll
it back, so a version older than vacuum's history horizon reads the compacted
files exactly; UNDO records older than `history_max_age` are not written
(garbage collection). Concurrency: delta compactions keep rowids, so
mutations committed meanwhile stay valid on top of them; a merging compaction
rebases such mutations by remapping their records, by key, onto its outputs
(`conflicts.MergeInputsRemappable`). Each `write_compaction` returns a fragment.
See `specs/format.md`, section "Compaction".
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .actions import Action, AddDelta, AddRowSet, RemoveDelta, RemoveRowSet, SetHistory
from .compaction_policy import CompactionAction, CompactionPlan, ancient_undo  # noqa: F401  (re-exported)
from .conflicts import DefinitionUnchanged, MergeInputsRemappable, RowSetsUnchanged
from .retention import TagsRetained
from .cfile_set import field_name
from .delta_tracker import apply_deltas, redo_order
from .deltafile import DELETE, REDO, REINSERT, UNDO, UPDATE, DeltaFileMeta, flag_name, read_delta, write_delta_file
from .fragment import WriteFragment
from .diskrowset import read_base_columns, read_pk_index, write_base_file
from .metadata import RowSetMeta, TableState
from .mvcc import gc_floor, kept_by_tags, retention_points
from .schema import Column
from .parallel import pmap
from .storage import Storage

@dataclass
class Prepared:
    """Files written by a compaction and the actions that would commit them."""

    actions: list[Action]
    written: list[str]
    inputs: set[str]
    outputs: list[RowSetMeta] = field(default_factory=list)


def _read_all_deltas(storage: Storage, st: TableState, rs: RowSetMeta, kind: str = REDO) \
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


def _write_records(storage: Storage, st: TableState, rs: RowSetMeta, t: pa.Table, keep_cols: set[int] | None,
                   kind: str = REDO) -> DeltaFileMeta | None:
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


def _undo_of(records: pa.Table, base: dict[int, pa.Array], cols: Sequence[Column], final_delete: np.ndarray) \
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
        if name.startswith("c") and name[1:].isdigit() and flag_name(int(name[1:])) not in records.column_names:
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


def _gc(t: pa.Table | None, ahm: int | None, st: TableState) -> pa.Table | None:
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
        if name.startswith("u") and name[1:].isdigit() and name == flag_name(int(name[1:])):
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


def _history_action(ahm: int | None) -> list[Action]:
    return [] if ahm is None else [SetHistory(gc_before_ts=ahm)]


def prepare_undo_gc(st: TableState, rs: RowSetMeta, ahm: int | None) -> Prepared:
    """Drop a rowset's UNDO files older than the ancient history mark (no data is read or written);
    a history-only rowset whose rows were all deleted by then is history as a whole: it goes."""
    floor = gc_floor(st, ahm)          # a tagged version older than live_until still sees its rows
    if rs.history_only and floor is not None and rs.live_until <= floor:
        return Prepared([RemoveRowSet(rs.id)] + _history_action(ahm), [], {rs.id})
    old = ancient_undo(st, rs.id, ahm)
    actions: list[Action] = [RemoveDelta(rs.id, d.path) for d in old]
    return Prepared(actions + (_history_action(ahm) if old else []), [], {rs.id})


def prepare_minor(storage: Storage, st: TableState, rs: RowSetMeta) -> Prepared:
    t, redo = _read_all_deltas(storage, st, rs)
    meta = _write_records(storage, st, rs, t, None)
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
    ref, col_stats = write_base_file(storage, f"tablets/{rs.tablet}/{rs.id}", cols, arrays,
                                     st.properties["row_group_rows"])
    written.append(ref.path)
    stats = dict(rs.stats)
    stats.update(col_stats)
    new_rs = replace(rs, base=rs.base + (ref,), stats=stats)
    t, _ = _read_all_deltas(storage, st, rs)
    remaining = undo_meta = None
    done = {c.id for c in cols}
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
        undo = _undo_of(changed, base, cols, np.zeros(changed.num_rows, bool))    # only `cols` are in base
        # existence stays with the REDO records: keep only the cell before-images
        undo = _gc(undo.filter(pc.equal(undo.column("op"), UPDATE)), ahm, st)
        undo_meta = _write_records(storage, st, rs, undo, done, UNDO)
    meta = _write_records(storage, st, rs, remaining, {c.id for c in st.schema.columns} - done)
    written += [m.path for m in (meta, undo_meta) if m is not None]
    floor = gc_floor(st, ahm)
    old_undo = [d for d in st.deltas_of(rs.id) if d.kind == UNDO and floor is not None and d.max_ts <= floor]
    actions = [AddRowSet(new_rs)] + [RemoveDelta(rs.id, d.path) for d in redo + old_undo] + \
        [AddDelta(m) for m in (meta, undo_meta) if m is not None] + _history_action(ahm)
    return Prepared(actions, written, {rs.id})


@dataclass
class _Input:
    """One merge input, read: its rows kept (live, or deleted after `ahm`), and their history."""

    data: pa.Table            # current values of the kept rows
    keys: pa.Array            # their encoded keys
    rowids: np.ndarray        # their rowids in the input
    delete_ts: np.ndarray     # deletion time of a ghost row (kept for history), -1 for a live row
    undo: pa.Table | None     # UNDO records of kept rows (input rowids)


def _load_input(storage: Storage, st: TableState, rs: RowSetMeta, ahm: int | None) -> _Input:
    cols = list(st.schema.columns)
    base = read_base_columns(storage, rs, cols)
    base = {k: v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v for k, v in base.items()}
    deltas = st.deltas_of(rs.id)
    arrays, live = apply_deltas(storage, rs, deltas, cols, base, 0, rs.num_rows) if deltas else (base, None)
    keys = read_pk_index(storage, rs)
    n = rs.num_rows
    delete_ts = np.full(n, -1, np.int64)
    redo, _ = _read_all_deltas(storage, st, rs)
    parts = []
    if redo is not None:
        rid = redo.column("rowid").to_numpy().astype(np.int64)
        op = redo.column("op").to_numpy()
        ts = redo.column("ts").to_numpy()
        ex = np.flatnonzero((op == DELETE) | (op == REINSERT))
        last = ex[np.r_[rid[ex][1:] != rid[ex][:-1], True]] if len(ex) else ex
        final = np.zeros(len(rid), bool)
        dead = last[op[last] == DELETE]
        final[dead] = True
        delete_ts[rid[dead]] = ts[dead]
        parts.append(_undo_of(redo, base, cols, final))
    old_undo, _ = _read_all_deltas(storage, st, rs, UNDO)
    if old_undo is not None:
        parts.append(old_undo)
    points = retention_points(st)
    if rs.created_ts and (ahm is None or rs.created_ts > ahm or (len(points) and points[0] < rs.created_ts)):
        # the rows did not exist before the insert that wrote them: UNDO DELETE at its time
        k = {field_name(c.id): base[c.id] for c in st.schema.key_columns}
        parts.append(pa.table({"rowid": pa.array(np.arange(n, dtype=np.uint32)),
                               "op": pa.array(np.full(n, DELETE, np.int8)),
                               "ts": pa.array(np.full(n, rs.created_ts, np.int64)), **k}))
    undo = _gc(pa.concat_tables(parts, promote_options="default") if parts else None, ahm, st)
    keep = np.ones(n, bool) if live is None else live.copy()
    keep |= delete_ts > (ahm if ahm is not None else -1)     # ghosts: deleted within the history
    if len(points):                                          # or visible at a tagged time
        ins_ts = np.full(n, rs.created_ts or -1, np.int64)
        if old_undo is not None:
            o = old_undo.column("op").to_numpy()
            sel = o == DELETE                                 # an UNDO DELETE: the row's insert time
            np.maximum.at(ins_ts, old_undo.column("rowid").to_numpy().astype(np.int64)[sel],
                          old_undo.column("ts").to_numpy()[sel])
        ghost = delete_ts >= 0
        keep[ghost] |= kept_by_tags(delete_ts[ghost], ins_ts[ghost], points)
    rowids = np.flatnonzero(keep)
    t = pa.table({c.name: arrays[c.id] for c in cols})
    if not keep.all():
        t, keys = t.filter(pa.array(keep)), keys.filter(pa.array(keep))
    if undo is not None and undo.num_rows and not keep.all():
        undo = undo.filter(pa.array(keep[undo.column("rowid").to_numpy().astype(np.int64)]))
    return _Input(t, keys, rowids, delete_ts[rowids], undo)


def _layers(tablet: str, keys: pa.Array, del_ts: np.ndarray, tail: int = 0) -> list:
    """The merge's outputs as key-sorted batches of rows: first the live rows, then the ghosts
    (rows deleted within the history) in layers, newest deletion of a key first, so no output
    holds a key twice and the live rows share no rowset with a deleted one."""
    from .insert import TabletBatch, tail_order
    ghost = del_ts >= 0
    # One stable sort of every key (as numbers where the key's shape allows: the inputs' sorted
    # runs interleave), then the live rows and the ghosts split apart, each still in key order.
    by_key = tail_order(keys, tail)
    if by_key is None:
        by_key = pc.array_sort_indices(keys).to_numpy()
    is_ghost = ghost[by_key]
    live = by_key[~is_ghost]
    batches = [TabletBatch(tablet, live, keys.take(pa.array(live)))] if len(live) else []
    g = by_key[is_ghost]
    if not len(g):
        return batches
    gk = keys.take(pa.array(g))
    new_key = np.ones(len(g), bool)
    new_key[1:] = pc.not_equal(gk.slice(1), gk.slice(0, len(g) - 1)).to_numpy(zero_copy_only=False)
    # among a key's ghosts, the newest deletion first (a stable sort by key, then deletion time)
    regroup = np.lexsort((-del_ts[g], np.cumsum(new_key)))
    g, gk = g[regroup], gk.take(pa.array(regroup))
    layer = np.arange(len(g)) - np.maximum.accumulate(np.where(new_key, np.arange(len(g)), 0))
    for lv in range(int(layer.max()) + 1):
        sel = layer == lv
        batches.append(TabletBatch(tablet, g[sel], gk.filter(pa.array(sel))))
    return batches


def _mark_history_only(outputs: list[RowSetMeta], out_idx: np.ndarray, del_ts: np.ndarray) -> list[RowSetMeta]:
    """Outputs of deleted rows only become history-only rowsets: `live_until` is their newest
    deletion, after which current reads and key probes skip them by metadata alone."""
    if not len(out_idx):
        return outputs
    newest = np.full(len(outputs), -1, np.int64)
    np.maximum.at(newest, out_idx, del_ts)
    oldest = np.full(len(outputs), np.iinfo(np.int64).max, np.int64)
    np.minimum.at(oldest, out_idx, del_ts)
    return [replace(o, live_until=int(newest[j])) if oldest[j] >= 0 else o for j, o in enumerate(outputs)]


def prepare_merge(storage: Storage, st: TableState, rowset_ids: Sequence[str], ahm: int | None = None) -> Prepared:
    """Rewrite rowsets as non-overlapping rowsets in key order, with their history.

    Live rows go to the main outputs. Rows deleted after `ahm` (ghosts) are kept, with a
    REDO DELETE at their deletion time, in separate history-only outputs (`live_until`) that
    current reads skip and reads as of earlier times still see; rows deleted before it are
    dropped, reclaiming their space. A key deleted and inserted again exists as several
    rows: each older one goes to a further non-overlapping "layer" of history-only outputs,
    so no rowset holds a key twice. Every kept row's history becomes UNDO records of its output.
    """
    from .insert import InsertPlan, key_tail_width, write_plan
    inputs = [st.rowsets[r] for r in rowset_ids]
    loaded: list[_Input] = pmap(lambda rs: _load_input(storage, st, rs, ahm), inputs)
    data = pa.concat_tables([x.data for x in loaded]).combine_chunks()
    keys = pa.concat_arrays([x.keys for x in loaded])
    src_rs = np.concatenate([np.full(len(x.rowids), i) for i, x in enumerate(loaded)])
    src_row = np.concatenate([x.rowids for x in loaded])
    del_ts = np.concatenate([x.delete_ts for x in loaded])
    tablet = inputs[0].tablet
    batches = _layers(tablet, keys, del_ts, key_tail_width([c.type for c in st.schema.key_columns]))
    written: list[str] = []
    outputs = write_plan(storage, st, InsertPlan(data, batches, 0), written) if batches else []
    outputs = [replace(o, created_ts=0) for o in outputs]
    # old (input, rowid) -> (output index, new rowid), in output order
    placed = np.concatenate([b.rows for b in batches]) if batches else np.zeros(0, np.int64)
    sizes = [o.num_rows for o in outputs]
    out_idx = np.repeat(np.arange(len(outputs)), sizes) if outputs else np.zeros(0, np.int64)
    new_rowid = np.concatenate([np.arange(n) for n in sizes]) if outputs else np.zeros(0, np.int64)
    outputs = _mark_history_only(outputs, out_idx, del_ts[placed])
    remap = {}
    for i, rs in enumerate(inputs):
        sel = src_rs[placed] == i
        o = np.argsort(src_row[placed][sel], kind="stable")
        remap[rs.id] = (src_row[placed][sel][o], out_idx[sel][o], new_rowid[sel][o])
    deltas: list[DeltaFileMeta] = []
    # Ghost rows: their DELETE stays a REDO record; the rest of the history goes to UNDO files.
    ghosts = np.flatnonzero(del_ts[placed] >= 0)
    redo_parts, undo_parts = [], []
    if len(ghosts):
        gk = data.take(pa.array(placed[ghosts]))
        redo_parts.append(pa.table({"o": pa.array(out_idx[ghosts]), "rowid": pa.array(new_rowid[ghosts]),
                                    "op": pa.array(np.full(len(ghosts), DELETE, np.int8)),
                                    "ts": pa.array(del_ts[placed][ghosts]),
                                    **{field_name(c.id): gk.column(c.name) for c in st.schema.key_columns}}))
    for i, x in enumerate(loaded):
        if x.undo is None or not x.undo.num_rows:
            continue
        old, oi, nr = remap[inputs[i].id]
        pos = np.searchsorted(old, x.undo.column("rowid").to_numpy().astype(np.int64))
        u = x.undo.set_column(x.undo.schema.get_field_index("rowid"), "rowid", pa.array(nr[pos]))
        undo_parts.append(u.append_column("o", pa.array(oi[pos])))

    def write_kind(parts: list[pa.Table], kind: str) -> None:
        if not parts:
            return
        t = pa.concat_tables(parts, promote_options="default")
        o = t.column("o").to_numpy()
        outs = np.unique(o)
        for j in outs:
            # write_delta_file sorts by (rowid, ts); one output takes the records as they are
            sub = (t if len(outs) == 1 else t.filter(pa.array(o == j))).drop(["o"])
            m = _write_records(storage, st, outputs[int(j)], sub, None, kind)
            written.append(m.path)
            deltas.append(m)
    write_kind(redo_parts, REDO)
    write_kind(undo_parts, UNDO)
    actions = [RemoveRowSet(r.id) for r in inputs] + [AddRowSet(o) for o in outputs] + \
        [AddDelta(m) for m in deltas] + _history_action(ahm)
    return Prepared(actions, written, set(rowset_ids), outputs)


def write_compaction(storage: Storage, st: TableState, action: CompactionAction, ahm: int | None) \
        -> WriteFragment | None:
    """Run one planned compaction on a snapshot: its files, actions and requirements, or None
    when there is nothing left to do (its rowsets are gone, or a compaction already did it)."""
    if any(r not in st.rowsets for r in action.rowsets):
        return None                                   # already compacted away
    first = st.rowsets[action.rowsets[0]]
    if action.kind == "merge":
        prep = prepare_merge(storage, st, action.rowsets, ahm)
        reqs = [MergeInputsRemappable(tuple(action.rowsets))]
    else:
        if action.kind == "major_delta":
            prep = prepare_major(storage, st, first, action.columns, ahm)
        elif action.kind == "undo_gc":
            prep = prepare_undo_gc(st, first, ahm)
            if not prep.actions:
                return None                           # a compaction already removed them
        else:
            prep = prepare_minor(storage, st, first)
        reqs = [DefinitionUnchanged(), RowSetsUnchanged(tuple(action.rowsets))]
    if ahm is not None:
        reqs.append(TagsRetained(ahm))
    return WriteFragment(f"COMPACT {action.kind.upper()}", st.version, prep.actions, prep.written,
                         {"rowsets_in": len(action.rowsets), "rowsets_out": len(prep.outputs)}, reqs,
                         data_change=False, table_id=st.table_id, kind=action.kind)
