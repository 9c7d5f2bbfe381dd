"""Change export: a table's change history as Parquet, incrementally, exactly once.

The output holds one directory per exported version (`version=<v>/`) and a
watermark file `_tableformat_watermark.json` naming the last version whose
changes are complete. A run exports versions watermark+1 .. latest, one Spark
task per version, each overwriting its own deterministic file, and moves the
watermark only after every task succeeded. So a rerun after a failure
rewrites the same files: no change is duplicated or skipped. Readers should
read versions <= the watermark.

    python -m spark_jobs.export --table /data/metrics --output /exports/metrics

**Into Delta Lake** (`delta_export`, `--delta`): the sink is a Delta table, and
exactly-once comes from Delta's idempotent writes instead of a side file.
Each Delta commit carries the changes of exactly one of our versions v and
the transaction identifier (`txnAppId` = the export's name, `txnVersion` = v);
Delta skips a write whose `txnVersion` is at or below the latest one recorded
for that appId, and fails a commit racing another with the same appId
(`ConcurrentTransactionException`, retried here). The watermark is that
latest txn version, read from the Delta log. Because a commit holds one
version only, even a stale watermark (another export moved on meanwhile)
never writes a version twice, and versions are applied in order, so none is
skipped. Modes:

- `append`: the change rows (`Table.changes`) with `_op`, `_version`,
  `_timestamp` (and `_changed_columns`): a change log;
- `apply`: each version's net changes MERGEd by primary key, so the Delta
  table is a replica of ours as of the exported version (the first run
  writes the snapshot at the latest version instead of replaying history).

    python -m spark_jobs.export --table /data/metrics --output /exports/metrics_delta --delta apply --name m
"""
from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import tableformat as tf
from tableformat import Storage

WATERMARK = "_tableformat_watermark.json"


def read_watermark(output: str, output_options: dict | None = None) -> int:
    s = Storage(output, output_options)
    try:
        return int(json.loads(s.read(WATERMARK))["version"])
    except FileNotFoundError:
        return 0     # version 0 creates the table: no changes in it


def export_version(uri: str, storage_options: dict | None, output: str, output_options: dict | None,
                   version: int) -> int:
    """Write the changes of one commit to `output/version=<v>/changes.parquet`. Returns the row count."""
    t = tf.open_table(uri, storage_options=storage_options)
    ch = t.changes(version - 1, version)
    sink = pa.BufferOutputStream()
    pq.write_table(ch, sink, compression="zstd")
    Storage(output, output_options).write(f"version={version:020d}/changes.parquet", sink.getvalue())
    return ch.num_rows


def change_export(spark: Any, uri: str, output: str, storage_options: dict | None = None,
                  output_options: dict | None = None, end: int | None = None) -> dict:
    """Export every change committed since the watermark. Returns the range and row count."""
    tf.check_outside_table(output, uri, "the change export's output")
    t = tf.open_table(uri, storage_options=storage_options)
    start = read_watermark(output, output_options)
    end = t.version if end is None else end
    if end <= start:
        return {"start": start, "end": start, "rows": 0}
    versions = list(range(start + 1, end + 1))
    rdd = spark.sparkContext.parallelize(versions, min(len(versions), 64))
    rows = rdd.map(lambda v: export_version(uri, storage_options, output, output_options, v)).sum()
    Storage(output, output_options).write(WATERMARK, json.dumps({"version": end, "table": uri}).encode())
    return {"start": start, "end": end, "rows": int(rows)}


# --- into Delta Lake, exactly once -------------------------------------------------------------
DELTA_MODES = ("append", "apply")
_RETRIED = ("ConcurrentTransactionException", "ConcurrentAppendException", "ConcurrentDeleteReadException",
            "ConcurrentDeleteDeleteException", "ConcurrentWriteException", "ProtocolChangedException",
            "MetadataChangedException", "DELTA_CONCURRENT", "DELTA_PROTOCOL_CHANGED", "DELTA_METADATA_CHANGED",
            "FileAlreadyExistsException")


def delta_watermark(output: str, name: str, delta_options: dict | None = None) -> int | None:
    """The latest `txnVersion` recorded for appId `name` in the Delta log at `output` (None: none yet).

    Read with delta-rs (`deltalake`), a second implementation of the same log;
    `delta_options` are its storage options (for S3: AWS_ENDPOINT_URL, ...)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError
    try:
        return DeltaTable(output, storage_options=delta_options).transaction_version(name)
    except TableNotFoundError:
        return None


def _is_retried(e: Exception) -> bool:
    return any(n in str(e) for n in _RETRIED)


def _write_txn(spark: Any, df: Any, output: str, name: str, version: int, mode: str, meta: str) -> None:
    (df.write.format("delta").mode(mode).option("txnAppId", name).option("txnVersion", version)
     .option("mergeSchema", "true").option("userMetadata", meta).save(output))


def _merge_txn(spark: Any, changes: Any, output: str, name: str, version: int, keys: list[str], cols: list[str],
               meta: str) -> None:
    """MERGE one version's net changes; Delta takes the txn of a MERGE from these SQL settings,
    set on a session of its own so that concurrent exports in one application never share them."""
    from delta.tables import DeltaTable
    spark = spark.newSession()
    df = spark.createDataFrame(changes)
    q = lambda c: "`" + c.replace("`", "``") + "`"   # noqa: E731
    cond = " AND ".join(f"t.{q(k)} = s.{q(k)}" for k in keys)
    values = {q(c): f"s.{q(c)}" for c in cols}
    conf = {"spark.databricks.delta.write.txnAppId": name, "spark.databricks.delta.write.txnVersion": str(version),
            "spark.databricks.delta.commitInfo.userMetadata": meta}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        (DeltaTable.forPath(spark, output).alias("t").merge(df.alias("s"), cond)
         .whenMatchedDelete(condition="s._op = 'delete'")
         .whenMatchedUpdate(condition="s._op <> 'delete'", set=values)
         .whenNotMatchedInsert(condition="s._op <> 'delete'", values=values)
         .execute())
    finally:
        for k in conf:     # the settings outlive the statement: never let them tag another write
            spark.conf.unset(k)


def delta_export(spark: Any, uri: str, output: str, name: str, mode: str = "append",
                 storage_options: dict | None = None, delta_options: dict | None = None, end: int | None = None,
                 start: int = 0, on_commit: Callable[[int], None] | None = None, max_attempts: int = 5) -> dict:
    """Export our versions after the Delta log's watermark up to `end` into the Delta table at `output`.

    One Delta commit per version with changes (versions without data changes
    ride along with the next one, or a final empty commit), each idempotent
    under txnAppId=`name`, txnVersion=version. `start`: in append mode, the
    version after which changes are exported on the first run. `on_commit(v)`
    runs after each commit (progress reporting). Returns the range exported,
    the commits made, the versions skipped because another export had
    written them, and the rows written.
    """
    t, end = _open_for_export(uri, output, name, mode, storage_options, end)
    keys = list(t.schema.primary_key)
    cols = [c.name for c in t.schema.columns]
    first = delta_watermark(output, name, delta_options)
    res = {"name": name, "mode": mode, "start": first, "end": end, "commits": [], "rows": 0}
    attempts = 0
    while True:
        w = delta_watermark(output, name, delta_options)
        if w is not None and w >= end:
            break
        try:
            if w is None and mode == "apply":
                v, rows = _seed_replica(spark, t, output, name, end)
            else:
                v, rows = _export_next(spark, t, output, name, mode, max(w if w is not None else start, start) + 1,
                                       end, keys, cols)
            res["rows"] += rows
            res["commits"].append(v)
            if on_commit:
                on_commit(v)
        except Exception as e:   # noqa: BLE001 - only Delta's concurrency failures are retried
            if not _is_retried(e):
                raise
            # a conflict another export won is progress (the watermark moved): only conflicts
            # that moved nothing count against max_attempts, so racing exports never give up
            moved = delta_watermark(output, name, delta_options)
            attempts = 0 if moved is not None and (w is None or moved > w) else attempts + 1
            if attempts >= max_attempts:
                raise
            time.sleep(0.2 * attempts)
    res["end"] = end
    return res


def _open_for_export(uri: str, output: str, name: str, mode: str, storage_options: dict | None,
                     end: int | None) -> tuple:
    """The table and the last version to export; bad options fail before Spark or Delta is touched."""
    import tableformat as tf
    if mode not in DELTA_MODES:
        raise tf.InvalidOptionError(f"mode must be one of {DELTA_MODES}, got {mode!r}")
    if not isinstance(name, str) or not name:
        raise tf.InvalidOptionError("a Delta export needs a name (its Delta txnAppId)")
    tf.check_outside_table(output, uri, "the Delta export's output")
    t = tf.open_table(uri, storage_options=storage_options)
    end = t.version if end is None else end
    if end > t.version:
        raise tf.VersionNotFoundError(f"end version {end} is after the table's latest version {t.version}")
    return t, end


def _commit_meta(t: Any, v: int) -> str:
    """The Delta commit's userMetadata: which version of which table of ours it holds."""
    return json.dumps({"tableformat": {"table_id": t.table_id, "version": v,
                                       "timestamp": int(t.snapshot(v).timestamp)}})


def _seed_replica(spark: Any, t: Any, output: str, name: str, end: int) -> tuple[int, int]:
    """apply mode's first run: the replica starts as our snapshot at `end`, written idempotently
    under txnVersion=end. Returns (the version committed, rows written)."""
    snap = t.scan(as_of=end).to_arrow()
    _write_txn(spark, spark.createDataFrame(snap), output, name, end, "overwrite", _commit_meta(t, end))
    return end, snap.num_rows


def _export_next(spark: Any, t: Any, output: str, name: str, mode: str, v: int, end: int, keys: list[str],
                 cols: list[str]) -> tuple[int, int]:
    """One Delta commit of version `v`'s changes (with the versions after it that changed no data,
    up to `end`). Returns (the version committed, rows written)."""
    ch = t.changes(v - 1, v, mode="net" if mode == "apply" else "all")
    while ch.num_rows == 0 and v < end:     # versions without data changes join the next commit
        v += 1
        ch = t.changes(v - 1, v, mode="net" if mode == "apply" else "all")
    if mode == "apply" and ch.num_rows:
        _merge_txn(spark, ch.select(["_op"] + cols), output, name, v, keys, cols,
                   _commit_meta(t, v))
    else:
        if mode == "apply":
            ch = t.scan(as_of=v).output_schema.empty_table()     # an empty append: the txn alone
        _write_txn(spark, spark.createDataFrame(ch), output, name, v, "append", _commit_meta(t, v))
    return v, ch.num_rows


def main(argv=None) -> None:
    from .common import get_spark
    ap = argparse.ArgumentParser(prog="python -m spark_jobs.export", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", required=True)
    ap.add_argument("--output", required=True, help="output directory URI")
    ap.add_argument("--end", type=int, help="last version to export (default: the latest)")
    ap.add_argument("--storage-options", help="JSON fsspec storage options of the table")
    ap.add_argument("--output-options", help="JSON fsspec storage options of the output")
    ap.add_argument("--master")
    ap.add_argument("--delta", choices=DELTA_MODES, help="export into a Delta table at --output, in this mode")
    ap.add_argument("--name", help="the Delta export's name (its txnAppId); required with --delta")
    ap.add_argument("--delta-options", help="JSON delta-rs storage options of the output (reading the watermark)")
    args = ap.parse_args(argv)
    if args.delta:
        if not args.name:
            ap.error("--delta needs --name")
        spark = get_spark("tableformat-export", args.master, delta=True)
        res = delta_export(spark, args.table, args.output, args.name, args.delta,
                           json.loads(args.storage_options) if args.storage_options else None,
                           json.loads(args.delta_options) if args.delta_options else None, args.end)
        print(f"exported into Delta ({args.delta}) through version {res['end']}: {len(res['commits'])} "
              f"commit(s), {res['rows']} row(s)")
        return
    spark = get_spark("tableformat-export", args.master)
    res = change_export(spark, args.table, args.output,
                        json.loads(args.storage_options) if args.storage_options else None,
                        json.loads(args.output_options) if args.output_options else None, args.end)
    print(f"exported versions {res['start'] + 1}..{res['end']}: {res['rows']} changes")


if __name__ == "__main__":
    main()
