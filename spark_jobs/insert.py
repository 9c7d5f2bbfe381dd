"""Partitioned insert: a DataFrame into a table, with the primary key enforced.

Spark sorts, Python streams: Spark range-partitions and sorts the rows by
primary key (by the key columns themselves when it orders them as the engine
does, else by (tablet, encoded key) computed in a first pass), so every key
meets its duplicates (adjacent) in one task and a tablet may span several tasks.
Each task streams its sorted batches through the engine's rowset writers
(`Snapshot.rowset_writer`): keys checked batch by batch, row groups written as
they fill, rowsets rolled at the target size, so a worker holds a batch and a
row group per tablet it writes, whatever the input size. The driver commits the fragments once (`Table.commit_fragments`),
with the engine's key-level requirements.
Duplicates fail the job, are skipped and counted, or are written to an error
path: the caller picks.

Where the session has the JVM connector (with its rowset writers), the rows never
cross into Python: `tableformat.write.SparkInsert` ranges and sorts them by key in
the JVM and writes each task's rowsets there, returning the same fragments, which
this driver commits as before (`jvm_insert_reason` says when it cannot; one log
line names the path that ran).

    python -m spark_jobs.insert --table /data/metrics --input /data/new.parquet [--on-duplicate ignore]
"""
from __future__ import annotations

import argparse
import json
import logging
from typing import Any

import tableformat as tf

from .jvm_paths import configure_s3a, jvm_path, jvm_unreadable, s3a_ready
from .session import get_spark
from .writes import (TABLET_COL, collect_rows, commit_fragments, insert_task, native_key_order,
                     refuse_committed_txn, run_job, sorted_by_key)

log = logging.getLogger(__name__)

# the executor and driver halves live in `writes`; these names stay importable from here
__all__ = ["partitioned_insert", "main", "TABLET_COL", "collect_rows", "commit_fragments",
           "sorted_by_key"]
RESULT_SCHEMA = "fragment string, files string, rows long, duplicates long, sample string"


def partitioned_insert(spark: Any, df: Any, uri: str, on_duplicate: str = "fail", error_path: str | None = None,
                       storage_options: dict | None = None, max_restarts: int = 3,
                       partitions: int | None = None, txn: tuple[str, int] | None = None,
                       operation: str | None = None, path: str = "auto") -> tf.WriteResult:
    """Insert a DataFrame into a table in one commit. on_duplicate: 'fail', 'ignore' or 'collect'.

    A commit that concurrent writers invalidate (an ALTER; with 'ignore', a key of ours inserted
    or a skipped key deleted meanwhile) runs the job again on the new snapshot. `partitions`:
    the number of write tasks (default spark.sql.shuffle.partitions), independent of tablets. `txn`
    (app id, version) records a streaming batch in the commit (`Table.commit_fragments`); `operation`
    is the commit's name in the history (default INSERT, or INSERT_IGNORE; a stream sink's batch: its own).
    `path`: 'auto' (the JVM when the session can, `jvm_insert_reason`), 'jvm' (InvalidOptionError
    naming why it cannot) or 'python'."""
    if path not in ("auto", "jvm", "python"):
        raise tf.InvalidOptionError(f"path must be auto, jvm or python, got {path!r}")
    if operation is not None and (not isinstance(operation, str) or not operation):
        raise tf.InvalidOptionError(f"operation must be a non-empty string, got {operation!r}")
    if on_duplicate not in ("fail", "ignore", "collect"):
        raise tf.InvalidOptionError(f"on_duplicate must be fail, ignore or collect, got {on_duplicate!r}")
    if on_duplicate == "collect" and not error_path:
        raise tf.InvalidOptionError("on_duplicate='collect' needs error_path")
    if on_duplicate == "collect":
        tf.check_outside_table(error_path, uri, "error_path")
    def make_task(version, table_id):
        return insert_task(uri, storage_options, version, table_id, on_duplicate, error_path)

    def finish(table, version, results):
        dups = sum(r["duplicates"] for r in results)
        if dups and on_duplicate == "fail":
            table.storage.delete_quietly([f for r in results for f in r["files"]])
            refuse_committed_txn(table, txn)
            sample = "; ".join(r["sample"] for r in results if r["sample"])[:300]
            raise tf.DuplicateKeyError(f"{dups} key(s) already exist in table {table.name!r} or repeat in the "
                                       f"input (first: {sample}); use on_duplicate='ignore' or 'collect'", dups)
        name = operation or ("INSERT" if on_duplicate == "fail" else "INSERT_IGNORE")
        return commit_fragments(uri, storage_options, [r["fragment"] for r in results if r["fragment"]], name,
                                {"inserted": sum(r["rows"] for r in results), "ignored": dups}, txn, version)
    def check(snap, rows):
        snap.write_insert(rows, "ignore" if on_duplicate == "ignore" else "fail")
    table = tf.open_table(uri, storage_options=storage_options)
    why = "path='python'" if path == "python" else jvm_insert_reason(spark, df, table, storage_options, on_duplicate)
    if why is not None and path == "jvm":
        raise tf.InvalidOptionError(f"the insert cannot run in the JVM: {why}")
    jvm = None
    if why is None:
        log.info("partitioned_insert into %s: JVM path (tableformat.write.SparkInsert)", table.name)

        def jvm(version, table_id):
            return jvm_insert_results(spark, df, table.storage, version, table_id, on_duplicate, partitions)
    else:
        log.info("partitioned_insert into %s: Python path (%s)", table.name, why)
    return run_job(spark, df, uri, storage_options, True, make_task, RESULT_SCHEMA, finish, max_restarts, "insert",
                   partitions, native=True, check=check, jvm=jvm)


def jvm_insert_reason(spark: Any, df: Any, table: tf.Table, storage_options: dict | None,
                      on_duplicate: str) -> str | None:
    """Why this insert cannot run in the JVM (None: it can): the session lacks the connector or
    its rowset writers, the JVM cannot open the table's storage, rejected rows go to an error
    path (written from Python), or the input's columns are not exactly the table's Spark types
    with keys Spark orders as the engine encodes them (`native_key_order`; casts are the Python
    engine's work)."""
    if on_duplicate == "collect":
        return "on_duplicate='collect' writes the rejected rows from Python"
    from .connector import gateway, loaded, spark_insert_available
    why = loaded(spark)
    if why is not None:
        return why
    if gateway(spark) is None:
        return "the session has no py4j gateway (Spark Connect)"
    if not spark_insert_available(spark):
        return "the connector has no JVM rowset writer"
    storage = table.storage
    s3 = s3a_ready(spark, storage)
    why = jvm_unreadable(storage, ["s3", "s3a"] if s3 else [])
    if why is not None:
        return why
    schema = table.schema
    if native_key_order(df, schema, len(table.snapshot().tablet_ids)) is None:
        return "the key columns are not given as types Spark orders as the engine, or the table has many tablets"
    from .snapshots import spark_type
    given = {f.name: f.dataType for f in df.schema.fields}
    if set(given) != set(schema.names):
        return "the input's columns are not exactly the table's"
    for c in schema.columns:
        if given[c.name] != spark_type(c.type):       # varchar: a string, cut to its length in the JVM
            return f"column {c.name!r} is given as {given[c.name].simpleString()}, not as the table's type"
    if s3:
        configure_s3a(spark, storage, storage_options)
    return None


def jvm_insert_results(spark: Any, df: Any, storage: tf.Storage, version: int, table_id: str | None,
                       on_duplicate: str, partitions: int | None) -> list[dict]:
    """The insert's tasks run in the JVM (`tableformat.write.SparkInsert.run`) on `version`: one
    result per task, as `insert_task`'s (fragment and files decoded)."""
    from .connector import spark_insert
    from .errors import typed_errors
    with typed_errors():
        out = spark_insert(spark, df, jvm_path(storage, "").rstrip("/"), version, table_id, on_duplicate,
                           int(partitions or 0))
    return [json.loads(r) for r in out]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m spark_jobs.insert", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", required=True, help="table URI (local path, file://, s3://, hdfs://)")
    ap.add_argument("--input", required=True, help="input data (Parquet path Spark can read)")
    ap.add_argument("--on-duplicate", default="fail", choices=["fail", "ignore", "collect"])
    ap.add_argument("--error-path", help="where duplicates go with --on-duplicate collect")
    ap.add_argument("--storage-options", help="JSON fsspec storage options for the table")
    ap.add_argument("--partitions", type=int, help="write tasks (default: spark.sql.shuffle.partitions)")
    ap.add_argument("--master", help="Spark master (default: local[2], or what spark-submit sets)")
    args = ap.parse_args(argv)
    spark = get_spark("tableformat-insert", args.master)
    opts = json.loads(args.storage_options) if args.storage_options else None
    res = partitioned_insert(spark, spark.read.parquet(args.input), args.table, args.on_duplicate,
                             args.error_path, opts, partitions=args.partitions)
    print(f"inserted {res.inserted} rows, ignored {res.ignored}, version {res.version}")


if __name__ == "__main__":
    main()
