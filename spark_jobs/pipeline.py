"""The main job: a demo pipeline on local Spark (local[2]) in a local directory.

    python -m spark_jobs.pipeline [--dir DIR] [--rows N]

Generates metrics data in Spark, inserts it partitioned by tablet, merges
updates and deletes, queries with Spark SQL, travels back in time, exports
the change history, recomputes a downstream output as of the load, and
compacts the table with the cost-based policy.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable

import tableformat as tf

from .backfill import read_as_of, time_travel_backfill
from .session import get_spark
from .compaction import compact_table
from .export import change_export
from .insert import partitioned_insert
from .merge import mutation_merge
from .read import register_view

T0 = "2026-01-01 00:00:00"


def schema() -> tf.Schema:
    return tf.Schema([
        tf.Column("host", "string"), tf.Column("metric", "string"), tf.Column("time", "unixtime_micros"),
        tf.Column("value", "double", nullable=True),
        tf.Column("tag", "varchar(16)", nullable=True, default="none"),
    ], primary_key=["host", "metric", "time"])


def metrics_df(spark, n: int, start: int = 0):
    """n metric points generated inside Spark (nothing built on the driver)."""
    return spark.range(start, start + n).selectExpr(
        "format_string('host-%03d', CAST(id % 100 AS INT)) AS host",
        "element_at(array('cpu', 'mem', 'disk', 'net'), CAST((id DIV 100) % 4 AS INT) + 1) AS metric",
        f"timestamp_seconds(unix_timestamp(TIMESTAMP '{T0}') + (id DIV 400) * 60) AS time",
        "rand(42) * 100 AS value",
        "CAST(NULL AS STRING) AS tag")


def main(argv=None) -> None:
    """Each stage prints one line, timed from the start: the run reads as the demo's story."""
    ap = argparse.ArgumentParser(prog="python -m spark_jobs.pipeline", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", help="work directory (default: a temporary one, removed at the end)")
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--master")
    args = ap.parse_args(argv)
    began = time.perf_counter()
    root = args.dir or tempfile.mkdtemp(prefix="tableformat-pipeline-")
    uri, exports, backfill = (os.path.join(root, x) for x in ("metrics", "exports", "backfill"))
    for p in (uri, exports, backfill):
        shutil.rmtree(p, ignore_errors=True)
    spark = get_spark("tableformat-pipeline", args.master)
    spark.sparkContext.setLogLevel("ERROR")

    def step(msg):
        print(f"[{time.perf_counter() - began:5.1f}s] {msg}", flush=True)

    table, load_version = _load(spark, uri, args.rows, step)
    _mutate(spark, uri, args.rows, step)
    _query(spark, uri, load_version, step)
    _export_and_backfill(spark, uri, exports, backfill, load_version, step)
    _maintain(spark, uri, table, load_version, step)
    spark.stop()
    if not args.dir:
        shutil.rmtree(root, ignore_errors=True)
    step("done")


def _load(spark, uri: str, rows: int, step: Callable[[str], None]) -> tuple[tf.Table, int]:
    """Create the table and load it with one partitioned insert; a second insert of the same keys fails."""
    table = tf.create_table(uri, schema(), partitioning=tf.PartitionSchema(
        hash=[tf.HashPartition(["host", "metric"], buckets=4)], range=tf.RangePartition(["time"])))
    step(f"created {table!r} with {len(table.snapshot().tablet_ids)} tablets")

    res = partitioned_insert(spark, metrics_df(spark, rows), uri)
    step(f"partitioned insert: {res.inserted:,} rows in {res.rowsets_added} rowsets -> version {res.version}")
    try:
        partitioned_insert(spark, metrics_df(spark, 10), uri)
    except tf.DuplicateKeyError as e:
        step(f"re-inserting existing keys fails as it should: {str(e)[:90]}...")
    return table, res.version


def _mutate(spark, uri: str, rows: int, step: Callable[[str], None]) -> None:
    """Merge updates and deletes of loaded points, then upsert new ones."""
    changes = metrics_df(spark, rows // 50).selectExpr(
        "CASE WHEN pmod(hash(host, metric, time), 10) = 0 THEN 'delete' ELSE 'update' END AS op",
        "host", "metric", "time",
        "value * 10 AS value")
    res = mutation_merge(spark, changes, uri, op_column="op")
    step(f"merge: {res.updated:,} updated, {res.deleted:,} deleted -> version {res.version}")
    new = metrics_df(spark, rows // 100, start=rows).selectExpr("'upsert' AS op", "*")
    res = mutation_merge(spark, new.drop("tag"), uri, op_column="op")
    step(f"upsert of new points: {res.inserted:,} inserted -> version {res.version}")


def _query(spark, uri: str, load_version: int, step: Callable[[str], None]) -> None:
    """Spark SQL over the table as a view, and a read as of the load."""
    register_view(spark, "metrics", uri)
    top = spark.sql("SELECT metric, count(*) AS n, round(avg(value), 2) AS avg_value FROM metrics "
                    "WHERE host = 'host-007' GROUP BY metric ORDER BY metric").collect()
    step("Spark SQL on host-007: " + ", ".join(f"{r.metric}={r.n}/{r.avg_value}" for r in top))

    now = read_as_of(spark, uri).count()
    then = read_as_of(spark, uri, load_version).count()
    step(f"time travel: {now:,} rows now, {then:,} rows as of version {load_version}")


def _export_and_backfill(spark, uri: str, exports: str, backfill: str, load_version: int,
                         step: Callable[[str], None]) -> None:
    """Export the change history twice (the rerun exports nothing), and recompute an output as of the load."""
    exp = change_export(spark, uri, exports)
    again = change_export(spark, uri, exports)
    step(f"change export: versions {exp['start'] + 1}..{exp['end']}, {exp['rows']:,} changes "
         f"(a rerun exported {again['rows']})")

    n = time_travel_backfill(spark, uri, load_version, backfill,
                             sql="SELECT host, metric, avg(value) AS avg_value FROM source GROUP BY host, metric")
    step(f"backfill as of version {load_version}: {n} aggregate rows")


def _maintain(spark, uri: str, table: tf.Table, load_version: int, step: Callable[[str], None]) -> None:
    """Compact, vacuum with no retention (the load still reads, from UNDO records), print the history."""
    res = compact_table(spark, uri)
    step(f"compaction: {res['committed']} of {res['actions']} planned action(s) committed; "
         f"scan still {read_as_of(spark, uri).count():,} rows, check ok: {table.check().ok}")
    vac = table.vacuum(retain_seconds=0, grace_seconds=0)
    step(f"vacuum with no retention: {len(vac.files)} superseded file(s) deleted; version {load_version} "
         f"still reads {read_as_of(spark, uri, load_version).count():,} rows, from the compacted files' UNDO records")
    for h in table.history():
        print(f"    v{h.version} {tf.Timestamp(h.timestamp).to_datetime():%H:%M:%S} {h.operation} {dict(h.counts)}")


if __name__ == "__main__":
    main()
