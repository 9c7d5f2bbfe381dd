"""The exactly-once sink as a format: `df.writeStream.format("tableformat")` (spark_jobs/sink.py's rules).

    (df.writeStream.format("tableformat").option("txnAppId", "orders-cdc").option("opColumn", "op")
       .option("checkpointLocation", ckpt).start(uri))

Options: `txnAppId` (required: Delta's option name; Spark hands a Python stream writer neither the
query's id nor its checkpoint, so the application names itself; the name is kept across restarts
from one checkpoint, and a new checkpoint needs a new name, as in Delta), `mode` (upsert | insert), `opColumn`, `columns` (comma-separated: the columns an upsert
updates). Each task stages its rows as one Parquet file under `tablets/_staging/` (files no commit
names: vacuum deletes what a crash leaves there, after its grace period); the commit, on the
driver's side, reads the staged files in partition order and lands the batch as ONE commit with
the `txn` (app id, batch id) through BatchCommitter (spark_jobs/sink_commit.py), then deletes
them. A batch replayed after a crash commits nothing. The whole batch is planned in one process: for batches larger than memory, use
UpsertSink with foreachBatch, whose large batches go through the Spark merge job.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

import tableformat as tf

from .sink_commit import BatchCommitter
from .snapshots import storage_options_from

STAGING = f"{tf.format.TABLETS_DIR}/_staging"


@dataclass
class StagedRows(WriterCommitMessage):
    partition: int
    path: str             # relative to the table root; "" when the task had no rows
    rows: int


def _option(options: dict, name: str) -> str | None:
    return next((v for k, v in options.items() if k.lower() == name.lower()), None)


class TableStreamWriter(DataSourceStreamArrowWriter):
    """Stages each task's rows; commits each micro-batch once, recording (txnAppId, batch id)."""

    def __init__(self, options: dict, overwrite: bool):
        if overwrite:
            raise tf.InvalidOptionError("a stream into a tableformat table appends: use outputMode('append')")
        app_id = _option(options, "txnAppId")
        if not app_id:
            raise tf.InvalidOptionError("a stream into a tableformat table needs option txnAppId (the name its "
                                        "batches are recorded under, kept across restarts), or use "
                                        "spark_jobs.sink.UpsertSink with foreachBatch, which takes the query's id")
        cols = _option(options, "columns")
        self.storage_options = storage_options_from(options)
        self.sink = BatchCommitter(options["path"], _option(options, "mode") or "upsert",
                                   _option(options, "opColumn"), [c.strip() for c in cols.split(",")] if cols else None,
                                   app_id, self.storage_options)
        self.stage = f"{STAGING}/{uuid.uuid4().hex}"

    def _storage(self) -> tf.Storage:
        return tf.Storage(self.sink.uri, self.storage_options)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedRows:
        from pyspark import TaskContext
        part = TaskContext.get().partitionId()
        batches = [b for b in iterator if b.num_rows]
        if not batches:
            return StagedRows(part, "", 0)
        data = pa.Table.from_batches(batches)
        buf = pa.BufferOutputStream()
        pq.write_table(data, buf)
        path = f"{self.stage}/part-{part:05d}-{uuid.uuid4().hex}.parquet"
        self._storage().write(path, buf.getvalue())
        return StagedRows(part, path, data.num_rows)

    def commit(self, messages: list[StagedRows], batchId: int) -> None:
        staged = sorted((m for m in messages if m and m.path), key=lambda m: m.partition)
        storage = self._storage()
        try:
            if staged:
                data = pa.concat_tables([pq.read_table(pa.BufferReader(storage.read(m.path))) for m in staged])
                self.sink.write_arrow(data, batchId)
        finally:
            storage.delete_quietly([m.path for m in staged])

    def abort(self, messages: list[StagedRows], batchId: int) -> None:
        self._storage().delete_quietly([m.path for m in messages if m and m.path])
