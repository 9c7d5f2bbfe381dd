"""A Structured Streaming sink that upserts into a table exactly once (a `foreachBatch` function).

    q = upsert_stream(df, uri, checkpoint, op_column="op")      # or: mode="upsert" / "insert"
    # the same as: df.writeStream.foreachBatch(UpsertSink(uri, op_column="op"))
    #                .option("checkpointLocation", checkpoint).start()

Each micro-batch lands as ONE commit: rows inserted (`mode="insert"`), upserted (`"upsert"`), or
each row's operation from an op column (`op_column`: insert, upsert, update, delete, ... in batch
order; a change feed's batch, which carries `_commit_order` and its version, in that order:
`sink_commit.feed_order`, specs/format.md §9.2), with the table's `sequence_column` honoured (§14). A batch of at most
`local_rows` rows is planned on the driver (one Arrow batch); a larger one goes through the Spark
merge (or insert) job, whose tasks write the files and whose driver commits them once (an insert
batch through the JVM writer when the session has it: `partitioned_insert`'s rule, its log line
naming the path; the driver's commit carries the txn either way). Either way
the batch's history name is the sink's (`STREAM INSERT`, `STREAM UPSERT`, or `STREAM APPLY` with
an op column). The option
checks and the plan and commit of one Arrow batch are `sink_commit.BatchCommitter`'s, shared with
the format (`sink_format`).

Exactly once, as Delta's sink: the commit records the query's id and the batch id as a `txn` action
(app id, version; format 6, specs/format.md §8.2). Before any work the sink reads the table's
latest txn version for its app id (`Snapshot.txn_version`) and skips a batch already there, and the
commit itself requires that no commit records it (`txn_unseen`, §10.1): a batch replayed after a
crash commits nothing, even when the query's checkpoint lost the record of its commit, and of two
runs racing with the same batch the second commits nothing and deletes its files.

The app id is the streaming query's id (kept in its checkpoint, so the same across restarts), read
from the batch's Spark local property `sql.streaming.queryId`. An `app_id` given instead (Delta's
`txnAppId`) belongs to one checkpoint: a query started from a new checkpoint numbers its batches
from 0 again, so with the old app id they would be skipped as done (the sink warns); give it a new
one, as Delta asks. An empty batch commits
nothing. A bad batch (a missing key, a duplicate insert) fails the query with the engine's typed
error and commits nothing.
"""
from __future__ import annotations

import logging
from typing import Any, Sequence

import tableformat as tf

from .connect import is_connect
from .insert import partitioned_insert
from .merge import OPS, mutation_merge
from .sink_commit import MODES, BatchCommitter, feed_order

log = logging.getLogger(__name__)
QUERY_ID = "sql.streaming.queryId"
# Batches up to this many rows are planned on the driver: one Arrow batch, no Spark job.
LOCAL_ROWS = 200_000


class UpsertSink(BatchCommitter):
    """A foreachBatch function writing each micro-batch to the table at `uri` as one commit."""

    def __init__(self, uri: str, mode: str = "upsert", op_column: str | None = None,
                 columns: Sequence[str] | None = None, app_id: str | None = None,
                 storage_options: dict | None = None, local_rows: int = LOCAL_ROWS, max_restarts: int = 3):
        super().__init__(uri, mode, op_column, columns, app_id, storage_options, local_rows, max_restarts)

    def __call__(self, df: Any, batch_id: int) -> tf.WriteResult | None:
        """Write batch `batch_id` as one commit; None when the table has it already or it is empty."""
        txn = (self.query_app_id(df), int(batch_id))
        if self.committed(txn):
            return None
        df = df.persist()           # counted, then written: the source is read once
        try:
            n = df.count()
            if not n:
                return None
            if n <= self.local_rows:
                return self.write_local(df.toArrow(), txn)
            return self._write_spark(df, txn)
        except tf.TxnAlreadyCommittedError:
            return None             # a concurrent run of this batch landed it first
        finally:
            df.unpersist()

    def query_app_id(self, df: Any) -> str:
        """`app_id`, or the streaming query's id (the same across restarts from its checkpoint)."""
        if self.app_id is not None:
            return self.app_id
        if is_connect(df.sparkSession):     # foreachBatch on Spark Connect: no SparkContext to ask
            raise tf.InvalidOptionError("on a Spark Connect session UpsertSink cannot read the streaming query's "
                                        "id: give it an app_id (a name of its own per checkpoint, as Delta's "
                                        "txnAppId), or use writeStream.format('tableformat') with txnAppId")
        qid = df.sparkSession.sparkContext.getLocalProperty(QUERY_ID)
        if not qid:
            raise tf.InvalidOptionError("no streaming query id in this batch's context: give UpsertSink an app_id")
        return qid

    def _write_spark(self, df: Any, txn: tuple[str, int]) -> tf.WriteResult:
        """A large batch: the Spark insert or merge job, committing once with the txn."""
        spark = df.sparkSession
        order = feed_order(df.columns, tf.open_table(self.uri, storage_options=self.storage_options).schema.names)
        if order:           # a change feed: the merge keeps input order per key, so sort it first
            df = df.orderBy(*[df[c].asc_nulls_last() for c in order]).drop(*order)   # as in_feed_order
        kw = dict(storage_options=self.storage_options, max_restarts=self.max_restarts, txn=txn,
                  operation=self.operation)
        if self.mode == "insert":        # the JVM writer when the session can (partitioned_insert logs which)
            return partitioned_insert(spark, df, self.uri, **kw)
        log.info("batch %d of app id %r into %s: Python path (the Spark merge job: %s is not an insert, the one "
                 "kind the JVM writer takes)", txn[1], txn[0], self.uri, self.operation)
        if self.op_column is not None:
            return mutation_merge(spark, df, self.uri, op_column=self.op_column, **kw)
        return mutation_merge(spark, df, self.uri, op="upsert", update_columns=self.columns, **kw)


def upsert_stream(df: Any, uri: str, checkpoint: str, trigger: dict | None = None, query_name: str | None = None,
                  **options) -> Any:
    """Start `df.writeStream` into the table at `uri` through an UpsertSink (its `options`), with
    the given checkpoint location and trigger (e.g. {"availableNow": True}); the StreamingQuery."""
    w = df.writeStream.foreachBatch(UpsertSink(uri, **options)).option("checkpointLocation", checkpoint)
    if trigger:
        w = w.trigger(**trigger)
    if query_name:
        w = w.queryName(query_name)
    return w.start()


__all__ = ["UpsertSink", "upsert_stream", "OPS", "MODES"]
