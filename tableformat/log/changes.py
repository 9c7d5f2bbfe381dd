"""Change history between two versions, from the log, the delta files and new rowsets only.

Every change committed after `start` up to `end`: inserts are the rows of the
rowsets those commits added; updates and deletes are the records of the REDO
files they added. After-images (and before-images) replay each touched
rowset's REDO files over just the touched rows' base values, so the cost
grows with the number of changes and the rows they touch, not with the table.
"""
from __future__ import annotations

from enum import IntEnum
from typing import Callable, NamedTuple, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .actions import AddDelta, AddRowSet, Commit, RemoveRowSet
from ..format.deltafile import DELETE, REINSERT, REDO, DeltaFileMeta, flag_name, read_delta
from ..format.cfile_set import field_name
from ..format.diskrowset import read_base_columns
from ..format.metadata import RowSetMeta, TableState
from ..format.parallel import pmap
from ..read.scan import Scanner
from ..format.schema import Column, Schema
from ..format.storage import Storage
from ..format import arguments as arg
from . import mvcc
from ..format.errors import HistoryExpiredError, InvalidOptionError
from .handle import TableHandle

_SPARSE_ROWS = 16384   # touched rows are read in slices of this many rowids


class ChangeOp(IntEnum):
    """The `_op` of a change row; its name, lower-cased, is the label users see."""

    INSERT = 0
    DELETE = 1
    UPDATE = 2




def _take_rows(storage: Storage, rs: RowSetMeta, cols: Sequence[Column], rowids: np.ndarray) -> dict[int, pa.Array]:
    """Base values of the given (sorted) rowids, reading only the row groups that hold them."""
    if not len(rowids):
        return {c.id: pa.array([], c.arrow_type) for c in cols}
    lo, hi = int(rowids[0]), int(rowids[-1]) + 1
    if len(rowids) * 4 >= hi - lo:
        arrays = read_base_columns(storage, rs, cols, lo, hi)
        idx = pa.array(rowids - lo)
        return {cid: a.take(idx) for cid, a in arrays.items()}
    # Sparse rows: one read per run of row groups that holds a touched row.
    rg = _SPARSE_ROWS
    groups = np.unique(rowids // rg)
    parts = []
    for g in groups:
        sel = rowids[(rowids // rg) == g]
        start, stop = int(g * rg), int(min(rs.num_rows, (g + 1) * rg))
        arrays = read_base_columns(storage, rs, cols, start, stop)
        idx = pa.array(sel - start)
        parts.append({cid: a.take(idx) for cid, a in arrays.items()})
    return {c.id: pa.concat_arrays([p[c.id].combine_chunks() if isinstance(p[c.id], pa.ChunkedArray)
                                    else p[c.id] for p in parts]) for c in cols}


class _Records:
    """Change records gathered column-wise, finished into one Arrow table."""

    def __init__(self, schema_cols: list[Column], before: bool, key_names: list[str]):
        self.cols = schema_cols
        self.key_names = key_names
        self.before = before
        self.parts: list[dict] = []

    def add(self, op: np.ndarray, version: np.ndarray, ts: np.ndarray, image: dict[int, pa.Array],
            changed: np.ndarray, before: dict[int, pa.Array] | None, order: np.ndarray):
        self.parts.append({"op": op, "version": version, "ts": ts, "image": image, "changed": changed,
                           "before": before, "order": order})

    def table(self) -> tuple[pa.Table, np.ndarray]:
        n = sum(len(p["op"]) for p in self.parts)
        if n == 0:
            return None, np.zeros((0, len(self.cols)), dtype=bool)
        op = np.concatenate([p["op"] for p in self.parts])
        version = np.concatenate([p["version"] for p in self.parts])
        ts = np.concatenate([p["ts"] for p in self.parts])
        order_key = np.concatenate([p["order"] for p in self.parts])
        changed = np.concatenate([p["changed"] for p in self.parts])
        cols = {"_op": op, "_version": version, "_timestamp": ts}
        for c in self.cols:
            cols[c.name] = pa.concat_arrays([_arr(p["image"][c.id]) for p in self.parts])
        if self.before:
            for c in self.cols:
                cols["_before_" + c.name] = pa.concat_arrays([
                    _arr(p["before"][c.id]) if p["before"] is not None else pa.nulls(len(p["op"]), c.arrow_type)
                    for p in self.parts])
        # commit order; inside a commit, deltas (updates/deletes) before inserts, then by primary key
        # (rowsets are gathered in parallel, so their order must not leak into the result)
        t = pa.table({k: (v if isinstance(v, pa.Array) else pa.array(v)) for k, v in cols.items()})
        perm = pc.sort_indices(pa.table({"v": version, "i": op == ChangeOp.INSERT, "o": order_key,
                                         **{k: t.column(k) for k in self.key_names}}),
                               sort_keys=[("v", "ascending"), ("i", "ascending")] +
                               [(k, "ascending") for k in self.key_names] + [("o", "ascending")]).to_numpy()
        return t.take(pa.array(perm)), changed[perm]


def _same(old: pa.Array, new: pa.Array) -> np.ndarray:
    """Where two arrays hold the same value: equal, both NULL, or both NaN."""
    same = pc.fill_null(pc.equal(old, new), False)
    same = pc.or_(same, pc.and_(pc.is_null(old), pc.is_null(new)))
    if pa.types.is_floating(old.type):
        same = pc.or_(same, pc.fill_null(pc.and_(pc.is_nan(old), pc.is_nan(new)), False))
    return same.to_numpy(zero_copy_only=False)


def _arr(a):
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def collect_changes(storage: Storage, start: TableState, end: TableState, commits: list[Commit],
                    before_image: bool, full_images: bool,
                    state_at: Callable[[int], TableState] | None = None) \
        -> tuple[pa.Table | None, np.ndarray, list[Column]]:
    """Every change in `commits` (the log from `start`, exclusive, to `end`, inclusive).

    A rowset's history is replayed from its delta files as of `start` plus the
    data-changing delta files the range added, so compactions in between (or
    after) never hide or duplicate a change. A commit that removes rowsets and
    adds none (an ALTER dropping range partitions) takes their live rows out of
    the table: those are deletes, read from the version before it (`state_at`).
    """
    schema = end.schema
    cols = list(schema.columns)
    key_ids = {c.id for c in schema.key_columns}
    recs = _Records(cols, before_image, list(schema.primary_key))
    in_range: dict[str, tuple[int, int]] = {}        # delta path -> (version, ts)
    added: list[tuple[int, int, RowSetMeta]] = []
    metas: dict[str, RowSetMeta] = dict(start.rowsets)
    history: dict[str, list[DeltaFileMeta]] = {rid: list(ds) for rid, ds in start.deltas.items()}
    touched: set[str] = set()
    dropped: list[tuple[Commit, set[str]]] = []
    for c in commits:
        gone = {a.rowset_id for a in c.of(RemoveRowSet)}
        if gone and not c.of(AddRowSet) and not all(metas[r].history_only for r in gone if r in metas):
            dropped.append((c, gone))       # history-only rowsets hold no live row: nothing leaves
        for a in c.of(AddRowSet, AddDelta):
            if isinstance(a, AddRowSet):
                metas.setdefault(a.rowset.id, a.rowset)   # a rowset's base as first seen: its history replays on it
                if c.data_change:
                    added.append((c.version, c.timestamp, a.rowset))
            else:
                m = a.delta
                history.setdefault(m.rowset, []).append(m)
                if c.data_change:
                    in_range[m.path] = (c.version, c.timestamp)
                    touched.add(m.rowset)
                # else a compaction's file: not a change, but part of the rowset's state that later
                # changes replay over (a merge's remapped concurrent REDOs; others repeat records)

    def inserts(item):
        v, ts, rs = item
        arrays = read_base_columns(storage, rs, cols)
        n = rs.num_rows
        return (np.full(n, ChangeOp.INSERT, np.int8), np.full(n, v, np.int64), np.full(n, ts, np.int64),
                arrays, np.zeros((n, len(cols)), dtype=bool), None, np.arange(n, dtype=np.int64))
    for part in pmap(inserts, added):
        op, ver, ts, arrays, changed, _, order = part
        before = {c.id: pa.nulls(len(op), c.arrow_type) for c in cols} if before_image else None
        recs.add(op, ver, ts, arrays, changed, before, order)

    for rid in touched:
        _rowset_changes(storage, metas[rid], history[rid], in_range, cols, key_ids, recs, before_image,
                        full_images)
    for c, gone in dropped:
        prev = start if c.version - 1 == start.version else state_at(c.version - 1)
        _removed_rows(storage, prev, gone, c, cols, key_ids, recs)
    t, changed = recs.table()
    return t, changed, cols


def _removed_rows(storage: Storage, prev: TableState, gone: set[str], c: Commit, cols: list[Column],
                  key_ids: set[int], recs: _Records) -> None:
    """The rows live at `prev` (the version before commit `c`) in the rowsets `c` removed without
    rewriting them, as deletes of `c` (§9.2): the key, NULL after-images, the values as of `prev`
    as before-images. Columns are matched by ID (`c` may rename or drop some as it drops ranges);
    one added since is NULL before."""
    names = {col.id: col.name for col in prev.schema.columns}
    sc = Scanner(storage, prev, [names[col.id] for col in cols if col.id in names])
    for task in sc.plan():                  # plan() leaves out rowsets with no row visible at prev
        if task.rowset.id not in gone:
            continue
        rows = sc.read_task(task)
        n = rows.num_rows
        if not n:
            continue
        values = {col.id: rows.column(names[col.id]).combine_chunks().cast(col.arrow_type) if col.id in names
                  else pa.nulls(n, col.arrow_type) for col in cols}
        image = {col.id: values[col.id] if col.id in key_ids else pa.nulls(n, col.arrow_type) for col in cols}
        recs.add(np.full(n, ChangeOp.DELETE, np.int8), np.full(n, c.version, np.int64),
                 np.full(n, c.timestamp, np.int64), image, np.zeros((n, len(cols)), dtype=bool), values,
                 np.arange(n, dtype=np.int64))


def _rowset_changes(storage: Storage, rs: RowSetMeta, deltas: list[DeltaFileMeta], in_range: dict[str, tuple[int, int]],
                    cols: list[Column], key_ids: set[int], recs: _Records, before_image: bool,
                    full_images: bool) -> None:
    """One rowset's updates and deletes in range, into `recs`.

    Its REDO files are replayed over just the touched rows (all of them when images need the
    base values, else only the in-range files, over NULLs), each in-range file adding its records.
    """
    all_ids = [c.id for c in cols]
    key_cols = [c for c in cols if c.id in key_ids]
    from ..read.delta_tracker import redo_order
    mine = redo_order([d for d in deltas if d.kind == REDO])
    tables = {d.path: read_delta(storage, d, all_ids, key_cols) for d in mine if d.path in in_range}
    touched = np.unique(np.concatenate([t.column("rowid").to_numpy().astype(np.int64) for t in tables.values()]))
    need_base = full_images or before_image
    if need_base:
        cur = _take_rows(storage, rs, cols, touched)
        replay = mine
    else:
        cur = {c.id: pa.nulls(len(touched), c.arrow_type) for c in cols}
        replay = [d for d in mine if d.path in in_range]
    for d in replay:
        t = tables[d.path] if d.path in tables else read_delta(storage, d, all_ids, key_cols)
        if not need_base:   # images hold only this change's cells
            cur = {c.id: pa.nulls(len(touched), c.arrow_type) for c in cols}
        prev = dict(cur)
        applied = _apply_cells(t, touched, cols, cur, prev, need_base)
        if d.path in in_range:
            _add_records(recs, applied, in_range[d.path], cols, key_ids, cur, prev, before_image)


class _Applied(NamedTuple):
    """One REDO file applied to the touched rows: where its records landed and what each changed."""

    t: pa.Table
    rowid: np.ndarray
    pos: np.ndarray        # each record's index in the touched rowids
    ok: np.ndarray         # whether its row is a touched one
    op: np.ndarray
    changed: np.ndarray    # records x columns: the cells each record changed


def _apply_cells(t: pa.Table, touched: np.ndarray, cols: list[Column], cur: dict[int, pa.Array],
                 prev: dict[int, pa.Array], need_base: bool) -> _Applied:
    """Write a REDO file's cells into `cur` (in place), noting which cells each record changed."""
    rowid = t.column("rowid").to_numpy().astype(np.int64)
    pos = np.searchsorted(touched, rowid)
    ok = (pos < len(touched)) & (touched[np.minimum(pos, len(touched) - 1)] == rowid)
    op = t.column("op").to_numpy()
    n = len(touched)
    changed = np.zeros((len(rowid), len(cols)), dtype=bool)
    for j, c in enumerate(cols):
        fname = flag_name(c.id)
        if fname not in t.column_names:
            continue
        flags = t.column(fname).to_numpy() & (op != DELETE) & ok
        changed[:, j] = flags
        if not flags.any():
            continue
        mask = np.zeros(n, dtype=bool)
        mask[pos[flags]] = True
        vals = t.column(field_name(c.id)).filter(pa.array(flags)).combine_chunks().cast(c.arrow_type)
        if need_base:      # a cell written with the value it had is no change (§9.2)
            changed[np.flatnonzero(flags)[_same(_arr(prev[c.id]).take(pa.array(pos[flags])), vals)], j] = False
        cur[c.id] = pc.replace_with_mask(_arr(cur[c.id]), pa.array(mask), vals)
    return _Applied(t, rowid, pos, ok, op, changed)


def _add_records(recs: _Records, a: _Applied, version_ts: tuple[int, int], cols: list[Column], key_ids: set[int],
                 cur: dict[int, pa.Array], prev: dict[int, pa.Array], before_image: bool) -> None:
    """An in-range file's records as changes: after-images from `cur` (NULL for a delete), the key
    from the record, before-images from `prev`."""
    version, ts = version_ts
    sel = np.flatnonzero(a.ok)
    p = pa.array(a.pos[sel])
    dele = a.op[sel] == DELETE
    image = {}
    for c in cols:
        if c.id in key_ids:
            image[c.id] = a.t.column(field_name(c.id)).take(pa.array(sel))
        else:
            img = cur[c.id].take(p)
            if dele.any():
                img = pc.if_else(pa.array(dele), pa.nulls(len(sel), c.arrow_type), img)
            image[c.id] = img
    before = None
    if before_image:
        before = {}
        for c in cols:
            before[c.id] = image[c.id] if c.id in key_ids else prev[c.id].take(p)
    ops = np.select([dele, a.op[sel] == REINSERT], [ChangeOp.DELETE, ChangeOp.INSERT],
                    ChangeOp.UPDATE).astype(np.int8)
    recs.add(ops, np.full(len(sel), version, np.int64), np.full(len(sel), ts, np.int64), image,
             a.changed[sel], before, a.rowid[sel])


# `_op` labels, indexed by the ChangeOp codes of the finished table
_LABELS = np.array([op.name.lower() for op in ChangeOp], dtype=object)


def finish(t: pa.Table | None, changed: np.ndarray, cols: list[Column], key_names: list[str], net: bool,
           before_image: bool, ts_type: pa.DataType) -> pa.Table:
    """Label ops, build `_changed_columns`, and collapse to one net change per key if asked."""
    names = [c.name for c in cols]
    out_fields = [pa.field("_op", pa.string()), pa.field("_version", pa.int64()),
                  pa.field("_timestamp", ts_type)] + \
        [pa.field(c.name, c.arrow_type) for c in cols] + [pa.field("_changed_columns", pa.list_(pa.string()))] + \
        ([pa.field("_before_" + c.name, c.arrow_type) for c in cols] if before_image else [])
    schema = pa.schema(out_fields)
    if t is None or t.num_rows == 0:
        return schema.empty_table()
    op = t.column("_op").to_numpy()
    if net:
        t, op, changed = _net(t, op, changed, cols, key_names, before_image)
        if t.num_rows == 0:
            return schema.empty_table()
    non_key = np.array([c.name not in key_names for c in cols])
    lists = _changed_lists(changed & non_key[None, :], names, op == ChangeOp.UPDATE)
    arrays = [pa.array(_LABELS[op]), t.column("_version"), t.column("_timestamp").cast(pa.int64()).cast(ts_type)]
    arrays += [t.column(n) for n in names] + [lists]
    if before_image:
        arrays += [t.column("_before_" + n) for n in names]
    return pa.Table.from_arrays(arrays, schema=schema)


def _changed_lists(changed: np.ndarray, names: list[str], is_update: np.ndarray) -> pa.Array:
    counts = changed.sum(axis=1)
    offsets = np.zeros(len(changed) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    flat = np.nonzero(changed)[1]
    values = pa.array(np.array(names, dtype=object)[flat] if len(flat) else [], pa.string())
    arr = pa.ListArray.from_arrays(pa.array(offsets), values)
    return pc.if_else(pa.array(is_update), arr, pa.nulls(len(changed), pa.list_(pa.string())))


def _net(t, op, changed, cols, key_names, before_image):
    """One change per key: insert..delete vanishes, update+update is one update, delete..insert an update."""
    keys = t.select(key_names)
    idx = pc.sort_indices(pa.table({**{k: keys.column(k) for k in key_names},
                                    "_pos": pa.array(np.arange(t.num_rows))}),
                          sort_keys=[(k, "ascending") for k in key_names] + [("_pos", "ascending")]).to_numpy()
    ks = keys.take(pa.array(idx))
    same = np.ones(len(idx), dtype=bool)
    same[0] = False
    for k in key_names:
        col = ks.column(k).combine_chunks()
        if len(idx) > 1:
            same[1:] &= pc.equal(col.slice(1), col.slice(0, len(col) - 1)).to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(~same)
    ends = np.r_[starts[1:], len(idx)] - 1
    first, last = idx[starts], idx[ends]
    f_op, l_op = op[first], op[last]
    any_changed = np.logical_or.reduceat(changed[idx], starts, axis=0)
    # insert ... delete -> nothing; insert ... -> insert; ... delete -> delete;
    # delete ... (re)insert/update -> update of every column; update ... update -> update
    keep = ~((f_op == ChangeOp.INSERT) & (l_op == ChangeOp.DELETE))
    new_op = np.where(f_op == ChangeOp.INSERT, ChangeOp.INSERT,
                      np.where(l_op == ChangeOp.DELETE, ChangeOp.DELETE, ChangeOp.UPDATE)).astype(np.int8)
    reinsert = (f_op == ChangeOp.DELETE) & (l_op != ChangeOp.DELETE)
    any_changed[reinsert] = True
    rows = last[keep]
    out = t.take(pa.array(rows))
    if before_image:
        fb = t.take(pa.array(first[keep]))
        for c in cols:
            out = out.set_column(out.schema.get_field_index("_before_" + c.name), "_before_" + c.name,
                                 fb.column("_before_" + c.name))
    perm = np.argsort(rows, kind="stable")   # back to commit order of each key's last change
    return out.take(pa.array(perm)), new_op[keep][perm], any_changed[keep][perm]


def with_skipped(out: pa.Table, storage: Storage, commits: Sequence[Commit], start: Schema, end: Schema) -> pa.Table:
    """The changes plus the rows those commits skipped (`skipped` actions, §14): `_op` "skipped",
    the input's values (null for a column the input lacked) and a `_reason`, in commit order.

    A skipped file names its columns as the schema of its commit did; they are matched to the
    output's (the `end` schema's) by column ID, as every reader matches columns, so a column
    dropped and added again under the same name since is the new column, NULL in the old rows."""
    from .actions import AddSkipped, AlterDefinition
    from .sequence import read_skipped
    reason = pa.field("_reason", pa.string())
    parts = [out.append_column(reason, pa.nulls(out.num_rows, pa.string()))]
    schema = start                                     # the schema as of each commit
    for c in commits:
        for a in c.of(AlterDefinition):
            schema = a.schema
        for a in c.of(AddSkipped):
            t = read_skipped(storage, a.file)
            n = t.num_rows
            arrays = []
            for f in out.schema:
                src = None                             # the file's column holding this output column
                if end.has_column(f.name):
                    cid = end.column(f.name).id
                    src = next((x.name for x in schema.columns if x.id == cid), None)
                if f.name == "_op":
                    arrays.append(pa.array(["skipped"] * n, pa.string()))
                elif f.name == "_version":
                    arrays.append(pa.array(np.full(n, c.version, np.int64)))
                elif f.name == "_timestamp":
                    arrays.append(pa.array(np.full(n, c.timestamp, np.int64)).cast(f.type))
                elif src is not None and src in t.column_names:
                    arrays.append(t.column(src).cast(f.type))
                else:
                    arrays.append(pa.nulls(n, f.type))
            arrays.append(t.column("_reason"))
            parts.append(pa.Table.from_arrays(arrays, schema=parts[0].schema))
    t = pa.concat_tables(parts)
    return t.take(pc.sort_indices(pa.table({"v": t.column("_version"), "i": pa.array(np.arange(t.num_rows))}),
                                  sort_keys=[("v", "ascending"), ("i", "ascending")]))


def changes(handle: TableHandle, start, end=None, mode: str = "all", before_image: bool = False,
            images: str = "full", skipped: bool = False) -> pa.Table:
    """Changes committed after `start` up to `end` (Table.changes has the full contract): the
    versions resolved and checked against the history horizon, then the commits between read."""
    arg.choice(mode, "mode", ("all", "net"))
    arg.boolean(skipped, "skipped")
    if skipped and mode != "all":
        raise InvalidOptionError('skipped=True needs mode="all": a skipped row is no change to net')
    arg.choice(images, "images", ("full", "changed"))
    arg.boolean(before_image, "before_image")
    start = mvcc.parse_as_of(start, "start", tags=True)
    if start is None:
        raise InvalidOptionError("start must be a version, a tf.Timestamp, a datetime or an ISO string, "
                                 "got None")
    end = mvcc.parse_as_of(end, "end", tags=True)
    latest = handle.refresh()
    s = mvcc.resolve_version(handle.history, start, latest.tags)
    e = latest.version if end is None else mvcc.resolve_version(handle.history, end, latest.tags)
    if e < s:
        raise InvalidOptionError(f"end version {e} is before start version {s}")
    if s < latest.history_horizon:
        raise HistoryExpiredError(
            f"change history from version {s} is no longer kept: vacuum moved the history horizon to "
            f"version {latest.history_horizon} (snapshots before it are still readable; changes need "
            "their files)")
    end_state, start_state = handle.state_at(e), handle.state_at(s)
    commits = [handle.log.read_commit(v) for v in range(s + 1, e + 1)]
    t, changed, cols = collect_changes(handle.storage, start_state, end_state, commits, before_image,
                                       images == "full", handle.state_at)
    out = finish(t, changed, cols, list(end_state.schema.primary_key), mode == "net", before_image,
                 pa.timestamp("us", tz="UTC"))
    return with_skipped(out, handle.storage, commits, start_state.schema, end_state.schema) if skipped else out
