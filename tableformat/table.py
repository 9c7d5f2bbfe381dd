"""The public facade (Kudu's tablet.cc): Table, create_table and open_table. A Table is a thin
face on a TableHandle (`handle`), which owns the cached state. Reads go to a Snapshot; every
write is one shape: a plan on a Snapshot (`insert`, `row_ops`, `alter`, `restore`, `tags`) run
by `transaction.run`, where requirements (`requirements`) and the matrix (`matrix`) decide a lost
race. Compaction runs in `maintenance`, vacuum in `vacuum`, change history in `changes`."""
from __future__ import annotations

import posixpath
import uuid
from typing import Any, Callable, Sequence

import pyarrow as pa

from .format import arguments as arg
from .log import changes as change_feed, mvcc
from .log.changes import ChangePlan
from .maintenance import maintenance, tags as tagging, vacuum as vacuuming
from .log.actions import CreateTable, apply_commit
from .write.alter import AlterTable
from .format.batch import to_arrow_table
from .maintenance.check import CheckReport, check
from .maintenance.compaction_policy import CompactionAction, CompactionPlan, CompactionPolicy
from .interop.delta_mirror import MirrorResult, check_mirror_path, mirror_delta
from .interop.iceberg_mirror import IcebergMirrorResult, mirror_iceberg
from .format.errors import ContradictoryFragmentsError, SchemaError, TableExistsError
from .log.fragment import WriteFragment
from .log.handle import TableHandle
from .read.inspect import KINDS as INSPECT_KINDS, inspect
from .format.metadata import CommitInfo, TableState, validate_properties, written_format_version
from .format.partition import PartitionSchema, resolve
from .maintenance.restore import plan_restore
from .write.result import WriteResult, write_result
from .read.scan import Scanner
from .format.schema import Schema, validate_identifier
from .log.sequence import check_sequence_column
from .snapshot import Snapshot
from .format.storage import Storage
from .log.transaction import CommitProperties, Transaction, run
from .log.txlog import TransactionLog
from .log.txn import checked_txn, with_txn
from .maintenance.vacuum import VacuumPlan, VacuumResult

__all__ = ["Table", "create_table", "open_table"]
BUDGET = maintenance.DEFAULT_BUDGET_BYTES


class Table:
    """A handle on one table. Cheap to create; safe to share across threads for reads."""

    def __init__(self, storage: Storage, state: TableState, history: list[CommitInfo],
                 log: TransactionLog | None = None, properties: CommitProperties | None = None):
        self.handle = TableHandle(storage, state, history, log)
        self.commit_properties = properties or CommitProperties()

    # --- state ------------------------------------------------------------------------
    def refresh(self) -> TableState:
        """Catch up with commits made since this handle last looked (one read when there are none)."""
        return self.handle.refresh()

    uri = property(lambda self: self.handle.uri)
    storage = property(lambda self: self.handle.storage, doc="The table's file system: what distributed jobs "
                       "use to delete the files of a failed write.")
    log = property(lambda self: self.handle.log, doc="The table's transaction log (specs/format.md §8).")
    name = property(lambda self: self.handle.state.name)
    table_id = property(lambda self: self.handle.state.table_id,
                        doc="Fixed at creation: tells a re-created table of the same name and path apart.")
    schema = property(lambda self: self.refresh().schema)
    version = property(lambda self: self.refresh().version)
    properties = property(lambda self: dict(self.handle.state.properties))
    state = property(lambda self: self.refresh())

    def history(self) -> list[CommitInfo]:
        self.refresh()
        return list(self.handle.history)

    def snapshot(self, as_of: Any = None) -> Snapshot:
        """A fixed view of the table: latest, or as of a version / Timestamp / datetime / ISO string / tag."""
        return Snapshot(self.storage, self.handle.state_at(as_of))

    def ancient_history_mark(self) -> int | None:
        """Timestamps below this are outside the retained history (None: retention disabled)."""
        return mvcc.ancient_history_mark(self.handle.state)

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
        base data, the columns written), `_commit_order` (0: a change to a row the commit found,
        1: a row it inserted; (`_version`, `_commit_order`) orders one key's changes, specs/format.md
        §9.2) and, with before_image=True, `_before_<column>`.
        mode="all" gives every change in commit order; mode="net" one net change
        per key. images="changed" fills only the key and the changed cells of an
        update, which needs no base data at all. skipped=True (mode="all") adds the
        input rows that writes skipped, with `_op` "skipped" and a `_reason` column
        ("stale_sequence": an ordered upsert's sequence was below the row's).
        """
        return change_feed.changes(self.handle, start, end, mode, before_image, images, skipped)

    def change_plan(self, start: Any, end: Any = None, mode: str = "all", before_image: bool = False,
                    images: str = "full", skipped: bool = False) -> ChangePlan:
        """changes() planned as independent, picklable parts (from the log alone), so a cluster
        computes one part per task with compute_changes(storage, plan, part): the parts' rows,
        together, are changes()'s rows. Mode "net" parts are key-closed (tablets)."""
        return change_feed.plan_changes(self.handle, start, end, mode, before_image, images, skipped)

    def inspect(self, kind: str, as_of: Any = None) -> pa.Table:
        """A metadata table of the snapshot, from the log alone: `kind` is history, tablets,
        rowsets, deltas, files or tags (one row per item; see tableformat/read/inspect.py)."""
        arg.choice(kind, "kind", list(INSPECT_KINDS))
        return inspect(self.snapshot(as_of).state, self.handle.history, kind)

    def to_arrow(self, as_of: Any = None):
        return self.scan(as_of=as_of).to_arrow()

    # --- writes: a plan on a snapshot, run by transaction.run ---------------------------
    def _write(self, operation: str, plan: Callable[[Snapshot], WriteFragment | None]) -> WriteResult:
        commit, frag = run(self.handle, operation, lambda st: plan(Snapshot(self.storage, st)), self.commit_properties)
        return write_result(commit, frag, self.handle.state, operation)

    def insert(self, data: Any) -> WriteResult:
        """Insert rows; any key that exists (or repeats in the batch) raises DuplicateKeyError."""
        data = to_arrow_table(data)             # once: a write may plan more than once
        return self._write("INSERT", lambda s: s.write_insert(data, "fail"))

    def insert_ignore(self, data: Any) -> WriteResult:
        """Insert rows, skipping keys that exist or repeat; `ignored` counts them."""
        data = to_arrow_table(data)
        return self._write("INSERT_IGNORE", lambda s: s.write_insert(data, "ignore"))

    def update(self, data: Any, columns: Sequence[str] | None = None) -> WriteResult:
        """Update existing rows: key columns plus the columns to change (`columns`: a list of names,
        one string being one name; None: every non-key column given). Missing keys raise
        KeyNotFoundError."""
        return self._mutate(data, "UPDATE", "update", None, columns)

    def update_ignore(self, data: Any, columns: Sequence[str] | None = None) -> WriteResult:
        return self._mutate(data, "UPDATE_IGNORE", "update_ignore", None, columns)

    def delete(self, data: Any) -> WriteResult:
        """Delete rows by key (other columns are ignored). Missing keys raise KeyNotFoundError."""
        return self._mutate(data, "DELETE", "delete", None, None, keys_only=True)

    def delete_ignore(self, data: Any) -> WriteResult:
        return self._mutate(data, "DELETE_IGNORE", "delete_ignore", None, None, keys_only=True)

    def upsert(self, data: Any, columns: Sequence[str] | None = None) -> WriteResult:
        """Insert new keys; update the given columns of existing ones."""
        return self._mutate(data, "UPSERT", "upsert", None, columns)

    def apply(self, data: Any, op_column: str = "op") -> WriteResult:
        """A mixed batch, as a Kudu session: `op_column` names each row's operation
        (insert, insert_ignore, update, update_ignore, delete, delete_ignore, upsert);
        operations on one key apply in batch order."""
        arg.string(op_column, "op_column")
        return self._mutate(data, "APPLY", None, op_column, None)

    def _mutate(self, data: Any, operation: str, op: str | None, op_column: str | None,
                columns: Sequence[str] | None, keys_only: bool = False) -> WriteResult:
        columns = arg.names(columns, "columns")
        data = to_arrow_table(data)
        return self._write(operation, lambda s: s.write_mutation(_keys_only(s.schema, data) if keys_only else data,
                                                                 op, op_column, columns, operation=operation))

    def restore(self, as_of: Any) -> WriteResult:
        """One commit making the current rows equal to the rows as of `as_of` (a version,
        timestamp or tag). Only keys changed since are written, as ordinary row operations, so
        every version in between still reads back; RestoreError across a schema change."""
        plan = plan_restore(self.handle, as_of)
        return self._write("RESTORE", lambda s: plan(s.state))

    def tag(self, name: str, as_of: Any = None) -> WriteResult:
        """Name a version (latest, or as of a version / timestamp / tag): `as_of=name` reads it
        from then on, and compaction and vacuum keep the history it needs past history_max_age.
        TagExistsError if the name is taken; HistoryExpiredError if its history is already gone."""
        plan = tagging.plan_tag(self.handle, name, as_of)
        return self._write("TAG", lambda s: plan(s.state))

    def untag(self, name: str) -> WriteResult:
        """Remove a tag; the history only it needed goes at the next compactions and vacuum."""
        plan = tagging.plan_untag(name)
        return self._write("UNTAG", lambda s: plan(s.state))

    def tags(self) -> dict[str, int]:
        """Tag name -> version, oldest version first."""
        return tagging.tags(self.handle)

    def alter(self) -> AlterTable:
        """Collect schema and range-partition changes; they commit together when the `with` ends."""
        return AlterTable(lambda a: self._write("ALTER TABLE", lambda s: s.write_alter(a)))

    def commit_fragments(self, fragments: Sequence[WriteFragment | dict], operation: str | None = None,
                         properties: CommitProperties | None = None, counts: dict | None = None,
                         txn: tuple[str, int] | None = None) -> WriteResult:
        """Commit fragments written elsewhere (Spark executors) as one commit, checking exactly
        the requirements a local write checks; `counts` (a job's totals) replace the fragments'.
        Fragments without actions still count: their requirements hold. A plan the winners
        invalidated raises `RestartRequired` (a CommitConflictError): plan the job again.
        `txn=(app_id, version)` records an application transaction (a streaming batch) in the
        commit: TxnAlreadyCommittedError, with nothing written, if the table has it already or a
        concurrent commit lands it first (specs/format.md §8.2)."""
        arg.sequence(fragments, "fragments")
        arg.string(operation, "operation", none=True)
        properties = arg.instance(properties, "properties", CommitProperties, "a tf.CommitProperties", none=True)
        arg.mapping(counts, "counts")
        txn = None if txn is None else checked_txn(txn)
        frags = [WriteFragment.from_json(f) if isinstance(f, dict) else f for f in fragments]
        try:
            frag = WriteFragment.combine(frags, operation, counts)
            frag = frag if txn is None else with_txn(frag, *txn)
        except ContradictoryFragmentsError:       # nothing of it lands, its files go (§10.3)
            self.storage.delete_quietly([p for f in frags if isinstance(f, WriteFragment) for p in f.files])
            raise
        if frag.empty:
            return write_result(None, frag, self.handle.state_at(frag.read_version), frag.operation)
        commit = Transaction(self.handle, frag, properties or self.commit_properties).commit()
        return write_result(commit, frag, self.handle.state, frag.operation)

    # --- maintenance, history and checks ------------------------------------------------
    def compaction_plan(self, budget_bytes: int = BUDGET, policy: CompactionPolicy | None = None) -> CompactionPlan:
        """What compaction would do now: scored actions chosen under the byte budget (Kudu's policy)."""
        return maintenance.compaction_plan(self.handle, budget_bytes, policy)

    def compact(self, plan: CompactionPlan | None = None, budget_bytes: int = BUDGET,
                progress=None) -> list[WriteResult]:
        """Run a plan (the policy's when None), each action in its own commit."""
        return maintenance.compact(self.handle, plan, budget_bytes, progress)

    def compact_action(self, action: CompactionAction) -> WriteResult | None:
        """Run one compaction action in one commit; None when it has nothing left to do or gave
        up because its inputs changed concurrently (the next plan sees the new state)."""
        return maintenance.compact_action(self.handle, action)

    def vacuum_plan(self, retain_seconds: float | None = None, grace_seconds: float = 3600) -> VacuumPlan:
        """What vacuum would do now: the history horizon it records and the files it deletes."""
        arg.seconds(retain_seconds, "retain_seconds", none=True)
        arg.seconds(grace_seconds, "grace_seconds")
        return vacuuming.plan(self.storage, self.log, self.refresh(), self.handle.history, retain_seconds,
                              grace_seconds)

    def vacuum(self, retain_seconds: int | None = None, dry_run: bool = False,
               grace_seconds: float = 3600) -> VacuumResult:
        """Delete files no snapshot within the retention references, older than the grace period."""
        arg.boolean(dry_run, "dry_run")
        p = self.vacuum_plan(retain_seconds, grace_seconds)
        if dry_run:
            return VacuumResult(True, [f for f, _ in p.files], p.bytes, p.retain_from)
        return vacuuming.vacuum(self.handle, p, grace_seconds, self.commit_properties)

    def mirror_delta(self, path: str, storage_options: dict | None = None, compact: bool = True) -> MirrorResult:
        """Write one Delta Lake commit at `path` so that Delta readers see this table's latest
        version, reading our base files in place (zero-copy): column mapping to our `c<id>`
        fields, deletes as deletion vectors. Rowsets Delta cannot express are compacted first
        (`compact=False` refuses instead); the result names them. Our vacuum keeps every file
        the latest mirrored version references. specs/format.md §15."""
        arg.boolean(compact, "compact")
        check_mirror_path(path, self.uri)
        return mirror_delta(self.handle, path, storage_options, compact)

    def mirror_iceberg(self, path: str, storage_options: dict | None = None, compact: bool = True,
                       keep_snapshots: int | None = None) -> IcebergMirrorResult:
        """Add one snapshot to an Iceberg table (format v2, Hadoop-catalog layout) at `path` so
        that Iceberg readers see this table's latest version, reading our base files in place
        (zero-copy): field ids = our column IDs, deletes as position-delete files. Earlier runs
        stay as earlier snapshots. Rowsets Iceberg cannot express are compacted first
        (`compact=False` refuses instead); the result names them. Our vacuum keeps every file
        a retained mirror snapshot references; `keep_snapshots=N` keeps only the N newest (the
        older ones' files are then ours to vacuum). specs/format.md §16."""
        arg.boolean(compact, "compact")
        arg.integer(keep_snapshots, "keep_snapshots", lo=1, none=True)
        check_mirror_path(path, self.uri, "Iceberg")
        return mirror_iceberg(self.handle, path, storage_options, compact, keep_snapshots)

    def check(self, deep: bool = True) -> CheckReport:
        """Verify the table's invariants; the report lists every violation found. deep=True also
        decodes every base data page, so page checksums catch bit rot."""
        arg.boolean(deep, "deep")
        return check(self.storage, self.log, self.refresh(), deep)

    def column(self, name: str, type: str | None = None, nullable: bool | None = None):
        """The current column called `name`; ColumnNotFoundError if absent or not of the expected type/nullability."""
        return self.refresh().schema.expect_column(name, type, nullable, self.name)

    def __repr__(self) -> str:
        return f"Table({self.name!r}, {self.storage!r}, version={self.handle.state.version})"


def _keys_only(schema: Schema, t: pa.Table) -> pa.Table:
    """A delete needs only the key: drop other columns so they are never validated."""
    extra = [c for c in t.column_names if c not in schema.primary_key and schema.has_column(c)]
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
    name = validate_identifier(posixpath.basename(storage.root.rstrip("/")) or "table" if name is None else name,
                               "table")
    part = resolve(partitioning, schema)
    props = validate_properties(properties)
    check_sequence_column(schema, props)
    meta = {"format_version": written_format_version(), "table_id": uuid.uuid4().hex, "name": name,
            "schema": schema.to_json(), "partitioning": part.to_json(schema), "properties": props}
    commit = log.try_commit(None, "CREATE TABLE", [CreateTable(meta)], {}, None)
    if commit is None:
        raise TableExistsError(f"a table was created concurrently at {storage!r}")
    return Table(storage, apply_commit(None, commit), [CommitInfo(0, commit.timestamp, "CREATE TABLE", {}, None)],
                 log)


def open_table(uri: str, storage_options: dict | None = None) -> Table:
    """Open an existing table; raises TableNotFoundError if there is none."""
    storage = Storage(uri, storage_options)
    log = TransactionLog(storage)
    state, history = log.load()
    return Table(storage, state, history, log)
