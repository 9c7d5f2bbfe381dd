"""The compaction policy: which compactions are worth doing now (Kudu's compaction_policy.cc).

Candidates are scored as Kudu scores them: a merging compaction by how much it
lowers the tablet's average rowset height (overlap in key space) plus a bonus
for small rowsets; a major delta compaction by REDO bytes against base bytes;
a minor one by the number of REDO files. A rowset whose deleted rows pay for
its rewrite (KUDU-1625: a tenth of its rows, or a rowset cheap to rewrite) is
rewritten alone, its deleted rows moving to history-only rowsets that current
scans skip; one with fewer keeps them as a delete mask. What pays is bounded
as Kudu bounds a major delta: a rewrite writes at most ~10x what it absorbs
(specs/design/compaction.md). Ancient UNDO files and history-only rowsets are
dropped (UNDO GC). The policy picks a 0/1 knapsack under a byte budget and
returns a plan a person can print and read, with what it gives up. Policies
are pluggable: anything with `pick(state, budget, ahm) -> CompactionPlan`.
See specs/format.md §12.
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
# ours (specs/format.md §12, "what pays"; Lance's materialize_deletions_threshold): a rowset is
# rewritten for its deleted rows once they are this share of its rows, so a rewrite writes at most
# 10x the rows it removes (the bound of MAJOR_MIN_RATIO and FOLD_MIN_SHARE); under it a scan reads
# the deleted rows' bytes and drops them with one mask: ~0.7 ms of CPU per column per 10^6 rows
# (bench_peers, 0.1% deleted: its read after compaction 1.09-1.12x the floor's CPU, 0.95x rewritten).
DELETED_REWRITE_RATIO = 0.1
_MOSTLY_ONE = 0.9                 # a merge whose largest input holds this share of its bytes says so
# ours (specs/format.md §12, "what pays"): smaller rowsets overlapping a big one are folded into it
# once they hold this share of its bytes (Kudu's major delta ratio: a rewrite writes at most 10x
# what it absorbs), and a rowset under FOLD_FLOOR_SHARE x rowset_target_bytes is always cheap to rewrite
FOLD_MIN_SHARE = 0.1
FOLD_FLOOR_SHARE = 1 / 32


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
    given_up: tuple[str, ...] = ()   # what the policy leaves as it is, and what that costs reads

    def __str__(self) -> str:
        head = (f"Compaction plan at version {self.version}: {len(self.actions)} action(s), "
                f"{sum(a.bytes_read for a in self.actions) / MIB:.2f} of {self.budget_bytes / MIB:.0f} MiB budget, "
                f"{self.considered} candidate(s) considered")
        return "\n".join([head] + [f"  {i + 1}. {a}" for i, a in enumerate(self.actions)])

    def explain(self) -> str:
        """The plan, then what it gives up and what that costs reads: overlaps it tolerates, deleted
        rows and REDO updates it leaves in place, candidates the budget left out."""
        gave = [f"  - {g}" for g in self.given_up] or ["  nothing: every candidate worth doing is in the plan"]
        return "\n".join([str(self), "Given up:"] + gave)

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


def _merge_candidates(st: TableState, tablet: str, rowsets: list[RowSetMeta], ahm: int | None,
                      kept: list[str]) -> list[CompactionAction]:
    """Clusters of overlapping rowsets, runs of small rowsets, and rowsets whose deleted rows pay
    for a rewrite; what the overlap and deleted-rows rules leave as it is goes to `kept`.

    History-only rowsets take no part: no current read touches them, and UNDO GC drops them
    once their rows' deletes pass `ahm`. Rowsets whose rows are all deleted (ghost layers of
    format 3) take no part in overlap merges: the deleted-rows rule moves them to history.
    """
    everything = [r for r in rowsets if not r.history_only]
    rowsets = [r for r in everything if _deleted_rows(st, r.id) < r.num_rows]
    notes: dict[str, str] = {}       # rowsets that keep their deleted rows: what that costs reads
    alone = {r.id: _deleted_rows_candidate(st, tablet, r, ahm, notes) for r in everything}
    out: list[CompactionAction] = []
    rewritten = {rid for rid, a in alone.items() if a}
    if rowsets:
        out = _overlap_candidates(st, tablet, rowsets, rewritten, kept)
    in_merge = {x for a in out for x in a.rowsets}
    for r in sorted(everything, key=lambda r: r.min_key):
        if r.id not in in_merge:
            out += alone[r.id]
    kept += [n for rid, n in notes.items() if rid not in in_merge]
    return out


def _deleted_rows_candidate(st: TableState, tablet: str, r: RowSetMeta, ahm: int | None, kept: dict) \
        -> list[CompactionAction]:
    """A rowset rewritten alone for its deleted rows (KUDU-1625) when that pays: they are
    DELETED_REWRITE_RATIO of its rows, or the rowset is cheap to rewrite (under FOLD_FLOOR_SHARE x
    rowset_target_bytes), or rows deleted before `ahm` reach `reclaim_deleted_pct` (space).

    Every current scan of it reads the deleted rows and drops them with a mask: the score is
    the deleted fraction plus DELETE_MASK_COST, and the rewrite moves the rows deleted within
    the history to history-only rowsets. A rowset with fewer deleted rows keeps its mask; what
    that costs reads goes to `kept` (the plan's `explain()`).
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
    cheap = size < FOLD_FLOOR_SHARE * st.properties["rowset_target_bytes"]
    if dead >= DELETED_REWRITE_RATIO * r.num_rows or cheap:
        return [CompactionAction("merge", tablet, (r.id,), scan_cost,
                                 f"{dead} of {r.num_rows} rows are deleted: every current scan reads them and "
                                 "applies a delete mask; rewriting moves them to a history-only rowset", size)]
    kept[r.id] = (f"tablet {tablet}: rowset {r.id[:8]} ({r.size_bytes / MIB:.1f} MiB) keeps {dead} deleted row(s) "
                f"({dead / r.num_rows:.2%} of its {r.num_rows}) as a delete mask, not rewritten: every current "
                f"scan of it reads their bytes and drops them in one mask pass per column; it is rewritten once "
                f"they reach {DELETED_REWRITE_RATIO:.0%} of its rows, or rows deleted before the history "
                f"retention reach reclaim_deleted_pct ({pct}%)")
    return []


def _clusters(rowsets: list[RowSetMeta]) -> list[list[RowSetMeta]]:
    """Rowsets grouped by overlap in key order (a chain of overlapping intervals is one group)."""
    out: list[list[RowSetMeta]] = []
    hi = b""
    for r in sorted(rowsets, key=lambda r: r.min_key):
        if out and r.min_key <= hi:
            out[-1].append(r)
            hi = max(hi, r.max_key)
        else:
            out.append([r])
            hi = r.max_key
    return out


def _tolerated(cl: list[RowSetMeta], size: dict, rewritten: set, floor: float) \
        -> tuple[list[RowSetMeta], list[RowSetMeta]] | None:
    """(big, small) when rewriting the big rowsets of an overlapping cluster does not pay.

    The small rowsets (each under FOLD_MIN_SHARE of the largest) cost reads little: a scan
    reads their bytes anyway, and a point read or insert in their range probes one more
    bloom filter per layer. Rewriting the big ones to absorb them writes over 1/FOLD_MIN_SHARE
    times their bytes. So they are kept apart while they hold under FOLD_MIN_SHARE of the big
    rowsets' bytes, unless a big one is rewritten anyway (its deleted rows), is under `floor`
    (cheap to rewrite), or overlaps another big one (a height the big rowsets share).
    """
    top = max(size[r.id] for r in cl)
    big = [r for r in cl if size[r.id] >= FOLD_MIN_SHARE * top]
    small = [r for r in cl if size[r.id] < FOLD_MIN_SHARE * top]
    if not small or any(r.id in rewritten or size[r.id] < floor for r in big):
        return None
    if any(len(c) > 1 for c in _clusters(big)):
        return None
    if sum(size[r.id] for r in small) >= FOLD_MIN_SHARE * sum(size[r.id] for r in big):
        return None
    return big, small


def _kept_note(tablet: str, big: list[RowSetMeta], small: list[RowSetMeta], size: dict) -> str:
    b, s = sum(size[r.id] for r in big), sum(size[r.id] for r in small)
    return (f"tablet {tablet}: rowset(s) [{', '.join(r.id[:8] for r in big)}] ({b / MIB:.1f} MiB) not rewritten for "
            f"{len(small)} smaller overlapping rowset(s) [{', '.join(r.id[:8] for r in small)}] of {s / MIB:.2f} MiB "
            f"({s / max(1, b):.1%} of their bytes): point reads and inserts in that key range probe up to "
            f"{1 + len(small)} rowsets (one more bloom filter each); they are folded in once they hold "
            f"{FOLD_MIN_SHARE:.0%} of its bytes, or when it is rewritten for another reason")


def _overlap_candidates(st: TableState, tablet: str, rowsets: list[RowSetMeta], rewritten: set,
                        kept: list[str]) -> list[CompactionAction]:
    """Merges of overlapping clusters (Kudu's height rule, less what does not pay: `_tolerated`,
    noted in `kept`) and of runs of small non-overlapping rowsets (the small-rowset bonus)."""
    target = st.properties["rowset_target_bytes"]
    lo = min(r.min_key for r in rowsets)
    hi = max(r.max_key for r in rowsets)
    width = {r.id: max(_key_pos(r.max_key, lo, hi) - _key_pos(r.min_key, lo, hi), 1e-9) for r in rowsets}
    size = {r.id: r.size_bytes + _delta_bytes(st, r.id) for r in rowsets}
    bonus = {r.id: SMALL_ROWSET_TRADEOFF * max(0.0, 1 - size[r.id] / (target / 4)) for r in rowsets}
    out: list[CompactionAction] = []
    held: set[str] = set()           # big rowsets of tolerated clusters: in no small-rowset run either

    def flush(cl: list[RowSetMeta]):
        if len(cl) < 2:
            return
        parts = _tolerated(cl, size, rewritten, target * FOLD_FLOOR_SHARE)
        if parts is not None:
            kept.append(_kept_note(tablet, *parts, size))
            held.update(r.id for r in parts[0])      # the small ones may still merge among themselves
            for sub in _clusters(parts[1]):          # the small ones among themselves: cheap
                flush(sub)
            return
        # value = sum of widths - union width (the drop in average height)
        union = _key_pos(max(r.max_key for r in cl), lo, hi) - _key_pos(min(r.min_key for r in cl), lo, hi)
        sumw = sum(width[r.id] for r in cl)
        value = sumw - union if sumw <= union else sumw - SUPPORT_ADJUST * union
        value += sum(bonus[r.id] for r in cl)
        if value > MIN_IMPROVEMENT:
            total = sum(size[r.id] for r in cl)
            big = max(cl, key=lambda r: size[r.id])
            why = f"{len(cl)} rowsets overlap: average height drops by {value:.3f}"
            if big.id in rewritten:
                why += "; the largest is rewritten anyway for its deleted rows"
            elif size[big.id] >= _MOSTLY_ONE * total:
                # say what the height rule costs: the big rowset is rewritten for a few rows
                why += (f"; rewrites {size[big.id] / MIB:.1f} MiB ({big.num_rows} rows) of one rowset to fold in "
                        f"{(total - size[big.id]) / MIB:.2f} MiB of the others: more than their rows need")
            out.append(CompactionAction("merge", tablet, tuple(r.id for r in cl), value, why, total))
    for cl in _clusters(rowsets):
        flush(cl)
    held.update(x for a in out for x in a.rowsets)
    small = [r for r in sorted(rowsets, key=lambda r: r.min_key) if r.id not in held and size[r.id] < target / 4]
    return out + _small_runs(tablet, small, size, bonus, target)


def _small_runs(tablet: str, small: list[RowSetMeta], size: dict, bonus: dict, target: int) \
        -> list[CompactionAction]:
    """Small non-overlapping rowsets, neighbours in key order, merged for the small-rowset bonus."""
    out: list[CompactionAction] = []
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
        run = [r] if r is not None else []
    return out


def _delta_candidates(st: TableState, tablet: str, rowsets: list[RowSetMeta], kept: list[str]) \
        -> list[CompactionAction]:
    """Major delta compactions past MAJOR_MIN_RATIO, else minor ones folding several REDO files
    into one (a scan then opens one delta file per rowset); REDO updates left in place under the
    ratio are noted in `kept` with what they cost reads.

    Under the ratio, updates of variable-width columns are still applied to base data (a major
    delta of those columns alone) while those columns are cheap to rewrite (their share of the
    base bytes under FOLD_FLOOR_SHARE x rowset_target_bytes): a scan places a fixed-width
    column's updates by a scatter into a copy, but a string column's by a take of every value
    (~5 ms per 10^6 rows, bench_peers' `tag`: a tenth of the scan's CPU) whatever their number.
    """
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
            continue
        var = [c for c in cols if st.schema.by_id(c).type.is_variable_width]
        var_bytes = base_bytes * len(var) // max(1, len(st.schema.columns))     # as a share of columns
        if var and var_bytes < FOLD_FLOOR_SHARE * st.properties["rowset_target_bytes"]:
            # a major delta of these columns alone also folds the REDO files into one
            out.append(CompactionAction("major_delta", tablet, (r.id,), len(var) / len(st.schema.columns),
                                        f"updates of {len(var)} variable-width column(s) cost every scan of them a "
                                        "copy of each whole column (a take): apply them to base data",
                                        redo_bytes + var_bytes, tuple(var)))
            cols = [c for c in cols if c not in var]
        elif len(redo) > 1:
            out.append(CompactionAction("minor_delta", tablet, (r.id,),
                                        min(1.0, (len(redo) - 1) / MINOR_FILES_FOR_FULL_SCORE),
                                        f"{len(redo)} REDO files: merge them into one", redo_bytes))
        if cols:
            cells = sum(n for d in redo for c, n in d.update_counts.items() if c in cols)
            kept.append(f"tablet {tablet}: rowset {r.id[:8]} keeps {cells} updated cell(s) of {len(cols)} column(s) "
                        f"as REDO records ({ratio:.1%} of its base bytes), not applied to base data: every current "
                        f"scan of those columns places them (one pass over each such column); major delta "
                        f"compaction once REDO bytes reach {MAJOR_MIN_RATIO:.0%} of base")
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
    kept: list[str] = []
    by_tablet: dict[str, list[RowSetMeta]] = {}
    for r in st.rowsets.values():
        by_tablet.setdefault(r.tablet, []).append(r)
    for tablet, rowsets in sorted(by_tablet.items()):
        merges = _merge_candidates(st, tablet, rowsets, ahm, kept)
        merged = {x for a in merges for x in a.rowsets}
        cands += merges + _delta_candidates(st, tablet, [r for r in rowsets if r.id not in merged], kept)
    chosen = _knapsack(cands, budget_bytes)
    kept += [f"over the budget: {a.kind} of tablet {a.tablet} rowsets [{', '.join(r[:8] for r in a.rowsets)}] "
             f"({a.bytes_read / MIB:.2f} MiB, score {a.score:.3f}) waits for a later run" for a in cands if a not in chosen]
    # Kudu's UndoDeltaBlockGCOp: deleting UNDO files older than the ancient history mark reads
    # nothing, so it is outside the budget.
    busy = {x for a in chosen for x in a.rowsets}
    chosen += [a for a in _undo_gc_candidates(st, ahm) if a.rowsets[0] not in busy]
    chosen.sort(key=lambda a: -a.score)
    return CompactionPlan(tuple(chosen), budget_bytes, st.version, len(cands), tuple(kept))


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
