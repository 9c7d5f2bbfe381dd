"""Mutation merge: a DataFrame of updates, deletes and upserts (or mixed, with an op column) into REDO deltas.

Rows are routed by tablet and shuffled, so each tablet (and so each rowset)
is planned by exactly one task: each plans its rows on the job's snapshot with
the engine (`Snapshot.write_mutation`), which looks keys up to (rowset, rowid),
writes one REDO delta file per touched rowset and the new rowsets of inserted
keys, and returns a write fragment. The driver commits the fragments once, with
the engine's key-level requirements. Missing keys (update, delete) and existing
keys (insert) fail the job, are skipped and counted, or are written to an
error path.

    python -m spark_jobs.merge --table /data/metrics --input /data/changes.parquet --op-column op
"""
from __future__ import annotations

import argparse
import json
from typing import Any, Sequence

import pyarrow as pa

import tableformat as tf

from .session import get_spark
from .snapshots import open_snapshot
from .writes import TABLET_COL, collect_rows, commit_fragments, run_job

RESULT_SCHEMA = ("fragment string, files string, inserted long, updated long, deleted long, ignored long, "
                 "missing long, duplicate long, sample string")
OPS = ("update", "update_ignore", "delete", "delete_ignore", "upsert", "insert", "insert_ignore")


def merge_partition(uri: str, storage_options: dict | None, version: int, data: pa.Table | None, op: str | None,
                    op_column: str | None, update_columns: Sequence[str] | None, on_error: str,
                    error_path: str | None, table_id: str | None = None) -> dict:
    """Executor side: plan this task's rows on the snapshot with the engine and write its
    deltas and rowsets; the result holds the task's write fragment (JSON)."""
    out = {"fragment": None, "files": [], "inserted": 0, "updated": 0, "deleted": 0, "ignored": 0, "missing": 0,
           "duplicate": 0, "sample": ""}
    if data is None or data.num_rows == 0:
        return out
    snap = open_snapshot(uri, storage_options, version, table_id)
    data = data.drop([c for c in data.column_names if c == TABLET_COL])
    frag = snap.write_mutation(data, op, op_column, update_columns, on_error="report", operation="MERGE")
    batch, failed, _ops = frag.rejected
    out.update({k: frag.counts.get(k, 0) for k in ("inserted", "updated", "deleted", "ignored", "missing",
                                                    "duplicate")})
    if len(failed):
        out["sample"] = snap.describe_rows(batch, failed)
        if on_error == "fail":
            snap.storage.delete_quietly(frag.files)
            return out
        if on_error == "collect":
            collect_rows(error_path, batch, failed)
    out.update(fragment=frag.to_json(), files=list(frag.files))
    return out


def mutation_merge(spark: Any, df: Any, uri: str, op: str | None = None, op_column: str | None = None,
                   on_error: str = "fail", error_path: str | None = None,
                   update_columns: Sequence[str] | None = None, storage_options: dict | None = None,
                   max_restarts: int = 3) -> tf.WriteResult:
    """Apply a DataFrame of row operations in one commit.

    Give `op` (update, delete, upsert, ...) for a uniform batch, or `op_column`
    for a mixed one. on_error: 'fail', 'ignore' (skip and count) or 'collect'
    (skip and write the rows to error_path). The commit checks the engine's key-level
    requirements: a concurrent delete of a row it changes, or insert of a key it found
    absent, runs the job again on the new snapshot; other concurrent changes rebase.
    """
    if (op is None) == (op_column is None):
        raise tf.InvalidOptionError("give exactly one of op and op_column")
    if op is not None and op not in OPS:
        raise tf.InvalidOptionError(f"op must be one of {OPS}, got {op!r}")
    if on_error not in ("fail", "ignore", "collect") or (on_error == "collect" and not error_path):
        raise tf.InvalidOptionError("on_error must be fail, ignore or collect (collect needs error_path)")
    def partition(version, table_id, data):
        return merge_partition(uri, storage_options, version, data, op, op_column, update_columns, on_error,
                               error_path, table_id)

    def finish(table, version, results):
        missing, dup = sum(r["missing"] for r in results), sum(r["duplicate"] for r in results)
        if (missing or dup) and on_error == "fail":
            table.storage.delete_quietly([f for r in results for f in r["files"]])
            sample = "; ".join(r["sample"] for r in results if r["sample"])[:300]
            if missing:
                raise tf.KeyNotFoundError(f"{missing} key(s) not found in table {table.name!r} (first: {sample}); "
                                          "nothing was written", missing)
            raise tf.DuplicateKeyError(f"{dup} key(s) already exist in table {table.name!r} (first: {sample}); "
                                       "nothing was written", dup)
        counts = {k: sum(r[k] for r in results) for k in ("inserted", "updated", "deleted", "ignored")}
        return commit_fragments(uri, storage_options, [r["fragment"] for r in results if r["fragment"]], "MERGE",
                                counts)
    return run_job(spark, df, uri, storage_options, False, partition, RESULT_SCHEMA, finish, max_restarts, "merge")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m spark_jobs.merge", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", required=True, help="table URI")
    ap.add_argument("--input", required=True, help="input rows (Parquet path Spark can read)")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--op", choices=OPS, help="one operation for every row")
    g.add_argument("--op-column", help="column naming each row's operation")
    ap.add_argument("--on-error", default="fail", choices=["fail", "ignore", "collect"])
    ap.add_argument("--error-path")
    ap.add_argument("--columns", help="comma-separated columns to update (default: all non-key input columns)")
    ap.add_argument("--storage-options", help="JSON fsspec storage options")
    ap.add_argument("--master")
    args = ap.parse_args(argv)
    spark = get_spark("tableformat-merge", args.master)
    res = mutation_merge(spark, spark.read.parquet(args.input), args.table, args.op, args.op_column, args.on_error,
                         args.error_path, args.columns.split(",") if args.columns else None,
                         json.loads(args.storage_options) if args.storage_options else None)
    print(f"inserted {res.inserted}, updated {res.updated}, deleted {res.deleted}, ignored {res.ignored}; "
          f"version {res.version}")


if __name__ == "__main__":
    main()
