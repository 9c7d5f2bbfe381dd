"""Partitioned insert: a DataFrame into a table, with the primary key enforced.

Rows are assigned to tablets and shuffled by tablet, so every key meets its
duplicates in one task. Each task sorts its tablets' rows, checks keys against
the snapshot's rowsets and writes rowsets. The driver commits once, rebasing
onto concurrent commits. Duplicates fail the job, are skipped and counted, or
are written to an error path: the caller picks.

    python -m spark_jobs.insert --table /data/metrics --input /data/new.parquet [--on-duplicate ignore]
"""
from __future__ import annotations

import argparse
import json
import uuid
from typing import Any

import numpy as np
import pyarrow as pa

import tableformat as tf

from .common import get_spark, open_snapshot

TABLET_COL = "_tf_tablet"
RESULT_SCHEMA = "rowsets string, files string, rows long, duplicates long, sample string"


def tablet_of(uri: str, storage_options: dict | None, version: int, strict: bool = True):
    """A mapInArrow function adding each row's tablet ordinal (-1: in no range partition)."""
    def fn(batches):
        snap = open_snapshot(uri, storage_options, version)
        st = snap.state
        for b in batches:
            t = pa.Table.from_batches([b])
            key_cols = t.select(list(st.schema.primary_key))
            from tableformat.batch import convert_column
            conv = pa.table({c.name: convert_column(key_cols.column(c.name), c) for c in st.schema.key_columns})
            ordinal, _ = st.partitioning.assign(st.schema, conv, strict=strict)
            yield pa.RecordBatch.from_arrays(list(b.columns) + [pa.array(ordinal, pa.int32())],
                                             names=list(b.schema.names) + [TABLET_COL])
    return fn


def route_by_tablet(spark: Any, df: Any, table: Any, uri: str, storage_options: dict | None, version: int,
                    strict: bool):
    """The DataFrame with each row's tablet, shuffled so every tablet is in exactly one partition."""
    from pyspark.sql.types import IntegerType, StructField, StructType
    ntablets = len(table.state.partitioning.tablet_ids())
    routed = df.mapInArrow(tablet_of(uri, storage_options, version, strict),
                           StructType(df.schema.fields + [StructField(TABLET_COL, IntegerType())]))
    return routed.repartition(max(1, min(ntablets, int(spark.conf.get("spark.sql.shuffle.partitions")))),
                              TABLET_COL)


def write_partition(uri: str, storage_options: dict | None, version: int, data: pa.Table | None,
                    on_duplicate: str = "fail", error_path: str | None = None) -> dict:
    """Executor side: validate, check keys, write rowsets for the rows of one task."""
    from tableformat.batch import prepare
    from tableformat.writer import describe_keys, plan_insert, write_plan
    out = {"rowsets": [], "files": [], "rows": 0, "duplicates": 0, "sample": ""}
    if data is None or data.num_rows == 0:
        return out
    snap = open_snapshot(uri, storage_options, version)
    state = snap.state
    storage = snap.storage
    batch = prepare(state.schema, data.drop([c for c in data.column_names if c == TABLET_COL]))
    plan = plan_insert(storage, state, batch, ignore=True)
    kept = np.concatenate([b.rows for b in plan.batches]) if plan.batches else np.zeros(0, np.int64)
    dup_rows = np.setdiff1d(np.arange(batch.num_rows), kept)
    out["duplicates"] = int(len(dup_rows))
    if len(dup_rows):
        out["sample"] = describe_keys(state, batch, dup_rows)
        if on_duplicate == "fail":
            return out
        if on_duplicate == "collect":
            collect_rows(error_path, batch, dup_rows)
    written: list[str] = []
    try:
        rowsets = write_plan(storage, state, plan, written)
    except BaseException:
        storage.delete_quietly(written)
        raise
    out.update(rowsets=[r.to_json() for r in rowsets], files=written, rows=plan.rows)
    return out


def collect_rows(error_path: str, batch: pa.Table, rows: np.ndarray) -> None:
    """Write rejected rows to the error output, one uniquely named Parquet file per task."""
    import pyarrow.parquet as pq
    from tableformat.storage import Storage
    sink = pa.BufferOutputStream()
    pq.write_table(batch.take(pa.array(rows)), sink)
    Storage(error_path).write(f"part-{uuid.uuid4().hex}.parquet", sink.getvalue())


def commit_rowsets(uri: str, storage_options: dict | None, version: int, rowset_lists: list, file_lists: list,
                   operation: str, counts: dict) -> tf.WriteResult:
    """Driver side: check keys across tasks and concurrent commits, then commit once."""
    from tableformat.keyprobe import probe
    from tableformat.metadata import RowSetMeta
    from tableformat.table import Timestamp, WriteResult
    from tableformat.deltafile import deleted_mask
    from tableformat.diskrowset import read_pk_index
    from tableformat.writer import added_deltas
    table = tf.open_table(uri, storage_options=storage_options)
    storage = table._storage
    rowsets = [RowSetMeta.from_json(r) for lst in rowset_lists for r in lst]
    files = [f for lst in file_lists for f in lst]
    state = table.snapshot(version).state

    def clash(ours: list[RowSetMeta], theirs: list[RowSetMeta], deltas_of=lambda rid: ()) -> int:
        """Live keys of `theirs` present in `ours` (same tablet), by interval, bloom and PK index.
        (A merging compaction's output also holds rows deleted within the history.)"""
        n = 0
        for r in theirs:
            mine = [o for o in ours if o.tablet == r.tablet and o.id != r.id
                    and not (o.max_key < r.min_key or o.min_key > r.max_key)]
            if mine:
                keys = read_pk_index(storage, r)
                dead = deleted_mask(storage, r, deltas_of(r.id))
                if dead is not None:
                    keys = keys.filter(pa.array(~dead))
                n += int((probe(storage, mine, keys)[0] >= 0).sum())
        return n

    try:
        # Tasks that were not shuffled by tablet (a plain df.write) can hold one key twice.
        by_tablet: dict[str, list[RowSetMeta]] = {}
        for r in rowsets:
            by_tablet.setdefault(r.tablet, []).append(r)
        cross = sum(clash(lst[:i], [r]) for lst in by_tablet.values() for i, r in enumerate(lst) if i)
        if cross:
            raise tf.DuplicateKeyError(f"{cross} key(s) appear more than once in the input of table "
                                       f"{state.name!r}; use insert_ignore semantics or deduplicate", cross)
        if not rowsets:
            return WriteResult(table.version, Timestamp(table.state.timestamp), operation, 0, ignored=counts.get(
                "ignored", 0))

        def rebase(new_commits):
            if any("metadata" in a or "alter" in a for c in new_commits for a in c["actions"]):
                raise tf.CommitConflictError("the table definition changed during the job; run it again")
            added = [RowSetMeta.from_json(a["add_rowset"]) for c in new_commits for a in c["actions"]
                     if "add_rowset" in a]
            n = clash(rowsets, added, added_deltas(new_commits))
            if n:
                raise tf.DuplicateKeyError(f"{n} key(s) were inserted concurrently into table {state.name!r}", n)

        commit = table._commit(state, operation, [{"add_rowset": r.to_json()} for r in rowsets], counts, rebase)
    except BaseException as e:
        from tableformat.table import committed
        if not committed(e):
            storage.delete_quietly(files)
        raise
    return WriteResult(commit["version"], Timestamp(commit["timestamp"]), operation, counts.get("inserted", 0),
                       ignored=counts.get("ignored", 0), rowsets_added=len(rowsets),
                       bytes_written=sum(r.size_bytes for r in rowsets))


def partitioned_insert(spark: Any, df: Any, uri: str, on_duplicate: str = "fail", error_path: str | None = None,
                       storage_options: dict | None = None) -> tf.WriteResult:
    """Insert a DataFrame into a table in one commit. on_duplicate: 'fail', 'ignore' or 'collect'."""
    if on_duplicate not in ("fail", "ignore", "collect"):
        raise tf.InvalidOptionError(f"on_duplicate must be fail, ignore or collect, got {on_duplicate!r}")
    if on_duplicate == "collect" and not error_path:
        raise tf.InvalidOptionError("on_duplicate='collect' needs error_path")
    table = tf.open_table(uri, storage_options=storage_options)
    version = table.version
    shuffled = route_by_tablet(spark, df, table, uri, storage_options, version, strict=True)

    def task(batches):
        tables = [pa.Table.from_batches([b]) for b in batches]
        data = pa.concat_tables(tables) if tables else None
        r = write_partition(uri, storage_options, version, data, on_duplicate, error_path)
        yield pa.RecordBatch.from_pylist([{"rowsets": json.dumps(r["rowsets"]), "files": json.dumps(r["files"]),
                                           "rows": r["rows"], "duplicates": r["duplicates"],
                                           "sample": r["sample"]}])
    results = shuffled.mapInArrow(task, RESULT_SCHEMA).collect()   # metadata only: one row per task
    dups = sum(r["duplicates"] for r in results)
    rowset_lists = [json.loads(r["rowsets"]) for r in results]
    file_lists = [json.loads(r["files"]) for r in results]
    if dups and on_duplicate == "fail":
        from .common import delete_files
        delete_files(uri, storage_options, [f for lst in file_lists for f in lst])
        sample = "; ".join(r["sample"] for r in results if r["sample"])[:300]
        raise tf.DuplicateKeyError(f"{dups} key(s) already exist in table {table.name!r} or repeat in the input "
                                   f"(first: {sample}); use on_duplicate='ignore' or 'collect'", dups)
    rows = sum(r["rows"] for r in results)
    return commit_rowsets(uri, storage_options, version, rowset_lists, file_lists,
                          "INSERT" if on_duplicate == "fail" else "INSERT_IGNORE", {"inserted": rows, "ignored": dups})


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
