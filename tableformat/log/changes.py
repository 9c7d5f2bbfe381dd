"""Change history between two versions, from the log, the delta files and new rowsets only.

Every change committed after `start` up to `end`: inserts are the rows of the
rowsets those commits added; updates and deletes are the records of the REDO
files they added. After-images (and before-images) replay each touched
rowset's REDO files over just the touched rows' base values, so the cost
grows with the number of changes and the rows they touch, not with the table.
"""
from __future__ import annotations

import dataclasses
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
from .change_rows import COMMIT_ORDER, FOUND, INSERTED, TS_TYPE, ChangeOp, finish, output_schema, skipped_files, with_skipped
from .handle import TableHandle

_SPARSE_ROWS = 16384   # touched rows are read in slices of this many rowids


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
        cols = {"_op": op, "_version": version, "_timestamp": ts,
                COMMIT_ORDER: np.where(op == ChangeOp.INSERT, INSERTED, FOUND).astype(np.int64)}
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


class ChangePart(NamedTuple):
    """One piece of a change read that is computed on its own (an executor's task, or one of
    the engine's threads): the rowsets inserted in range and the rowsets whose in-range REDO
    files it replays, and, for the part that carries them, the commits with skipped rows.

    Parts hold only log metadata, so they pickle. In mode "net" a part holds every rowset that
    may hold a key it holds (the tablets a key can have lived in), so its net changes are final."""

    inserts: tuple          # (version, timestamp, RowSetMeta) of each rowset a data commit added
    rowsets: tuple          # (RowSetMeta as first seen, its delta files up to end, {path: (version, ts)})
    skipped: tuple = ()     # (version, timestamp, schema then, file) of each skipped-rows file it reads
    dropped: tuple = ()     # (version, timestamp, (state before it, JSON; read_ts), RowSetMeta) of each rowset a commit
                            # removed without rewriting it (a dropped range partition): its rows leave

    def records(self) -> int:
        """The change records this part holds, from the log alone (rows inserted, REDO records in
        range, rows of dropped rowsets, skipped files as one each): what a stream's row limit
        counts (a Delta-columns update is two rows; a net change may stand for several)."""
        return (sum(rs.num_rows for _, _, rs in self.inserts) + len(self.skipped) +
                sum(d.num_records for _, deltas, paths in self.rowsets for d in deltas if d.path in paths) +
                sum(d[3].num_rows for d in self.dropped))


class ChangePlan(NamedTuple):
    """A change read planned from the log: the commits after `start` up to `end`, cut into
    independent parts. `compute_part` of each part, concatenated, is what Table.changes()
    returns (as a set of rows; changes() orders them)."""

    start: int              # exclusive
    end: int                # inclusive
    mode: str
    before_image: bool
    images: str
    skipped: bool
    schema: Schema          # the end version's schema: the output's columns
    parts: tuple

    def arrow_schema(self) -> pa.Schema:
        """The columns of every part's table and of Table.changes() with these options."""
        return output_schema(list(self.schema.columns), self.before_image, self.skipped)

    def header(self) -> "ChangePlan":
        """The plan without its parts: what a task needs beside its own part."""
        return self._replace(parts=())


def _plan_parts(start: TableState, commits: list[Commit], net: bool, skipped: bool,
                state_at: Callable[[int], TableState]) -> tuple:
    """The parts of a change read: the log from `start` (exclusive) through `commits`.

    A rowset's history is replayed from its delta files as of `start` plus the delta files the
    range added, so compactions in between (or after) never hide or duplicate a change. Each
    rowset's changes need only that rowset, so mode "all" makes one part per rowset. Mode "net"
    collapses each key's changes, so its parts are key-closed: a key lives in one tablet at a
    time, but compactions move it between rowsets of that tablet and a range partition dropped
    and added again can move it to another tablet with the same hash buckets (§4). So net parts
    are tablets, joined when they share hash buckets and their rowsets' key bounds overlap.
    """
    in_range: dict[str, dict] = {}               # rowset id -> {delta path: (version, ts)}
    added: list[tuple[int, int, RowSetMeta]] = []
    metas: dict[str, RowSetMeta] = dict(start.rowsets)
    history: dict[str, list[DeltaFileMeta]] = {rid: list(ds) for rid, ds in start.deltas.items()}
    dropped: list = []
    for c in commits:
        gone = [metas[a.rowset_id] for a in c.of(RemoveRowSet) if a.rowset_id in metas]
        gone = [m for m in gone if not m.history_only]     # a history-only rowset holds no live row
        if gone and not c.of(AddRowSet):        # removed, not rewritten: an ALTER dropping ranges (§9.2)
            prev = start if c.version - 1 == start.version else state_at(c.version - 1)
            dropped += [(c.version, c.timestamp, _one_rowset(prev, m.id), m) for m in gone if m.id in prev.rowsets]
        for a in c.of(AddRowSet, AddDelta):
            if isinstance(a, AddRowSet):
                metas.setdefault(a.rowset.id, a.rowset)   # a rowset's base as first seen: its history replays on it
                if c.data_change:
                    added.append((c.version, c.timestamp, a.rowset))
            else:
                m = a.delta
                history.setdefault(m.rowset, []).append(m)
                if c.data_change:
                    in_range.setdefault(m.rowset, {})[m.path] = (c.version, c.timestamp)
                # else a compaction's file: not a change, but part of the rowset's state that later
                # changes replay over (a merge's remapped concurrent REDOs; others repeat records)
    touched = [(metas[rid], tuple(history[rid]), paths) for rid, paths in in_range.items()]
    if not net:     # a commit's changes to rows it found before the rows it inserted (§9.2): a stream
        # that cuts a version between parts never hands over a key's re-insert before its delete
        parts = [ChangePart((), (r,)) for r in touched] + [ChangePart((), (), (), (d,)) for d in dropped] + \
            [ChangePart((i,), ()) for i in added]
    else:
        parts = _net_groups(added, touched, dropped)
    files = skipped_files(commits, start.schema) if skipped else ()
    if files:
        parts.append(ChangePart((), (), files))
    return tuple(parts)


def _one_rowset(state: TableState, rid: str) -> tuple[dict, int | None]:
    """`state` holding only rowset `rid` (and its delta files), as plain data: parts pickle."""
    one = dataclasses.replace(state, rowsets={rid: state.rowsets[rid]}, deltas={rid: state.deltas_of(rid)})
    return one.to_json(), state.read_ts


def _net_groups(added: list, touched: list, dropped: list) -> list[ChangePart]:
    """Key-closed parts for mode "net": rowsets by tablet, tablets joined (union-find) when
    their hash buckets match and their key bounds overlap (a key may have moved between them)."""
    metas = [i[2] for i in added] + [r[0] for r in touched] + [d[3] for d in dropped]
    tablets = sorted({m.tablet for m in metas})
    parent = {t: t for t in tablets}

    def root(t):
        while parent[t] != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t
    bounds: dict[str, list] = {}
    for m in metas:
        lo_hi = bounds.setdefault(m.tablet, [m.min_key, m.max_key])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], m.min_key), max(lo_hi[1], m.max_key)
    buckets = {t: t.partition("-")[2] for t in tablets}      # tablet ids are r<range>-h<bucket>... (§4)
    for i, a in enumerate(tablets):
        for b in tablets[i + 1:]:
            if buckets[a] == buckets[b] and bounds[a][0] <= bounds[b][1] and bounds[b][0] <= bounds[a][1]:
                parent[root(b)] = root(a)
    groups: dict[str, tuple[list, list, list]] = {}
    for i in added:
        groups.setdefault(root(i[2].tablet), ([], [], []))[0].append(i)
    for r in touched:
        groups.setdefault(root(r[0].tablet), ([], [], []))[1].append(r)
    for d in dropped:
        groups.setdefault(root(d[3].tablet), ([], [], []))[2].append(d)
    return [ChangePart(tuple(ins), tuple(rs), (), tuple(dr)) for _, (ins, rs, dr) in sorted(groups.items())]


def _part_records(storage: Storage, plan: ChangePlan, part: ChangePart) -> _Records:
    """A part's change records, unsorted and unfinished."""
    cols = list(plan.schema.columns)
    key_ids = {c.id for c in plan.schema.key_columns}
    recs = _Records(cols, plan.before_image, list(plan.schema.primary_key))
    for v, ts, rs in part.inserts:
        arrays = read_base_columns(storage, rs, cols)
        n = rs.num_rows
        before = {c.id: pa.nulls(n, c.arrow_type) for c in cols} if plan.before_image else None
        recs.add(np.full(n, ChangeOp.INSERT, np.int8), np.full(n, v, np.int64), np.full(n, ts, np.int64),
                 arrays, np.zeros((n, len(cols)), dtype=bool), before, np.arange(n, dtype=np.int64))
    for rs, deltas, in_range in part.rowsets:
        _rowset_changes(storage, rs, list(deltas), in_range, cols, key_ids, recs, plan.before_image,
                        plan.images == "full")
    for version, ts, (state, read_ts), rs in part.dropped:
        prev = dataclasses.replace(TableState.from_json(state), read_ts=read_ts)
        _removed_rows(storage, prev, rs.id, version, ts, cols, key_ids, recs)
    return recs


def compute_part(storage: Storage, plan: ChangePlan, part: ChangePart) -> pa.Table:
    """One part's changes, finished (labels, `_changed_columns`, net per key, skipped rows), with
    the columns of `plan.arrow_schema()`. An executor computes one part from the plan it was sent."""
    cols = list(plan.schema.columns)
    keys = list(plan.schema.primary_key)
    if part.skipped:
        empty = finish(None, np.zeros((0, len(cols)), dtype=bool), cols, keys, False, plan.before_image, TS_TYPE)
        return with_skipped(empty, storage, part.skipped, plan.schema)
    t, changed = _part_records(storage, plan, part).table()
    out = finish(t, changed, cols, keys, plan.mode == "net", plan.before_image, TS_TYPE)
    if plan.skipped:
        out = out.append_column(pa.field("_reason", pa.string()), pa.nulls(out.num_rows, pa.string()))
    return out


def _removed_rows(storage: Storage, prev: TableState, gone: str, version: int, timestamp: int,
                  cols: list[Column], key_ids: set[int], recs: _Records) -> None:
    """The rows live at `prev` (the version before commit `version`) in rowset `gone`, which that
    commit removed without rewriting it, as deletes of that commit (§9.2): the key, NULL
    after-images, the values as of `prev` as before-images. Columns are matched by ID (the commit
    may rename or drop some as it drops ranges); one added since is NULL before."""
    names = {col.id: col.name for col in prev.schema.columns}
    sc = Scanner(storage, prev, [names[col.id] for col in cols if col.id in names])
    for task in sc.plan():                  # plan() leaves out rowsets with no row visible at prev
        if task.rowset.id != gone:
            continue
        rows = sc.read_task(task)
        n = rows.num_rows
        if not n:
            continue
        values = {col.id: rows.column(names[col.id]).combine_chunks().cast(col.arrow_type) if col.id in names
                  else pa.nulls(n, col.arrow_type) for col in cols}
        image = {col.id: values[col.id] if col.id in key_ids else pa.nulls(n, col.arrow_type) for col in cols}
        recs.add(np.full(n, ChangeOp.DELETE, np.int8), np.full(n, version, np.int64),
                 np.full(n, timestamp, np.int64), image, np.zeros((n, len(cols)), dtype=bool), values,
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


def plan_changes(handle: TableHandle, start, end=None, mode: str = "all", before_image: bool = False,
                 images: str = "full", skipped: bool = False, by_rowset: bool = False) -> ChangePlan:
    """A change read planned from the log (Table.changes has the contract): the options checked,
    the versions resolved and checked against the history horizon, the commits between cut into
    parts. Nothing but the log is read. by_rowset: one part per rowset even in mode "net" (for a
    caller that nets the parts' records together, as changes() does)."""
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
            "their files). To keep history for a reader that falls behind, raise the table property "
            "history_max_age, or tag the version it reads from (Table.tag): vacuum keeps a tag's history")
    end_state, start_state = handle.state_at(e), handle.state_at(s)
    commits = [handle.log.read_commit(v) for v in range(s + 1, e + 1)]
    parts = _plan_parts(start_state, commits, mode == "net" and not by_rowset, skipped, handle.state_at)
    output_schema(list(end_state.schema.columns), before_image, skipped)     # its names checked
    return ChangePlan(s, e, mode, before_image, images, skipped, end_state.schema, parts)


def changes(handle: TableHandle, start, end=None, mode: str = "all", before_image: bool = False,
            images: str = "full", skipped: bool = False) -> pa.Table:
    """Changes committed after `start` up to `end`: the planned parts' records (one part per
    rowset), gathered in parallel, finished together in commit order: the same rows as the
    parts of change_plan computed apart."""
    plan = plan_changes(handle, start, end, mode, before_image, images, skipped, by_rowset=True)
    cols = list(plan.schema.columns)
    recs = _Records(cols, before_image, list(plan.schema.primary_key))
    data = [p for p in plan.parts if not p.skipped]
    for r in pmap(lambda p: _part_records(handle.storage, plan, p), data):
        recs.parts.extend(r.parts)
    t, changed = recs.table()
    out = finish(t, changed, cols, list(plan.schema.primary_key), mode == "net", before_image, TS_TYPE)
    if not skipped:
        return out
    files = [f for p in plan.parts for f in p.skipped]
    return with_skipped(out, handle.storage, files, plan.schema)
