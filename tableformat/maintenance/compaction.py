"""Compactions, each one commit: the merging compaction here, and `write_compaction` for every kind.

- Merging: overlapping (or small) rowsets of a tablet are rewritten as
  non-overlapping rowsets in key order, carrying each row's history as UNDO
  records; rows deleted before the ancient history mark are dropped, so
  their space is reclaimed.
- Minor delta, major delta and UNDO GC of one rowset: `delta_compaction.py`.

History: as in Kudu, the base data is the newest state and UNDO records roll
it back, so a version older than vacuum's history horizon reads the compacted
files exactly; UNDO records older than `history_max_age` are not written
(garbage collection). Concurrency: delta compactions keep rowids, so
mutations committed meanwhile stay valid on top of them; a merging compaction
rebases such mutations by remapping their records, by key, onto its outputs
(`requirements.MergeInputsRemappable`). Each `write_compaction` returns a fragment.
See `specs/format.md`, section "Compaction".
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..log.actions import AddDelta, AddRowSet, RemoveRowSet
from .compaction_policy import CompactionAction, CompactionPlan, ancient_undo  # noqa: F401  (re-exported)
from ..log.requirements import DefinitionUnchanged, MergeInputsRemappable, RowSetsUnchanged, TagsRetained
from ..format.cfile_set import FILE_CACHE, field_name
from .delta_compaction import (Prepared, gc_records, history_action, prepare_major, prepare_minor,
                               prepare_undo_gc, read_all_deltas, undo_of, write_records)
from ..read.delta_tracker import apply_deltas
from ..format.deltafile import DELETE, REDO, REINSERT, UNDO, DeltaFileMeta
from ..log.fragment import WriteFragment
from ..format.constants import rowset_dir
from ..format.diskrowset import read_base_columns, read_pk_index
from ..format.metadata import RowSetMeta, TableState
from ..log.mvcc import kept_by_tags, retention_points
from ..format.parallel import pmap
from ..format.storage import Storage


@dataclass
class _Input:
    """One merge input, read: its rows kept (live, or deleted after `ahm`), and their history."""

    data: pa.Table            # current values of the kept rows
    keys: pa.Array            # their encoded keys
    rowids: np.ndarray        # their rowids in the input
    delete_ts: np.ndarray     # deletion time of a ghost row (kept for history), -1 for a live row
    undo: pa.Table | None     # UNDO records of kept rows (input rowids)


def _load_input(storage: Storage, st: TableState, rs: RowSetMeta, ahm: int | None, created_ts: int = 0) -> _Input:
    """One input read for a merge whose outputs carry `created_ts` (`merged_created_ts`)."""
    cols = list(st.schema.columns)
    base = read_base_columns(storage, rs, cols)
    base = {k: v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v for k, v in base.items()}
    deltas = st.deltas_of(rs.id)
    arrays, live = apply_deltas(storage, rs, deltas, cols, base, 0, rs.num_rows) if deltas else (base, None)
    keys = read_pk_index(storage, rs)
    n = rs.num_rows
    delete_ts = np.full(n, -1, np.int64)
    redo, _ = read_all_deltas(storage, st, rs)
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
        parts.append(undo_of(redo, base, cols, final))
    old_undo, _ = read_all_deltas(storage, st, rs, UNDO)
    if old_undo is not None:
        parts.append(old_undo)
    points = retention_points(st)
    if rs.created_ts and rs.created_ts > created_ts and \
            (ahm is None or rs.created_ts > ahm or (len(points) and points[0] < rs.created_ts)):
        # the rows did not exist before the insert that wrote them: UNDO DELETE at its time (the
        # outputs' created_ts says it for the rows of the oldest inputs)
        k = {field_name(c.id): base[c.id] for c in st.schema.key_columns}
        parts.append(pa.table({"rowid": pa.array(np.arange(n, dtype=np.uint32)),
                               "op": pa.array(np.full(n, DELETE, np.int8)),
                               "ts": pa.array(np.full(n, rs.created_ts, np.int64)), **k}))
    undo = gc_records(pa.concat_tables(parts, promote_options="default") if parts else None, ahm, st)
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


# A merge whose inputs other than the largest hold at most this share of its rows places them
# into the largest by binary search (`merge_order`) instead of sorting every key.
SMALL_RUNS_SHARE = 0.25


def merge_order(keys: pa.Array, runs: Sequence[int]) -> np.ndarray | None:
    """The stable key order of `keys`, the concatenation of sorted runs of lengths `runs`, each
    without a repeated key (rowsets), when one run holds most rows: the other runs' keys are
    sorted (few) and bisected into the largest, O(small x log large), where a sort of every key
    cost ~0.3 s of CPU per 10^6 rows (issue 26: an upsert's 5k rows merged into 1M). Equal keys
    keep the order of their runs, as a stable sort gives. None when no run is that large."""
    from ..read.keyprobe import bisect_left
    n = len(keys)
    big = int(np.argmax(runs)) if len(runs) else 0
    if len(runs) < 2 or n - runs[big] > SMALL_RUNS_SHARE * n:
        return None
    starts = np.r_[0, np.cumsum(runs)[:-1]].astype(np.int64)
    lo, nb = int(starts[big]), int(runs[big])
    large = keys.slice(lo, nb)
    small_at = np.r_[np.arange(0, lo), np.arange(lo + nb, n)].astype(np.int64)
    if not len(small_at):
        return np.arange(n, dtype=np.int64)
    small = keys.take(pa.array(small_at))
    by_key = pc.array_sort_indices(small).to_numpy()             # stable: equal keys in run order
    small_at, small = small_at[by_key], small.take(pa.array(by_key))
    pos = bisect_left(large, small)
    inside = np.flatnonzero(pos < nb)
    after = small_at[inside] > lo                                 # a later run: after an equal key of the large one
    eq = pc.equal(large.take(pa.array(pos[inside])), small.take(pa.array(inside))).to_numpy(zero_copy_only=False)
    pos[inside[eq & after]] += 1
    order = np.empty(n, np.int64)
    slot = pos + np.arange(len(pos))
    order[slot] = small_at
    rest = np.ones(n, bool)
    rest[slot] = False
    order[rest] = np.arange(lo, lo + nb)
    return order


def _layers(tablet: str, keys: pa.Array, del_ts: np.ndarray, tail: int = 0,
            runs: Sequence[int] = ()) -> list:
    """The merge's outputs as key-sorted batches of rows: first the live rows, then the ghosts
    (rows deleted within the history) in layers, newest deletion of a key first, so no output
    holds a key twice and the live rows share no rowset with a deleted one. `runs`: the lengths
    of the sorted inputs `keys` concatenates."""
    from ..write.insert import TabletBatch, tail_order
    ghost = del_ts >= 0
    # One stable order of every key (the small inputs placed into the large one, or a sort: as
    # numbers where the key's shape allows), then the live rows and the ghosts split apart, each
    # still in key order.
    by_key = merge_order(keys, runs)
    if by_key is None:
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


def merged_created_ts(inputs: Sequence[RowSetMeta]) -> int:
    """The outputs' `created_ts`: the oldest input's (0 if one has none). No row of the inputs
    existed before it, so a read as of then skips the outputs whole; only rows of inputs
    inserted later need an UNDO DELETE each (a merge of an insert's 1M rows with an upsert's
    5k wrote 1M of them, with their keys: ~40% of the merge's time, issue 26)."""
    return min((rs.created_ts or 0) for rs in inputs) if inputs else 0


def prepare_merge(storage: Storage, st: TableState, rowset_ids: Sequence[str], ahm: int | None = None) -> Prepared:
    """Rewrite rowsets as non-overlapping rowsets in key order, with their history.

    Live rows go to the main outputs. Rows deleted after `ahm` (ghosts) are kept, with a
    REDO DELETE at their deletion time, in separate history-only outputs (`live_until`) that
    current reads skip and reads as of earlier times still see; rows deleted before it are
    dropped, reclaiming their space. A key deleted and inserted again exists as several
    rows: each older one goes to a further non-overlapping "layer" of history-only outputs,
    so no rowset holds a key twice. Every kept row's history becomes UNDO records of its output.
    """
    inputs = [st.rowsets[r] for r in rowset_ids]
    created_ts = merged_created_ts(inputs)
    loaded: list[_Input] = pmap(lambda rs: _load_input(storage, st, rs, ahm, created_ts), inputs)
    # the inputs are read and about to be replaced: their cached blocks would only add to the merge's peak
    FILE_CACHE.drop(storage, [rowset_dir(rs.tablet, rs.id) + "/" for rs in inputs] + [f"{rs.id}#" for rs in inputs])
    data = pa.concat_tables([x.data for x in loaded]).combine_chunks()
    for x in loaded:
        x.data = None          # held in `data` now: not twice through the rest of the merge
    keys = pa.concat_arrays([x.keys for x in loaded])
    del_ts = np.concatenate([x.delete_ts for x in loaded])
    written: list[str] = []
    outputs, placed, out_idx, new_rowid = _write_outputs(storage, st, inputs[0].tablet, data, keys, del_ts,
                                                         written, [len(x.keys) for x in loaded], created_ts)
    outputs = _mark_history_only(outputs, out_idx, del_ts[placed])
    # Ghost rows: their DELETE stays a REDO record; the rest of the history goes to UNDO files.
    ghosts = np.flatnonzero(del_ts[placed] >= 0)
    redo_parts = [_ghost_deletes(st, data.take(pa.array(placed[ghosts])), out_idx[ghosts], new_rowid[ghosts],
                                 del_ts[placed][ghosts])] if len(ghosts) else []
    undo_parts = _remapped_undo(loaded, placed, out_idx, new_rowid)
    deltas = _write_per_output(storage, st, outputs, redo_parts, REDO, written) + \
        _write_per_output(storage, st, outputs, undo_parts, UNDO, written)
    actions = [RemoveRowSet(r.id) for r in inputs] + [AddRowSet(o) for o in outputs] + \
        [AddDelta(m) for m in deltas] + history_action(ahm)
    return Prepared(actions, written, set(rowset_ids), outputs)


def _write_outputs(storage: Storage, st: TableState, tablet: str, data: pa.Table, keys: pa.Array,
                   del_ts: np.ndarray, written: list[str], runs: Sequence[int] = (), created_ts: int = 0) \
        -> tuple[list[RowSetMeta], np.ndarray, np.ndarray, np.ndarray]:
    """The kept rows written as key-ordered outputs (`_layers`), carrying `created_ts`.

    Returns (outputs, placed, out_idx, new_rowid): per output row, in output order, the row of
    `data` it holds, its output and its rowid there.
    """
    from ..write.insert import InsertPlan, key_tail_width, write_plan
    batches = _layers(tablet, keys, del_ts, key_tail_width([c.type for c in st.schema.key_columns]), runs)
    outputs = write_plan(storage, st, InsertPlan(data, batches, 0), written, warm=False) if batches else []
    outputs = [replace(o, created_ts=created_ts) for o in outputs]
    placed = np.concatenate([b.rows for b in batches]) if batches else np.zeros(0, np.int64)
    sizes = [o.num_rows for o in outputs]
    out_idx = np.repeat(np.arange(len(outputs)), sizes) if outputs else np.zeros(0, np.int64)
    new_rowid = np.concatenate([np.arange(n) for n in sizes]) if outputs else np.zeros(0, np.int64)
    return outputs, placed, out_idx, new_rowid


def _ghost_deletes(st: TableState, rows: pa.Table, out_idx: np.ndarray, new_rowid: np.ndarray,
                   del_ts: np.ndarray) -> pa.Table:
    """A ghost row's DELETE at its deletion time, as REDO records of its output (column `o`)."""
    return pa.table({"o": pa.array(out_idx), "rowid": pa.array(new_rowid),
                     "op": pa.array(np.full(len(out_idx), DELETE, np.int8)),
                     "ts": pa.array(del_ts),
                     **{field_name(c.id): rows.column(c.name) for c in st.schema.key_columns}})


def _remapped_undo(loaded: list[_Input], placed: np.ndarray, out_idx: np.ndarray,
                   new_rowid: np.ndarray) -> list[pa.Table]:
    """Each input's UNDO records moved from its rowids to their output (column `o`) and new rowid:
    an old rowid is found among its input's kept rowids (sorted), which give its row of the merge
    and that row's place in the outputs; O(records x log rows), nothing sorted per input."""
    at = np.empty(len(placed), np.int64)
    at[placed] = np.arange(len(placed))              # row of the merge -> its place in the outputs
    parts, offset = [], 0
    for x in loaded:
        if x.undo is not None and x.undo.num_rows:
            row = offset + np.searchsorted(x.rowids, x.undo.column("rowid").to_numpy().astype(np.int64))
            p = at[row]
            u = x.undo.set_column(x.undo.schema.get_field_index("rowid"), "rowid", pa.array(new_rowid[p]))
            parts.append(u.append_column("o", pa.array(out_idx[p])))
        offset += len(x.rowids)
    return parts


def _write_per_output(storage: Storage, st: TableState, outputs: list[RowSetMeta], parts: list[pa.Table],
                      kind: str, written: list[str]) -> list[DeltaFileMeta]:
    """One delta file of `kind` per output that has records (column `o` names the output)."""
    if not parts:
        return []
    deltas = []
    t = pa.concat_tables(parts, promote_options="default")
    o = t.column("o").to_numpy()
    # One stable sort by (output, rowid, ts) and one take: each output's records are then a
    # slice already in the order write_delta_file writes (it sorts them stably by rowid, ts),
    # where a filter per output and a sort of each copied the records twice.
    order = np.lexsort((t.column("ts").to_numpy(), t.column("rowid").to_numpy(), o))
    t = t.drop(["o"]).take(pa.array(order))
    o = o[order]
    outs, starts = np.unique(o, return_index=True)
    ends = np.r_[starts[1:], len(o)]
    for j, a, b in zip(outs.tolist(), starts.tolist(), ends.tolist()):
        m = write_records(storage, st, outputs[j], t.slice(a, b - a), None, kind)
        written.append(m.path)
        deltas.append(m)
    return deltas


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
