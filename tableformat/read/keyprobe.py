"""Finding keys in rowsets: key interval, then bloom filter, then PK index (specs/format.md §6, §7).

Everything is over a whole batch of encoded keys at once. The PK index is read
block by block when few keys survive the bloom filter, and whole otherwise.
Lookups (`probe_hashed`) binary-search a PK index held in memory, so a warm
point lookup is O(log rows), not a pass over the index, and nothing is built for it.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..format.cfile_set import FILE_CACHE
from .delta_tracker import deleted_mask
from ..format.diskrowset import load_bloom, pk_block_first_keys, pk_index_verified, read_pk_blocks, read_pk_index
from ..format.metadata import RowSetMeta, TableState
from ..format.parallel import pmap
from ..format.storage import Storage


def _index_in(needles: pa.Array, haystack: pa.Array) -> np.ndarray:
    """Position of each needle in haystack (-1 if absent), by hashing."""
    pos = pc.index_in(needles, value_set=haystack).fill_null(-1)
    return pos.to_numpy(zero_copy_only=False).astype(np.int64)


def _first_keys(storage: Storage, rowset: RowSetMeta) -> tuple[pa.Array, int]:
    key = rowset.pk_index.path + "#firsts"
    cached = FILE_CACHE.get(storage, key, rowset.pk_index.size)
    if cached is None:
        firsts, block = pk_block_first_keys(storage, rowset)
        cached = (pa.array(firsts, pa.binary()), block)
        FILE_CACHE.put(storage, key, cached, sum(len(f) for f in firsts) * 2 + 64, rowset.pk_index.size, index=True)
    return cached


def rowids_in_rowset(storage: Storage, rowset: RowSetMeta, keys: pa.Array) -> np.ndarray:
    """Rowid of each key in the rowset's PK index, -1 where absent. No bloom check here."""
    n = len(keys)
    result = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return result
    firsts, block = _first_keys(storage, rowset)
    nblocks = len(firsts)
    blk = bisect_sorted(firsts, keys, side="right") - 1
    valid = blk >= 0
    blocks = np.unique(blk[valid])
    # The index whole when it is cached, or when most blocks are needed; a verified format-3
    # index (checked whole once) is read by block up to 3/4 of them: cached by block, it holds
    # the keys lookups hit, where the whole index of every rowset may not fit the cache.
    if len(blocks) * 4 >= nblocks * (3 if pk_index_verified(storage, rowset) else 1) or \
            pk_index_cached(storage, rowset):
        idx = read_pk_index(storage, rowset)
        if n * 8 < len(idx):
            # Hash the few probe keys and stream the index past them.
            hit = pc.is_in(idx, value_set=keys).to_numpy(zero_copy_only=False)
            matched = np.nonzero(hit)[0]
            if len(matched):
                pos = _index_in(keys, idx.take(pa.array(matched)))
                found = pos >= 0
                result[found] = matched[pos[found]]
            return result
        return _index_in(keys, idx)
    block_keys = read_pk_blocks(storage, rowset, blocks.tolist())
    block_lens = np.minimum(block, rowset.num_rows - blocks * block)
    rowid_of = np.repeat(blocks * block - np.concatenate([[0], np.cumsum(block_lens)[:-1]]), block_lens) \
        + np.arange(int(block_lens.sum()))
    # the blocks are in key order, so their keys are one sorted array: bisected, not hashed
    # (a hash of every block key cost more than the probe once blocks were cached, issue 26)
    pos = position_in_sorted(block_keys, keys)
    found = pos >= 0
    result[found] = rowid_of[pos[found]]
    return result


_FEW_KEYS = 16


def bisect_sorted(haystack: pa.Array, needles: pa.Array, side: str = "left") -> np.ndarray:
    """np.searchsorted(haystack, needles, side) for a sorted binary array: the one binary search
    of keys (a PK index, its blocks' first keys, a block when seeking), bisecting every needle at
    once: ~log2(len(haystack)) rounds of one take and one compare of len(needles) values, and
    nothing built over the haystack (no sort, no hash of it)."""
    n, k = len(haystack), len(needles)
    lo = np.zeros(k, np.int64)
    hi = np.full(k, n, np.int64)
    if not n or not k:
        return lo
    right = side == "right"
    if k <= _FEW_KEYS:                 # a few keys: a Python bisection each beats ~20 rounds of Arrow calls
        for i, key in enumerate(needles.to_pylist()):
            a, b = 0, n
            while a < b:
                m = (a + b) >> 1
                v = haystack[m].as_py()
                if v < key or (right and v == key):
                    a = m + 1
                else:
                    b = m
            lo[i] = a
        return lo
    before = pc.less_equal if right else pc.less
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) >> 1
        probe_at = np.minimum(mid, n - 1)
        less = before(haystack.take(pa.array(probe_at)), needles).to_numpy(zero_copy_only=False) & active
        lo = np.where(less, mid + 1, lo)
        hi = np.where(active & ~less, mid, hi)


def bisect_left(haystack: pa.Array, needles: pa.Array) -> np.ndarray:
    """`bisect_sorted` on the left side, as `bisect.bisect_left` is for one key."""
    return bisect_sorted(haystack, needles, "left")


def position_in_sorted(haystack: pa.Array, needles: pa.Array) -> np.ndarray:
    """Position of each needle in a sorted array holding no value twice, -1 where absent."""
    pos = bisect_left(haystack, needles)
    out = np.full(len(needles), -1, dtype=np.int64)
    inside = np.flatnonzero(pos < len(haystack))
    if len(inside):
        eq = pc.equal(haystack.take(pa.array(pos[inside])), needles.take(pa.array(inside))).to_numpy(
            zero_copy_only=False)
        out[inside[eq]] = pos[inside[eq]]
    return out


def pk_index_cached(storage: Storage, rowset: RowSetMeta) -> bool:
    return FILE_CACHE.get(storage, rowset.pk_index.path + "#all", rowset.pk_index.size) is not None


def rowids_by_bisection(storage: Storage, rowset: RowSetMeta, keys: pa.Array) -> np.ndarray:
    """Rowid of each key in the rowset's PK index, -1 where absent: a binary search of the
    sorted index for every key at once once the index is in memory, O(keys x log rows) with
    nothing to build (a hash index of the PK index cost a hash and a sort of every key of the
    rowset on the second lookup: ~0.3 s of CPU per 1M rows). First touch: the PK index path."""
    result = np.full(len(keys), -1, dtype=np.int64)
    if not len(keys):
        return result
    if not pk_index_cached(storage, rowset):
        return rowids_in_rowset(storage, rowset, keys)     # reads the blocks it needs (or all)
    return position_in_sorted(read_pk_index(storage, rowset), keys)


def probe(storage: Storage, rowsets: Sequence[RowSetMeta], keys: pa.Array,
          deltas_of: Callable[[str], Sequence] | None = None,
          read_ts: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Locate each key's live row: (index into `rowsets` or -1, rowid or -1).

    A key is looked for in every rowset whose interval covers it. With
    `deltas_of`, rows deleted by a rowset's REDO deltas do not count: a key
    deleted and inserted again has one live copy, in the newer rowset; and a
    history-only rowset (every row deleted) is not read at all.
    `read_ts` asks which rows were deleted as of that time (a read behind the horizon).
    """
    n = len(keys)
    which = np.full(n, -1, dtype=np.int64)
    rowid = np.full(n, -1, dtype=np.int64)
    if n == 0 or not rowsets:
        return which, rowid
    mm = pc.min_max(keys)
    kmin, kmax = mm["min"].as_py(), mm["max"].as_py()
    for i, rs in enumerate(rowsets):
        if rs.min_key > kmax or rs.max_key < kmin:  # the rowset-tree check, before any column work
            continue
        if deltas_of is not None and not rs.visible_at(read_ts):
            continue
        cand = _candidates(storage, rs, keys)
        if not len(cand):
            continue
        rid = rowids_in_rowset(storage, rs, keys.take(pa.array(cand)))
        hit = rid >= 0 if deltas_of is None else _live(storage, rs, rid, deltas_of(rs.id), read_ts)
        which[cand[hit]] = i
        rowid[cand[hit]] = rid[hit]
    return which, rowid


def _inside(keys: pa.Array, rs: RowSetMeta) -> np.ndarray:
    """Positions of the keys inside the rowset's key interval."""
    inside = pc.and_(pc.greater_equal(keys, pa.scalar(rs.min_key, pa.binary())),
                     pc.less_equal(keys, pa.scalar(rs.max_key, pa.binary())))
    return np.nonzero(inside.to_numpy(zero_copy_only=False))[0]


def _candidates(storage: Storage, rs: RowSetMeta, keys: pa.Array) -> np.ndarray:
    """Positions of the keys that may be in `rs`: inside its key interval and passing its bloom filter."""
    cand = _inside(keys, rs)
    if len(cand):
        cand = cand[load_bloom(storage, rs).may_contain(keys.take(pa.array(cand)))]
    return cand


def _live(storage: Storage, rs: RowSetMeta, rid: np.ndarray, deltas: Sequence, read_ts: int | None) -> np.ndarray:
    """Which found rowids (-1: not found) are rows not deleted as of `read_ts` (None: now)."""
    hit = rid >= 0
    if hit.any():
        deleted = deleted_mask(storage, rs, deltas, read_ts)
        if deleted is not None:
            hit[hit] = ~deleted[rid[hit]]
    return hit


def probe_hashed(storage: Storage, rowsets: Sequence[RowSetMeta], keys: pa.Array,
                 deltas_of: Callable[[str], Sequence], read_ts: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`probe` for lookups: a rowset whose PK index is in memory answers exactly by a binary
    search of it (no bloom check: the search is as cheap); the others go the interval -> bloom
    -> PK index way, which loads the index."""
    n = len(keys)
    which = np.full(n, -1, dtype=np.int64)
    rowid = np.full(n, -1, dtype=np.int64)
    if n == 0 or not rowsets:
        return which, rowid
    mm = pc.min_max(keys)
    kmin, kmax = mm["min"].as_py(), mm["max"].as_py()
    for i, rs in enumerate(rowsets):
        if rs.min_key > kmax or rs.max_key < kmin or not rs.visible_at(read_ts):
            continue
        if pk_index_cached(storage, rs):
            cand = np.arange(n)
            if rs.min_key > kmin or rs.max_key < kmax:       # only the keys inside its interval
                cand = _inside(keys, rs)
                if not len(cand):
                    continue
            rid = rowids_by_bisection(storage, rs, keys if len(cand) == n else keys.take(pa.array(cand)))
        else:
            cand = _candidates(storage, rs, keys)
            if not len(cand):
                continue
            rid = rowids_by_bisection(storage, rs, keys.take(pa.array(cand)))
        hit = _live(storage, rs, rid, deltas_of(rs.id), read_ts)
        which[cand[hit]] = i
        rowid[cand[hit]] = rid[hit]
    return which, rowid


def seek(storage: Storage, rowset: RowSetMeta, lower: bytes | None, upper: bytes | None) -> tuple[int, int]:
    """Rowid range [start, stop) of keys in [lower, upper), by seeking the PK index."""
    blocks: dict[int, pa.Array] = {}

    def position(key: bytes | None, default: int) -> int:
        if key is None:
            return default
        if key <= rowset.min_key:
            return 0
        if key > rowset.max_key:
            return rowset.num_rows
        firsts, block = _first_keys(storage, rowset)
        one = pa.array([key], pa.binary())
        b = max(0, int(bisect_sorted(firsts, one)[0]) - 1)
        if b not in blocks:
            blocks[b] = read_pk_blocks(storage, rowset, [b])
        lo = int(bisect_sorted(blocks[b], one)[0])     # within one block: O(log block) per bound
        return b * block + lo
    start = position(lower, 0)
    stop = position(upper, rowset.num_rows)
    return start, max(start, stop)


def locate_keys(storage: Storage, state: TableState, keys: pa.Array, tablet_pos: np.ndarray,
                tablet_ids: list[str]) -> tuple[np.ndarray, np.ndarray, list[RowSetMeta]]:
    """Live location of each key, probing each tablet's rowsets in parallel.

    Returns (index into the returned rowset list or -1, rowid or -1) per key.
    """
    n = len(keys)
    which = np.full(n, -1, dtype=np.int64)
    rowid = np.full(n, -1, dtype=np.int64)
    all_rowsets: list[RowSetMeta] = []
    groups = []
    for t in np.unique(tablet_pos[tablet_pos >= 0]):
        rows = np.flatnonzero(tablet_pos == t)
        rowsets = state.rowsets_in(tablet_ids[int(t)])
        if rowsets:
            groups.append((rows, rowsets, len(all_rowsets)))
            all_rowsets.extend(rowsets)

    def one(g):
        rows, rowsets, offset = g
        w, r = probe(storage, rowsets, keys.take(pa.array(rows)), state.deltas_of)
        return rows, np.where(w >= 0, w + offset, -1), r
    for rows, w, r in pmap(one, groups):
        which[rows] = w
        rowid[rows] = r
    return which, rowid, all_rowsets
