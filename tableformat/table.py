"""The public Table handle: create, open, insert, scan, snapshots and history.

A Table caches the latest state it has read and refreshes it from the log
before each operation. Writes are optimistic: plan against a snapshot, write
files, then race for the next log version, rebasing onto any winner.
"""
from __future__ import annotations

import datetime as _dt
import random
import time
import posixpath
import uuid
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Sequence

import pyarrow as pa

from .batch import prepare, to_arrow_table
from .changes import collect_changes, finish
from .mutation import (DELETE_IGNORE, DELETE_OP, UPDATE_IGNORE, UPDATE_OP, UPSERT, has_conflict, plan_mutation,
                       validate, write_deltas)
from .alter import AlterTable, alter_actions
from .check import CheckReport, check as run_check
from .compaction import CompactionPlan, plan as compaction_plan_for
from .vacuum import VacuumResult, commit_files, state_files, unreferenced
from .txlog import commit_path, now_micros
from .keyprobe import probe
from .errors import (ColumnNotFoundError, CommitConflictError, HistoryExpiredError, InvalidOptionError, SchemaError,
                     TableExistsError, VersionNotFoundError)
from .types import parse_type
from .metadata import FORMAT_VERSION, CommitInfo, RowSetMeta, TableState, apply_commit, validate_properties
from .partition import PartitionSchema, resolve
from .scan import Scanner
from .schema import Schema, validate_identifier
from .storage import Storage
from .txlog import TransactionLog
from .writer import added_deltas, duplicate_error, plan_insert, rebase_conflicts, write_plan

MAX_COMMIT_ATTEMPTS = 1000
# Under heavy write contention a compaction yields (it is retried by the next run) rather than starve.
COMPACTION_COMMIT_ATTEMPTS = 30


class Timestamp(int):
    """An MVCC timestamp in microseconds since the epoch (UTC).

    Passing one as `as_of` means "as of this time"; a plain int means a version.
    """

    def to_datetime(self) -> _dt.datetime:
        return _dt.datetime.fromtimestamp(self / 1e6, tz=_dt.timezone.utc)

    def __repr__(self) -> str:
        return f"Timestamp({int(self)})"


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


class Snapshot:
    """The table as of one version. Every scan of it sees the same state."""

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
        return Scanner(self.storage, self.state, columns, filter, ordered)

    def __repr__(self) -> str:
        return f"Snapshot(version={self.version}, rowsets={len(self.state.rowsets)})"


def _to_micros(t: Any) -> int:
    if isinstance(t, Timestamp):
        return int(t)
    if isinstance(t, str):
        try:
            t = _dt.datetime.fromisoformat(t)
        except ValueError:
            raise InvalidOptionError(f"as_of {t!r} is not an ISO date-time") from None
    if isinstance(t, _dt.datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=_dt.timezone.utc)
        return int(t.timestamp() * 1_000_000) if t.microsecond == 0 else \
            int(t.replace(microsecond=0).timestamp()) * 1_000_000 + t.microsecond
    raise InvalidOptionError(f"as_of must be a version (int), a tf.Timestamp, a datetime or an ISO string; "
                             f"got {type(t).__name__}")


class Table:
    """A handle on one table. Cheap to create; safe to share across threads for reads."""

    def __init__(self, storage: Storage, state: TableState, history: list[CommitInfo],
                 log: TransactionLog | None = None):
        self._storage = storage
        self._log = log or TransactionLog(storage)
        self._state = state
        self._history = history
        self._states: OrderedDict[int, tuple[TableState, list[CommitInfo]]] = OrderedDict()

    # --- state ------------------------------------------------------------------------
    def refresh(self) -> TableState:
        """Catch up with commits made since this handle last looked (one read when there are none)."""
        self._state, self._history = self._log.load(None, (self._state, self._history))
        return self._state

    @property
    def uri(self) -> str:
        return self._storage.uri

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

    def _resolve_version(self, as_of: Any) -> int:
        latest = self.refresh()
        if isinstance(as_of, bool):
            raise InvalidOptionError("as_of must be a version, a timestamp or a datetime, not a bool")
        if isinstance(as_of, int) and not isinstance(as_of, Timestamp):
            if as_of < 0 or as_of > latest.version:
                raise VersionNotFoundError(f"version {as_of} does not exist; versions are 0..{latest.version}")
            return as_of
        ts = _to_micros(as_of)
        candidates = [h.version for h in self._history if h.timestamp <= ts]
        if not candidates:
            raise VersionNotFoundError(f"timestamp {ts} is before the table was created "
                                       f"({self._history[0].timestamp})")
        return candidates[-1]

    def snapshot(self, as_of: Any = None) -> Snapshot:
        """A fixed view of the table: latest, or as of a version / Timestamp / datetime."""
        if as_of is None:
            return Snapshot(self._storage, self.refresh())
        v = self._resolve_version(as_of)
        self._check_history(v, None if isinstance(as_of, int) and not isinstance(as_of, Timestamp)
                            else _to_micros(as_of))
        if v == self._state.version:
            return Snapshot(self._storage, self._state)
        return Snapshot(self._storage, self._state_at(v))

    def _load_cached(self, v: int) -> TableState:
        if v not in self._states:
            self._states[v] = self._log.load(v)
            while len(self._states) > 16:
                self._states.popitem(last=False)
        return self._states[v][0]

    def _state_at(self, v: int) -> TableState:
        """Version v: its own files, or, behind the vacuum's history horizon (whose older
        files may be gone), the horizon's files read as of v's timestamp through UNDO records."""
        st = self._load_cached(v)
        horizon = self._state.history_horizon
        if v >= horizon:
            return st
        valid_until = self._history[v + 1].timestamp        # v < horizon <= latest
        if valid_until <= self._state.history_gc_ts:
            # history (UNDO records, deleted rows, a passed ALTER) up to gc_ts is gone; a version
            # still valid after it lost nothing: no change happened between its commit and gc_ts
            raise HistoryExpiredError(
                f"version {v} is older than history a compaction garbage-collected "
                f"(before timestamp {self._state.history_gc_ts}) behind the vacuum horizon (version {horizon})")
        h = self._load_cached(horizon)
        return replace(h, version=v, timestamp=st.timestamp, name=st.name, schema=st.schema,
                       partitioning=st.partitioning, properties=st.properties, read_ts=st.timestamp)

    # --- reads ------------------------------------------------------------------------
    def scan(self, columns: Sequence[str] | None = None, filter: Any = None, as_of: Any = None,
             ordered: bool = False) -> Scanner:
        return self.snapshot(as_of).scan(columns, filter, ordered)

    def changes(self, start: Any, end: Any = None, mode: str = "all", before_image: bool = False,
                images: str = "full") -> pa.Table:
        """Changes committed after `start` up to `end` (versions, Timestamps or datetimes).

        Columns: `_op` (insert / update / delete), `_version`, `_timestamp`, every
        column of the row's after-image (key only for a delete), `_changed_columns`
        (for updates) and, with before_image=True, `_before_<column>`.
        mode="all" gives every change in commit order; mode="net" one net change
        per key. images="changed" fills only the key and the changed cells of an
        update, which needs no base data at all.
        """
        if mode not in ("all", "net"):
            raise InvalidOptionError(f"mode must be 'all' or 'net', got {mode!r}")
        if images not in ("full", "changed"):
            raise InvalidOptionError(f"images must be 'full' or 'changed', got {images!r}")
        s = self._resolve_version(start)
        e = self.refresh().version if end is None else self._resolve_version(end)
        if e < s:
            raise InvalidOptionError(f"end version {e} is before start version {s}")
        horizon = self.refresh().history_horizon
        if s < horizon:
            raise HistoryExpiredError(
                f"change history from version {s} is no longer kept: vacuum moved the history horizon to "
                f"version {horizon} (snapshots before it are still readable; changes need their files)")
        end_state = self.snapshot(e).state
        start_state = self.snapshot(s).state
        commits = [self._log.read_commit(v) for v in range(s + 1, e + 1)]
        t, changed, cols = collect_changes(self._storage, start_state, end_state, commits, before_image,
                                           images == "full")
        return finish(t, changed, cols, list(end_state.schema.primary_key), mode == "net", before_image,
                      pa.timestamp("us", tz="UTC"))

    def to_arrow(self, as_of: Any = None):
        return self.scan(as_of=as_of).to_arrow()

    # --- writes -----------------------------------------------------------------------
    def insert(self, data: Any) -> WriteResult:
        """Insert rows; any key that exists (or repeats in the batch) raises DuplicateKeyError."""
        return self._insert(data, ignore=False)

    def insert_ignore(self, data: Any) -> WriteResult:
        """Insert rows, skipping keys that exist or repeat; `ignored` counts them."""
        return self._insert(data, ignore=True)

    def _insert(self, data: Any, ignore: bool) -> WriteResult:
        op = "INSERT_IGNORE" if ignore else "INSERT"
        for _attempt in range(MAX_COMMIT_ATTEMPTS):
            state = self.refresh()
            batch = prepare(state.schema, data)
            plan = plan_insert(self._storage, state, batch, ignore)
            if not plan.batches:
                return WriteResult(state.version, Timestamp(state.timestamp), op, 0, ignored=plan.ignored)
            written: list[str] = []
            try:
                rowsets = write_plan(self._storage, state, plan, written)
            except BaseException:
                self._storage.delete_quietly(written)
                raise
            actions = [{"add_rowset": r.to_json()} for r in rowsets]
            counts = {"inserted": plan.rows, "ignored": plan.ignored}

            def rebase(new_commits: list[dict]) -> None:
                actions_seen = [a for c in new_commits for a in c["actions"]]
                if any("metadata" in a or "alter" in a for a in actions_seen):
                    raise _Restart()       # validate again against the new definition
                added = [RowSetMeta.from_json(a["add_rowset"]) for a in actions_seen if "add_rowset" in a]
                if ignore and plan.ignored and any(
                        "add_delta" in a and a["add_delta"]["delete_count"] for a in actions_seen):
                    raise _Restart()   # a key skipped as existing may be gone now: plan again
                rows = rebase_conflicts(self._storage, state, batch, plan, added, added_deltas(new_commits))
                if len(rows):
                    if ignore:
                        raise _Restart()
                    raise duplicate_error(state, batch, rows, "were inserted concurrently")

            commit = self._land(state, op, actions, counts, rebase, written)
            if commit is None:
                continue
            return WriteResult(commit["version"], Timestamp(commit["timestamp"]), op, plan.rows,
                               ignored=plan.ignored, rowsets_added=len(rowsets),
                               bytes_written=sum(r.size_bytes for r in rowsets))
        raise CommitConflictError(f"insert_ignore restarted {MAX_COMMIT_ATTEMPTS} times; retry later")

    # --- compaction, history and maintenance -------------------------------------------
    def compaction_plan(self, budget_bytes: int = 256 * 1024 * 1024) -> CompactionPlan:
        """What compaction would do now: scored actions chosen under the byte budget (Kudu's policy)."""
        if not isinstance(budget_bytes, int) or isinstance(budget_bytes, bool) or budget_bytes <= 0:
            raise InvalidOptionError(f"budget_bytes must be a positive integer, got {budget_bytes!r}")
        return compaction_plan_for(self.refresh(), budget_bytes, self.ancient_history_mark())

    def compact(self, plan: CompactionPlan | None = None, budget_bytes: int = 256 * 1024 * 1024,
                progress=None) -> list[WriteResult]:
        """Run a plan (the policy's when None). Each action commits on its own."""
        plan = plan if plan is not None else self.compaction_plan(budget_bytes)
        results = []
        for i, action in enumerate(plan.actions):
            r = self._compact_one(action)
            if r is not None:
                results.append(r)
            if progress is not None:
                progress(i + 1, len(plan.actions), action)
        return results

    def _compact_one(self, action) -> WriteResult | None:
        state = self.refresh()
        if any(r not in state.rowsets for r in action.rowsets):
            return None                                   # already compacted away
        from . import compaction as C
        ahm = self.ancient_history_mark()
        if action.kind == "merge":
            prep = C.prepare_merge(self._storage, state, action.rowsets, ahm)
        elif action.kind == "major_delta":
            prep = C.prepare_major(self._storage, state, state.rowsets[action.rowsets[0]], action.columns, ahm)
        elif action.kind == "undo_gc":
            prep = C.prepare_undo_gc(state, state.rowsets[action.rowsets[0]], ahm)
            if not prep.actions:
                return None                               # a compaction already removed them
        else:
            prep = C.prepare_minor(self._storage, state, state.rowsets[action.rowsets[0]])
        extra: list[dict] = []

        def rebase(new_commits: list[dict]) -> None:
            if action.kind == "merge":
                extra.extend(C.rebase_merge(self._storage, state, prep, new_commits))
                return
            for c in new_commits:
                for a in c["actions"]:
                    touched = a.get("remove_rowset", a.get("add_rowset", a.get("remove_delta", {})))
                    rid = touched.get("id", touched.get("rowset")) if isinstance(touched, dict) else None
                    if "alter" in a or "metadata" in a or (rid in prep.inputs and "add_delta" not in a):
                        raise CommitConflictError("the rowset changed under the compaction")
        try:
            commit = self._commit(state, f"COMPACT {action.kind.upper()}", prep.actions,
                                  {"rowsets_in": len(action.rowsets), "rowsets_out": len(prep.outputs)}, rebase,
                                  data_change=False, extra=extra, max_attempts=COMPACTION_COMMIT_ATTEMPTS)
        except CommitConflictError:
            self._storage.delete_quietly(prep.written)
            return None
        except BaseException as e:
            if not committed(e):
                self._storage.delete_quietly(prep.written)
            raise
        return WriteResult(commit["version"], Timestamp(commit["timestamp"]), f"COMPACT {action.kind.upper()}")

    def ancient_history_mark(self) -> int | None:
        """Timestamps below this are outside the retained history (None: retention disabled)."""
        age = self._state.properties.get("history_max_age", 7 * 24 * 3600)
        if age < 0:
            return None
        return max(0, now_micros() - age * 1_000_000)

    def _check_history(self, version: int, explicit_ts: int | None) -> None:
        ahm = self.ancient_history_mark()
        if ahm is None or version == self._state.version:
            return
        end_of_validity = self._history[version + 1].timestamp if version + 1 < len(self._history) else None
        too_old = (explicit_ts is not None and explicit_ts < ahm) or \
            (end_of_validity is not None and end_of_validity <= ahm)
        if too_old:
            raise HistoryExpiredError(
                f"version {version} is earlier than the ancient history mark: history older than "
                f"history_max_age={self._state.properties.get('history_max_age')} s is not retained; "
                "raise the table property history_max_age to keep more")

    def vacuum(self, retain_seconds: int | None = None, dry_run: bool = False,
               grace_seconds: float = 3600) -> VacuumResult:
        """Delete files no snapshot within the retention references, older than the grace period."""
        if retain_seconds is not None and (not isinstance(retain_seconds, (int, float)) or retain_seconds < 0):
            raise InvalidOptionError(f"retain_seconds must be >= 0, got {retain_seconds!r}")
        if not isinstance(grace_seconds, (int, float)) or grace_seconds < 0:
            raise InvalidOptionError(f"grace_seconds must be >= 0, got {grace_seconds!r}")
        state = self.refresh()
        age = state.properties.get("history_max_age", 7 * 24 * 3600) if retain_seconds is None else retain_seconds
        horizon = now_micros() - int(age * 1_000_000) if age >= 0 else -1
        # the oldest snapshot still valid at the horizon: the last version committed at or before it
        first = 0
        for h in self._history:
            if h.timestamp <= horizon:
                first = h.version
        first, floor = self._history_horizon(first)
        if all(h.operation == "VACUUM" for h in self._history[state.history_horizon + 1:first + 1]):
            first = min(first, state.history_horizon)      # only vacuums since: no file to free, no commit
        if first > state.history_horizon and not dry_run:
            # record the horizon before deleting: older versions are read through UNDO from then on
            history = {"horizon_version": first, **({"gc_before_ts": floor} if floor else {})}
            self._commit(state, "VACUUM", [{"history": history}], {"horizon_version": first}, lambda new: None,
                         data_change=False)
            state = self.refresh()
        first = max(first, state.history_horizon)
        referenced = state_files(self._log.load(first)[0]) if first < state.version else set()
        for v in range(first + 1, state.version + 1):
            referenced |= commit_files(self._log.read_commit(v))
        referenced |= state_files(state)
        victims = unreferenced(self._storage, referenced, grace_seconds)
        res = VacuumResult(dry_run, [p for p, _ in victims], sum(s for _, s in victims), first)
        if not dry_run:
            self._storage.delete_quietly(res.files)
        return res

    def _history_horizon(self, wanted: int) -> tuple[int, int]:
        """The newest version (<= wanted) from whose files every version within the history can
        be read through UNDO records, and the timestamp before which passing it loses history.

        The horizon never passes, within the history, an ALTER (the files after it may lack a
        dropped column or a dropped range's rows) nor a format-1 commit (no UNDO records, no
        insert times). Passing one that aged out makes the versions before it unreadable for
        good, even if history_max_age is raised later: that is the returned floor."""
        ahm = self.ancient_history_mark()
        floor = 0
        born_v2 = self._state.format_version >= 2          # then no commit is format 1: none to read
        for v in range(max(1, self._state.history_horizon + 1), wanted + 1):
            info = self._history[v]
            blocking = info.operation == "ALTER TABLE" or (
                not born_v2 and self._log.read_commit(v).get("format_version", 1) < 2)
            if not blocking:
                continue
            if ahm is None or info.timestamp > ahm:
                return max(self._state.history_horizon, v - 1), floor
            floor = info.timestamp
        return wanted, floor

    def check(self, deep: bool = True) -> CheckReport:
        """Verify the table's invariants; the report lists every violation found.

        deep=True also decodes every base data page, so page checksums catch bit rot.
        """
        return run_check(self._storage, self._log, self.refresh(), deep)

    # --- schema changes ----------------------------------------------------------------
    def alter(self) -> "AlterTable":
        """Collect schema and range-partition changes; they commit together when the `with` ends."""
        return AlterTable(self)

    def _alter(self, a: "AlterTable") -> WriteResult:
        for _attempt in range(MAX_COMMIT_ATTEMPTS):
            state = self.refresh()
            new = a.apply(state)
            actions = alter_actions(state, new)
            dropped = {r["remove_rowset"]["id"] for r in actions if "remove_rowset" in r}
            live = set(new.partitioning.tablet_ids())

            def rebase(new_commits: list[dict]) -> None:
                for c in new_commits:
                    for x in c["actions"]:
                        if "alter" in x or "metadata" in x:
                            raise _Restart()      # re-apply the steps to the new definition
                        if "add_rowset" in x and x["add_rowset"]["tablet"] not in live:
                            raise _Restart()      # rows landed in a range being dropped
            try:
                commit = self._commit(state, "ALTER TABLE", actions, {"rowsets_dropped": len(dropped)}, rebase,
                                      data_change=False)
            except _Restart:
                continue
            return WriteResult(commit["version"], Timestamp(commit["timestamp"]), "ALTER TABLE")
        raise CommitConflictError(f"ALTER TABLE restarted {MAX_COMMIT_ATTEMPTS} times; retry later")

    def column(self, name: str, type: str | None = None, nullable: bool | None = None):
        """The current column called `name`; ColumnNotFoundError if absent or not of the expected type/nullability."""
        schema = self.refresh().schema
        if not schema.has_column(name):
            raise ColumnNotFoundError(f"column {name!r} is not in table {self.name!r}; columns are {schema.names}")
        c = schema.column(name)
        if type is not None and parse_type(type).name != c.type.name:
            raise ColumnNotFoundError(f"column {name!r} is {c.type.name}, not {parse_type(type).name}")
        if nullable is not None and nullable != c.nullable:
            raise ColumnNotFoundError(f"column {name!r} is {'' if c.nullable else 'not '}nullable")
        return c

    # --- mutations --------------------------------------------------------------------
    def update(self, data: Any, columns: Sequence[str] | None = None) -> WriteResult:
        """Update existing rows: key columns plus the columns to change. Missing keys raise KeyNotFoundError."""
        return self._mutate(data, "UPDATE", UPDATE_OP, None, columns)

    def update_ignore(self, data: Any, columns: Sequence[str] | None = None) -> WriteResult:
        return self._mutate(data, "UPDATE_IGNORE", UPDATE_IGNORE, None, columns)

    def delete(self, data: Any) -> WriteResult:
        """Delete rows by key (other columns are ignored). Missing keys raise KeyNotFoundError."""
        return self._mutate(_keys_only(self.refresh(), data), "DELETE", DELETE_OP, None, None)

    def delete_ignore(self, data: Any) -> WriteResult:
        return self._mutate(_keys_only(self.refresh(), data), "DELETE_IGNORE", DELETE_IGNORE, None, None)

    def upsert(self, data: Any, columns: Sequence[str] | None = None) -> WriteResult:
        """Insert new keys; update the given columns of existing ones."""
        return self._mutate(data, "UPSERT", UPSERT, None, columns)

    def apply(self, data: Any, op_column: str = "op") -> WriteResult:
        """A mixed batch, as a Kudu session: `op_column` names each row's operation
        (insert, insert_ignore, update, update_ignore, delete, delete_ignore, upsert);
        operations on one key apply in batch order."""
        return self._mutate(data, "APPLY", None, op_column, None)

    def _mutate(self, data: Any, operation: str, op: int | None, op_column: str | None,
                columns: Sequence[str] | None) -> WriteResult:
        for _attempt in range(MAX_COMMIT_ATTEMPTS):
            state = self.refresh()
            batch, ops, update_cols = validate(state, data, op, op_column, columns)
            plan = plan_mutation(self._storage, state, batch, ops, update_cols)
            counts = dict(plan.counts)
            if plan.new_rows is None and not plan.deltas:
                return WriteResult(state.version, Timestamp(state.timestamp), operation, **_result_counts(counts))
            written: list[str] = []
            try:
                ins = plan_insert(self._storage, state, plan.new_rows, False, check_existing=False) \
                    if plan.new_rows is not None else None
                rowsets = write_plan(self._storage, state, ins, written) if ins is not None else []
                deltas = write_deltas(self._storage, state, plan, written)
            except BaseException:
                self._storage.delete_quietly(written)
                raise
            actions = [{"add_rowset": r.to_json()} for r in rowsets] + [{"add_delta": d.to_json()} for d in deltas]

            def rebase(new_commits: list[dict]) -> None:
                deltas_of = added_deltas(new_commits)

                def clash(rs) -> bool:
                    keys = plan.seen_absent.get(rs.tablet)
                    return keys is not None and bool((probe(self._storage, [rs], keys, deltas_of)[0] >= 0).any())
                if has_conflict(self._storage, plan.seen_live, clash, new_commits):
                    raise _Restart()

            commit = self._land(state, operation, actions, counts, rebase, written)
            if commit is None:
                continue
            return WriteResult(commit["version"], Timestamp(commit["timestamp"]), operation,
                               **_result_counts(counts), rowsets_added=len(rowsets),
                               bytes_written=sum(r.size_bytes for r in rowsets) + sum(d.size for d in deltas))
        raise CommitConflictError(f"{operation} restarted {MAX_COMMIT_ATTEMPTS} times; retry later")

    def _land(self, state: TableState, operation: str, actions: list[dict], counts: dict, rebase,
              written: list[str]) -> dict | None:
        """Commit the written files; None when the plan must start over. Files of a failed
        commit are deleted, never those of a commit that landed."""
        try:
            return self._commit(state, operation, actions, counts, rebase)
        except _Restart:
            self._storage.delete_quietly(written)
            return None
        except BaseException as e:
            if not committed(e):
                self._storage.delete_quietly(written)
            raise

    def _advance(self, base: TableState, commits: list[dict]) -> TableState:
        """Apply commits to `base`, and move this handle's cached state forward with them."""
        for c in commits:
            base = apply_commit(base, c)
            if base.version == self._state.version + 1:
                self._history = self._history + [CommitInfo(c["version"], c["timestamp"], c["operation"],
                                                            c.get("counts", {}), c.get("read_version"))]
                self._state = base
        return base

    def _commit(self, state: TableState, operation: str, actions: list[dict], counts: dict, rebase,
                data_change: bool = True, extra: list[dict] | None = None,
                max_attempts: int = MAX_COMMIT_ATTEMPTS) -> dict:
        """Race for the next version; on losing, rebase onto the winners and try again.

        `rebase` sees exactly the commits that won; it raises to give up or restart,
        and may append actions to `extra` (a merging compaction's remapped deltas).
        """
        read_version = state.version
        base = state
        extra = extra if extra is not None else []
        losses = 0
        for _ in range(max_attempts):
            commit = self._log.try_commit(base, operation, actions + extra, counts, read_version, data_change)
            if commit is not None:
                try:
                    self._storage._fault("after-commit", commit_path(commit["version"]))
                    new_state = apply_commit(base, commit)
                    if base is self._state or base.version == self._state.version:
                        self._history = self._history + [CommitInfo(commit["version"], commit["timestamp"],
                                                                    operation, counts, read_version)]
                        self._state = new_state
                        if new_state.version % new_state.properties["checkpoint_interval"] == 0:
                            self._log.write_checkpoint(new_state, self._history)
                except BaseException as e:
                    e.tableformat_committed = commit["version"]   # durable: callers must not clean up
                    raise
                return commit
            new_commits = self._log.read_new_commits(base.version)
            rebase(new_commits)
            base = self._advance(base, new_commits)   # exactly the commits the rebase saw
            losses += 1
            if losses > 3:   # heavy contention: jittered backoff so a slow rebaser is not starved
                time.sleep(random.uniform(0, min(0.2, 0.002 * 2 ** min(losses, 7))))
        raise CommitConflictError(f"{operation} lost {MAX_COMMIT_ATTEMPTS} commit races in a row; retry later")

    def __repr__(self) -> str:
        return f"Table({self.name!r}, {self._storage!r}, version={self._state.version})"


def _result_counts(counts: dict) -> dict:
    return {k: counts.get(k, 0) for k in ("inserted", "updated", "deleted", "ignored")}


def _keys_only(state: TableState, data: Any):
    """A delete needs only the key: drop other columns so they are never validated."""
    t = to_arrow_table(data)
    extra = [c for c in t.column_names if c not in state.schema.primary_key and state.schema.has_column(c)]
    return t.drop(extra) if extra else t


def committed(e: BaseException) -> bool:
    """Did the failure happen after the commit file was written? Then its files are live."""
    return getattr(e, "tableformat_committed", None) is not None


class _Restart(Exception):
    """insert_ignore found new duplicates while rebasing: redo the plan on the new state."""


def create_table(uri: str, schema: Schema, partitioning: PartitionSchema | None = None,
                 properties: dict | None = None, storage_options: dict | None = None,
                 name: str | None = None) -> Table:
    """Create a table at `uri`; raises TableExistsError if one is there."""
    storage = Storage(uri, storage_options)
    log = TransactionLog(storage)
    if not isinstance(schema, Schema):
        raise SchemaError(f"schema must be a tf.Schema, got {type(schema).__name__}")
    if log.listing().commits:
        raise TableExistsError(f"a table already exists at {storage!r}")
    if name is None:
        name = posixpath.basename(storage.root.rstrip("/")) or "table"
    name = validate_identifier(name, "table")
    part = resolve(partitioning, schema)
    props = validate_properties(properties)
    meta = {"format_version": FORMAT_VERSION, "table_id": uuid.uuid4().hex, "name": name,
            "schema": schema.to_json(), "partitioning": part.to_json(schema), "properties": props}
    commit = log.try_commit(None, "CREATE TABLE", [{"metadata": meta}], {}, None)
    if commit is None:
        raise TableExistsError(f"a table was created concurrently at {storage!r}")
    state = apply_commit(None, commit)
    return Table(storage, state, [CommitInfo(0, commit["timestamp"], "CREATE TABLE", {}, None)])


def open_table(uri: str, storage_options: dict | None = None) -> Table:
    """Open an existing table; raises TableNotFoundError if there is none."""
    storage = Storage(uri, storage_options)
    log = TransactionLog(storage)
    state, history = log.load()
    return Table(storage, state, history, log)
