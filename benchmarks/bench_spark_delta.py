"""Delta Lake (delta-spark) as the peer of the Spark jobs: the same session, the same DataFrame,
the same machine (`python -m benchmarks.bench_spark --delta-only` / `--changes-only`).

`bench_delta`: each step (load, merge, upsert, delete, read, time travel, change feed,
compaction, duplicate keys) on a Delta table with deletion vectors and change data feed on, and
on ours: seconds, bytes written (each directory's growth), our ratio. `bench_changes`: #36's
batch change read against Delta's readChangeFeed. Ours runs through the public API
(`tableformat`) and the Spark jobs (`spark_jobs`).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time

import tableformat as tf

from .bench_core import best, metrics_partitioning, metrics_schema
from .bench_spark_writes import write_input

KEYS = ["host", "metric", "time"]
COND = " AND ".join(f"t.{k} = s.{k}" for k in KEYS)


def _dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs) \
        if os.path.exists(path) else 0


def _files(path: str) -> dict[str, int]:
    return {os.path.join(d, f): os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs}


def _kind(rel: str) -> str:
    """What a file written by a commit is for, on either side."""
    name = os.path.basename(rel)
    if rel.startswith(("_delta_log", "_log")):
        return "log"
    if rel.startswith("_change_data"):
        return "Delta CDC files"
    if name.startswith("deletion_vector"):
        return "deletion vectors"
    if name.startswith(("redo-", "undo-")):
        return "delta files (REDO)"
    return "data files" if name.endswith(".parquet") else "other"


def _growth(path: str, before: dict[str, int]) -> str:
    """The bytes written since `before` (new files, and growth of files that were there), by kind."""
    kinds: dict[str, int] = {}
    for f, size in _files(path).items():
        grown = size - before.get(f, 0)
        if grown > 0:
            k = _kind(os.path.relpath(f, path))
            kinds[k] = kinds.get(k, 0) + grown
    return ", ".join(f"{k} {v / 2**20:.2f} MiB" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]))


def delta_session(name: str):
    """A Spark session with delta-spark, new Delta tables getting deletion vectors and the change feed."""
    from spark_jobs.session import get_spark
    spark = get_spark(name, delta=True)
    spark.sparkContext.setLogLevel("ERROR")
    for k in ("enableDeletionVectors", "enableChangeDataFeed"):
        spark.conf.set(f"spark.databricks.delta.properties.defaults.{k}", "true")
    return spark


def delta_and_ours(spark, work: str, n: int, dpath: str, uri: str):
    """The benchmarks' common start: n input rows (cached), written as a Delta table at `dpath`
    and inserted into ours at `uri`; the input DataFrame."""
    from spark_jobs.insert import partitioned_insert
    df = spark.read.parquet(write_input(work, n, seed=21)).cache()
    df.count()
    df.write.format("delta").save(dpath)
    tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    partitioned_insert(spark, df, uri)
    return df


class _Steps:
    """Each step run on Delta, then on ours: seconds and bytes written, one row per step."""

    def __init__(self, dpath: str, uri: str):
        self.dpath, self.uri, self.rows = dpath, uri, []

    def step(self, name, delta_fn, ours_fn, speed_target=None):
        b0, t0 = _dir_bytes(self.dpath), time.perf_counter()
        d_out = delta_fn()
        d_s, d_b = time.perf_counter() - t0, _dir_bytes(self.dpath) - b0
        b0, t0 = _dir_bytes(self.uri), time.perf_counter()
        o_out = ours_fn()
        o_s, o_b = time.perf_counter() - t0, _dir_bytes(self.uri) - b0
        self.rows.append((name, d_s, d_b, o_s, o_b, speed_target, d_out, o_out))
        print(f"  {name}: Delta {d_s:.2f}s {d_b / 2**20:.2f} MiB, ours {o_s:.2f}s {o_b / 2**20:.2f} MiB", flush=True)
        return d_out, o_out


def bench_delta(n: int) -> None:
    """Each step on a Delta table (deletion vectors and change data feed on) and on ours: seconds,
    bytes written (files are never deleted before vacuum, so the directory's growth), our ratio."""
    spark = delta_session("tableformat-bench-delta")
    work = tempfile.mkdtemp(prefix="tf-bench-delta-")
    steps = _Steps(os.path.join(work, "delta"), os.path.join(work, "ours"))
    try:
        df = spark.read.parquet(write_input(work, n, seed=21)).cache()
        df.count()
        tf.create_table(steps.uri, metrics_schema(), partitioning=metrics_partitioning())
        d_dup, o_dup = _delta_steps(spark, df, steps)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    _report_delta(n, steps.rows, d_dup, o_dup)


def _delta_steps(spark, df, steps: _Steps) -> tuple[str, str]:
    """The steps, in order; returns what each side did with duplicate keys."""
    from pyspark.sql import functions as F
    from delta.tables import DeltaTable
    from spark_jobs.compaction import compact_table
    from spark_jobs.insert import partitioned_insert
    from spark_jobs.merge import mutation_merge
    from spark_jobs.read import read_table
    dpath, uri, step = steps.dpath, steps.uri, steps.step

    def merge(src):
        return DeltaTable.forPath(spark, dpath).alias("t").merge(src.alias("s"), COND)
    step("load", lambda: df.write.format("delta").save(dpath), lambda: partitioned_insert(spark, df, uri).version)
    load_version = tf.open_table(uri).version
    upd = df.select(*KEYS).sample(fraction=0.01, seed=1).withColumn("value", F.lit(1.0)).cache()
    n_upd = upd.count()
    step(f"merge: 1% updates to one column ({n_upd:,} rows)",
         lambda: merge(upd).whenMatchedUpdate(set={"value": "s.value"}).execute(),
         lambda: mutation_merge(spark, upd, uri, op="update").version, "merge")
    merge_dv = DeltaTable.forPath(spark, dpath).history(1).collect()[0]["version"]
    merge_ov = tf.open_table(uri).version
    old = df.sample(fraction=0.005, seed=2).withColumn("value", F.lit(2.0))
    new = df.sample(fraction=0.005, seed=3).withColumn("time", F.col("time") + F.expr("INTERVAL 3650 DAYS"))
    ups = old.unionByName(new).cache()
    n_ups = ups.count()
    step(f"upsert: 1% rows, half new keys ({n_ups:,} rows)",
         lambda: merge(ups).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(),
         lambda: mutation_merge(spark, ups, uri, op="upsert").version)
    dels = df.select(*KEYS).sample(fraction=0.001, seed=4).cache()
    n_del = dels.count()
    step(f"delete 0.1% ({n_del:,} keys; Delta: merge whenMatchedDelete)",
         lambda: merge(dels).whenMatchedDelete().execute(),
         lambda: mutation_merge(spark, dels, uri, op="delete").version)
    d_sum, o_sum = step("sum(value) after the changes, before compaction",
                        lambda: spark.read.format("delta").load(dpath).selectExpr("sum(value)").first()[0],
                        lambda: read_table(spark, uri).selectExpr("sum(value)").first()[0], "read")
    assert abs(d_sum - o_sum) <= 1e-6 * max(1.0, abs(d_sum)), (d_sum, o_sum)
    step("time travel to the load's version: sum(value)",
         lambda: spark.read.format("delta").option("versionAsOf", 0).load(dpath)
         .selectExpr("sum(value)").first()[0],
         lambda: read_table(spark, uri, as_of=load_version).selectExpr("sum(value)").first()[0])
    d_cdf, o_cdf = step("change feed of the merge (rows)",
                        lambda: spark.read.format("delta").option("readChangeFeed", "true")
                        .option("startingVersion", merge_dv).option("endingVersion", merge_dv).load(dpath)
                        .where("_change_type = 'update_postimage'").count(),
                        lambda: tf.open_table(uri).changes(merge_ov - 1, merge_ov).num_rows)
    assert d_cdf == o_cdf == n_upd, (d_cdf, o_cdf, n_upd)
    step("compaction: OPTIMIZE vs compact_table", lambda: spark.sql(f"OPTIMIZE delta.`{dpath}`").collect(),
         lambda: compact_table(spark, uri))
    return _duplicate_keys(spark, df.limit(10), steps)


def _duplicate_keys(spark, dup, steps: _Steps) -> tuple[str, str]:
    """Rows whose keys are in the table already, appended: Delta accepts them, ours refuses."""
    from spark_jobs.insert import partitioned_insert

    def ours_dup():
        try:
            partitioned_insert(spark, dup, steps.uri)
            return "accepted"
        except tf.DuplicateKeyError:
            return "DuplicateKeyError"
    return steps.step("duplicate keys inserted (10 rows)",
                      lambda: dup.write.format("delta").mode("append").save(steps.dpath) or "silently accepted",
                      ours_dup)


def _report_delta(n: int, rows: list[tuple], d_dup: str, o_dup: str) -> None:
    print(f"Delta Lake {n:,} rows (delta-spark, deletion vectors + change data feed on), measured in one session")
    print(f"{'step':<58} {'Delta s':>8} {'Delta MiB':>10} {'ours s':>8} {'ours MiB':>9} {'speed':>7} {'bytes':>7}")
    for name, d_s, d_b, o_s, o_b, _target, _d_out, _o_out in rows:
        br = f"{o_b / d_b:.3f}" if d_b > 0 else "-"
        print(f"{name:<58} {d_s:8.2f} {d_b / 2**20:10.2f} {o_s:8.2f} {o_b / 2**20:9.2f} {d_s / o_s:6.2f}x {br:>7}")
    print("speed = Delta's seconds / ours (> 1: we are faster); bytes = ours / Delta's")
    by = {r[0].split(":")[0]: r for r in rows}
    m, r = by["merge"], by["sum(value) after the changes, before compaction"]
    print(f"target our merge throughput >= Delta's: {m[1] / m[3]:.2f}x  {'met' if m[3] <= m[1] else 'missed'}")
    print(f"target our bytes per 1% update <= 1/20 of Delta's: {m[4] / max(m[2], 1):.4f}  "
          f"{'met' if m[4] * 20 <= m[2] else 'missed'}")
    print(f"target our read after changes >= Delta's: {r[1] / r[3]:.2f}x  {'met' if r[3] <= r[1] else 'missed'}")
    print(f"duplicate key insert: Delta {d_dup}, ours {o_dup}")


def bench_changes(n: int, commits: int = 10, repeat: int = 3) -> None:
    """#36's batch change read: `commits` commits, each updating 1% of the rows (one column) and
    deleting 0.1%, on a Delta table (change data feed and deletion vectors on) and on ours; then the
    change feed of those commits read in full (a hash of every column forces every value), Delta's
    readChangeFeed against our readChangeFeed with Delta's columns (the same rows: insert, delete,
    update_preimage, update_postimage). Bytes: what the commits wrote (each directory's growth)."""
    from delta.tables import DeltaTable
    spark = delta_session("tableformat-bench-changes")
    work = tempfile.mkdtemp(prefix="tf-bench-changes-")
    dpath, uri = os.path.join(work, "delta"), os.path.join(work, "ours")
    try:
        df = delta_and_ours(spark, work, n, dpath, uri)
        d0, o0 = _dir_bytes(dpath), _dir_bytes(uri)
        d_files, o_files = _files(dpath), _files(uri)
        d_first = DeltaTable.forPath(spark, dpath).history(1).collect()[0]["version"] + 1
        o_first = tf.open_table(uri).version + 1
        d_secs, o_secs = _change_commits(spark, df, dpath, uri, commits)
        d_bytes, o_bytes = _dir_bytes(dpath) - d0, _dir_bytes(uri) - o0
        split = (_growth(dpath, d_files), _growth(uri, o_files))
        d_last = DeltaTable.forPath(spark, dpath).history(1).collect()[0]["version"]
        feeds = _read_feeds(spark, dpath, uri, (d_first, d_last), (o_first, tf.open_table(uri).version), repeat)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    count, kinds, ours_kinds, parts, (d_s, o_s, p_s, k_s) = feeds
    print(f"batch change read: {n:,} rows, {commits} commits of 1% updates + 0.1% deletes (local Spark, one session)")
    print(f"  change rows: Delta {count['delta']:,} {kinds}; ours {count['ours']:,} {ours_kinds}; "
          f"ours ({parts} partitions)")
    print(f"  the commits: Delta {d_secs:.2f}s {d_bytes / 2**20:.2f} MiB, ours {o_secs:.2f}s {o_bytes / 2**20:.2f} MiB")
    print(f"  written by the commits: Delta: {split[0]}; ours: {split[1]}")
    label = f"read of the {commits} commits"
    print(f"{label:<52} {'seconds':>8} {'vs Delta':>9}")
    print(f"{'Delta readChangeFeed':<52} {d_s:8.2f}")
    print(f"{'ours, changeFeedColumns=delta':<52} {o_s:8.2f} {o_s / d_s:8.2f}x")
    print(f"{'ours, our columns (_op, _changed_columns)':<52} {p_s:8.2f} {p_s / d_s:8.2f}x")
    print(f"{'ours, changeFeedColumns=delta, numPartitions=2x cores':<52} {k_s:8.2f} {k_s / d_s:8.2f}x")
    print(f"  load average {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"target read <= 1.5x Delta's time: {o_s / d_s:.2f}x  {'met' if o_s <= 1.5 * d_s else 'missed'}")
    print(f"target bytes written <= 1/20 of Delta's: {o_bytes / max(d_bytes, 1):.4f}  "
          f"{'met' if o_bytes * 20 <= d_bytes else 'missed'}")


def _change_commits(spark, df, dpath: str, uri: str, commits: int) -> tuple[float, float]:
    """The commits whose changes are read: each 1% updates and 0.1% deletes, one merge on each
    side; (Delta's seconds, ours)."""
    from pyspark.sql import functions as F
    from delta.tables import DeltaTable
    from spark_jobs.merge import mutation_merge
    d_secs = o_secs = 0.0
    for i in range(commits):
        upd = df.select(*KEYS).sample(fraction=0.01, seed=100 + i).withColumn("value", F.lit(float(i)))
        dels = df.select(*KEYS).sample(fraction=0.001, seed=200 + i).withColumn("value", F.lit(None).cast("double"))
        ops = (upd.withColumn("op", F.lit("update")).unionByName(dels.withColumn("op", F.lit("delete")))
               .dropDuplicates(KEYS).cache())
        ops.count()
        t0 = time.perf_counter()
        (DeltaTable.forPath(spark, dpath).alias("t").merge(ops.alias("s"), COND)
         .whenMatchedDelete("s.op = 'delete'").whenMatchedUpdate("s.op = 'update'", {"value": "s.value"})
         .execute())
        t1 = time.perf_counter()
        mutation_merge(spark, ops, uri, op_column="op", on_error="ignore")   # keys deleted earlier: skipped
        o_secs, d_secs = o_secs + time.perf_counter() - t1, d_secs + t1 - t0
        ops.unpersist()
    return d_secs, o_secs


def _read_feeds(spark, dpath: str, uri: str, d_range: tuple[int, int], o_range: tuple[int, int], repeat: int):
    """The change feed of the commits read in full on each side: (row counts, Delta's change
    kinds, ours, our partitions, (Delta's seconds, ours with Delta's columns, ours with our own))."""
    cols = "host, metric, time, value, _change_type, _commit_version"
    delta_feed = (spark.read.format("delta").option("readChangeFeed", "true")
                  .option("startingVersion", d_range[0]).option("endingVersion", d_range[1]).load(dpath))
    ours_feed = (spark.read.format("tableformat").option("readChangeFeed", "true")
                 .option("startingVersion", o_range[0]).option("endingVersion", o_range[1])
                 .option("changeFeedColumns", "delta").load(uri))
    packed = spark.read.format("tableformat").options(
        readChangeFeed="true", startingVersion=o_range[0], endingVersion=o_range[1], changeFeedColumns="delta",
        numPartitions=2 * spark.sparkContext.defaultParallelism).load(uri)
    ours_plain = (spark.read.format("tableformat").option("readChangeFeed", "true")
                  .option("startingVersion", o_range[0]).option("endingVersion", o_range[1]).load(uri))
    count = {}

    def read(name, feed, expr):
        count[name] = feed.selectExpr("count(*)", f"sum(hash({expr}))").first()[0]
    d_s = best(lambda: read("delta", delta_feed, cols), repeat)
    o_s = best(lambda: read("ours", ours_feed, cols), repeat)
    p_s = best(lambda: read("plain", ours_plain, "host, metric, time, value, _op"), repeat)
    k_s = best(lambda: read("packed", packed, cols), repeat)
    assert count["packed"] == count["ours"]
    kinds = {r[0]: r[1] for r in delta_feed.groupBy("_change_type").count().collect()}
    ours_kinds = {r[0]: r[1] for r in ours_feed.groupBy("_change_type").count().collect()}
    return count, kinds, ours_kinds, ours_feed.rdd.getNumPartitions(), (d_s, o_s, p_s, k_s)
