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

from .connect import run_payloads

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
    counts = run_payloads(spark, [str(v) for v in versions],
                          lambda v: [str(export_version(uri, storage_options, output, output_options, int(v)))])
    rows = sum(int(c) for c in counts)
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
               meta: str, fill: dict | None = None) -> None:
    """MERGE one version's net changes; Delta takes the txn of a MERGE from these SQL settings,
    set on a session of its own so that concurrent exports in one application never share them.
    `fill`: column -> value set on every row the changes do not touch (a column added with a
    read default, §7), in the same commit, so a rerun after a crash never skips it."""
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
        m = (DeltaTable.forPath(spark, output).alias("t").merge(df.alias("s"), cond)
             .whenMatchedDelete(condition="s._op = 'delete'")
             .whenMatchedUpdate(condition="s._op <> 'delete'", set=values)
             .whenNotMatchedInsert(condition="s._op <> 'delete'", values=values))
        if fill:
            m = m.whenNotMatchedBySourceUpdate(set={q(c): v for c, v in fill.items()})
        m.execute()
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
                                       end, keys, delta_options)
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
    df = _with_column_ids(spark.createDataFrame(snap), t.snapshot(end).schema)
    _write_txn(spark, df, output, name, end, "overwrite", _commit_meta(t, end))
    return end, snap.num_rows


# --- the target's schema follows ours (apply), or says why it cannot (append) --------------------
COLUMN_ID = "tableformat.column_id"     # a Delta field's metadata: which column of ours it holds


def _with_column_ids(df: Any, schema: Any) -> Any:
    """`df` with each column's ID in its Delta field metadata: renames and drops are then matched
    by ID (as every reader of ours matches columns, §2), even after a run died between two ALTERs."""
    from pyspark.sql import functions as F
    ids = {c.name: c.id for c in schema.columns}
    return df.select([F.col(f"`{c}`").alias(c, metadata={COLUMN_ID: ids[c]}) if c in ids else F.col(f"`{c}`")
                      for c in df.columns])


def _q(c: str) -> str:
    return "`" + c.replace("`", "``") + "`"


def _follow_schema(spark: Any, t: Any, output: str, name: str, since: int, v: int,
                   delta_options: dict | None) -> None:
    """Carry our schema changes after `since` (the version the replica holds) through `v` into
    the Delta replica: drop, rename, add, each matched by column ID (the field's metadata; a
    field without it by its name at `since`). Only changes made in (since, v] are applied, and
    none once the replica holds v: an export behind another never takes the replica's schema
    back. A rename or a drop needs Delta column mapping, turned on here the first time
    (readers: Delta 2.0+, delta-rs, Trino)."""
    from delta.tables import DeltaTable
    cur, prev = t.snapshot(v).schema, t.snapshot(since).schema
    if cur.to_json() == prev.to_json():
        return
    w = delta_watermark(output, name, delta_options)
    if w is not None and w >= v:
        return
    dt = DeltaTable.forPath(spark, output)
    have = {}                                       # Delta name -> our column ID
    for f in dt.toDF().schema.fields:
        cid = f.metadata.get(COLUMN_ID)
        if cid is None and prev.has_column(f.name):
            cid = prev.column(f.name).id
        if cid is not None:
            have[f.name] = int(cid)
    tmp = lambda cid: f"__tableformat_{cid}"       # noqa: E731
    drop = [n for n, cid in have.items() if prev.has_id(cid) and not cur.has_id(cid)]
    rename = {n: cur.by_id(cid).name for n, cid in have.items()
              if prev.has_id(cid) and cur.has_id(cid) and n in (prev.by_id(cid).name, tmp(cid))
              and cur.by_id(cid).name != n}
    add = [c for c in cur.columns if not prev.has_id(c.id) and c.id not in have.values()]
    table = f"delta.{_q(output)}"
    if drop or rename:
        props = dt.detail().collect()[0]["properties"] or {}
        if props.get("delta.columnMapping.mode", "none") == "none":
            spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
                      "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')")
    if drop:
        spark.sql(f"ALTER TABLE {table} DROP COLUMNS ({', '.join(_q(n) for n in drop)})")
    # through temporary names, so that swapped names never collide (a rerun resumes from either)
    for n in rename:
        if n != tmp(have[n]):
            spark.sql(f"ALTER TABLE {table} RENAME COLUMN {_q(n)} TO {_q(tmp(have[n]))}")
    for n, new in rename.items():
        spark.sql(f"ALTER TABLE {table} RENAME COLUMN {_q(tmp(have[n]))} TO {_q(new)}")
    if add:                                         # an empty append adds them, IDs in their metadata
        empty = cur.arrow_schema([c.name for c in add]).empty_table()
        (_with_column_ids(spark.createDataFrame(empty), cur).write.format("delta").mode("append")
         .option("mergeSchema", "true").save(output))


def _read_defaults(spark: Any, t: Any, output: str, since: int, v: int) -> dict:
    """Columns added after `since` with a read default, as Spark values of the replica's types:
    the rows written before read that default (§7), where Delta's added column reads NULL."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F
    prev, cur = t.snapshot(since).schema, t.snapshot(v).schema
    new = [c for c in cur.columns if not prev.has_id(c.id) and c.read_default is not None]
    if not new:
        return {}
    types = {f.name: f.dataType for f in DeltaTable.forPath(spark, output).toDF().schema.fields}
    out = {}
    for c in new:
        d = c.read_default
        if isinstance(d, int) and c.type.kind == "unixtime_micros":      # beyond datetime's range
            out[c.name] = F.timestamp_micros(F.lit(d))
        elif isinstance(d, int) and c.type.kind == "date":
            out[c.name] = F.date_from_unix_date(F.lit(d))
        else:
            out[c.name] = F.lit(d).cast(types[c.name])
    return out


def _refuse_retyped_columns(spark: Any, t: Any, output: str, df: Any, v: int) -> None:
    """A Delta change log keeps a dropped column by name: the same name added again with another
    type cannot merge into it (Delta: DELTA_FAILED_TO_MERGE_FIELDS, on every rerun). Refuse
    before writing, naming the way on: that column's changes into a Delta table of their own."""
    from delta.tables import DeltaTable
    if not DeltaTable.isDeltaTable(spark, output):
        return
    theirs = {f.name: f.dataType for f in DeltaTable.forPath(spark, output).toDF().schema.fields}
    schema = t.snapshot(v).schema
    for f in df.schema.fields:
        old = theirs.get(f.name)
        if old is None or old == f.dataType or not schema.has_column(f.name):     # _op, _version, ...
            continue
        col = schema.column(f.name)
        added = v
        while added > 0 and t.snapshot(added - 1).schema.has_id(col.id):
            added -= 1
        was = next((s.column(f.name).type.name for s in (t.snapshot(x).schema for x in range(added - 1, -1, -1))
                    if s.has_column(f.name)), old.simpleString())
        raise tf.ExportSchemaError(
            f"column {f.name!r} was added again at version {added} as {col.type.name} (it was {was}); the Delta "
            f"change log at {output} holds it as {old.simpleString()} from before it was dropped, and Delta "
            f"merges no column into another type. Export the changes from "
            f"then on into a new Delta table: delta_export(..., mode='append', start={added}) "
            f"(`python -m spark_jobs.export --delta append --start {added}` with another --output), or use "
            f"mode='apply', whose replica follows our schema")


def _export_next(spark: Any, t: Any, output: str, name: str, mode: str, v: int, end: int,
                 keys: list[str], delta_options: dict | None = None) -> tuple[int, int]:
    """One Delta commit of version `v`'s changes (with the versions after it that changed no data,
    up to `end`). Returns (the version committed, rows written)."""
    since = v - 1
    ch = t.changes(v - 1, v, mode="net" if mode == "apply" else "all")
    while ch.num_rows == 0 and v < end:     # versions without data changes join the next commit
        v += 1
        ch = t.changes(v - 1, v, mode="net" if mode == "apply" else "all")
    fill = {}
    if mode == "apply":
        # the replica's columns become ours at v (with v's own names: the changes are in them)
        _follow_schema(spark, t, output, name, since, v, delta_options)
        cols = [c.name for c in t.snapshot(v).schema.columns]
        fill = _read_defaults(spark, t, output, since, v)
    if mode == "apply" and (ch.num_rows or fill):
        _merge_txn(spark, ch.select(["_op"] + cols), output, name, v, keys, cols,
                   _commit_meta(t, v), fill)
    else:
        if mode == "apply":
            ch = t.scan(as_of=v).output_schema.empty_table()     # an empty append: the txn alone
        df = spark.createDataFrame(ch)
        if mode == "append":
            _refuse_retyped_columns(spark, t, output, df, v)
        _write_txn(spark, df, output, name, v, "append", _commit_meta(t, v))
    return v, ch.num_rows


def main(argv=None) -> None:
    from .session import get_spark
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
    ap.add_argument("--start", type=int, default=0,
                    help="--delta append: on the first run, export the changes after this version")
    ap.add_argument("--delta-options", help="JSON delta-rs storage options of the output (reading the watermark)")
    args = ap.parse_args(argv)
    if args.delta:
        if not args.name:
            ap.error("--delta needs --name")
        spark = get_spark("tableformat-export", args.master, delta=True)
        res = delta_export(spark, args.table, args.output, args.name, args.delta,
                           json.loads(args.storage_options) if args.storage_options else None,
                           json.loads(args.delta_options) if args.delta_options else None, args.end,
                           start=args.start)
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
