"""The two halves of a distributed write: executors write fragments, the driver commits them.

Executors plan their rows on the job's snapshot with the engine (`Snapshot.write_insert`),
write rowsets and return a write fragment (JSON); the driver commits all fragments at once
with `Table.commit_fragments`, which checks the engine's own requirements.
"""
from __future__ import annotations

import json
import uuid
from typing import Any, Callable

import numpy as np
import pyarrow as pa

import tableformat as tf

from .snapshots import open_snapshot

TABLET_COL = "_tf_tablet"


def write_partition(uri: str, storage_options: dict | None, version: int, data: pa.Table | None,
                    on_duplicate: str = "fail", error_path: str | None = None, table_id: str | None = None) -> dict:
    """Executor side: validate, check keys and write rowsets for the rows of one task; the
    result holds the task's write fragment (JSON) and what it rejected."""
    out = {"fragment": None, "files": [], "rows": 0, "duplicates": 0, "sample": ""}
    if data is None or data.num_rows == 0:
        return out
    snap = open_snapshot(uri, storage_options, version, table_id)
    frag = snap.write_insert(data.drop([c for c in data.column_names if c == TABLET_COL]),
                             on_duplicate="fail" if on_duplicate == "fail" else "ignore", report=True,
                             distributed=True, write_when_rejected=on_duplicate != "fail")
    batch, dup_rows = frag.rejected
    out["duplicates"] = int(len(dup_rows))
    if len(dup_rows):
        out["sample"] = snap.describe_rows(batch, dup_rows)
        if on_duplicate == "collect":
            collect_rows(error_path, batch, dup_rows)
    out.update(fragment=frag.to_json(), files=list(frag.files), rows=frag.counts.get("inserted", 0))
    return out


def collect_rows(error_path: str, batch: pa.Table, rows: np.ndarray) -> None:
    """Write rejected rows to the error output, one uniquely named Parquet file per task."""
    import pyarrow.parquet as pq
    sink = pa.BufferOutputStream()
    pq.write_table(batch.take(pa.array(rows)), sink)
    tf.Storage(error_path).write(f"part-{uuid.uuid4().hex}.parquet", sink.getvalue())


def commit_fragments(uri: str, storage_options: dict | None, fragments: list[dict], operation: str,
                     counts: dict) -> tf.WriteResult:
    """Driver side: one commit of every task's fragment, with the engine's key-level requirements
    (a key inserted concurrently fails it; a job planned on a definition since changed restarts).
    `counts` are the job's totals; with nothing to commit, nothing is."""
    table = tf.open_table(uri, storage_options=storage_options)
    frags = [f for f in (tf.WriteFragment.from_json(d) for d in fragments) if not f.empty]
    if not frags:
        st = table.state
        return tf.WriteResult(st.version, tf.Timestamp(st.timestamp), operation,
                              **{k: counts.get(k, 0) for k in ("inserted", "updated", "deleted", "ignored")})
    for f in frags:
        f.operation, f.counts = operation, {}
    frags[0].counts = dict(counts)
    return table.commit_fragments(frags, operation)


def commit_rowsets(uri: str, storage_options: dict | None, version: int, rowset_lists: list, file_lists: list,
                   operation: str, counts: dict) -> tf.WriteResult:
    """Driver side, from rowset descriptors (the log's JSON) written on snapshot `version`: one
    fragment whose commit checks their keys against each other and against concurrent commits."""
    ignore = operation == "INSERT_IGNORE"
    frag = {"operation": operation, "read_version": version,
            "actions": [{"add_rowset": r} for lst in rowset_lists for r in lst],
            "files": [f for lst in file_lists for f in lst], "counts": dict(counts),
            "requirements": [{"kind": "definition_unchanged", "on_change": "restart"},
                             {"kind": "keys_absent", "keys": {}, "own_rowsets": True,
                              "on_clash": "restart" if ignore else "fail"}]}
    return commit_fragments(uri, storage_options, [frag], operation, counts)


def tablet_of(uri: str, storage_options: dict | None, version: int, strict: bool = True,
              table_id: str | None = None):
    """A mapInArrow function adding each row's tablet ordinal (-1: in no range partition)."""
    def fn(batches):
        snap = open_snapshot(uri, storage_options, version, table_id)
        for b in batches:
            ordinal = snap.route(pa.Table.from_batches([b]), strict=strict)
            yield pa.RecordBatch.from_arrays(list(b.columns) + [pa.array(ordinal, pa.int32())],
                                             names=list(b.schema.names) + [TABLET_COL])
    return fn


def route_by_tablet(spark: Any, df: Any, table: Any, uri: str, storage_options: dict | None, version: int,
                    strict: bool):
    """The DataFrame with each row's tablet, shuffled so every tablet is in exactly one partition."""
    from pyspark.sql.types import IntegerType, StructField, StructType
    ntablets = len(table.snapshot(version).tablet_ids)
    routed = df.mapInArrow(tablet_of(uri, storage_options, version, strict, table.table_id),
                           StructType(df.schema.fields + [StructField(TABLET_COL, IntegerType())]))
    return routed.repartition(max(1, min(ntablets, int(spark.conf.get("spark.sql.shuffle.partitions")))),
                              TABLET_COL)


def run_job(spark: Any, df: Any, uri: str, storage_options: dict | None, strict: bool,
            partition: Callable, result_schema: str, finish: Callable, max_restarts: int, what: str):
    """A distributed write: plan on a fresh snapshot, shuffle by tablet, run `partition(version,
    table_id, rows)` per task (its dict, with the fragment and files as JSON, is one result row),
    then `finish(table, version, results)` commits. RestartRequired runs the job again."""
    for _attempt in range(max_restarts + 1):
        table = tf.open_table(uri, storage_options=storage_options)
        version, table_id = table.version, table.table_id
        shuffled = route_by_tablet(spark, df, table, uri, storage_options, version, strict)

        def task(batches, version=version, table_id=table_id):
            tables = [pa.Table.from_batches([b]) for b in batches]
            r = partition(version, table_id, pa.concat_tables(tables) if tables else None)
            yield pa.RecordBatch.from_pylist([{**r, "fragment": json.dumps(r["fragment"]),
                                               "files": json.dumps(r["files"])}])
        rows = shuffled.mapInArrow(task, result_schema).collect()       # metadata only: one row per task
        results = [{**r.asDict(), "fragment": json.loads(r["fragment"]), "files": json.loads(r["files"])}
                   for r in rows]
        try:
            return finish(table, version, results)
        except tf.RestartRequired:
            continue            # its files are deleted; plan again on the new snapshot
    raise tf.CommitConflictError(f"the {what} conflicted with concurrent commits {max_restarts + 1} times")
