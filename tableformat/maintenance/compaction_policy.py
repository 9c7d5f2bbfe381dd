"""The compaction policy: which compactions are worth doing now (Kudu's compaction_policy.cc).

Candidates are scored as Kudu scores them: a merging compaction by how much it
lowers the tablet's average rowset height (overlap in key space) plus a bonus
for small rowsets; a major delta compaction by REDO bytes against base bytes;
a minor one by the number of REDO files; rowsets with deleted rows are
rewritten alone (KUDU-1625), their deleted rows moving to history-only rowsets
that current scans skip; ancient UNDO files and history-only rowsets are
dropped (UNDO GC). The
policy picks a 0/1 knapsack under a byte budget and returns a plan a person
can print and read. Policies are pluggable: anything with `pick(state, budget,
ahm) -> CompactionPlan`. See specs/format.md §12.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..format.deltafile import REDO, UNDO, DeltaFileMeta
from ..format.metadata import RowSetMeta, TableState, property_value
from ..log.mvcc import gc_floor

MIB = 1 << 20
SMALL_ROWSET_TRADEOFF = 0.009     # Kudu --compaction_small_rowset_tradeoff
MIN_IMPROVEMENT = 0.01            # Kudu --compaction_minimum_improvement
SUPPORT_ADJUST = 1.003            # Kudu kSupportAdjust
MAJOR_MIN_RATIO = 0.1             # Kudu --tablet_delta_store_major_compact_min_ratio
MINOR_FILES_FOR_FULL_SCORE = 20   # ours: Kudu's 1000 assumes memstore flushes, we get one file per commit
# ours: what a delete mask costs a current scan whatever the number of rows it hides (reading the
# REDO DELETE records, and filtering every column read instead of slicing it), as a fraction of
# the scan (bench_compaction --only history measures the whole effect).
DELETE_MASK_COST = 0.05
_MOSTLY_ONE = 0.9                 # a merge whose largest input holds this share of its bytes says so


KINDS = ("merge", "major_delta", "minor_delta", "undo_gc")     # what write_compaction runs


@dataclass(frozen=True)
class CompactionAction:
    """One compaction: what it reads, why, and how much it is worth."""

    kind: str                        # "merge", "major_delta", "minor_delta" or "undo_gc"
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


def _deleted_rows(st: TableState, rid: str, ahm: int | None = -1) -> int:
    """Rows deleted (by REDO files no newer than `ahm`: those a merge may drop; -1: any)."""
    if ahm is None:
        return 0                                 # history kept forever: no deleted row is reclaimable
    ahm = ahm if ahm == -1 else gc_floor(st, ahm)     # nor one a tagged version may still see
    return sum(d.delete_count - d.reinsert_count for d in st.deltas_of(rid)
               if d.kind == REDO and (ahm == -1 or d.max_ts <= ahm))


def _merge_candidates(st: TableState, tablet: str, rowsets: list[RowSetMeta], ahm: int | None) \
        -> list[CompactionAction]:
    """Clusters of overlapping rowsets, runs of small rowsets, and rowsets with deleted rows.

    History-only rowsets take no part: no current read touches them, and UNDO GC drops them
    once their rows' deletes pass `ahm`. Rowsets whose rows are all deleted (ghost layers of
    format 3) take no part in overlap merges: the deleted-rows rule moves them to history.
    """
    everything = [r for r in rowsets if not r.history_only]
    rowsets = [r for r in everything if _deleted_rows(st, r.id) < r.num_rows]
    out: list[CompactionAction] = []
    if rowsets:
        out = _overlap_candidates(st, tablet, rowsets)
    in_merge = {x for a in out for x in a.rowsets}
    for r in sorted(everything, key=lambda r: r.min_key):
        if r.id not in in_merge:
            out += _deleted_rows_candidate(st, tablet, r, ahm)
    return out


def _deleted_rows_candidate(st: TableState, tablet: str, r: RowSetMeta, ahm: int | None) \
        -> list[CompactionAction]:
    """A rowset with deleted rows, rewritten alone (KUDU-1625), for the present and for space.

    Every current scan of it reads the deleted rows, their REDO DELETE records and a filter
    pass over each column it reads: the cost is the deleted fraction plus DELETE_MASK_COST,
    and a merge ends it (rows deleted within the history move to history-only rowsets).
    Rows deleted before `ahm` are also reclaimed: at `reclaim_deleted_pct` that alone is
    worth the rewrite.
    """
    dead = _deleted_rows(st, r.id)
    if dead <= 0:
        return []
    scan_cost = min(1.0, dead / r.num_rows + DELETE_MASK_COST)
    old = _deleted_rows(st, r.id, ahm)
    pct = property_value(st.properties, "reclaim_deleted_pct")
    size = r.size_bytes + _delta_bytes(st, r.id)
    if pct and old and old * 100 >= pct * r.num_rows:
        return [CompactionAction("merge", tablet, (r.id,), max(scan_cost, old / r.num_rows),
                                 f"{old} of {r.num_rows} rows were deleted before the history retention: "
                                 "rewriting reclaims them", size)]
    return [CompactionAction("merge", tablet, (r.id,), scan_cost,
                             f"{dead} of {r.num_rows} rows are deleted: every current scan reads them and "
                             "applies a delete mask; rewriting moves them to a history-only rowset", size)]


def _overlap_candidates(st: TableState, tablet: str, rowsets: list[RowSetMeta]) -> list[CompactionAction]:
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
            total = sum(size[r.id] for r in cl)
            big = max(cl, key=lambda r: size[r.id])
            why = f"{len(cl)} rowsets overlap: average height drops by {value:.3f}"
            if size[big.id] >= _MOSTLY_ONE * total:
                # say what the height rule costs: the big rowset is rewritten for a few rows
                why += (f"; rewrites {size[big.id] / MIB:.1f} MiB ({big.num_rows} rows) of one rowset to fold in "
                        f"{(total - size[big.id]) / MIB:.2f} MiB of the others: more than their rows need")
            out.append(CompactionAction("merge", tablet, tuple(r.id for r in cl), value, why, total))
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


def ancient_undo(st: TableState, rid: str, ahm: int | None) -> list[DeltaFileMeta]:
    floor = gc_floor(st, ahm)                    # below the oldest tag too: no tagged read needs them
    return [] if floor is None else [d for d in st.deltas_of(rid) if d.kind == UNDO and d.max_ts <= floor]


def _undo_gc_candidates(st: TableState, ahm: int | None) -> list[CompactionAction]:
    out = []
    floor = gc_floor(st, ahm)          # a tagged version older than live_until still sees its rows
    for r in st.rowsets.values():
        if r.history_only and floor is not None and r.live_until <= floor:
            out.append(CompactionAction("undo_gc", r.tablet, (r.id,), min(1.0, MIN_IMPROVEMENT + r.num_rows / 1e6),
                                        f"history-only rowset: its {r.num_rows} rows were all deleted before "
                                        "history_max_age: delete it", 0))
            continue
        old = ancient_undo(st, r.id, ahm)
        if old:
            size = sum(d.size for d in old)
            out.append(CompactionAction("undo_gc", r.tablet, (r.id,), min(1.0, MIN_IMPROVEMENT + size / r.size_bytes),
                                        f"{len(old)} UNDO file(s), {size / 1024:.0f} KiB, hold only history older "
                                        "than history_max_age: delete them", 0))
    return out


def plan(st: TableState, budget_bytes: int, ahm: int | None = None) -> CompactionPlan:
    """Score every candidate as Kudu's policy does and choose a 0/1 knapsack under the budget."""
    cands: list[CompactionAction] = []
    by_tablet: dict[str, list[RowSetMeta]] = {}
    for r in st.rowsets.values():
        by_tablet.setdefault(r.tablet, []).append(r)
    for tablet, rowsets in sorted(by_tablet.items()):
        merges = _merge_candidates(st, tablet, rowsets, ahm)
        merged = {x for a in merges for x in a.rowsets}
        cands += merges + _delta_candidates(st, tablet, [r for r in rowsets if r.id not in merged])
    chosen = _knapsack(cands, budget_bytes)
    # Kudu's UndoDeltaBlockGCOp: deleting UNDO files older than the ancient history mark reads
    # nothing, so it is outside the budget.
    busy = {x for a in chosen for x in a.rowsets}
    chosen += [a for a in _undo_gc_candidates(st, ahm) if a.rowsets[0] not in busy]
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




class CompactionPolicy(Protocol):
    """Chooses compactions: the plan, each action with its score and the reason for it."""

    def pick(self, st: TableState, budget_bytes: int, ahm: int | None) -> CompactionPlan: ...


class KuduPolicy:
    """Kudu's budgeted policy (the default)."""

    def pick(self, st: TableState, budget_bytes: int, ahm: int | None) -> CompactionPlan:
        return plan(st, budget_bytes, ahm)

    def __repr__(self) -> str:
        return "KuduPolicy()"
