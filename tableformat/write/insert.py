"""The insert path (Kudu's write_op): validate, assign tablets, sort by key, enforce the
primary key, write rowsets, and return a write fragment.

Keys are checked against the snapshot's rowsets (interval, bloom, PK index). The
fragment requires that they are still absent when it commits (`KeysAbsent`):
that is the rebase that makes concurrent inserts of one key fail exactly once.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..log.actions import AddRowSet
from ..format.batch import is_run, prepare
from ..log.requirements import DefinitionUnchanged, KeysAbsent, SkippedKeysStillLive
from ..format.constants import rowset_dir
from ..format.base_writer import write_rowset_data
from ..format.diskrowset import rowset_meta, write_bloom, write_pk_index
from ..format.errors import DuplicateKeyError, InvalidOptionError
from ..log.fragment import WriteFragment
from ..format.keyencoder import encoded_keys
from ..read.keyprobe import probe
from ..format.metadata import RowSetMeta, TableState
from ..format.parallel import pmap
from ..format.partition import same_as_previous
from ..format.storage import Storage


@dataclass
class TabletBatch:
    """Rows of one insert bound for one tablet: batch row numbers sorted by encoded key."""

    tablet: str
    rows: np.ndarray
    keys: pa.Array

    @property
    def num_rows(self) -> int:
        return len(self.rows)


@dataclass
class InsertPlan:
    batch: pa.Table
    batches: list[TabletBatch]
    ignored: int = 0
    skipped: dict[str, np.ndarray] = field(default_factory=dict)   # rowset -> live rowids of skipped keys

    @property
    def rows(self) -> int:
        return sum(b.num_rows for b in self.batches)


_ROUTE_CHUNK = 1 << 17


@dataclass
class Routed:
    """One tablet's share of a batch, as routing found it chunk by chunk: batch row numbers
    (ascending), their encoded keys and, for a key of several columns, which rows start a
    series (`series_ids`) among the tablet's rows (a byte a row)."""

    ordinal: int
    rows: list[np.ndarray]
    keys: list[pa.Array]
    breaks: list[np.ndarray] | None = None


def route(state: TableState, batch: pa.Table) -> list[Routed]:
    """Every row's tablet and encoded primary key, in chunks over the worker threads; the
    tablets that get rows, in tablet order.

    Each key is encoded here once: a hash level on a prefix of the key hashes a prefix of it,
    and the same keys are then sorted, checked for duplicates, probed, and become the PK
    index and bloom filter of the written rowsets. Each chunk splits its own rows and keys by
    tablet, so nothing of the whole batch is gathered on one thread."""
    single = len(state.partitioning.tablet_ids()) == 1

    prefix = [c.name for c in state.schema.key_columns[:-1]]

    def one(start: int) -> dict[int, tuple[np.ndarray, pa.Array, np.ndarray | None]]:
        part = batch.slice(start, _ROUTE_CHUNK)
        keys = encoded_keys(state.schema, part)
        series = series_ids([part.column(c) for c in prefix], start) if prefix and part.num_rows else None
        ordinal = state.partitioning.assign(state.schema, part, keys=keys, series=series)[0]
        if not part.num_rows:
            return {}
        if single:
            return {0: (np.arange(start, start + part.num_rows), keys, series_breaks(series))}
        order = np.argsort(ordinal.astype(np.int16) if ordinal.max(initial=0) < 32768 else ordinal, kind="stable")
        ordinal = ordinal[order]
        keys = keys.take(pa.array(order))
        series = series[order] if series is not None else None
        cuts = np.r_[0, np.flatnonzero(np.diff(ordinal)) + 1, len(order)]
        return {int(ordinal[a]): (order[a:b] + start, keys.slice(a, b - a),
                                  series_breaks(series[a:b]) if series is not None else None)
                for a, b in zip(cuts[:-1], cuts[1:])}

    found: dict[int, Routed] = {}
    for part in pmap(one, range(0, max(batch.num_rows, 1), _ROUTE_CHUNK)):
        for o, (rows, keys, breaks) in part.items():
            r = found.setdefault(o, Routed(o, [], [], []))
            r.rows.append(rows)
            r.keys.append(keys)
            if breaks is None or r.breaks is None:
                r.breaks = None             # a chunk without series numbers: none for the tablet
            else:
                r.breaks.append(breaks)
    return [found[o] for o in sorted(found)]


def series_ids(prefix: list[pa.ChunkedArray | pa.Array], start: int = 0) -> np.ndarray | None:
    """Per row, a number shared by a run of consecutive rows with equal values in `prefix` (the
    key columns but the last: one time series' rows together), distinct between runs: the first
    run is `start`, and each new run adds one (rows are `start`, `start` + 1, ... of the batch, so
    runs of chunks routed apart never share a number). None when the first of many rows come in
    short runs (series interleaved, as in time order): then no run is worth finding."""
    n = len(prefix[0])
    if n > 2 * _SERIES_SAMPLE:
        changes = np.count_nonzero(~same_as_previous([c.slice(0, _SERIES_SAMPLE) for c in prefix]))
        if (changes + 1) * _MIN_SERIES_ROWS > _SERIES_SAMPLE:
            return None
    new = np.ones(n, dtype=bool)
    if n > 1:
        np.logical_not(same_as_previous(prefix), out=new[1:])
    ids = np.cumsum(new, dtype=np.int64)
    ids += start - 1
    return ids


def series_breaks(series: np.ndarray | None) -> np.ndarray | None:
    """Which rows start a series, from their `series_ids` (the first row does)."""
    if series is None:
        return None
    breaks = np.empty(len(series), dtype=bool)
    breaks[:1] = True
    np.not_equal(series[1:], series[:-1], out=breaks[1:])
    return breaks


_SERIES_SAMPLE = 4096
_MIN_SERIES_ROWS = 4      # rows per series on average, below which runs are not numbered


_MIN_PIECE_ROWS = 16      # rows per piece on average, below which sorting every key is cheaper


def run_order(k: pa.Array, breaks: np.ndarray | None = None, cut: np.ndarray | None = None) -> np.ndarray | None:
    """The stable key order of `k` (positions) from its sorted runs, or None when they interleave.

    Loads come as sorted runs: one series after another, each in time order, or batches
    appended one after another, each in key order. Cut the keys into ascending pieces where the
    key does not rise (`cut`: k[i + 1] <= k[i], if known) and where a series starts (`breaks`,
    from `series_breaks`); when no two pieces' key ranges interleave, the order is the pieces
    laid out by first key: O(n) compares and a sort of the pieces' first keys, where a sort of
    every key is O(n log n). Equal keys in two pieces keep batch order (the earlier piece
    first), as a stable sort keeps them."""
    n = len(k)
    if cut is None:
        cut = pc.less_equal(k.slice(1), k.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    if (int(np.count_nonzero(cut)) + 1) * _MIN_PIECE_ROWS > n:
        return None                              # short pieces: a full sort is cheaper
    if breaks is not None:
        cut |= breaks[1:]
    starts = np.flatnonzero(cut)
    if (len(starts) + 1) * _MIN_PIECE_ROWS > n:
        return None
    starts = np.r_[0, starts + 1]
    ends = np.r_[starts[1:], n]
    by_first = pc.array_sort_indices(k.take(pa.array(starts))).to_numpy()   # stable: ties by start
    starts, ends = starts[by_first], ends[by_first]
    if len(starts) > 1:
        firsts, lasts = k.take(pa.array(starts[1:])), k.take(pa.array(ends[:-1] - 1))
        apart = pc.less(lasts, firsts).to_numpy(zero_copy_only=False)
        if not apart.all():
            tie = pc.equal(lasts, firsts).to_numpy(zero_copy_only=False) & (starts[:-1] < starts[1:])
            if not (apart | tie).all():
                return None
    # Each position is the one before it plus 1, but where a piece starts: one array, summed in place.
    order = np.ones(n, dtype=np.int64)
    lens = ends - starts
    order[np.cumsum(lens[:-1])] = starts[1:] - (ends[:-1] - 1)
    order[0] = starts[0]
    return np.cumsum(order, out=order)


def key_tail_width(ctypes) -> int:
    """Bytes (at most 8) at the end of every encoded key that are fixed-width key columns after
    the last variable-width one (a time after host and metric): `tail_order` sorts by them as
    numbers. 0 when the key ends in a variable-width column."""
    width = 0
    for ct in reversed(list(ctypes)):
        if ct.is_variable_width:
            break
        width += ct.key_width
    return min(width, 8)


_MAX_PREFIX_SHARE = 4      # distinct prefixes above 1 in this many keys: sort the keys themselves
_PREFIX_CHUNK = 1 << 20    # keys whose prefixes are cut and encoded at once


def tail_order(k: pa.Array, tail: int) -> np.ndarray | None:
    """The stable key order of `k` as two stable sorts of numbers: by the last `tail` bytes (a
    big-endian number), then by the rank of the rest of the key among its distinct values.

    Every key is a prefix P (the variable-width columns, escaped and terminated, so no P is a
    proper prefix of another, then any fixed bytes left) and a fixed-width tail T, so keys
    compare as (P, T) pairs. Time-major input (every series at one time, then the next)
    interleaves all series, so no sorted runs exist; sorting 10^6 binary keys costs ~1 s of CPU where
    this costs a hash of the prefixes and two radix/merge sorts of integers. None when the prefixes
    are mostly distinct (then the numbers save nothing)."""
    n = len(k)
    if not 0 < tail <= 8 or n < 2:
        return None
    if k.type != pa.binary():
        k = k.cast(pa.binary())
    offsets = np.frombuffer(k.buffers()[1], np.int32, count=k.offset + n + 1)[k.offset:]
    ends = offsets[1:]
    if int((ends - offsets[:-1]).min()) < tail:
        return None
    data = np.frombuffer(k.buffers()[2], np.uint8)
    # the tails as numbers, a byte at a time (issue 39: a byte matrix and its copy were a load's peak)
    numbers = np.zeros(n, np.uint64)
    for j in range(tail, 0, -1):
        numbers <<= np.uint64(8)
        numbers |= data[ends - j]
    by_tail = np.argsort(numbers, kind="stable")
    del numbers
    if int(ends[-1] - offsets[0]) == n * tail:            # no prefix: the key is the number
        return by_tail
    dictionary, indices = _prefix_codes(k, tail)
    if dictionary is None:
        return None
    rank = pc.rank(dictionary, sort_keys="ascending").to_numpy().astype(np.int64) - 1
    rank = rank.astype(np.uint16 if len(rank) <= 1 << 16 else np.int64)      # 16 bits: numpy's radix sort
    prefix = rank[indices[by_tail]]
    del indices
    order = np.argsort(prefix, kind="stable")
    return np.take(by_tail, order, out=order, mode="wrap")      # in place: each reads its index first


def _prefix_codes(k: pa.Array, tail: int) -> tuple[pa.Array | None, np.ndarray | None]:
    """(distinct prefixes, each key's prefix code) of keys without their `tail` bytes, cut and encoded
    a chunk at a time (not a copy of every prefix at once); (None, None) when mostly distinct."""
    pieces = [pc.dictionary_encode(pc.binary_slice(k.slice(s, _PREFIX_CHUNK), 0, -tail))
              for s in range(0, len(k), _PREFIX_CHUNK)]
    unified = pa.table({"p": pa.chunked_array(pieces)}).unify_dictionaries().column("p")
    dictionary = unified.chunk(0).dictionary
    if len(dictionary) * _MAX_PREFIX_SHARE > len(k):
        return None, None
    indices = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in unified.chunks])
    return dictionary, indices


def sorted_tablet_keys(k: pa.Array, rows: np.ndarray, breaks: np.ndarray | None = None,
                       tail: int = 0) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """One tablet's rows (ascending batch row numbers) and their encoded keys, in key order,
    and which repeat the key before them. `breaks`: which rows start a series, if known;
    `tail`: the keys' fixed-width tail bytes (`key_tail_width`).

    A stable sort keeps batch order among equal keys, so the first one wins. Sorted runs
    that do not interleave are laid out without a sort (`run_order`); otherwise the keys are
    sorted as numbers where their shape allows (`tail_order`).
    """
    dup = np.zeros(len(rows), dtype=bool)
    if len(k) < 2:
        return rows, k, dup
    cut = pc.less_equal(k.slice(1), k.slice(0, len(k) - 1)).to_numpy(zero_copy_only=False)
    if not cut.any():
        return rows, k, dup           # already in key order (a load of sorted data): no sort, no take
    order = run_order(k, breaks, cut)
    if order is None:
        order = tail_order(k, tail)
    if order is None:
        order = pc.array_sort_indices(k).to_numpy()
    rows, k = rows[order], k.take(pa.array(order))
    dup[1:] = pc.equal(k.slice(1), k.slice(0, len(k) - 1)).to_numpy(zero_copy_only=False)
    return rows, k, dup


def describe_keys(state: TableState, batch: pa.Table, rows: np.ndarray, limit: int = 3) -> str:
    """The first few keys of `rows` as tuples, for error messages."""
    pk = list(state.schema.primary_key)
    sub = batch.select(pk).take(pa.array(rows[:limit], pa.int64())).to_pylist()

    def fmt(v):
        return repr(v) if isinstance(v, (str, bytes, int, float)) else f"'{v}'"
    shown = [("(" + ", ".join(fmt(r[k]) for k in pk) + ")") if len(pk) > 1 else fmt(r[pk[0]]) for r in sub]
    return ", ".join(shown)


def duplicate_error(state: TableState, batch: pa.Table, rows: np.ndarray, where: str) -> DuplicateKeyError:
    first = describe_keys(state, batch, rows)
    return DuplicateKeyError(
        f"{len(rows)} key(s) {where} in table {state.name!r} (first: {first}); use insert_ignore or upsert",
        len(rows), tuple(batch.select(list(state.schema.primary_key)).take(
            pa.array(rows[:3], pa.int64())).to_pylist()))


def plan_insert(storage: Storage, state: TableState, batch: pa.Table, ignore: bool,
                check_existing: bool = True) -> InsertPlan:
    """Split by tablet, sort, drop or reject keys duplicated in the batch or present in the table.

    check_existing=False is for rows already known to be new (a mutation's inserts).
    """
    tablet_ids = state.partitioning.tablet_ids()
    tail = key_tail_width([c.type for c in state.schema.key_columns])
    routed = route(state, batch)

    def one_tablet(r: Routed):
        """Sort, drop repeats, probe the tablet's rowsets: all of one tablet on one worker."""
        tablet = tablet_ids[r.ordinal]
        rows = r.rows[0] if len(r.rows) == 1 else np.concatenate(r.rows)
        k = r.keys[0] if len(r.keys) == 1 else pa.concat_arrays(r.keys)
        breaks = None if r.breaks is None else r.breaks[0] if len(r.breaks) == 1 else np.concatenate(r.breaks)
        r.rows = r.keys = r.breaks = None          # memory: the pieces go as the tablet is gathered
        rows, k, dup = sorted_tablet_keys(k, rows, breaks, tail)
        del breaks
        repeats = rows[dup]
        if dup.any():
            rows, k = rows[~dup], k.filter(pa.array(~dup))
        existing = state.rowsets_in(tablet) if check_existing else []
        if not existing:                           # a new or empty tablet: nothing to probe
            return tablet, rows, k, np.zeros(len(rows), dtype=bool), repeats, {}
        which, rowid = probe(storage, existing, k, state.deltas_of)
        found = which >= 0
        skipped = {existing[i].id: np.sort(rowid[found & (which == i)]) for i in np.unique(which[found])}
        return tablet, rows, k, found, repeats, skipped

    checked = pmap(one_tablet, routed)
    del routed
    dup_rows = [repeats for *_, repeats, _ in checked if len(repeats)]
    if dup_rows and not ignore:
        raise duplicate_error(state, batch, np.concatenate(dup_rows), "appear more than once in the batch")
    exists = [rows[ex] for _, rows, _, ex, _, _ in checked if ex.any()]
    if exists and not ignore:
        raise duplicate_error(state, batch, np.concatenate(exists), "already exist")
    batches, ignored, skipped = [], 0, {}
    for tablet, rows, k, ex, repeats, skip in checked:
        skipped.update(skip)
        ignored += len(repeats) + int(ex.sum())
        if ex.any():
            rows, k = rows[~ex], k.filter(pa.array(~ex))
        if len(rows):
            batches.append(TabletBatch(tablet, rows, k))
    return InsertPlan(batch, batches, ignored, skipped)


def write_plan(storage: Storage, state: TableState, plan: InsertPlan, written: list[str],
               warm: bool = True) -> list[RowSetMeta]:
    """Write each tablet's rows as rowsets, rolling at the target size.

    A rowset's base data, its PK index and its bloom filter are separate tasks on the worker
    pool, so even one rowset keeps two cores busy; rows are taken from the batch only
    inside a running task, so at most one rowset's data per worker is in memory at a time.
    warm=False leaves the data out of the block cache (a merge's outputs: they would stay in
    memory for the rest of the merge; see `base_writer.warm_row_groups`).
    """
    target = state.properties["rowset_target_bytes"]
    row_bytes = plan.batch.nbytes / max(1, plan.batch.num_rows)
    props = dict(state.properties)
    jobs = []
    for b in plan.batches:
        n = b.num_rows
        pieces = max(1, int(-(-(n * row_bytes) // target)))
        step = -(-n // pieces)
        for start in range(0, n, step):
            jobs.append((b.tablet, b.rows[start:start + step], b.keys.slice(start, step), uuid.uuid4().hex))

    def run(task):
        kind, (tablet, rows, keys, rowset_id) = task
        directory = rowset_dir(tablet, rowset_id)
        if kind == "pk_index":
            return write_pk_index(storage, directory, keys, props, written)
        if kind == "bloom":
            return write_bloom(storage, directory, keys, written)
        data = batch_rows(plan.batch, rows)
        return write_rowset_data(storage, state.schema, directory, data, props, written, warm,
                                 owned=not is_run(rows))

    # Longer tasks first (every rowset's data, then its bloom filter, then its PK index), and
    # the short ones last, so the workers end together rather than one finishing a long task alone.
    kinds = ("data", "bloom", "pk_index")
    done = pmap(run, [(kind, job) for kind in kinds for job in jobs])
    n = len(jobs)
    return [rowset_meta(rowset_id, tablet, keys, *done[i], done[2 * n + i], done[n + i])
            for i, (tablet, _, keys, rowset_id) in enumerate(jobs)]


def batch_rows(batch: pa.Table, rows: np.ndarray) -> pa.Table:
    """The batch's `rows`, in that order: a slice, with no copy, when they are a run of
    consecutive rows (sorted input into one tablet, or a range partition's share of it)."""
    if is_run(rows):
        return batch.slice(int(rows[0]), len(rows))
    return batch.take(pa.array(rows))


ON_DUPLICATE = ("fail", "ignore")


def write_insert(storage: Storage, state: TableState, data: Any, on_duplicate: str = "fail",
                 report: bool = False, distributed: bool = False, write_when_rejected: bool = True) -> WriteFragment:
    """Plan an insert on `state`, write its rowsets, and return the fragment to commit.

    on_duplicate: "fail" raises DuplicateKeyError for a key that exists or repeats, and a key
    inserted concurrently fails the commit; "ignore" skips such keys, and a concurrent insert
    of one of its keys (or a delete of one it skipped) makes it plan again. report=True skips
    them in either mode and leaves (batch, rows) in `rejected`, for the caller to decide.
    distributed: the commit checks the keys of the written rowsets (a driver does not hold
    them) instead of keys kept in the fragment."""
    if on_duplicate not in ON_DUPLICATE:
        raise InvalidOptionError(f"on_duplicate must be one of {ON_DUPLICATE}, got {on_duplicate!r}")
    ignore = on_duplicate == "ignore"
    operation = "INSERT_IGNORE" if ignore else "INSERT"
    batch = prepare(state.schema, data)
    plan = plan_insert(storage, state, batch, ignore or report)
    # its matrix row: an insert, also when distributed (a Spark task's rowset writer is spark_insert)
    kind = "insert_ignore" if ignore else "insert"
    rejected = None
    if report:
        kept = np.concatenate([b.rows for b in plan.batches]) if plan.batches else np.zeros(0, np.int64)
        rejected = (batch, np.setdiff1d(np.arange(batch.num_rows), kept))
    counts = {"inserted": plan.rows, "ignored": plan.ignored}
    # the live rows it skipped: a fragment of the same commit changing one is refused (§10.3)
    skips = [SkippedKeysStillLive(plan.skipped)] if plan.skipped and ignore else []
    if not plan.batches or (rejected is not None and len(rejected[1]) and not write_when_rejected):
        return WriteFragment(operation, state.version, requirements=skips,
                             counts=counts, rejected=rejected, table_id=state.table_id, kind=kind)
    written: list[str] = []
    try:
        rowsets = write_plan(storage, state, plan, written)
    except BaseException:
        storage.delete_quietly(written)
        raise
    if distributed:
        keys = KeysAbsent(own_rowsets=True)
    else:
        by_tablet: dict[str, list[pa.Array]] = {}
        for b in plan.batches:
            by_tablet.setdefault(b.tablet, []).append(b.keys)
        keys = KeysAbsent({t: v[0] if len(v) == 1 else pa.concat_arrays(v) for t, v in by_tablet.items()})
    return WriteFragment(operation, state.version, [AddRowSet(r) for r in rowsets], written, counts,
                         [DefinitionUnchanged(), keys] + skips,
                         rejected=rejected, table_id=state.table_id, kind=kind)
