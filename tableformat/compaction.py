"""Compactions: minor delta, major delta and merging (tablet seed), each one commit.

- Minor delta: a rowset's REDO files become one file (records keep their
  timestamps in a `ts` column). Rowids are kept.
- Major delta: the REDO updates of chosen columns are applied to base data,
  written as a new column-group file holding only those columns; the other
  records (deletes, updates of other columns) go to one new REDO file.
- Merging: overlapping (or small) rowsets of a tablet are rewritten as
  non-overlapping rowsets in key order; rows deleted as of the compaction's
  snapshot are dropped, so their space is reclaimed.

History: every compaction only adds and removes files in a commit whose
`data_change` is false, so a snapshot as of an earlier version still reads the
files it referenced, exactly; `vacuum` keeps every file a snapshot within
`history_max_age` needs. Concurrency: delta compactions keep rowids, so
mutations committed meanwhile stay valid on top of them; a merging compaction
rebases such mutations through its old-rowid -> new-rowid map.
See `specs/format.md`, section "Compaction".
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .deltafile import (REDO, DeltaFileMeta, apply_redo, flag_name, read_delta,
                        redo_order, write_delta_file)
from .diskrowset import _column_stats, field_name, read_base_columns, read_pk_index, write_base_file
from .errors import CommitConflictError
from .metadata import RowSetMeta, TableState
from .parallel import pmap
from .storage import Storage

MIB = 1 << 20
SMALL_ROWSET_TRADEOFF = 0.009     # Kudu --compaction_small_rowset_tradeoff
MIN_IMPROVEMENT = 0.01            # Kudu --compaction_minimum_improvement
SUPPORT_ADJUST = 1.003            # Kudu kSupportAdjust
MAJOR_MIN_RATIO = 0.1             # Kudu --tablet_delta_store_major_compact_min_ratio
MINOR_FILES_FOR_FULL_SCORE = 20   # ours: Kudu's 1000 assumes memstore flushes, we get one file per commit


@dataclass(frozen=True)
class CompactionAction:
    """One compaction: what it reads, why, and how much it is worth."""

    kind: str                        # "merge", "major_delta" or "minor_delta"
    tablet: str
    rowsets: tuple[str, ...]
    score: float
    reason: str
    bytes_read: int
    columns: tuple[int, ...] = ()

    def __str__(self) -> str:
        cols = f" columns {list(self.columns)}" if self.columns else ""
        ids = ", ".join(r[:8] for r in self.rowsets)
        return (f"{self.kind:<12} tablet {self.tablet:<10} score {self.score:6.3f}  reads {self.bytes_read / MIB:8.2f} MiB"
                f"  rowsets [{ids}]{cols}\n{'':12} why: {self.reason}")


@dataclass(frozen=True)
class CompactionPlan:
    actions: tuple[CompactionAction, ...]
    budget_bytes: int
    version: int
    considered: int = 0

    def __str__(self) -> str:
        head = (f"Compaction plan at version {self.version}: {len(self.actions)} action(s), "
                f"{sum(a.bytes_read for a in self.actions) / MIB:.2f} of {self.budget_bytes / MIB:.0f} MiB budget, "
                f"{self.considered} candidate(s) considered")
        return "\n".join([head] + [f"  {i + 1}. {a}" for i, a in enumerate(self.actions)])

    def __len__(self) -> int:
        return len(self.actions)

    def __iter__(self):
        return iter(self.actions)


# --- policy ----------------------------------------------------------------------------

def _key_pos(key: bytes, lo: bytes, hi: bytes) -> float:
    """Position of `key` in [lo, hi] as a fraction: the 8 bytes after the common prefix, as Kudu does."""
    p = 0
    while p < min(len(lo), len(hi)) and lo[p] == hi[p]:
        p += 1

    def u64(b: bytes) -> int:
        return int.from_bytes(b[p:p + 8].ljust(8, b"\0"), "big")
    a, b, k = u64(lo), u64(hi), u64(key)
    return 0.0 if b <= a else min(1.0, max(0.0, (k - a) / (b - a)))


def _delta_bytes(st: TableState, rid: str) -> int:
    return sum(d.size for d in st.deltas_of(rid))


def _deleted_rows(st: TableState, rid: str) -> int:
    return sum(d.delete_count - d.reinsert_count for d in st.deltas_of(rid) if d.kind == REDO)


def _merge_candidates(st: TableState, tablet: str, rowsets: list[RowSetMeta]) -> list[CompactionAction]:
    """Clusters of overlapping rowsets, runs of small rowsets, and rowsets full of deleted rows."""
    target = st.properties["rowset_target_bytes"]
    lo = min(r.min_key for r in rowsets)
    hi = max(r.max_key for r in rowsets)
    width = {r.id: max(_key_pos(r.max_key, lo, hi) - _key_pos(r.min_key, lo, hi), 1e-9) for r in rowsets}
    size = {r.id: r.size_bytes + _delta_bytes(st, r.id) for r in rowsets}
    bonus = {r.id: SMALL_ROWSET_TRADEOFF * max(0.0, 1 - size[r.id] / (target / 4)) for r in rowsets}
    out = []
    ordered = sorted(rowsets, key=lambda r: r.min_key)
    # Overlapping clusters: value = sum of widths - union width (the drop in average height).
    cluster: list[RowSetMeta] = []
    cluster_max = b""

    def flush(cl: list[RowSetMeta]):
        if len(cl) < 2:
            return
        union = _key_pos(max(r.max_key for r in cl), lo, hi) - _key_pos(min(r.min_key for r in cl), lo, hi)
        sumw = sum(width[r.id] for r in cl)
        value = sumw - union if sumw <= union else sumw - SUPPORT_ADJUST * union
        value += sum(bonus[r.id] for r in cl)
        if value > MIN_IMPROVEMENT:
            out.append(CompactionAction("merge", tablet, tuple(r.id for r in cl), value,
                                        f"{len(cl)} rowsets overlap: average height drops by {value:.3f}",
                                        sum(size[r.id] for r in cl)))
    for r in ordered:
        if cluster and r.min_key <= cluster_max:
            cluster.append(r)
            cluster_max = max(cluster_max, r.max_key)
        else:
            flush(cluster)
            cluster, cluster_max = [r], r.max_key
    flush(cluster)
    in_merge = {x for a in out for x in a.rowsets}
    # Small rowsets, non-overlapping: merge neighbours for the small-rowset bonus.
    small = [r for r in ordered if r.id not in in_merge and size[r.id] < target / 4]
    run: list[RowSetMeta] = []
    for r in small + [None]:
        if r is not None and sum(size[x.id] for x in run) + size[r.id] <= target:
            run.append(r)
            continue
        value = sum(bonus[x.id] for x in run)
        if len(run) >= 2 and value > MIN_IMPROVEMENT:
            out.append(CompactionAction("merge", tablet, tuple(x.id for x in run), value,
                                        f"{len(run)} small rowsets (under {target / 4 / 1024:.0f} KiB each) "
                                        "become one", sum(size[x.id] for x in run)))
            in_merge.update(x.id for x in run)
        run = [r] if r is not None else []
    # Deleted rows: rewrite a rowset alone to reclaim them (KUDU-1625).
    pct = st.properties.get("reclaim_deleted_pct", 20)
    for r in ordered:
        dead = _deleted_rows(st, r.id)
        if r.id not in in_merge and pct and dead and dead * 100 >= pct * r.num_rows:
            out.append(CompactionAction("merge", tablet, (r.id,), dead / r.num_rows,
                                        f"{dead} of {r.num_rows} rows are deleted: rewriting reclaims them",
                                        size[r.id]))
    return out


def _delta_candidates(st: TableState, tablet: str, rowsets: list[RowSetMeta]) -> list[CompactionAction]:
    out = []
    for r in rowsets:
        redo = [d for d in st.deltas_of(r.id) if d.kind == REDO]
        if not redo:
            continue
        redo_bytes = sum(d.size for d in redo)
        base_bytes = sum(f.size for f in r.base)
        cols = sorted({c for d in redo for c, n in d.update_counts.items() if n and st.schema.has_id(c)})
        ratio = redo_bytes / max(1, base_bytes)
        if cols and ratio >= MAJOR_MIN_RATIO:
            col_bytes = base_bytes * len(cols) // max(1, len(st.schema.columns))
            out.append(CompactionAction("major_delta", tablet, (r.id,), min(1.0, ratio),
                                        f"REDO bytes are {ratio:.0%} of base: apply updates of {len(cols)} "
                                        f"column(s) to base data", redo_bytes + col_bytes, tuple(cols)))
        elif len(redo) > 1:
            out.append(CompactionAction("minor_delta", tablet, (r.id,),
                                        min(1.0, (len(redo) - 1) / MINOR_FILES_FOR_FULL_SCORE),
                                        f"{len(redo)} REDO files: merge them into one", redo_bytes))
    return out


def plan(st: TableState, budget_bytes: int) -> CompactionPlan:
    """Score every candidate as Kudu's policy does and choose a 0/1 knapsack under the budget."""
    cands: list[CompactionAction] = []
    by_tablet: dict[str, list[RowSetMeta]] = {}
    for r in st.rowsets.values():
        by_tablet.setdefault(r.tablet, []).append(r)
    for tablet, rowsets in sorted(by_tablet.items()):
        merges = _merge_candidates(st, tablet, rowsets)
        merged = {x for a in merges for x in a.rowsets}
        cands += merges + _delta_candidates(st, tablet, [r for r in rowsets if r.id not in merged])
    chosen = _knapsack(cands, budget_bytes)
    chosen.sort(key=lambda a: -a.score)
    return CompactionPlan(tuple(chosen), budget_bytes, st.version, len(cands))


def _knapsack(items: list[CompactionAction], budget: int) -> list[CompactionAction]:
    """Exact 0/1 knapsack over whole MiB (Kudu's weight unit): maximise total score."""
    if not items:
        return []
    cap = max(0, budget // MIB)
    w = [max(1, a.bytes_read // MIB) for a in items]
    best = np.zeros(cap + 1)
    keep = np.zeros((len(items), cap + 1), dtype=bool)
    for i, a in enumerate(items):
        if w[i] > cap:
            continue
        cand = best[: cap + 1 - w[i]] + a.score
        better = cand > best[w[i]:]
        keep[i, w[i]:] = better
        best[w[i]:] = np.where(better, cand, best[w[i]:])
    out, c = [], cap
    for i in range(len(items) - 1, -1, -1):
        if keep[i, c]:
            out.append(items[i])
            c -= w[i]
    return out


# --- execution -------------------------------------------------------------------------

@dataclass
class Prepared:
    """Files written by a compaction and the actions that would commit them."""

    actions: list[dict]
    written: list[str]
    inputs: set[str]
    remap: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)
    outputs: list[RowSetMeta] = field(default_factory=list)


def _read_all_deltas(storage: Storage, st: TableState, rs: RowSetMeta) -> tuple[pa.Table | None, list]:
    """Every REDO record of a rowset, in (rowid, ts) order, with a ts column and all columns."""
    redo = redo_order([d for d in st.deltas_of(rs.id) if d.kind == REDO])
    ids = [c.id for c in st.schema.columns if c.id not in {k.id for k in st.schema.key_columns}]
    parts = []
    for d in redo:
        t = read_delta(storage, d, ids, st.schema.key_columns)
        if "ts" not in t.column_names:
            t = t.append_column("ts", pa.array(np.full(t.num_rows, d.max_ts, np.int64)))
        parts.append(t)
    if not parts:
        return None, redo
    return pa.concat_tables(parts, promote_options="default"), redo


def _write_records(storage: Storage, st: TableState, rs: RowSetMeta, t: pa.Table, keep_cols: set[int] | None) \
        -> DeltaFileMeta | None:
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
    return write_delta_file(storage, st.schema, rs, rowid, op, keys, updates, REDO, ts)


def prepare_minor(storage: Storage, st: TableState, rs: RowSetMeta) -> Prepared:
    t, redo = _read_all_deltas(storage, st, rs)
    meta = _write_records(storage, st, rs, t, None)
    actions = [{"remove_delta": {"rowset": rs.id, "path": d.path}} for d in redo]
    if meta is not None:
        actions.append({"add_delta": meta.to_json()})
    return Prepared(actions, [meta.path] if meta else [], {rs.id})


def prepare_major(storage: Storage, st: TableState, rs: RowSetMeta, column_ids: Sequence[int]) -> Prepared:
    cols = [st.schema.by_id(c) for c in column_ids if st.schema.has_id(c)]
    base = read_base_columns(storage, rs, cols)
    redo = [d for d in st.deltas_of(rs.id) if d.kind == REDO]
    applied, _ = apply_redo(storage, rs, redo, cols, base, 0, rs.num_rows)
    written: list[str] = []
    arrays = [applied[c.id].combine_chunks() if isinstance(applied[c.id], pa.ChunkedArray) else applied[c.id]
              for c in cols]
    ref = write_base_file(storage, f"tablets/{rs.tablet}/{rs.id}", cols, arrays, st.properties["row_group_rows"])
    written.append(ref.path)
    stats = dict(rs.stats)
    stats.update({c.id: _column_stats(c, a) for c, a in zip(cols, arrays)})
    new_rs = replace(rs, base=rs.base + (ref,), stats=stats)
    # What stays REDO: deletes, reinserts and updates of the other columns.
    t, _ = _read_all_deltas(storage, st, rs)
    remaining = None
    if t is not None:
        done = set(c.id for c in cols)
        op = t.column("op").to_numpy()
        other = np.zeros(t.num_rows, dtype=bool)
        for c in st.schema.columns:
            if c.id not in done and flag_name(c.id) in t.column_names:
                other |= t.column(flag_name(c.id)).fill_null(False).to_numpy(zero_copy_only=False)
        keep = (op != 1) | other
        remaining = t.filter(pa.array(keep))
    meta = _write_records(storage, st, rs, remaining, {c.id for c in st.schema.columns} - {c.id for c in cols})
    if meta is not None:
        written.append(meta.path)
    actions = [{"add_rowset": new_rs.to_json()}] + \
        [{"remove_delta": {"rowset": rs.id, "path": d.path}} for d in redo] + \
        ([{"add_delta": meta.to_json()}] if meta else [])
    return Prepared(actions, written, {rs.id})


def prepare_merge(storage: Storage, st: TableState, rowset_ids: Sequence[str]) -> Prepared:
    """Rewrite rowsets as non-overlapping rowsets of the live rows, in key order."""
    from .writer import InsertPlan, TabletBatch, write_plan
    inputs = [st.rowsets[r] for r in rowset_ids]
    cols = list(st.schema.columns)

    def load(rs: RowSetMeta):
        arrays = read_base_columns(storage, rs, cols)
        deltas = st.deltas_of(rs.id)
        arrays, live = apply_redo(storage, rs, deltas, cols, arrays, 0, rs.num_rows) if deltas else (arrays, None)
        keys = read_pk_index(storage, rs)
        t = pa.table({c.name: arrays[c.id] for c in cols})
        rowids = np.arange(rs.num_rows)
        if live is not None:
            t, keys, rowids = t.filter(pa.array(live)), keys.filter(pa.array(live)), rowids[live]
        return t, keys, rowids
    loaded = pmap(load, inputs)
    data = pa.concat_tables([x[0] for x in loaded]).combine_chunks()
    keys = pa.concat_arrays([x[1] for x in loaded])
    src_rs = np.concatenate([np.full(len(x[2]), i) for i, x in enumerate(loaded)]) if loaded else np.zeros(0)
    src_row = np.concatenate([x[2] for x in loaded]) if loaded else np.zeros(0)
    order = pc.array_sort_indices(keys).to_numpy()
    tablet = inputs[0].tablet
    plan = InsertPlan(data, [TabletBatch(tablet, order, keys.take(pa.array(order)))] if len(order) else [], 0)
    written: list[str] = []
    outputs = write_plan(storage, st, plan, written) if len(order) else []
    # old (rowset, rowid) -> (output index, new rowid), in output order
    sizes = [o.num_rows for o in outputs]
    out_idx = np.repeat(np.arange(len(outputs)), sizes) if outputs else np.zeros(0, np.int64)
    new_rowid = np.concatenate([np.arange(n) for n in sizes]) if outputs else np.zeros(0, np.int64)
    remap = {}
    for i, rs in enumerate(inputs):
        sel = src_rs[order] == i
        remap[rs.id] = (src_row[order][sel], out_idx[sel], new_rowid[sel])
    actions = [{"remove_rowset": {"id": r.id}} for r in inputs] + [{"add_rowset": o.to_json()} for o in outputs]
    return Prepared(actions, written, set(rowset_ids), remap, outputs)


def rebase_merge(storage: Storage, st: TableState, prep: Prepared, new_commits: list[dict]) -> list[dict]:
    """Remap REDOs committed to the inputs after the snapshot onto the outputs (extra actions)."""
    extra = []
    for c in new_commits:
        for a in c["actions"]:
            if "remove_rowset" in a and a["remove_rowset"]["id"] in prep.inputs:
                raise CommitConflictError("another compaction rewrote the same rowsets")
            if "alter" in a or "metadata" in a:
                raise CommitConflictError("the table definition changed during the compaction")
            if "add_delta" not in a:
                continue
            m = DeltaFileMeta.from_json(a["add_delta"])
            if m.rowset not in prep.inputs:
                continue
            old_rowid, out_i, new_rowid = prep.remap[m.rowset]
            t = read_delta(storage, m, [x.id for x in st.schema.columns], st.schema.key_columns)
            rid = t.column("rowid").to_numpy().astype(np.int64)
            pos = np.searchsorted(old_rowid, rid)
            ok = (pos < len(old_rowid)) & (old_rowid[np.minimum(pos, max(len(old_rowid) - 1, 0))] == rid) \
                if len(old_rowid) else np.zeros(len(rid), bool)
            if not ok.all():
                raise CommitConflictError("a concurrent change touched a row the compaction dropped")
            ts = t.column("ts").to_numpy() if "ts" in t.column_names else np.full(len(rid), c["timestamp"])
            for o in np.unique(out_i[pos]):
                sel = out_i[pos] == o
                sub = t.filter(pa.array(sel))
                sub = sub.set_column(sub.schema.get_field_index("rowid"), "rowid",
                                     pa.array(new_rowid[pos][sel].astype(np.uint32)))
                if "ts" in sub.column_names:
                    sub = sub.drop(["ts"])
                sub = sub.append_column("ts", pa.array(ts[sel].astype(np.int64)))
                meta = _write_records(storage, st, prep.outputs[int(o)], sub, None)
                prep.written.append(meta.path)
                extra.append({"add_delta": meta.to_json()})
    return extra
