"""Snapshot scans: prune tablets, then rowsets, then row ranges; read; filter exactly.

Pruning follows specs/format.md §4.2: hash levels prune when every hashed
column has = / IN predicates, range partitions by the range-key interval, and
rowsets by key interval and column statistics. Key-range predicates seek the
PK index so only the rows in range are read.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..format import arguments as arg
from .delta_tracker import apply_deltas, files_read, updated_columns
from ..format.diskrowset import read_base_columns
from ..format.errors import InvalidOptionError, MissingDependencyError, UnknownScanColumnError
from .keyprobe import seek
from ..format.parallel import pmap, pmap_iter
from ..format.metadata import DeltaFileMeta, RowSetMeta, TableState
from .predicate import Predicate, column_bounds, filter_table, hash_values, key_range, parse_filter, \
    stats_may_match
from ..format.storage import Storage



_ROWS = "__tableformat_rows"


def _optional(module: str):
    """Import an optional reader library, or say which extra installs it."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(f"{module} is not installed: pip install 'tableformat[{module}]' "
                                     f"({e})") from None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class ScanTask:
    """One unit of scan work: rows [start, stop) of one rowset, and the delta files the read
    applies (none for a compacted rowset read as of now; None: all of the rowset's). A Spark
    partition later."""

    rowset: RowSetMeta
    start: int
    stop: int
    deltas: tuple[DeltaFileMeta, ...] | None = None


def prune_tablets(state: TableState, bounds: dict) -> list[str]:
    schema, part = state.schema, state.partitioning
    rcols = [schema.by_id(i) for i in part.range_column_ids]
    lo, hi = key_range(rcols, bounds) if rcols else (None, None)
    ranges = [r for r in part.ranges if r.overlaps(lo, hi)]
    allowed: list[list[int]] = []
    for level in part.hash_levels:
        cols = [schema.by_id(i) for i in level.column_ids]
        combos = hash_values(bounds, cols)
        if combos is None:
            allowed.append(list(range(level.buckets)))
        else:
            allowed.append(sorted(set(part.bucket_of(schema, combos, level).astype(int).tolist())))
    return [part.tablet_id(r.id, combo) for r in ranges for combo in itertools.product(*allowed)]


class Scanner:
    """A planned scan of one snapshot. Iterate it as batches, or read it whole."""

    def __init__(self, storage: Storage, state: TableState, columns: Sequence[str] | None = None,
                 filter: Any = None, ordered: bool = False):
        schema = state.schema
        columns = arg.names(columns, "columns")
        arg.boolean(ordered, "ordered")
        if columns is not None:
            unknown = [c for c in columns if not schema.has_column(c)]
            if unknown:
                raise UnknownScanColumnError(f"scan names unknown column(s) {unknown}; columns are {schema.names}")
        self.storage = storage
        self.state = state
        self.columns = list(columns) if columns is not None else schema.names
        self.predicates: list[Predicate] = parse_filter(schema, filter)
        self.ordered = ordered
        self._bounds = column_bounds(self.predicates)
        read = list(self.columns)
        for p in self.predicates:
            if p.column not in read:
                read.append(p.column)
        if ordered:
            read += [k for k in schema.primary_key if k not in read]
        self._read_cols = [schema.column(n) for n in read]
        self.output_schema = schema.arrow_schema(self.columns)

    # planning --------------------------------------------------------------------------
    def plan(self) -> list[ScanTask]:
        if any(b.empty for b in self._bounds.values()):
            return []
        state, schema = self.state, self.state.schema
        tablets = set(prune_tablets(state, self._bounds))
        lo, hi = key_range(schema.key_columns, self._bounds)
        tasks = []
        for rs in state.rowsets.values():
            if rs.tablet not in tablets:
                continue
            if state.read_ts is not None and (rs.created_ts or 0) > state.read_ts:
                continue                  # every row of it was inserted after the version read
            if not rs.visible_at(state.read_ts):
                continue                  # history-only: every row of it was deleted by then
            if lo is not None and rs.max_key < lo:
                continue
            if hi is not None and rs.min_key >= hi:
                continue
            updated = updated_columns(state.deltas_of(rs.id))
            if not all(stats_may_match(schema.column(name), rs.stats.get(schema.column(name).id),
                                       rs.num_rows, b)
                       for name, b in self._bounds.items() if schema.column(name).id not in updated):
                continue
            start, stop = (0, rs.num_rows) if lo is None and hi is None else seek(self.storage, rs, lo, hi)
            if start < stop:
                tasks.append(self._task(rs, start, stop))
        return tasks

    def _task(self, rs: RowSetMeta, start: int, stop: int) -> ScanTask:
        ids = [c.id for c in self._read_cols]
        return ScanTask(rs, start, stop, files_read(self.state.deltas_of(rs.id), ids, self.state.read_ts))

    # execution -------------------------------------------------------------------------
    def run_task(self, task: ScanTask) -> pa.Table:
        arg.instance(task, "task", ScanTask, "a tf.ScanTask (from Scanner.plan or Scanner.task)")
        arrays = read_base_columns(self.storage, task.rowset, self._read_cols, task.start, task.stop)
        deltas = task.deltas if task.deltas is not None else self.state.deltas_of(task.rowset.id)
        rows, live = task.stop - task.start, None
        if deltas:
            # Without predicates the deleted rows go as the changes are placed; with them, the
            # live mask joins the predicates' mask in one filter.
            drop = not self.predicates
            arrays, live = apply_deltas(self.storage, task.rowset, deltas, self._read_cols, arrays,
                                        task.start, task.stop, self.state.read_ts, drop_deleted=drop,
                                        consume=True)
            if drop and live is not None:
                rows, live = int(np.count_nonzero(live)), None
        if self._read_cols:
            t = pa.table({c.name: arrays[c.id] for c in self._read_cols})
        else:
            # An empty projection still has rows (count(*)): a null column stands in, read from nowhere.
            t = pa.table({_ROWS: pa.nulls(rows)})
        return filter_table(t, self.predicates, live)

    def _project(self, t: pa.Table) -> pa.Table:
        if not self.columns:      # an Arrow table may have rows and no columns
            return t.select([])
        t = t.select(self.columns)
        if all(c.type == f.type for c, f in zip(t.columns, self.output_schema)):
            # the types already match: the schema (names, nullability, metadata) is set without a
            # cast, which walks every chunk (a column with deleted rows sliced out has thousands)
            return pa.Table.from_arrays(t.columns, schema=self.output_schema)
        return t.cast(self.output_schema)

    def read_task(self, task: ScanTask) -> pa.Table:
        """One planned task's rows, projected: what a distributed reader runs per partition."""
        arg.instance(task, "task", ScanTask, "a tf.ScanTask (from Scanner.plan or Scanner.task)")
        return self._project(self.run_task(task))

    def task(self, rowset_id: str, start: int, stop: int) -> ScanTask:
        """A task from plain data (a rowset id and a row range), as sent to an executor."""
        arg.string(rowset_id, "rowset_id")
        if rowset_id not in self.state.rowsets:
            raise InvalidOptionError(f"rowset {rowset_id!r} is not in version {self.state.version} of the table")
        n = self.state.rowsets[rowset_id].num_rows
        start = arg.integer(start, "start", 0, n)
        stop = arg.integer(stop, "stop", start, n)
        return self._task(self.state.rowsets[rowset_id], start, stop)

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        if self.ordered:
            yield from self.to_arrow().to_batches()
            return
        for t in pmap_iter(self.run_task, self.plan()):
            yield from self._project(t).to_batches()

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.output_schema, self.to_batches())

    def to_arrow(self) -> pa.Table:
        tasks = self.plan()
        if not tasks:
            return self.output_schema.empty_table()
        parts = pmap(self.run_task, tasks)
        t = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        if self.ordered and (len(parts) > 1):
            keys = [(k, "ascending") for k in self.state.schema.primary_key]
            t = t.take(pc.sort_indices(t, sort_keys=keys))
        return self._project(t)

    def to_duckdb(self, name: str, connection: Any = None):
        """Load the rows into a DuckDB temporary table `name` (replacing one of that name), streamed
        batch by batch so the scan is never whole in Arrow memory; returns the connection (a new
        in-memory one when None). Needs the `duckdb` extra."""
        arg.string(name, "name")
        duckdb = _optional("duckdb")
        con = duckdb.connect() if connection is None else connection
        if not isinstance(con, duckdb.DuckDBPyConnection):
            raise InvalidOptionError(f"connection must be a duckdb connection, got {type(con).__name__}")
        reader = self.to_reader()
        tmp = f"__tableformat_scan_{id(reader):x}"
        con.register(tmp, reader)
        try:
            con.execute(f'CREATE OR REPLACE TEMP TABLE {_quote(name)} AS SELECT * FROM "{tmp}"')
        finally:
            con.unregister(tmp)
        return con

    def to_polars(self):
        """The rows as a polars DataFrame, built from the scan's batches. Needs the `polars` extra."""
        pl = _optional("polars")
        return pl.from_arrow(pa.Table.from_batches(self.to_batches(), self.output_schema))

    def to_pandas(self):
        return self.to_arrow().to_pandas()

    def count(self) -> int:
        return sum(len(t) for t in (self.run_task(x) for x in self.plan()))

    def __iter__(self):
        return self.to_batches()
