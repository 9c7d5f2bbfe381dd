"""The public facade (Kudu's tablet.cc): Table, Snapshot, create_table and open_table.

A Table caches the latest state it has read and refreshes it from the log
before each operation. Every write is planned on a Snapshot into a write
fragment (`insert`, `row_ops`, `alter`, `compaction`, `vacuum`) and committed
by a Transaction (`transaction`), whose requirements (`conflicts`) decide what
a lost commit race means. Version resolution and history live in `mvcc`.
"""
from __future__ import annotations

import posixpath
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import pyarrow as pa

from . import arguments as arg, delta_mirror, mvcc
from .actions import AddDelta, AddRowSet, AddTag, Commit, CreateTable, RemoveTag, apply_commit
from .alter import AlterTable, write_alter
from .batch import to_arrow_table
from .changes import collect_changes, finish, with_skipped
from .check import CheckReport, check as run_check
from .compaction import write_compaction
from .compaction_policy import CompactionAction, CompactionPlan, CompactionPolicy, KuduPolicy
from .conflicts import HistoryKept, TagAbsent, TagPresent
from .delta_mirror import MirrorResult
from .errors import (ColumnNotFoundError, CommitConflictError, HistoryExpiredError, InvalidOptionError,
                     MissingColumnError, SchemaError,
                     TableExistsError, TableReplacedError, TagExistsError, TagNotFoundError)
from .fragment import WriteFragment
from .metadata import FORMAT_VERSION, CommitInfo, TableState, validate_properties
from .row_ops import DELETE_IGNORE, DELETE_OP, UPDATE_IGNORE, UPDATE_OP, UPSERT, write_mutation
from .lookup import key_table, lookup as run_lookup
from .mvcc import Timestamp
from .partition import PartitionSchema, resolve
from .restore import check_restorable, restore_keys, write_restore
from .inspect import KINDS as INSPECT_KINDS, inspect as run_inspect
from .rowset_plan import ReadPlan, read_plan
from .scan import Scanner
from .sequence import check_sequence_column
from .schema import Schema, validate_identifier
from .storage import Storage
from .transaction import COMPACTION_PROPERTIES, CommitProperties, Transaction, run
from .txlog import TransactionLog
from .types import parse_type
from .vacuum import VacuumPlan, VacuumResult, deletable, plan as vacuum_plan
from .rolling_writer import RollingRowSetWriter
from .insert import describe_keys, encoded_keys, write_insert

__all__ = ["Table", "Snapshot", "Timestamp", "WriteResult", "create_table", "open_table"]

# A compaction budget above 1 TiB is no budget: the knapsack works in MiB cells.
MAX_BUDGET_BYTES = 1 << 40


@dataclass(frozen=True)
class WriteResult:
    """What one committed write did."""

    version: int
    timestamp: Timestamp
    operation: str
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    ignored: int = 0
    rowsets_added: int = 0
    bytes_written: int = 0


def _result(commit: Commit | None, frag: WriteFragment | None, state: TableState, operation: str) -> WriteResult:
    counts = frag.counts if frag is not None else {}
    c = {k: counts.get(k, 0) for k in ("inserted", "updated", "deleted", "ignored")}
    if commit is None:
        return WriteResult(state.version, Timestamp(state.timestamp), operation, **c)
    rowsets = frag.rowsets
    deltas = [a.delta for a in frag.actions if isinstance(a, AddDelta)]
    return WriteResult(commit.version, Timestamp(commit.timestamp), commit.operation, **c,
                       rowsets_added=len(rowsets),
                       bytes_written=sum(r.size_bytes for r in rowsets) + sum(d.size for d in deltas))


def _written(commit: Commit) -> WriteResult:
    """A rewrite's result from what it committed: the rowsets it added and the bytes of every file it
    added (base, PK index and bloom files of the rowsets; UNDO and remapped REDO delta files)."""
    rowsets = [a.rowset for a in commit.of(AddRowSet)]
    return WriteResult(commit.version, Timestamp(commit.timestamp), commit.operation, rowsets_added=len(rowsets),
                       bytes_written=sum(r.size_bytes for r in rowsets) + sum(a.delta.size for a in commit.of(AddDelta)))


class Snapshot:
    """The table as of one version. Every scan of it sees the same state; every write
    planned on it (write_*) becomes a fragment to commit with Table.commit_fragments."""

    def __init__(self, storage: Storage, state: TableState):
        self.storage = storage
        self.state = state

    @property
    def version(self) -> int:
        return self.state.version

    @property
    def timestamp(self) -> Timestamp:
        return Timestamp(self.state.timestamp)

    @property
    def schema(self) -> Schema:
        return self.state.schema

    def scan(self, columns: Sequence[str] | None = None, filter: Any = None, ordered: bool = False) -> Scanner:
        """Rows of this snapshot: `columns` (a list of names; one string is one name; None: all),
        `filter` terms ANDed, `ordered` in primary-key order."""
        return Scanner(self.storage, self.state, columns, filter, ordered)

    def lookup(self, keys: Any, columns: Sequence[str] | None = None, missing: str = "omit") -> pa.Table:
        """The rows of this snapshot for `keys` (anything with the key columns: Arrow, pandas, a
        dict of lists), in input order, found through the PK index: missing="omit" leaves out
        absent keys, "null" gives them a row of NULLs and a `_found` column."""
        columns = arg.names(columns, "columns")
        arg.choice(missing, "missing", ("omit", "null"))
        return run_lookup(self.storage, self.state, keys, columns, missing)

    def read_plan(self, columns: Sequence[str] | None = None, filter: Any = None) -> ReadPlan:
        """What a foreign reader (Spark's Parquet reader, a JVM connector) reads for this scan:
        per rowset its base files, the REDO files to apply and whether UNDO records are needed
        (specs/format.md §9.4)."""
        return read_plan(self.storage, self.state, columns, filter)

    # --- planning writes: files written now, committed later ---------------------------
    def write_insert(self, data: Any, on_duplicate: str = "fail", report: bool = False, distributed: bool = False,
                     write_when_rejected: bool = True) -> WriteFragment:
        """Insert rows: on_duplicate "fail" or "ignore"; report=True skips duplicates in either
        mode and lists them in `fragment.rejected`. distributed=True when several fragments make
        one commit (the driver then checks the written rowsets' keys)."""
        arg.boolean(report, "report")
        arg.boolean(distributed, "distributed")
        arg.boolean(write_when_rejected, "write_when_rejected")
        return write_insert(self.storage, self.state, data, on_duplicate, report, distributed, write_when_rejected)

    def route(self, data: Any, strict: bool = True):
        """Each row's tablet ordinal (-1: in no range partition, when not strict): what a
        distributed job shuffles by."""
        arg.boolean(strict, "strict")
        st = self.state
        keys = key_table(st, data, "rows to route")
        return st.partitioning.assign(st.schema, keys, strict=strict)[0]

    def route_keys(self, data: Any, strict: bool = True) -> tuple[np.ndarray, pa.Array]:
        """Each row's tablet ordinal (-1: in no range partition, when not strict) and encoded
        primary key (binary, memcmp-ordered as the engine orders keys): what a distributed
        job range-partitions and sorts by."""
        arg.boolean(strict, "strict")
        st = self.state
        keys = key_table(st, data, "rows to route")
        encoded = encoded_keys(st, keys)        # encoded once: hashing a key prefix reuses it
        return st.partitioning.assign(st.schema, keys, strict=strict, keys=encoded)[0], encoded

    def rowset_writer(self, tablet_id: str, on_duplicate: str = "fail") -> RollingRowSetWriter:
        """A streaming insert into one tablet: `.write(key_sorted_batch)` per batch, then
        `.finish()` -> WriteFragment. Streams each rowset row group by row group."""
        arg.string(tablet_id, "tablet_id")
        return RollingRowSetWriter(self.storage, self.state, tablet_id, on_duplicate)

    @property
    def tablet_ids(self) -> list[str]:
        return list(self.state.partitioning.tablet_ids())

    def describe_rows(self, batch: pa.Table, rows, limit: int = 3) -> str:
        """The first keys of `rows` of a batch, for messages."""
        arg.instance(batch, "batch", pa.Table, "a pyarrow Table")
        to_arrow_table(batch)                   # its column names, each once
        missing = [k for k in self.schema.primary_key if k not in batch.column_names]
        if missing:
            raise MissingColumnError(f"batch lacks primary key column(s) {missing}")
        arg.integer(limit, "limit", 0, 10 ** 6)
        arg.instance(rows, "rows", (list, tuple, range, np.ndarray, pa.Array), "a list or array of row numbers")
        r = np.asarray(rows.to_pylist() if isinstance(rows, pa.Array) else rows, dtype=object)
        if r.ndim != 1 or not all(arg.is_int(x) and 0 <= x < batch.num_rows for x in r[:limit]):
            raise InvalidOptionError(f"rows must be row numbers of the batch (0..{batch.num_rows - 1}), "
                                     f"got {arg.given(rows)}")
        return describe_keys(self.state, batch, rows, limit)

    def write_mutation(self, data: Any, op: str | None = None, op_column: str | None = None,
                       columns: Sequence[str] | None = None, on_error: str = "fail",
                       operation: str = "MERGE") -> WriteFragment:
        """Row operations (one `op` for all rows, or an `op_column`); on_error "fail" or "report"."""
        from .row_ops import OP_NAMES
        arg.choice(op, "op", list(OP_NAMES), none=True)
        arg.string(op_column, "op_column", none=True)
        columns = arg.names(columns, "columns")
        arg.choice(on_error, "on_error", ("fail", "report"))
        arg.string(operation, "operation")
        return write_mutation(self.storage, self.state, data, operation,
                              OP_NAMES[op] if op is not None else None, op_column, columns, on_error)

    def write_compaction(self, action: CompactionAction) -> WriteFragment | None:
        """Run one compaction action; None if there is nothing left for it to do."""
        arg.instance(action, "action", CompactionAction, "a tf.CompactionAction (from a CompactionPlan)")
        return write_compaction(self.storage, self.state, action, mvcc.ancient_history_mark(self.state))

    def write_alter(self, alter: AlterTable) -> WriteFragment:
        arg.instance(alter, "alter", AlterTable, "a tf.AlterTable (from Table.alter())")
        return write_alter(self.state, alter)

    def __repr__(self) -> str:
        return f"Snapshot(version={self.version}, rowsets={len(self.state.rowsets)})"


class Table:
    """A handle on one table. Cheap to create; safe to share across threads for reads."""

    def __init__(self, storage: Storage, state: TableState, history: list[CommitInfo],
                 log: TransactionLog | None = None, properties: CommitProperties | None = None):
        self._storage = storage
        self._log = log or TransactionLog(storage)
        self._state = state
        self._history = history
        self._states: OrderedDict[int, tuple[TableState, list[CommitInfo]]] = OrderedDict()
        self.commit_properties = properties or CommitProperties()
        self._optimistic = True     # plan writes on the known state (transaction.run)

    # --- state ------------------------------------------------------------------------
    def refresh(self) -> TableState:
        """Catch up with commits made since this handle last looked (one read when there are none)."""
        self._state, self._history = self._log.load(None, (self._state, self._history))
        return self._state

    def _cached_snapshot(self) -> Snapshot:
        """The handle's latest known state, without a read: what a write first plans on."""
        return Snapshot(self._storage, self._state)

    @property
    def uri(self) -> str:
        return self._storage.uri

    @property
    def storage(self) -> Storage:
        """The table's file system: what distributed jobs use to delete the files of a failed write."""
        return self._storage

    @property
    def name(self) -> str:
        return self._state.name

    @property
    def table_id(self) -> str:
        """Fixed at creation: tells a re-created table of the same name and path apart."""
        return self._state.table_id

    @property
    def schema(self) -> Schema:
        return self.refresh().schema

    @property
    def version(self) -> int:
        return self.refresh().version

    @property
    def properties(self) -> dict:
        return dict(self._state.properties)

    @property
    def state(self) -> TableState:
        return self.refresh()

    def history(self) -> list[CommitInfo]:
        self.refresh()
        return list(self._history)

    def _load_cached(self, v: int) -> TableState:
        if v not in self._states:
            loaded = self._log.load(v)
            if loaded[0].table_id != self._state.table_id:
                raise TableReplacedError(f"the table at {self.uri!r} was replaced: version {v} belongs to table "
                                         f"{loaded[0].table_id}, this handle to {self._state.table_id}; open it again")
            self._states[v] = loaded
            while len(self._states) > 16:
                self._states.popitem(last=False)
        return self._states[v][0]

    def snapshot(self, as_of: Any = None) -> Snapshot:
        """A fixed view of the table: latest, or as of a version / Timestamp / datetime / ISO string."""
        as_of = mvcc.parse_as_of(as_of, tags=True)
        latest = self.refresh()
        if as_of is None:
            return Snapshot(self._storage, latest)
        v = mvcc.resolve_version(self._history, as_of, latest.tags)
        mvcc.check_history(latest, self._history, v, as_of)
        if v == latest.version:
            return Snapshot(self._storage, latest)
        return Snapshot(self._storage, mvcc.state_at(latest, self._history, v, self._load_cached))

    def ancient_history_mark(self) -> int | None:
        """Timestamps below this are outside the retained history (None: retention disabled)."""
        return mvcc.ancient_history_mark(self._state)

    # --- reads ------------------------------------------------------------------------
    def scan(self, columns: Sequence[str] | None = None, filter: Any = None, as_of: Any = None,
             ordered: bool = False) -> Scanner:
        columns = arg.names(columns, "columns")
        arg.boolean(ordered, "ordered")
        return self.snapshot(as_of).scan(columns, filter, ordered)

    def lookup(self, keys: Any, columns: Sequence[str] | None = None, as_of: Any = None,
               missing: str = "omit") -> pa.Table:
        """Rows by primary key, in input order, without a scan (interval, bloom, PK index, then
        only the row groups holding hits). See Snapshot.lookup."""
        columns = arg.names(columns, "columns")
        arg.choice(missing, "missing", ("omit", "null"))
        return self.snapshot(as_of).lookup(keys, columns, missing)

    def changes(self, start: Any, end: Any = None, mode: str = "all", before_image: bool = False,
                images: str = "full", skipped: bool = False) -> pa.Table:
        """Changes committed after `start` up to `end` (versions, Timestamps or datetimes).

        Columns: `_op` (insert / update / delete), `_version`, `_timestamp`, every
        column of the row's after-image (key only for a delete), `_changed_columns`
        (for updates: the columns whose value changed; with images="changed", which reads no
        base data, the columns written) and, with before_image=True, `_before_<column>`.
        mode="all" gives every change in commit order; mode="net" one net change
        per key. images="changed" fills only the key and the changed cells of an
        update, which needs no base data at all. skipped=True (mode="all") adds the
        input rows that writes skipped, with `_op` "skipped" and a `_reason` column
        ("stale_sequence": an ordered upsert's sequence was below the row's).
        """
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
        latest = self.refresh()
        s = mvcc.resolve_version(self._history, start, latest.tags)
        e = latest.version if end is None else mvcc.resolve_version(self._history, end, latest.tags)
        if e < s:
            raise InvalidOptionError(f"end version {e} is before start version {s}")
        if s < latest.history_horizon:
            raise HistoryExpiredError(
                f"change history from version {s} is no longer kept: vacuum moved the history horizon to "
                f"version {latest.history_horizon} (snapshots before it are still readable; changes need "
                "their files)")
        end_state = self.snapshot(e).state
        start_state = self.snapshot(s).state
        commits = [self._log.read_commit(v) for v in range(s + 1, e + 1)]
        t, changed, cols = collect_changes(self._storage, start_state, end_state, commits, before_image,
                                           images == "full")
        out = finish(t, changed, cols, list(end_state.schema.primary_key), mode == "net", before_image,
                     pa.timestamp("us", tz="UTC"))
        return with_skipped(out, self._storage, commits, start_state.schema, end_state.schema) if skipped else out

    def inspect(self, kind: str, as_of: Any = None) -> pa.Table:
        """A metadata table of the snapshot, from the log alone: `kind` is history, tablets,
        rowsets, deltas, files or tags (one row per item; see tableformat/inspect.py)."""
        arg.choice(kind, "kind", list(INSPECT_KINDS))
        snap = self.snapshot(as_of)
        return run_inspect(snap.state, self._history, kind)

    def to_arrow(self, as_of: Any = None):
        return self.scan(as_of=as_of).to_arrow()

    # --- writes -----------------------------------------------------------------------
    def _write(self, operation: str, plan: Callable[[Snapshot], WriteFragment | None],
               properties: CommitProperties | None = None) -> WriteResult:
        commit, frag = run(self, operation, plan, properties or self.commit_properties)
        return _result(commit, frag, self._state, operation)

    def insert(self, data: Any) -> WriteResult:
        """Insert rows; any key that exists (or repeats in the batch) raises DuplicateKeyError."""
        data = _replayable(data)
        return self._write("INSERT", lambda s: s.write_insert(data, "fail"))

    def insert_ignore(self, data: Any) -> WriteResult:
        """Insert rows, skipping keys that exist or repeat; `ignored` counts them."""
        data = _replayable(data)
        return self._write("INSERT_IGNORE", lambda s: s.write_insert(data, "ignore"))

    def update(self, data: Any, columns: Sequence[str] | None = None) -> WriteResult:
        """Update existing rows: key columns plus the columns to change (`columns`: a list of names,
        one string being one name; None: every non-key column given). Missing keys raise
        KeyNotFoundError."""
        return self._mutate(data, "UPDATE", UPDATE_OP, None, columns)

    def update_ignore(self, data: Any, columns: Sequence[str] | None = None) -> WriteResult:
        return self._mutate(data, "UPDATE_IGNORE", UPDATE_IGNORE, None, columns)

    def delete(self, data: Any) -> WriteResult:
        """Delete rows by key (other columns are ignored). Missing keys raise KeyNotFoundError."""
        return self._mutate(data, "DELETE", DELETE_OP, None, None, keys_only=True)

    def delete_ignore(self, data: Any) -> WriteResult:
        return self._mutate(data, "DELETE_IGNORE", DELETE_IGNORE, None, None, keys_only=True)

    def upsert(self, data: Any, columns: Sequence[str] | None = None) -> WriteResult:
        """Insert new keys; update the given columns of existing ones."""
        return self._mutate(data, "UPSERT", UPSERT, None, columns)

    def apply(self, data: Any, op_column: str = "op") -> WriteResult:
        """A mixed batch, as a Kudu session: `op_column` names each row's operation
        (insert, insert_ignore, update, update_ignore, delete, delete_ignore, upsert);
        operations on one key apply in batch order."""
        arg.string(op_column, "op_column")
        return self._mutate(data, "APPLY", None, op_column, None)

    def _mutate(self, data: Any, operation: str, op: int | None, op_column: str | None,
                columns: Sequence[str] | None, keys_only: bool = False) -> WriteResult:
        columns = arg.names(columns, "columns")
        data = _replayable(data)

        def plan(s: Snapshot) -> WriteFragment | None:
            rows = _keys_only(s.state, data) if keys_only else data
            return write_mutation(s.storage, s.state, rows, operation, op, op_column, columns)
        return self._write(operation, plan)

    def commit_fragments(self, fragments: Sequence[WriteFragment | dict], operation: str | None = None,
                         properties: CommitProperties | None = None) -> WriteResult:
        """Commit fragments written elsewhere (Spark executors) as one commit, checking exactly
        the requirements a local write checks. A plan the winners invalidated raises
        `Restart` (a CommitConflictError): plan the job again on a new snapshot."""
        arg.sequence(fragments, "fragments")
        arg.string(operation, "operation", none=True)
        properties = arg.instance(properties, "properties", CommitProperties, "a tf.CommitProperties", none=True)
        frags = [WriteFragment.from_json(f) if isinstance(f, dict) else f for f in fragments]
        frag = WriteFragment.combine(frags, operation)
        if frag.empty:
            self.refresh()
            return _result(None, frag, self.snapshot(frag.read_version).state, frag.operation)
        commit = Transaction(self, frag, properties or self.commit_properties).commit()
        return _result(commit, frag, self._state, frag.operation)

    # --- compaction, history and maintenance -------------------------------------------
    def compaction_plan(self, budget_bytes: int = 256 * 1024 * 1024,
                        policy: CompactionPolicy | None = None) -> CompactionPlan:
        """What compaction would do now: scored actions chosen under the byte budget (Kudu's policy)."""
        arg.integer(budget_bytes, "budget_bytes", 1, MAX_BUDGET_BYTES)
        arg.has_method(policy, "policy", "pick", "a compaction policy (an object with pick(), such as "
                       "tf.KuduPolicy())", none=True)
        return (policy or KuduPolicy()).pick(self.refresh(), budget_bytes, self.ancient_history_mark())

    def compact(self, plan: CompactionPlan | None = None, budget_bytes: int = 256 * 1024 * 1024,
                progress=None) -> list[WriteResult]:
        """Run a plan (the policy's when None). Each action commits on its own, so every argument
        is checked before the first one runs."""
        arg.instance(plan, "plan", CompactionPlan, "a tf.CompactionPlan (from Table.compaction_plan)", none=True)
        arg.integer(budget_bytes, "budget_bytes", 1, MAX_BUDGET_BYTES)
        arg.function(progress, "progress", none=True)
        if plan is not None:
            arg.sequence(plan.actions, "plan.actions")
            for a in plan.actions:
                arg.instance(a, "each action of the plan", CompactionAction, "a tf.CompactionAction")
        plan = plan if plan is not None else self.compaction_plan(budget_bytes)
        results = []
        for i, action in enumerate(plan.actions):
            r = self.compact_action(action)
            if r is not None:
                results.append(r)
            if progress is not None:
                progress(i + 1, len(plan.actions), action)
        return results

    def compact_action(self, action: CompactionAction) -> WriteResult | None:
        """Run one compaction action in one commit; None when it has nothing left to do or gave
        up because its inputs changed concurrently (the next plan sees the new state)."""
        arg.instance(action, "action", CompactionAction, "a tf.CompactionAction (from a CompactionPlan)")
        frag = self.snapshot().write_compaction(action)
        if frag is None:
            return None
        try:
            commit = Transaction(self, frag, COMPACTION_PROPERTIES).commit()
        except CommitConflictError:
            return None
        return _written(commit)

    def restore(self, as_of: Any) -> WriteResult:
        """One commit making the current rows equal to the rows as of `as_of` (a version,
        timestamp or tag). Only keys changed since are written, as ordinary row operations, so
        every version in between still reads back; RestoreError across a schema change."""
        if mvcc.parse_as_of(as_of, tags=True) is None:
            raise InvalidOptionError("restore needs as_of: a version, a tf.Timestamp, a datetime, an ISO string "
                                     "or a tag name")
        target = self.snapshot(as_of).state
        check_restorable(target, self._state)

        def plan(s: Snapshot) -> WriteFragment:
            latest = s.state
            check_restorable(target, latest)
            if target.version >= latest.history_horizon:
                ch = self.changes(target.version, latest.version, mode="net", images="changed")
            else:
                ch = None                        # the change history starts later: compare every key
            return write_restore(self._storage, latest, target, restore_keys(self._storage, target, latest, ch))
        return self._write("RESTORE", plan)

    # --- tags -------------------------------------------------------------------------------
    def tag(self, name: str, as_of: Any = None) -> WriteResult:
        """Name a version (latest, or as of a version / timestamp / tag): `as_of=name` reads it
        from then on, and compaction and vacuum keep the history it needs past history_max_age.
        TagExistsError if the name is taken; HistoryExpiredError if its history is already gone."""
        mvcc.validate_tag_name(name)
        snap = self.snapshot(as_of)              # refuses a version whose history has expired
        v = snap.version
        ts = self._history[v].timestamp

        def plan(s: Snapshot) -> WriteFragment:
            if name in s.state.tags:
                raise TagExistsError(f"tag {name!r} already names version {s.state.tags[name][0]}; untag it "
                                     "first or pick another name")
            # when the version stopped being the newest (-1: it still is); history GC since then
            # may have dropped what a read of it needs
            valid_until = self._history[v + 1].timestamp if v < s.version else -1
            if 0 <= valid_until <= s.state.history_gc_ts:
                raise HistoryExpiredError(f"version {v} can no longer be tagged: the history it needs was "
                                          "garbage-collected (history_max_age passed it)")
            return WriteFragment("TAG", s.version, [AddTag(name, v, ts)], [], {"version": v},
                                 [TagAbsent(name), HistoryKept(valid_until)], data_change=False,
                                 table_id=s.state.table_id)
        return self._write("TAG", plan)

    def untag(self, name: str) -> WriteResult:
        """Remove a tag; the history only it needed goes at the next compactions and vacuum."""
        mvcc.validate_tag_name(name)

        def plan(s: Snapshot) -> WriteFragment:
            if name not in s.state.tags:
                raise TagNotFoundError(f"no tag {name!r} in table {s.state.name!r} (tags: "
                                       f"{', '.join(sorted(s.state.tags)) or 'none'})")
            return WriteFragment("UNTAG", s.version, [RemoveTag(name)], [], {}, [TagPresent(name)],
                                 data_change=False, table_id=s.state.table_id)
        return self._write("UNTAG", plan)

    def tags(self) -> dict[str, int]:
        """Tag name -> version, oldest version first."""
        st = self.refresh()
        return {k: v for k, (v, _) in sorted(st.tags.items(), key=lambda kv: (kv[1][0], kv[0]))}

    def vacuum_plan(self, retain_seconds: float | None = None, grace_seconds: float = 3600) -> VacuumPlan:
        """What vacuum would do now: the history horizon it records and the files it deletes."""
        arg.seconds(retain_seconds, "retain_seconds", none=True)
        arg.seconds(grace_seconds, "grace_seconds")
        return vacuum_plan(self._storage, self._log, self.refresh(), self._history, retain_seconds, grace_seconds)

    def vacuum(self, retain_seconds: int | None = None, dry_run: bool = False,
               grace_seconds: float = 3600) -> VacuumResult:
        """Delete files no snapshot within the retention references, older than the grace period."""
        arg.boolean(dry_run, "dry_run")
        p = self.vacuum_plan(retain_seconds, grace_seconds)
        if dry_run:
            return VacuumResult(True, [f for f, _ in p.files], p.bytes, p.retain_from)
        if p.history is not None:
            # record the horizon before deleting: older versions are read through UNDO from then on
            Transaction(self, p.fragment(), self.commit_properties).commit()
        state = self.refresh()
        victims = deletable(self._storage, self._log, state, p.retain_from, grace_seconds)
        res = VacuumResult(False, [f for f, _ in victims], sum(s for _, s in victims),
                           max(p.retain_from, state.history_horizon))
        self._storage.delete_quietly(res.files)
        return res

    def mirror_delta(self, path: str, storage_options: dict | None = None, compact: bool = True) -> MirrorResult:
        """Write one Delta Lake commit at `path` so that Delta readers see this table's latest
        version, reading our base files in place (zero-copy): column mapping to our `c<id>`
        fields, deletes as deletion vectors. Rowsets Delta cannot express are compacted first
        (`compact=False` refuses instead); the result names them. Our vacuum keeps every file
        the latest mirrored version references. specs/format.md §15."""
        arg.boolean(compact, "compact")
        if not isinstance(path, str) or not path:
            raise InvalidOptionError(f"path must be a non-empty string (the Delta table's directory), got {path!r}")
        if path.rstrip("/") == self.uri.rstrip("/") or path.rstrip("/").startswith(self.uri.rstrip("/") + "/"):
            raise InvalidOptionError(f"the Delta mirror {path!r} must lie outside the table's directory "
                                     f"{self.uri!r}: a Delta VACUUM there would delete our files")
        return delta_mirror.mirror_delta(self, path, storage_options, compact)

    def check(self, deep: bool = True) -> CheckReport:
        """Verify the table's invariants; the report lists every violation found.

        deep=True also decodes every base data page, so page checksums catch bit rot.
        """
        arg.boolean(deep, "deep")
        return run_check(self._storage, self._log, self.refresh(), deep)

    # --- schema changes ----------------------------------------------------------------
    def alter(self) -> AlterTable:
        """Collect schema and range-partition changes; they commit together when the `with` ends."""
        return AlterTable(self)

    def _alter(self, a: AlterTable) -> WriteResult:
        return self._write("ALTER TABLE", lambda s: s.write_alter(a))

    def column(self, name: str, type: str | None = None, nullable: bool | None = None):
        """The current column called `name`; ColumnNotFoundError if absent or not of the expected type/nullability."""
        arg.string(name, "name")
        arg.string(type, "type", none=True)
        arg.boolean(nullable, "nullable", none=True)
        schema = self.refresh().schema
        if not schema.has_column(name):
            raise ColumnNotFoundError(f"column {name!r} is not in table {self.name!r}; columns are {schema.names}")
        c = schema.column(name)
        if type is not None and parse_type(type).name != c.type.name:
            raise ColumnNotFoundError(f"column {name!r} is {c.type.name}, not {parse_type(type).name}")
        if nullable is not None and nullable != c.nullable:
            raise ColumnNotFoundError(f"column {name!r} is {'' if c.nullable else 'not '}nullable")
        return c

    # --- the handle's cached state, moved forward by commits it sees --------------------
    def _advance(self, base: TableState, commits: list[Commit]) -> TableState:
        """Apply commits to `base`, and move this handle's cached state forward with them."""
        for c in commits:
            base = apply_commit(base, c)
            if base.version == self._state.version + 1:
                self._history = self._history + [CommitInfo(c.version, c.timestamp, c.operation, dict(c.counts),
                                                            c.read_version)]
                self._state = base
        return base

    def _landed(self, base: TableState, commit: Commit, checkpoint_interval: int | None = None) -> None:
        """Our commit landed on `base`: cache it, and write a checkpoint every N versions."""
        new = self._advance(base, [commit])
        every = checkpoint_interval or new.properties["checkpoint_interval"]
        if self._state.version == commit.version and commit.version % every == 0:
            self._log.write_checkpoint(self._state, self._history)

    def __repr__(self) -> str:
        return f"Table({self.name!r}, {self._storage!r}, version={self._state.version})"


def _replayable(data: Any) -> pa.Table:
    """The input as an Arrow table, converted once: a write may plan more than once
    (transaction.run), and a stream or a column given as a generator is read only once."""
    return to_arrow_table(data)


def _keys_only(state: TableState, data: Any):
    """A delete needs only the key: drop other columns so they are never validated."""
    t = to_arrow_table(data)
    extra = [c for c in t.column_names if c not in state.schema.primary_key and state.schema.has_column(c)]
    return t.drop(extra) if extra else t


def create_table(uri: str, schema: Schema, partitioning: PartitionSchema | None = None,
                 properties: dict | None = None, storage_options: dict | None = None,
                 name: str | None = None) -> Table:
    """Create a table at `uri`; raises TableExistsError if one is there."""
    storage = Storage(uri, storage_options)
    log = TransactionLog(storage)
    arg.instance(schema, "schema", Schema, "a tf.Schema", error=SchemaError)
    arg.mapping(properties, "properties")
    if log.listing().commits:
        raise TableExistsError(f"a table already exists at {storage!r}")
    if name is None:
        name = posixpath.basename(storage.root.rstrip("/")) or "table"
    name = validate_identifier(name, "table")
    part = resolve(partitioning, schema)
    props = validate_properties(properties)
    check_sequence_column(schema, props)
    meta = {"format_version": FORMAT_VERSION, "table_id": uuid.uuid4().hex, "name": name,
            "schema": schema.to_json(), "partitioning": part.to_json(schema), "properties": props}
    commit = log.try_commit(None, "CREATE TABLE", [CreateTable(meta)], {}, None)
    if commit is None:
        raise TableExistsError(f"a table was created concurrently at {storage!r}")
    state = apply_commit(None, commit)
    return Table(storage, state, [CommitInfo(0, commit.timestamp, "CREATE TABLE", {}, None)], log)


def open_table(uri: str, storage_options: dict | None = None) -> Table:
    """Open an existing table; raises TableNotFoundError if there is none."""
    storage = Storage(uri, storage_options)
    log = TransactionLog(storage)
    state, history = log.load()
    return Table(storage, state, history, log)
