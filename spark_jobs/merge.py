"""Mutation merge: a DataFrame of updates, deletes and upserts (or mixed, with an op column) into REDO deltas.

The write layout of the insert: Spark range-partitions by primary key (the key
columns themselves when it orders them as the engine does, else (tablet,
encoded key) from a first pass) and sorts within partitions (by input position
last), so a key's rows are adjacent and in input order in one task. Each task
streams its sorted batches into the engine's mutation planner
(`Snapshot.write_mutation`) in chunks of at most the target rowset size, never
splitting a key's rows: it looks keys up to (rowset, rowid), writes REDO delta
files and the rowsets of inserted keys, and returns a write fragment. The driver
commits the fragments once, with the engine's key-level requirements; a merge
that loses to a compaction of its rowsets is remapped by key, not re-run.
Missing keys (update, delete) and existing keys (insert) fail the job, are
skipped and counted, or are written to an error path.

    python -m spark_jobs.merge --table /data/metrics --input /data/changes.parquet --op-column op
"""
from __future__ import annotations

import argparse
import json
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import tableformat as tf

from .session import get_spark
from .snapshots import open_snapshot
from .writes import (KEY_COL, LAYOUT_COLS, TASK_BATCH_ROWS, RejectedRows, coalesced, commit_fragments, refuse_committed_txn,
                     result_batch, run_job)

RESULT_SCHEMA = ("fragment string, files string, counts string, inserted long, updated long, deleted long, "
                 "ignored long, missing long, duplicate long, sample string")
OPS = ("update", "update_ignore", "delete", "delete_ignore", "upsert", "insert", "insert_ignore")


COUNTS = ("inserted", "updated", "deleted", "ignored", "missing", "duplicate")
# what the job's on_error='report' planning adds: the engine's own writes never record them
# (under 'fail' they fail the job, under 'ignore' they are among `ignored`)
REPORT_ONLY = ("missing", "duplicate")


def add_counts(out: dict, counts: dict) -> None:
    """Add a fragment's counts to a task's result: every count the planner made (`counts`, all
    of them, whatever they are: the commit records these), and the ones the job reads by name."""
    for k, v in counts.items():
        out["counts"][k] = out["counts"].get(k, 0) + int(v)
        if k in COUNTS:
            out[k] += int(v)


def job_counts(results: list[dict]) -> dict:
    """The counts a merge commits: every task's counts summed, as the engine's one-batch plan
    would have counted them (§14: every writer records the same counts)."""
    total: dict = {}
    for r in results:
        for k, v in r["counts"].items():
            if k not in REPORT_ONLY:
                total[k] = total.get(k, 0) + int(v)
    return total


class MergeTask:
    """One task of a Spark merge: its sorted rows gathered into chunks of at most the target
    rowset size (a key's rows never split between chunks), each planned with the engine's
    `write_mutation`. With on_error='fail', a failed row deletes the task's files; later chunks
    only count."""

    def __init__(self, snap: tf.Snapshot, op: str | None, op_column: str | None,
                 update_columns: Sequence[str] | None, on_error: str, error_path: str | None):
        self.snap, self.op, self.op_column, self.update_columns, self.on_error = \
            snap, op, op_column, update_columns, on_error
        self.limit = int(snap.properties["rowset_target_bytes"])
        self.out = {"fragment": None, "files": [], "counts": {}, **{k: 0 for k in COUNTS}, "sample": ""}
        self.frags: list[tf.WriteFragment] = []
        self.errors = RejectedRows(error_path if on_error == "collect" else None)
        self.failed = False

    def run(self, batches) -> dict:
        """Plan every chunk of the task's batches; the task's result row (fragment, counts)."""
        pending: list[pa.Table] = []
        size = 0
        try:
            for b in coalesced(batches, TASK_BATCH_ROWS):
                if not b.num_rows:
                    continue
                t = pa.Table.from_batches([b])
                cut = self._last_key_start(t)
                if cut:         # rows of the last key may continue in the next batch: hold them back
                    pending.append(t.slice(0, cut))
                    size += pending[-1].nbytes
                    if size >= self.limit:
                        self._plan(pending)
                        pending, size = [], 0
                pending.append(t.slice(cut))
                size += pending[-1].nbytes
            if pending:
                self._plan(pending)
            self.errors.flush()
        except BaseException:
            self.snap.storage.delete_quietly([p for f in self.frags for p in f.files])
            raise
        if self.frags:
            frag = tf.WriteFragment.combine(self.frags)
            self.out.update(fragment=frag.to_json(), files=list(frag.files))
        return self.out

    def _last_key_start(self, t: pa.Table) -> int:
        """Where the batch's last key's rows start."""
        keys = (t.column(KEY_COL).combine_chunks() if KEY_COL in t.column_names
                else self.snap.route_keys(t.drop([c for c in LAYOUT_COLS if c in t.column_names]), strict=False)[1])
        return int(np.argmax(pc.equal(keys, keys[len(keys) - 1]).to_numpy(zero_copy_only=False)))

    def _plan(self, chunks: list[pa.Table]) -> None:
        data = pa.concat_tables(chunks)
        data = data.drop([c for c in LAYOUT_COLS if c in data.column_names])
        if not data.num_rows:
            return
        frag = self.snap.write_mutation(data, self.op, self.op_column, self.update_columns, on_error="report",
                                        operation="MERGE", distributed=True)
        batch, failed, _ops = frag.rejected
        add_counts(self.out, frag.counts)
        if len(failed):
            if not self.out["sample"]:
                self.out["sample"] = self.snap.describe_rows(batch, failed)
            self.errors.add(batch, failed)
            if self.on_error == "fail" and not self.failed:
                self.failed = True
                self.snap.storage.delete_quietly([p for f in self.frags for p in f.files])
                self.frags.clear()
        if self.failed:
            self.snap.storage.delete_quietly(frag.files)
        elif not frag.empty:
            self.frags.append(frag)


def merge_task(uri: str, storage_options: dict | None, version: int, table_id: str | None, op: str | None,
               op_column: str | None, update_columns: Sequence[str] | None, on_error: str,
               error_path: str | None):
    """A mapInArrow function over one partition of the write layout (`MergeTask`): yields one
    row, the task's fragment and counts."""
    def fn(batches):
        snap = open_snapshot(uri, storage_options, version, table_id)
        yield result_batch(MergeTask(snap, op, op_column, update_columns, on_error, error_path).run(batches))
    return fn


def mutation_merge(spark: Any, df: Any, uri: str, op: str | None = None, op_column: str | None = None,
                   on_error: str = "fail", error_path: str | None = None,
                   update_columns: Sequence[str] | None = None, storage_options: dict | None = None,
                   max_restarts: int = 3, partitions: int | None = None,
                   txn: tuple[str, int] | None = None, operation: str = "MERGE") -> tf.WriteResult:
    """Apply a DataFrame of row operations in one commit.

    Give `op` (update, delete, upsert, ...) for a uniform batch, or `op_column`
    for a mixed one. on_error: 'fail', 'ignore' (skip and count) or 'collect'
    (skip and write the rows to error_path). The commit checks the engine's key-level
    requirements: a concurrent delete of a row it changes, or insert of a key it found
    absent, runs the job again on the new snapshot; other concurrent changes rebase (a
    compaction that rewrote its rowsets too: its REDO records are remapped by key).
    `partitions`: the number of write tasks (default spark.sql.shuffle.partitions). `txn`
    (app id, version) records a streaming batch in the commit (`Table.commit_fragments`);
    `operation` is the commit's name in the history (a stream sink's batch: its own).
    """
    if not isinstance(operation, str) or not operation:
        raise tf.InvalidOptionError(f"operation must be a non-empty string, got {operation!r}")
    if (op is None) == (op_column is None):
        raise tf.InvalidOptionError("give exactly one of op and op_column")
    if op is not None and op not in OPS:
        raise tf.InvalidOptionError(f"op must be one of {OPS}, got {op!r}")
    if on_error not in ("fail", "ignore", "collect") or (on_error == "collect" and not error_path):
        raise tf.InvalidOptionError("on_error must be fail, ignore or collect (collect needs error_path)")
    if on_error == "collect":
        tf.check_outside_table(error_path, uri, "error_path")
    def make_task(version, table_id):
        return merge_task(uri, storage_options, version, table_id, op, op_column, update_columns, on_error,
                          error_path)

    def finish(table, version, results):
        missing, dup = sum(r["missing"] for r in results), sum(r["duplicate"] for r in results)
        if (missing or dup) and on_error == "fail":
            table.storage.delete_quietly([f for r in results for f in r["files"]])
            refuse_committed_txn(table, txn)
            sample = "; ".join(r["sample"] for r in results if r["sample"])[:300]
            if missing:
                raise tf.KeyNotFoundError(f"{missing} key(s) not found in table {table.name!r} (first: {sample}); "
                                          "nothing was written", missing)
            raise tf.DuplicateKeyError(f"{dup} key(s) already exist in table {table.name!r} (first: {sample}); "
                                       "nothing was written", dup)
        return commit_fragments(uri, storage_options, [r["fragment"] for r in results if r["fragment"]], operation,
                                job_counts(results), txn, version)
    def check(snap, rows):
        snap.write_mutation(rows, op, op_column, update_columns, on_error="report", operation="MERGE",
                            distributed=True)
    return run_job(spark, df, uri, storage_options, False, make_task, RESULT_SCHEMA, finish, max_restarts, "merge",
                   partitions, keep_order=True, native=True, check=check)


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
