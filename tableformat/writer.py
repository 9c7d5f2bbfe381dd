"""The insert path: validate, assign tablets, sort by key, enforce the primary key, write rowsets.

Keys are checked against the snapshot's rowsets (interval, bloom, PK index) and,
when the commit races another, against the rowsets the winners added: that is
the rebase that makes concurrent inserts of one key fail exactly once.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .diskrowset import write_rowset
from .errors import CellTooLargeError, DuplicateKeyError
from .keyencoder import encode_keys
from .keyprobe import probe
from .metadata import RowSetMeta, TableState
from .parallel import pmap
from .storage import Storage
from .types import MAX_ENCODED_KEY_BYTES



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

    @property
    def rows(self) -> int:
        return sum(b.num_rows for b in self.batches)


def encoded_keys(state: TableState, batch: pa.Table) -> pa.Array:
    kcols = state.schema.key_columns
    keys = encode_keys([batch.column(c.name) for c in kcols], [c.type for c in kcols])
    if len(keys):
        longest = pc.max(pc.binary_length(keys)).as_py()
        if longest > MAX_ENCODED_KEY_BYTES:
            raise CellTooLargeError(f"an encoded primary key is {longest} bytes; the limit is "
                                    f"{MAX_ENCODED_KEY_BYTES} bytes (16 KiB)")
    return keys


_ROUTE_CHUNK = 1 << 17


def route(state: TableState, batch: pa.Table) -> tuple[pa.Array, np.ndarray]:
    """Encoded key and tablet ordinal of every row, in chunks over the worker threads."""
    def one(start: int):
        part = batch.slice(start, _ROUTE_CHUNK)
        return encoded_keys(state, part), state.partitioning.assign(state.schema, part)[0]
    parts = pmap(one, range(0, max(batch.num_rows, 1), _ROUTE_CHUNK))
    return pa.chunked_array([p[0] for p in parts], pa.binary()), np.concatenate([p[1] for p in parts])


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
    keys, ordinal = route(state, batch)
    tablet_ids = state.partitioning.tablet_ids()
    by_tablet = np.argsort(ordinal.astype(np.int16 if len(tablet_ids) < 32768 else np.int64), kind="stable")
    cuts = np.flatnonzero(np.diff(ordinal[by_tablet])) + 1
    groups = [g for g in np.split(by_tablet, cuts) if len(g)]

    def sort_group(rows: np.ndarray):
        # Stable sort by key keeps batch order among equal keys: the first one wins.
        order = pc.array_sort_indices(keys.take(pa.array(rows)).combine_chunks())
        rows = rows[order.to_numpy()]
        k = keys.take(pa.array(rows)).combine_chunks()
        dup = np.zeros(len(rows), dtype=bool)
        if len(rows) > 1:
            dup[1:] = pc.equal(k.slice(1), k.slice(0, len(k) - 1)).to_numpy(zero_copy_only=False)
        return rows, k, dup

    sorted_groups = pmap(sort_group, groups)

    batches, ignored = [], 0
    dup_rows = [rows[dup] for rows, _, dup in sorted_groups if dup.any()]
    if dup_rows and not ignore:
        raise duplicate_error(state, batch, np.concatenate(dup_rows), "appear more than once in the batch")

    def against_table(item):
        rows, k, dup = item
        if dup.any():
            rows, k = rows[~dup], k.filter(pa.array(~dup))
        tablet = tablet_ids[int(ordinal[rows[0]])]
        if not check_existing:
            return tablet, rows, k, np.zeros(len(rows), dtype=bool), int(dup.sum())
        which, _ = probe(storage, state.rowsets_in(tablet), k, state.deltas_of)
        return tablet, rows, k, which >= 0, int(dup.sum())

    checked = pmap(against_table, sorted_groups)
    exists = [rows[ex] for _, rows, _, ex, _ in checked if ex.any()]
    if exists and not ignore:
        raise duplicate_error(state, batch, np.concatenate(exists), "already exist")
    for tablet, rows, k, ex, ndup in checked:
        ignored += ndup + int(ex.sum())
        if ex.any():
            rows, k = rows[~ex], k.filter(pa.array(~ex))
        if len(rows):
            batches.append(TabletBatch(tablet, rows, k))
    return InsertPlan(batch, batches, ignored)


def write_plan(storage: Storage, state: TableState, plan: InsertPlan, written: list[str]) -> list[RowSetMeta]:
    """Write each tablet's rows as rowsets, rolling at the target size."""
    target = state.properties["rowset_target_bytes"]
    row_bytes = plan.batch.nbytes / max(1, plan.batch.num_rows)
    jobs = []
    for b in plan.batches:
        n = b.num_rows
        pieces = max(1, int(-(-(n * row_bytes) // target)))
        step = -(-n // pieces)
        for start in range(0, n, step):
            jobs.append((b.tablet, b.rows[start:start + step], b.keys.slice(start, step)))

    def write(job):
        tablet, rows, keys = job
        data = plan.batch.take(pa.array(rows))
        return write_rowset(storage, state.schema, tablet, data, keys, dict(state.properties), written)

    return pmap(write, jobs)


def added_deltas(new_commits: list[dict]) -> Callable[[str], tuple]:
    """The delta files the given commits added, per rowset: a merging compaction's output keeps
    rows deleted within the history, with their REDO DELETE in the same commit, and those rows
    must not count as concurrent inserts."""
    from .deltafile import DeltaFileMeta
    out: dict[str, tuple] = {}
    for c in new_commits:
        for a in c["actions"]:
            if "add_delta" in a:
                m = DeltaFileMeta.from_json(a["add_delta"])
                if not m.has_ts_column:
                    m = replace(m, min_ts=c["timestamp"], max_ts=c["timestamp"])
                out[m.rowset] = out.get(m.rowset, ()) + (m,)
    return lambda rid: out.get(rid, ())


def rebase_conflicts(storage: Storage, state: TableState, batch: pa.Table, plan: InsertPlan,
                     added: list[RowSetMeta], deltas_of: Callable[[str], tuple]) -> np.ndarray:
    """Batch rows whose keys are live in rowsets committed after the plan's snapshot."""
    hits = []
    for b in plan.batches:
        rowsets = [r for r in added if r.tablet == b.tablet]
        if rowsets:
            which, _ = probe(storage, rowsets, b.keys, deltas_of)
            if (which >= 0).any():
                hits.append(b.keys.filter(pa.array(which >= 0)))
    if not hits:
        return np.zeros(0, dtype=np.int64)
    mask = pc.is_in(encoded_keys(state, batch), value_set=pa.concat_arrays(hits))
    return np.flatnonzero(mask.to_numpy(zero_copy_only=False))
