"""INSERT through the JVM writer (`partitioned_insert`, path='jvm': tableformat.write.SparkInsert)
against Spark's own range + sort + Parquet write of the same rows, in the same run and session
(issue 45: target >= 1.0x at 6M and 20M rows), with the peak RSS of the Spark JVM during each, so
executor memory can be compared across sizes. `--python` adds today's Python path at each size.

    python -m benchmarks.bench_spark_insert [--rows 6000000,20000000] [--python]
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import tableformat as tf

from .bench_core import metrics_partitioning, metrics_schema
from .bench_spark_writes import WorkerRSS, sorted_parquet_write, write_input


def timed(fn) -> tuple[float, int]:
    with WorkerRSS("java") as rss:   # the Spark JVM
        t0 = time.perf_counter()
        fn()
        took = time.perf_counter() - t0
    return took, rss.peak


def bench(spark, work: str, n: int, python: bool) -> None:
    from spark_jobs.insert import partitioned_insert
    src = write_input(work, n)
    df = spark.read.parquet(src)
    parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
    key = ["host", "metric", "time"]

    def spark_sorted_write():
        sorted_parquet_write(df, work, parts, key)

    def insert(path):
        def run():
            uri = os.path.join(work, f"t-{time.perf_counter_ns()}")
            tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
            assert partitioned_insert(spark, df, uri, partitions=parts, path=path).inserted == n
            shutil.rmtree(uri, ignore_errors=True)
        return run

    # alternated, best of two each: the first job of a JVM pays its JIT warm-up, whichever runs it
    runs = [(timed(spark_sorted_write), timed(insert("jvm"))) for _ in range(2)]
    base, base_rss = min(r[0] for r in runs)
    ours, ours_rss = min(r[1] for r in runs)
    print(f"INSERT {n:,} rows (8 tablets, {parts} tasks), JVM path: {ours:.1f}s = {n / ours:,.0f} rows/s; Spark "
          f"repartitionByRange+sortWithinPartitions+write.parquet {base:.1f}s = {n / base:,.0f} rows/s; "
          f"{base / ours:.2f}x   target >= 1.0x", flush=True)
    print(f"  peak Spark JVM RSS: insert {ours_rss / 2**20:,.0f} MiB, Spark's write {base_rss / 2**20:,.0f} MiB",
          flush=True)
    if python:
        py, _ = timed(insert("python"))
        print(f"  Python path: {py:.1f}s = {n / py:,.0f} rows/s; {base / py:.2f}x of Spark's write; "
              f"the JVM path {py / ours:.2f}x the Python path's speed   target >= 1.0x", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="6000000,20000000", help="comma-separated input sizes")
    ap.add_argument("--python", action="store_true", help="also time the Python path")
    args = ap.parse_args()
    from spark_jobs.session import get_spark
    spark = get_spark("tableformat-bench-insert")
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="tf-bench-insert-")
    try:
        for n in (int(x) for x in args.rows.split(",")):
            bench(spark, work, n, args.python)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
