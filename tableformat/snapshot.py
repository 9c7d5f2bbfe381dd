"""Snapshots: the table as of one version, and the writes planned on it.

Every scan of a Snapshot sees the same state. Every write planned on one
(`write_*`) writes its files now and returns a WriteFragment, committed later
by `transaction` (locally, or by a Spark driver through Table.commit_fragments).
The jobs read what they need from its public properties, never the TableState.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from .format import arguments as arg
from .write.alter import AlterTable, write_alter
from .format.batch import to_arrow_table
from .maintenance.compaction_policy import CompactionAction
from .maintenance.maintenance import compaction_fragment
from .format.errors import InvalidOptionError, MissingColumnError
from .format.keyencoder import encoded_keys
from .log.fragment import WriteFragment
from .write.insert import describe_keys, write_insert
from .read.lookup import key_table, lookup
from .format.metadata import TableState
from .log.mvcc import Timestamp
from .log.txn import txn_version
from .write.rolling_writer import RollingRowSetWriter
from .write.key_rounds import OP_NAMES
from .write.row_ops import write_mutation
from .read.rowset_plan import ReadPlan, read_plan
from .read.scan import Scanner
from .format.schema import Schema
from .format.storage import Storage

__all__ = ["Snapshot"]


class Snapshot:
    """The table as of one version. Every scan of it sees the same state; every write
    planned on it (write_*) becomes a fragment to commit with Table.commit_fragments.
    `state` is the engine's metadata (TableState) for engine modules; jobs use the properties."""

    def __init__(self, storage: Storage, state: TableState):
        self.storage = storage
        self.state = state

    @property
    def table_id(self) -> str:
        """Fixed at creation: tells a re-created table of the same name and path apart."""
        return self.state.table_id

    @property
    def name(self) -> str:
        return self.state.name

    @property
    def properties(self) -> dict:
        return dict(self.state.properties)

    @property
    def history_horizon(self) -> int:
        """The oldest version whose change history is kept (vacuum moves it)."""
        return self.state.history_horizon

    @property
    def version(self) -> int:
        return self.state.version

    def txn_version(self, app_id: str) -> int:
        """The newest transaction version the table records for application `app_id` (a streaming
        query's last committed batch id; the `txn` action, specs/format.md §8.2); -1 if none."""
        arg.string(app_id, "app_id")
        return txn_version(self.state, app_id)

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
        return lookup(self.storage, self.state, keys, columns, missing)

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
        encoded = encoded_keys(st.schema, keys)        # encoded once: hashing a key prefix reuses it
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
                       operation: str = "MERGE", distributed: bool = False) -> WriteFragment:
        """Row operations (one `op` for all rows, or an `op_column`); on_error "fail" or "report".
        distributed=True for one of a distributed job's fragments (a Spark merge's task)."""
        arg.choice(op, "op", list(OP_NAMES), none=True)
        arg.string(op_column, "op_column", none=True)
        columns = arg.names(columns, "columns")
        arg.choice(on_error, "on_error", ("fail", "report"))
        arg.string(operation, "operation")
        arg.boolean(distributed, "distributed")
        data = to_arrow_table(data)             # the input, as Arrow (a pyarrow Table passes through)
        return write_mutation(self.storage, self.state, data, operation,
                              OP_NAMES[op] if op is not None else None, op_column, columns, on_error, distributed)

    def write_compaction(self, action: CompactionAction) -> WriteFragment | None:
        """Run one compaction action; None if there is nothing left for it to do."""
        return compaction_fragment(self.storage, self.state, action)

    def write_alter(self, alter: AlterTable) -> WriteFragment:
        arg.instance(alter, "alter", AlterTable, "a tf.AlterTable (from Table.alter())")
        return write_alter(self.state, alter)

    def __repr__(self) -> str:
        return f"Snapshot(version={self.version}, rowsets={len(self.state.rowsets)})"
