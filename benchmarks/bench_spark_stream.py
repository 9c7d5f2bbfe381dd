"""#36's streaming source figures (`python -m benchmarks.bench_spark --stream-only [--rows 2000000]`):
the change stream (spark_jobs/stream.py) over the table of `--changes-only` (n rows through
partitioned_insert, then `commits` merges each updating 1% of the rows and deleting 0.1%).

- throughput: Trigger.AvailableNow over those commits (one micro-batch, and one per commit with
  maxVersionsPerTrigger=1) into a foreachBatch sink that forces every value (a hash of every
  column); rows/s = change rows / wall time from start() to the query's end;
- latency: a query with ProcessingTime("1 second") running while commits land (in-process
  Table.update of 1% of the rows, so the commits take no Spark slot); per commit, the time from
  the commit returning to the foreachBatch call that has counted that version's rows;
- the peak RSS of any Python process below the driver (Spark's Python workers and the stream
  planner's runner) during the AvailableNow runs, sampled every 50 ms (bench_spark_writes.WorkerRSS).
Every figure is printed with the load average (the machine is shared).
"""
from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import threading
import time

import numpy as np
import pyarrow as pa

import tableformat as tf

from .bench_core import metrics_partitioning, metrics_schema
from .bench_spark_writes import WorkerRSS, write_input

KEYS = ["host", "metric", "time"]
HASHED = "host, metric, time, value, _change_type, _commit_version"


def _load() -> str:
    return "load %.1f/%.1f/%.1f" % os.getloadavg()


def _table(spark, work: str, n: int, commits: int):
    """bench_changes' table, ours only: (uri, first changed version, the input keys)."""
    from pyspark.sql import functions as F
    from spark_jobs.insert import partitioned_insert
    from spark_jobs.merge import mutation_merge
    df = spark.read.parquet(write_input(work, n, seed=21)).cache()
    df.count()
    uri = os.path.join(work, "ours")
    tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    partitioned_insert(spark, df, uri)
    first = tf.open_table(uri).version + 1
    for i in range(commits):
        upd = df.select(*KEYS).sample(fraction=0.01, seed=100 + i).withColumn("value", F.lit(float(i)))
        dels = df.select(*KEYS).sample(fraction=0.001, seed=200 + i).withColumn("value", F.lit(None).cast("double"))
        ops = (upd.withColumn("op", F.lit("update")).unionByName(dels.withColumn("op", F.lit("delete")))
               .dropDuplicates(KEYS))
        mutation_merge(spark, ops, uri, op_column="op", on_error="ignore")
    keys = df.select(*KEYS).toArrow()
    df.unpersist()
    return uri, first, keys


def _available_now(spark, uri: str, first: int, ckpt: str, per_trigger: int | None,
                   opts: dict) -> tuple[int, int, float]:
    """One AvailableNow run from `first`: (change rows, micro-batches, seconds)."""
    seen = {"rows": 0, "batches": 0}

    def sink(df, batch_id):
        r = df.selectExpr("count(*)", f"sum(hash({HASHED}))").first()
        seen["rows"] += r[0]
        seen["batches"] += 1 if r[0] else 0
    r = (spark.readStream.format("tableformat").option("readChangeFeed", "true")
         .option("changeFeedColumns", "delta").option("startingVersion", first).options(**opts))
    if per_trigger:
        r = r.option("maxVersionsPerTrigger", per_trigger)
    t0 = time.perf_counter()
    q = r.load(uri).writeStream.foreachBatch(sink).option("checkpointLocation", ckpt) \
        .trigger(availableNow=True).start()
    q.awaitTermination()
    return seen["rows"], seen["batches"], time.perf_counter() - t0


def _latency(spark, uri: str, keys: pa.Table, ckpt: str, commits: int, gap: float,
             opts: dict) -> list[tuple[int, int, float]]:
    """A ProcessingTime("1 second") query while `commits` commits land `gap` s apart: per commit,
    (version, change rows, seconds from the commit's return to its rows in foreachBatch)."""
    seen: dict[int, float] = {}
    counts: dict[int, int] = {}
    lock = threading.Lock()

    def sink(df, batch_id):
        got = df.groupBy("_commit_version").count().collect()
        now = time.time()
        with lock:
            for v, c in got:
                seen.setdefault(v, now)
                counts[v] = counts.get(v, 0) + c
    t = tf.open_table(uri)
    q = (spark.readStream.format("tableformat").option("readChangeFeed", "true")
         .option("changeFeedColumns", "delta").option("startingVersion", t.version + 1).options(**opts).load(uri)
         .writeStream.foreachBatch(sink).option("checkpointLocation", ckpt)
         .trigger(processingTime="1 second").start())
    rng = np.random.default_rng(5)
    committed = {}
    try:
        while q.lastProgress is None:                  # the query has run its first trigger
            time.sleep(0.1)
        for i in range(commits):
            pick = rng.choice(keys.num_rows, keys.num_rows // 100, replace=False)
            upd = keys.take(pa.array(pick)).append_column("value", pa.array(np.full(len(pick), -float(i))))
            r = t.update_ignore(upd)                   # keys the setup deleted are skipped
            committed[r.version] = time.time()
            time.sleep(gap)
        deadline = time.time() + 60
        while time.time() < deadline and not all(v in seen for v in committed):
            time.sleep(0.2)
    finally:
        q.stop()
    return [(v, counts.get(v, 0), seen[v] - c if v in seen else float("nan")) for v, c in committed.items()]


def bench_stream(n: int, commits: int = 10, latency_commits: int = 5, gap: float = 4.0) -> None:
    from spark_jobs.session import get_spark
    spark = get_spark("tableformat-bench-stream")
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="tf-bench-stream-")
    try:
        t0 = time.perf_counter()
        uri, first, keys = _table(spark, work, n, commits)
        print(f"streaming source: {n:,} rows, {commits} commits of 1% updates + 0.1% deletes "
              f"(setup {time.perf_counter() - t0:.0f}s; local[2]; {_load()})", flush=True)
        _available_now(spark, uri, first, os.path.join(work, "warm"), None, {})        # JIT, page cache
        cores = spark.sparkContext.defaultParallelism
        variants = ({}, {"numPartitions": str(2 * cores)})
        for opts in variants:               # the same ten commits for each, before the latency commits
            _throughput(spark, uri, first, work, opts)
        for opts in variants:
            _latency_report(spark, uri, keys, work, opts, latency_commits, gap)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


def _tag(opts: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in opts.items()) or "one task per part"


def _throughput(spark, uri: str, first: int, work: str, opts: dict) -> None:
    for per in (None, 1):
        with WorkerRSS() as rss:
            rows, batches, secs = _available_now(spark, uri, first, tempfile.mkdtemp(dir=work), per, opts)
        label = f"AvailableNow ({_tag(opts)}" + (f", maxVersionsPerTrigger={per})" if per else ")")
        print(f"  {label:<62} {rows:,} change rows in {batches} batch(es), {secs:.2f}s = {rows / secs:,.0f} "
              f"rows/s; worker peak RSS {rss.peak / 2**20:.0f} MiB  ({_load()})", flush=True)


def _latency_report(spark, uri: str, keys: pa.Table, work: str, opts: dict, commits: int, gap: float) -> None:
    with WorkerRSS() as rss:
        lat = _latency(spark, uri, keys, tempfile.mkdtemp(dir=work), commits, gap, opts)
    secs = [s for _, _, s in lat]
    print(f"  ProcessingTime('1 second') ({_tag(opts)}), commit -> its rows in foreachBatch (worker peak RSS "
          f"{rss.peak / 2**20:.0f} MiB; {_load()}):")
    for v, rows, s in lat:
        print(f"    version {v}: {rows:,} change rows, {s:.2f}s")
    ok = all(s <= 2.0 for s in secs)
    print(f"  latency median {statistics.median(secs):.2f}s, max {max(secs):.2f}s; target <= 2 s: "
          f"{'met' if ok else 'missed'}", flush=True)
