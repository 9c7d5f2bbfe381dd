"""Partitioned insert: a DataFrame into a table, with the primary key enforced.

Rows are assigned to tablets and shuffled by tablet, so every key meets its
duplicates in one task. Each task plans its rows on the job's snapshot with the
engine (`Snapshot.write_insert`): it sorts them, checks keys and writes rowsets,
and returns a write fragment. The driver commits the fragments once
(`Table.commit_fragments`), with the engine's key-level requirements.
Duplicates fail the job, are skipped and counted, or are written to an error
path: the caller picks.

    python -m spark_jobs.insert --table /data/metrics --input /data/new.parquet [--on-duplicate ignore]
"""
from __future__ import annotations

import argparse
import json
from typing import Any

import pyarrow as pa

import tableformat as tf

from .session import get_spark
from .snapshots import open_snapshot
from .writes import TABLET_COL, collect_rows, commit_fragments, commit_rowsets, write_partition  # noqa: F401  (re-exported)
RESULT_SCHEMA = "fragment string, files string, rows long, duplicates long, sample string"


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


def partitioned_insert(spark: Any, df: Any, uri: str, on_duplicate: str = "fail", error_path: str | None = None,
                       storage_options: dict | None = None, max_restarts: int = 3) -> tf.WriteResult:
    """Insert a DataFrame into a table in one commit. on_duplicate: 'fail', 'ignore' or 'collect'.

    A commit that concurrent writers invalidate (an ALTER; with 'ignore', a key of ours inserted
    or a skipped key deleted meanwhile) runs the job again on the new snapshot."""
    if on_duplicate not in ("fail", "ignore", "collect"):
        raise tf.InvalidOptionError(f"on_duplicate must be fail, ignore or collect, got {on_duplicate!r}")
    if on_duplicate == "collect" and not error_path:
        raise tf.InvalidOptionError("on_duplicate='collect' needs error_path")
    for _attempt in range(max_restarts + 1):
        table = tf.open_table(uri, storage_options=storage_options)
        version, table_id = table.version, table.table_id
        shuffled = route_by_tablet(spark, df, table, uri, storage_options, version, strict=True)

        def task(batches, version=version, table_id=table_id):
            tables = [pa.Table.from_batches([b]) for b in batches]
            data = pa.concat_tables(tables) if tables else None
            r = write_partition(uri, storage_options, version, data, on_duplicate, error_path, table_id)
            yield pa.RecordBatch.from_pylist([{"fragment": json.dumps(r["fragment"]), "files": json.dumps(r["files"]),
                                               "rows": r["rows"], "duplicates": r["duplicates"],
                                               "sample": r["sample"]}])
        results = shuffled.mapInArrow(task, RESULT_SCHEMA).collect()   # metadata only: one row per task
        dups = sum(r["duplicates"] for r in results)
        fragments = [json.loads(r["fragment"]) for r in results if r["fragment"] != "null"]
        files = [f for r in results for f in json.loads(r["files"])]
        if dups and on_duplicate == "fail":
            table.storage.delete_quietly(files)
            sample = "; ".join(r["sample"] for r in results if r["sample"])[:300]
            raise tf.DuplicateKeyError(f"{dups} key(s) already exist in table {table.name!r} or repeat in the "
                                       f"input (first: {sample}); use on_duplicate='ignore' or 'collect'", dups)
        rows = sum(r["rows"] for r in results)
        operation = "INSERT" if on_duplicate == "fail" else "INSERT_IGNORE"
        try:
            return commit_fragments(uri, storage_options, fragments, operation, {"inserted": rows, "ignored": dups})
        except tf.RestartRequired:
            continue            # its files are deleted; plan again on the new snapshot
    raise tf.CommitConflictError(f"the insert conflicted with concurrent commits {max_restarts + 1} times")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m spark_jobs.insert", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", required=True, help="table URI (local path, file://, s3://, hdfs://)")
    ap.add_argument("--input", required=True, help="input data (Parquet path Spark can read)")
    ap.add_argument("--on-duplicate", default="fail", choices=["fail", "ignore", "collect"])
    ap.add_argument("--error-path", help="where duplicates go with --on-duplicate collect")
    ap.add_argument("--storage-options", help="JSON fsspec storage options for the table")
    ap.add_argument("--master", help="Spark master (default: local[2], or what spark-submit sets)")
    args = ap.parse_args(argv)
    spark = get_spark("tableformat-insert", args.master)
    opts = json.loads(args.storage_options) if args.storage_options else None
    res = partitioned_insert(spark, spark.read.parquet(args.input), args.table, args.on_duplicate,
                             args.error_path, opts)
    print(f"inserted {res.inserted} rows, ignored {res.ignored}, version {res.version}")


if __name__ == "__main__":
    main()
