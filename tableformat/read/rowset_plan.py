"""Read plans: what another engine must read, per rowset, to answer one snapshot scan.

Kudu's DeltaApplier applies a rowset's delta stores to its base columns inside
the tablet server. A foreign reader (Spark's own Parquet reader, a JVM
connector) does that work itself, so it needs the recipe as plain data: each
rowset's base files with the column IDs each one provides, the delta files in
the order they apply, the timestamp cut of a read behind the history horizon,
and whether the rowset can be read without UNDO records at all. The rules a
reader follows are in specs/format.md §9.4 ("Applying deltas outside the
engine"); the engine's own reader is `delta_tracker`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .delta_tracker import redo_order
from ..format.constants import field_name
from ..format.deltafile import REDO, UNDO
from ..format.metadata import DeltaFileMeta, RowSetMeta, TableState
from .scan import Scanner
from ..format.schema import Column, Schema
from ..format.storage import Storage


@dataclass(frozen=True)
class BaseFilePlan:
    """One column group of a rowset: the file, its size as the log records it, and the
    snapshot's columns it provides (column ID -> Parquet field name `c<id>`). Later column
    groups win, so a column appears in exactly one BaseFilePlan of its rowset."""

    path: str                              # relative to the table root
    columns: tuple[tuple[int, str], ...]   # (column id, Parquet field name)
    size: int = 0                          # bytes; a reader compares it with the file's (§8.2)
    crc32: int | None = None               # the log's CRC-32, when the plan reads every column of the file:
                                           # a read of all its rows checks it (§8.2)


@dataclass(frozen=True)
class DeltaFilePlan:
    """A delta file to apply. `order` ranks the REDO files of one rowset (0 applies first);
    `updates` lists the snapshot's column IDs it changes; `deletes` says it holds DELETE or
    REINSERT records. A file without a `ts` column takes `max_ts` for every record."""

    path: str
    size: int                              # bytes, as the log records
    kind: str                              # "redo" or "undo"
    order: int
    min_ts: int
    max_ts: int
    has_ts_column: bool
    updates: tuple[int, ...]
    deletes: bool


@dataclass(frozen=True)
class RowSetPlan:
    """One rowset of the read: its base files, the REDO files to apply (in order), the columns
    it lacks (rows written before they were added: read defaults), and whether a reader can
    apply its deltas without UNDO records (`native`; `reason` says why not)."""

    id: str
    tablet: str
    num_rows: int
    base: tuple[BaseFilePlan, ...]
    redo: tuple[DeltaFilePlan, ...]
    missing: tuple[int, ...]
    native: bool = True
    reason: str | None = None
    undo: tuple[DeltaFilePlan, ...] = ()   # UNDO files newer than the cut (rule 6); `native` is false then

    @property
    def clean(self) -> bool:
        """No delta changes what this read sees: a plain Parquet scan answers it."""
        return not self.redo and not self.undo


@dataclass(frozen=True)
class ReadPlan:
    """Everything a foreign reader needs for one snapshot read: the schema (names, types,
    read defaults, by column ID), the columns read, the timestamp cut (`read_ts`: None
    for a version read from its own files, else records newer than it are skipped) and
    the rowsets that may hold matching rows (pruned by partition, key range and statistics)."""

    uri: str
    version: int
    timestamp: int
    read_ts: int | None
    schema: Schema
    columns: tuple[str, ...]
    rowsets: tuple[RowSetPlan, ...]

    @property
    def read_columns(self) -> list[Column]:
        return [self.schema.column(n) for n in self.columns]


def _delta_plan(d: DeltaFileMeta, order: int, wanted: set[int]) -> DeltaFilePlan:
    return DeltaFilePlan(d.path, d.size, d.kind, order, d.min_ts, d.max_ts, d.has_ts_column,
                         tuple(sorted(c for c in wanted if d.updates(c))), bool(d.delete_count or d.reinsert_count))


def rowset_plan(state: TableState, rs: RowSetMeta, columns: Sequence[Column]) -> RowSetPlan:
    wanted = {c.id for c in columns}
    base: list[BaseFilePlan] = []
    missing = []
    by_file: dict[str, list[int]] = {}
    for c in columns:
        ref = rs.base_file_for(c.id)
        if ref is None:
            missing.append(c.id)
        else:
            by_file.setdefault(ref.path, []).append(c.id)
    for ref in rs.base:              # keep the rowset's column-group order
        if ref.path in by_file:
            ids = by_file[ref.path]
            base.append(BaseFilePlan(ref.path, tuple((i, field_name(i)) for i in ids), ref.size,
                                     ref.crc32 if len(ids) == len(ref.column_ids) else None))
    if not base:                     # no column read (count(*)) still needs the rows of one file
        base.append(BaseFilePlan(rs.base[0].path, (), rs.base[0].size))
    deltas = state.deltas_of(rs.id)
    read_ts = state.read_ts
    redo = []
    for i, d in enumerate(redo_order([d for d in deltas if d.kind == REDO])):
        if read_ts is not None and d.min_ts > read_ts:
            continue                 # committed after the version read
        p = _delta_plan(d, i, wanted)
        if p.updates or p.deletes:
            redo.append(p)
    undo = tuple(p for p in (_delta_plan(d, i, wanted) for i, d in enumerate(
        d for d in deltas if d.kind == UNDO and read_ts is not None and d.max_ts > read_ts)) if p.updates or p.deletes)
    undo_needed = read_ts is not None and any(d.kind == UNDO and d.max_ts > read_ts for d in deltas)
    reason = (f"version {state.version} is behind the history horizon and needs UNDO records"
              if undo_needed else None)
    return RowSetPlan(rs.id, rs.tablet, rs.num_rows, tuple(base), tuple(redo), tuple(missing),
                      not undo_needed, reason, undo)


def read_plan(storage: Storage, state: TableState, columns: Sequence[str] | None = None,
              filter: Any = None) -> ReadPlan:
    """The plan of a scan of `state`: the engine's own pruning picks the rowsets."""
    scanner = Scanner(storage, state, columns, filter)
    seen: dict[str, RowSetMeta] = {}
    for task in scanner.plan():
        seen.setdefault(task.rowset.id, task.rowset)
    cols = [state.schema.column(n) for n in scanner.columns]
    return ReadPlan(storage.uri, state.version, state.timestamp, state.read_ts, state.schema,
                    tuple(scanner.columns), tuple(rowset_plan(state, rs, cols) for rs in seen.values()))
