"""One micro-batch, planned in this process and committed once with its `txn` (app id, batch id).

The part of the exactly-once sink (spark_jobs/sink.py, sink_format.py) that needs no Spark job:
option checks, the txn check before any work (`Snapshot.txn_version`), and the plan and commit of
an Arrow batch, planned again when a concurrent commit invalidates it (RESTART). The commit
requires that no commit records the batch (`txn_unseen`, specs/format.md §8.2, §10.1).
"""
from __future__ import annotations

import logging
from typing import Sequence

import pyarrow.compute as pc

import tableformat as tf

log = logging.getLogger(__name__)

MODES = ("upsert", "insert")
# A micro-batch's name in the table's history, the same whether it is planned here or by a Spark
# job (sink.py passes it to them): a history reader tells stream batches from other writes.
STREAM_INSERT, STREAM_UPSERT, STREAM_APPLY = "STREAM INSERT", "STREAM UPSERT", "STREAM APPLY"
# A change feed's order (Table.changes, specs/format.md §9.2): its commit version (Delta's name, or
# ours) and `_commit_order`, the change's place in its commit.
COMMIT_ORDER, FEED_VERSIONS = "_commit_order", ("_commit_version", "_version")


def feed_order(names: Sequence[str], table_columns: Sequence[str]) -> list[str]:
    """The columns a batch is applied in order of: a change feed's (version, `_commit_order`) when
    the batch carries them as feed columns, not the table's own; [] for any other batch, and for a
    table with a `_commit_order` column (the batch's is then data). A feed's micro-batch gathers
    its parts (one per rowset) in no particular order, so one key's changes (a delete, then the key
    inserted again) arrive out of version order and must be sorted back."""
    if COMMIT_ORDER not in names or COMMIT_ORDER in table_columns:
        return []
    version = [c for c in FEED_VERSIONS if c in names and c not in table_columns]
    if not version:
        taken = [c for c in FEED_VERSIONS if c in names]
        why = (f": the table's own column(s) {taken} take the batch's as data; read the feed with "
               "changeFeedColumns=\"delta\" (_commit_version) or rename the table's column") if taken else \
            ": keep both, they order a key's changes"
        raise tf.MissingColumnError(f"the batch has a change feed's {COMMIT_ORDER!r} but not its version column "
                                    f"({' or '.join(FEED_VERSIONS)}){why}")
    return [version[0], COMMIT_ORDER]


def in_feed_order(data, table_columns: Sequence[str]):
    """Arrow rows sorted by their change feed order (stable; `feed_order`), those columns dropped."""
    cols = feed_order(data.column_names, table_columns)
    if not cols:
        return data
    idx = pc.sort_indices(data.select(cols), sort_keys=[(c, "ascending") for c in cols])
    return data.take(idx).drop(cols)


class BatchCommitter:
    """Writes a micro-batch of Arrow rows to the table at `uri` as one commit recording its txn."""

    def __init__(self, uri: str, mode: str = "upsert", op_column: str | None = None,
                 columns: Sequence[str] | None = None, app_id: str | None = None,
                 storage_options: dict | None = None, local_rows: int = 0, max_restarts: int = 3):
        if mode not in MODES:
            raise tf.InvalidOptionError(f"mode must be one of {MODES}, got {mode!r}")
        if op_column is not None and (not isinstance(op_column, str) or not op_column):
            raise tf.InvalidOptionError(f"op_column must be a column name, got {op_column!r}")
        if op_column is not None and mode != "upsert":
            raise tf.InvalidOptionError("op_column gives each row's operation: leave mode at its default")
        if app_id is not None and (not isinstance(app_id, str) or not app_id):
            raise tf.InvalidOptionError(f"app_id must be a non-empty string, got {app_id!r}")
        for name, v in (("local_rows", local_rows), ("max_restarts", max_restarts)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise tf.InvalidOptionError(f"{name} must be an integer >= 0, got {v!r}")
        if columns is not None and (mode == "insert" or op_column is not None):
            raise tf.InvalidOptionError("columns (the columns an upsert updates) go with mode='upsert' alone")
        self.uri, self.mode, self.op_column, self.columns = uri, mode, op_column, columns
        self.app_id, self.storage_options = app_id, storage_options
        self.local_rows, self.max_restarts = local_rows, max_restarts
        tf.open_table(uri, storage_options=storage_options)      # a missing table fails at start, not in a batch

    def write_arrow(self, data, batch_id: int, app_id: str | None = None) -> tf.WriteResult | None:
        """Batch `batch_id` given as Arrow rows (the `tableformat` stream format's commit): one
        commit planned here, or None when the table has the batch already or it is empty."""
        txn = (app_id or self.app_id, int(batch_id))
        if not txn[0]:
            raise tf.InvalidOptionError("write_arrow needs an app_id")
        if not data.num_rows or self.committed(txn):
            return None
        try:
            return self.write_local(data, txn)
        except tf.TxnAlreadyCommittedError:
            return None

    def committed(self, txn: tuple[str, int]) -> bool:
        """Does the table hold batch txn[1] of app txn[0]? A newer batch recorded than the one
        replayed is warned about: an app id reused by a query with a new checkpoint (whose batch
        ids start again at 0) has its batches skipped, so each checkpoint needs its own app id."""
        seen = tf.open_table(self.uri, storage_options=self.storage_options).snapshot().txn_version(txn[0])
        if seen > txn[1]:
            log.warning("batch %d of app id %r skipped: the table already records batch %d of it. If this "
                        "query started from a new checkpoint, give it a new app id (txnAppId)", txn[1], txn[0], seen)
        return seen >= txn[1]

    @property
    def operation(self) -> str:
        """The history's name for each batch this sink commits, whichever path writes it."""
        if self.mode == "insert":
            return STREAM_INSERT
        return STREAM_APPLY if self.op_column is not None else STREAM_UPSERT

    def plan(self, snap: tf.Snapshot, data) -> tf.WriteFragment:
        data = in_feed_order(data, snap.schema.names)
        if self.mode == "insert":
            return snap.write_insert(data, "fail")
        if self.op_column is not None:
            return snap.write_mutation(data, op_column=self.op_column, operation=self.operation)
        return snap.write_mutation(data, "upsert", columns=self.columns, operation=self.operation)

    def write_local(self, data, txn: tuple[str, int]) -> tf.WriteResult | None:
        """Plan on the driver's latest snapshot and commit with the txn; plan again on RESTART."""
        for _ in range(self.max_restarts + 1):
            table = tf.open_table(self.uri, storage_options=self.storage_options)
            if table.snapshot().txn_version(txn[0]) >= txn[1]:
                return None
            try:
                frag = self.plan(table.snapshot(), data)
            except (tf.DuplicateKeyError, tf.KeyNotFoundError):
                if self.committed(txn):     # a racing run of this batch landed it while we planned
                    return None
                raise
            try:
                return table.commit_fragments([frag], self.operation, txn=txn)
            except tf.RestartRequired:
                continue
        raise tf.CommitConflictError(f"batch {txn[1]} conflicted with concurrent commits "
                                     f"{self.max_restarts + 1} times")
