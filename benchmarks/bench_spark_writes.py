"""The Spark writes against Spark's own: `partitioned_insert` against a sorted Parquet write of
the same DataFrame, `mutation_merge`, and the peak RSS of any Python worker during an insert
(each size in a fresh Spark, `python -m benchmarks.bench_spark --rss-child N`). Run with
`python -m benchmarks.bench_spark --writes-only`.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import pyarrow.parquet as pq

import tableformat as tf

from .bench_core import best, generate, metrics_partitioning, metrics_schema


class WorkerRSS:
    """Peak RSS of any single process below this one whose name holds `kind`: "python" (Spark's
    Python daemon and workers) or "java" (the Spark JVM), sampled from outside every 50 ms."""

    def __init__(self, kind: str = "python"):
        import psutil
        self.kind = kind
        self.psutil, self.me, self.peak, self.stop = psutil, psutil.Process(), 0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            for p in self.me.children(recursive=True):
                try:
                    if self.kind in p.name().lower():
                        self.peak = max(self.peak, p.memory_info().rss)
                except (self.psutil.NoSuchProcess, self.psutil.AccessDenied):
                    pass
            self.stop.wait(0.05)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def write_input(work: str, n: int, seed: int = 3) -> str:
    """The input as Parquet in 1M-row pieces (so a 10M-row input never sits in this process whole)."""
    src = os.path.join(work, f"in-{n}")
    os.makedirs(src, exist_ok=True)
    step = 1_000_000
    for i, start in enumerate(range(0, n, step)):
        part = generate(min(step, n - start), seed=seed + i, time_offset=10**9 + start * 1000)
        pq.write_table(part, os.path.join(src, f"part-{i:04d}.parquet"))
    return src


def sorted_parquet_write(df, work: str, parts: int, key: list[str]) -> None:
    """Spark's own range + sort + Parquet write of `df` (the baseline of every insert benchmark)."""
    out = os.path.join(work, f"sorted-{time.perf_counter_ns()}")
    df.repartitionByRange(parts, *key).sortWithinPartitions(*key).write.parquet(out)
    shutil.rmtree(out, ignore_errors=True)


def bench_insert(spark, work: str, n: int) -> None:
    """The insert against Spark's own sorted Parquet write of the same DataFrame, same run."""
    from spark_jobs.insert import partitioned_insert
    src = write_input(work, n)
    df = spark.read.parquet(src)
    parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
    key = ["host", "metric", "time"]

    def spark_sorted_write():
        sorted_parquet_write(df, work, parts, key)

    def our_insert():
        uri = os.path.join(work, f"t-{time.perf_counter_ns()}")
        tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
        with WorkerRSS() as rss:
            r = partitioned_insert(spark, df, uri)
        assert r.inserted == n
        shutil.rmtree(uri, ignore_errors=True)
        return rss.peak

    base = best(spark_sorted_write, 2)
    t0 = time.perf_counter()
    peak = our_insert()
    ours = time.perf_counter() - t0
    ours = min(ours, best(our_insert, 1))
    print(f"insert {n:,} rows (8 tablets, {parts} tasks): {ours:.1f}s = {n / ours:,.0f} rows/s; "
          f"Spark repartitionByRange+sortWithinPartitions+write.parquet {base:.1f}s = {n / base:,.0f} rows/s; "
          f"{base / ours:.2f}x   target >= 0.7x")
    print(f"  peak RSS of any Python worker during the insert: {peak / 2**20:,.0f} MiB")


def bench_merge(spark, work: str, n: int) -> None:
    """A merge of updates to 1% of the rows of an n-row table."""
    from spark_jobs.insert import partitioned_insert
    from spark_jobs.merge import mutation_merge
    src = write_input(work, n, seed=11)
    uri = os.path.join(work, "merge-target")
    tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    partitioned_insert(spark, spark.read.parquet(src), uri)
    from pyspark.sql import functions as F
    upd = spark.read.parquet(src).select("host", "metric", "time").sample(fraction=0.01, seed=1) \
        .withColumn("value", F.lit(1.0))
    k = upd.count()
    t0 = time.perf_counter()
    r = mutation_merge(spark, upd, uri, op="update")
    tm = time.perf_counter() - t0
    assert r.updated == k
    print(f"merge of 1% updates ({k:,} of {n:,} rows): {tm:.1f}s = {k / tm:,.0f} rows/s")


def rss_child(n: int) -> None:
    """One insert of n rows in a fresh Spark (workers start clean), printing the worker peak RSS."""
    from spark_jobs.session import get_spark
    from spark_jobs.insert import partitioned_insert
    spark = get_spark("tableformat-bench-rss")
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="tf-bench-rss-")
    try:
        src = write_input(work, n)
        uri = os.path.join(work, "t")
        tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
        t0 = time.perf_counter()
        with WorkerRSS() as rss:
            r = partitioned_insert(spark, spark.read.parquet(src), uri)
        took = time.perf_counter() - t0
        assert r.inserted == n
        print(f"RSS {n} {rss.peak} {took:.1f}", flush=True)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


def bench_writes(n: int, rss_rows: list[int]) -> None:
    from spark_jobs.session import get_spark
    spark = get_spark("tableformat-bench-writes")
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="tf-bench-writes-")
    try:
        bench_insert(spark, work, n)
        bench_merge(spark, work, n)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    peaks = {}
    for rows in rss_rows:
        out = subprocess.run([sys.executable, "-m", "benchmarks.bench_spark", "--rss-child", str(rows)],
                             capture_output=True, text=True, check=True).stdout
        _, got, peak, took = next(line for line in out.splitlines() if line.startswith("RSS ")).split()
        peaks[int(got)] = int(peak)
        print(f"peak RSS of any Python worker, insert of {int(got):,} rows: {int(peak) / 2**20:,.0f} MiB "
              f"({took}s)   target <= 1024 MiB")
    if len(peaks) > 1:
        lo, hi = min(peaks), max(peaks)
        print(f"  {hi:,} rows / {lo:,} rows: {peaks[hi] / peaks[lo]:.2f}x   target <= 1.3x")
