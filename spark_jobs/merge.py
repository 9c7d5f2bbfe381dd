"""Mutation merge: a DataFrame of updates, deletes and upserts (or mixed, with an op column) into REDO deltas.

Rows are routed by tablet and shuffled, so each tablet (and so each rowset)
is planned by exactly one task: keys are looked up to (rowset, rowid) on the
executors, which write one REDO delta file per touched rowset and the new
rowsets of inserted keys. The driver commits once. Missing keys (update,
delete) and existing keys (insert) fail the job, are skipped and counted, or
are written to an error path.

    python -m spark_jobs.merge --table /data/metrics --input /data/changes.parquet --op-column op
"""
from __future__ import annotations

import argparse
import json
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

import tableformat as tf

from .common import delete_files, get_spark, open_snapshot
from .insert import TABLET_COL, collect_rows, route_by_tablet

RESULT_SCHEMA = ("actions string, files string, inserted long, updated long, deleted long, ignored long, "
                 "missing long, duplicate long, sample string, tablets string")
OPS = ("update", "update_ignore", "delete", "delete_ignore", "upsert", "insert", "insert_ignore")


def merge_partition(uri: str, storage_options: dict | None, version: int, data: pa.Table | None, op: str | None,
                    op_column: str | None, update_columns: Sequence[str] | None, on_error: str,
                    error_path: str | None) -> dict:
    """Executor side: plan this task's rows against the snapshot and write deltas and rowsets."""
    from tableformat.mutation import (IGNORING, INSERT, OP_NAMES, plan_mutation, validate,
                                      write_deltas)
    from tableformat.writer import describe_keys, plan_insert, write_plan
    out = {"actions": [], "files": [], "inserted": 0, "updated": 0, "deleted": 0, "ignored": 0, "missing": 0,
           "duplicate": 0, "sample": "", "tablets": []}
    if data is None or data.num_rows == 0:
        return out
    snap = open_snapshot(uri, storage_options, version)
    state, storage = snap.state, snap.storage
    ids = state.partitioning.tablet_ids()
    out["tablets"] = sorted({ids[int(x)] for x in np.unique(data.column(TABLET_COL).to_numpy()) if x >= 0}) \
        if TABLET_COL in data.column_names else ids
    data = data.drop([c for c in data.column_names if c == TABLET_COL])
    batch, ops, ucols = validate(state, data, OP_NAMES[op] if op else None, op_column, update_columns)
    strict = np.isin(ops, list(IGNORING))
    lenient = ops.copy()
    for s, i in IGNORING.items():
        lenient[ops == s] = i
    plan = plan_mutation(storage, state, batch, lenient, ucols)
    failed = plan.ignored_rows[strict[plan.ignored_rows]]
    if len(failed):
        out["duplicate"] = int((ops[failed] == INSERT).sum())
        out["missing"] = int(len(failed) - out["duplicate"])
        out["sample"] = describe_keys(state, batch, failed)
        if on_error == "fail":
            return out
        if on_error == "collect":
            collect_rows(error_path, batch, failed)
    written: list[str] = []
    try:
        ins = plan_insert(storage, state, plan.new_rows, False, check_existing=False) \
            if plan.new_rows is not None else None
        rowsets = write_plan(storage, state, ins, written) if ins is not None else []
        deltas = write_deltas(storage, state, plan, written)
    except BaseException:
        storage.delete_quietly(written)
        raise
    out["actions"] = [{"add_rowset": r.to_json()} for r in rowsets] + [{"add_delta": d.to_json()} for d in deltas]
    out["files"] = written
    out.update({k: plan.counts.get(k, 0) for k in ("inserted", "updated", "deleted", "ignored")})
    return out


def conflicts(state, tablets: set[str], new_commits: list[dict]) -> bool:
    """Conservative form of the engine's rule for a distributed plan: any concurrent data change in a
    tablet the job read (or a definition change) makes the job run again on the new snapshot."""
    for c in new_commits:
        for a in c["actions"]:
            if "metadata" in a or "alter" in a:
                return True
            if "add_rowset" in a and a["add_rowset"]["tablet"] in tablets and c.get("data_change", True):
                return True
            if "remove_rowset" in a:
                rs = state.rowsets.get(a["remove_rowset"]["id"])
                if rs is None or rs.tablet in tablets:
                    return True
            if "add_delta" in a and c.get("data_change", True):
                rs = state.rowsets.get(a["add_delta"]["rowset"])
                if rs is None or rs.tablet in tablets:
                    return True
    return False


def mutation_merge(spark: Any, df: Any, uri: str, op: str | None = None, op_column: str | None = None,
                   on_error: str = "fail", error_path: str | None = None,
                   update_columns: Sequence[str] | None = None, storage_options: dict | None = None,
                   max_restarts: int = 3) -> tf.WriteResult:
    """Apply a DataFrame of row operations in one commit.

    Give `op` (update, delete, upsert, ...) for a uniform batch, or `op_column`
    for a mixed one. on_error: 'fail', 'ignore' (skip and count) or 'collect'
    (skip and write the rows to error_path).
    """
    if (op is None) == (op_column is None):
        raise tf.InvalidOptionError("give exactly one of op and op_column")
    if op is not None and op not in OPS:
        raise tf.InvalidOptionError(f"op must be one of {OPS}, got {op!r}")
    if on_error not in ("fail", "ignore", "collect") or (on_error == "collect" and not error_path):
        raise tf.InvalidOptionError("on_error must be fail, ignore or collect (collect needs error_path)")
    from tableformat.table import Timestamp, WriteResult
    for _attempt in range(max_restarts + 1):
        table = tf.open_table(uri, storage_options=storage_options)
        version = table.version
        shuffled = route_by_tablet(spark, df, table, uri, storage_options, version, strict=False)

        def task(batches, version=version):
            tables = [pa.Table.from_batches([b]) for b in batches]
            r = merge_partition(uri, storage_options, version, pa.concat_tables(tables) if tables else None, op,
                                op_column, update_columns, on_error, error_path)
            yield pa.RecordBatch.from_pylist([{**r, "actions": json.dumps(r["actions"]),
                                               "files": json.dumps(r["files"]), "tablets": json.dumps(r["tablets"])}])
        results = shuffled.mapInArrow(task, RESULT_SCHEMA).collect()     # metadata only
        files = [f for r in results for f in json.loads(r["files"])]
        missing, dup = sum(r["missing"] for r in results), sum(r["duplicate"] for r in results)
        if (missing or dup) and on_error == "fail":
            delete_files(uri, storage_options, files)
            sample = "; ".join(r["sample"] for r in results if r["sample"])[:300]
            if missing:
                raise tf.KeyNotFoundError(f"{missing} key(s) not found in table {table.name!r} (first: {sample}); "
                                          "nothing was written", missing)
            raise tf.DuplicateKeyError(f"{dup} key(s) already exist in table {table.name!r} (first: {sample}); "
                                       "nothing was written", dup)
        actions = [a for r in results for a in json.loads(r["actions"])]
        counts = {k: sum(r[k] for r in results) for k in ("inserted", "updated", "deleted", "ignored")}
        if not actions:
            return WriteResult(version, Timestamp(table.state.timestamp), "MERGE", **counts)
        state = table.snapshot(version).state

        class _Again(Exception):
            pass

        tablets = {x for r in results for x in json.loads(r["tablets"])}
        latest = table.refresh()

        def rebase(new_commits):
            if conflicts(latest, tablets, new_commits):
                raise _Again()
        try:
            commit = table._commit(state, "MERGE", actions, counts, rebase)
        except _Again:
            delete_files(uri, storage_options, files)
            continue
        except BaseException as e:
            from tableformat.table import committed
            if not committed(e):
                delete_files(uri, storage_options, files)
            raise
        return WriteResult(commit["version"], Timestamp(commit["timestamp"]), "MERGE", **counts,
                           rowsets_added=sum(1 for a in actions if "add_rowset" in a))
    raise tf.CommitConflictError(f"the merge conflicted with concurrent commits {max_restarts + 1} times")


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
