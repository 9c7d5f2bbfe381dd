"""Spark benchmark: the data source against spark.read.parquet on the same base files; job throughput.

    python -m benchmarks.bench_spark [--rows 2000000]
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

import tableformat as tf

from .bench_core import best, generate, metrics_partitioning, metrics_schema


def native_read_rows(spark, work: str, n: int) -> None:
    """read_table (spark_jobs.read) against spark.read.parquet of the same base files, same run.

    Both sides build their DataFrame inside the timed call, so read_table's planning (opening
    the log, the read plan) is counted. Targets from issue 13."""
    import numpy as np
    from spark_jobs.read import read_table
    uri = os.path.join(work, "native")
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    data = generate(n)
    t.insert(data)
    files = [os.path.join(uri, f.path) for r in t.state.rowsets.values() for f in r.base]
    vid = f"c{t.schema.column('value').id}"
    all_cols = ", ".join(f"c{c.id}" for c in t.schema.columns)
    names = ", ".join(t.schema.names)

    def parquet(expr):
        return lambda: spark.read.parquet(*files).selectExpr(expr).collect()

    def ours(expr):
        return lambda: read_table(spark, uri).selectExpr(expr).collect()

    rows = [("read_table sum(value), compacted", best(ours("sum(value)")), best(parquet(f"sum({vid})")), 0.9),
            ("read_table full row, compacted", best(ours(f"sum(hash({names}))")),
             best(parquet(f"sum(hash({all_cols}))")), 0.8)]
    pick = np.random.default_rng(7).choice(n, n // 100, replace=False)
    upd = data.select(["host", "metric", "time"]).take(pa.array(pick))
    t.update(upd.append_column("value", pa.array(np.full(len(pick), 1.0))))
    assert len(t.state.deltas) == len(t.state.rowsets)       # every rowset has pending updates
    rows.append(("read_table sum(value), 1% updated", best(ours("sum(value)")), best(parquet(f"sum({vid})")), 0.7))
    print(f"rows={n:,}; {len(t.state.rowsets)} rowsets")
    print(f"{'query':<36} {'read_table':>11} {'parquet':>9} {'throughput':>11}  target")
    for label, d, p, target in rows:
        print(f"{label:<36} {d:10.2f}s {p:8.2f}s {p / d:10.2f}x   >= {target}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--reads-only", action="store_true", help="only the native read rows (read_table)")
    args = ap.parse_args()
    if args.reads_only:
        from spark_jobs.common import get_spark
        spark = get_spark("tableformat-bench")
        spark.sparkContext.setLogLevel("ERROR")
        work = tempfile.mkdtemp(prefix="tf-bench-spark-")
        native_read_rows(spark, work, args.rows)
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
        return
    from spark_jobs.common import get_spark
    from spark_jobs.insert import partitioned_insert
    from spark_jobs.merge import mutation_merge
    spark = get_spark("tableformat-bench")
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="tf-bench-spark-")
    n = args.rows
    data = generate(n)
    uri = os.path.join(work, "metrics")
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    t.insert(data)
    base_files = [os.path.join(uri, r.base[0].path) for r in t.state.rowsets.values()]
    pq_df = spark.read.parquet(*base_files)
    vid = f"c{t.schema.column('value').id}"
    all_cols = ", ".join(f"c{c.id}" for c in t.schema.columns)
    ds = spark.read.format("tableformat").load(uri)
    ds_value = spark.read.format("tableformat").option("columns", "value").load(uri)
    names = ", ".join(t.schema.names)

    p_sum = best(lambda: pq_df.selectExpr(f"sum({vid})").collect())
    d_sum = best(lambda: ds.selectExpr("sum(value)").collect())
    d_sum1 = best(lambda: ds_value.selectExpr("sum(value)").collect())
    p_full = best(lambda: pq_df.selectExpr(f"sum(hash({all_cols}))").collect())
    d_full = best(lambda: ds.selectExpr(f"sum(hash({names}))").collect())
    print(f"rows={n:,}")
    print(f"{'query':<44} {'data source':>12} {'parquet':>9} {'throughput':>11}  target")
    for label, d, p in [("sum(value), full-schema source", d_sum, p_sum),
                        ("sum(value), source reading only value", d_sum1, p_sum),
                        ("full-row read (hash of every column)", d_full, p_full)]:
        print(f"{label:<44} {d:11.2f}s {p:8.2f}s {p / d:10.2f}x   >= 0.5x")

    native_read_rows(spark, work, n)

    src = os.path.join(work, "in.parquet")
    new = generate(n // 2, seed=3, time_offset=10**9)
    pq.write_table(new, src)
    df = spark.read.parquet(src)
    t0 = time.perf_counter()
    r = partitioned_insert(spark, df, uri)
    ti = time.perf_counter() - t0
    print(f"partitioned insert: {r.inserted:,} rows in {ti:.1f}s = {r.inserted / ti:,.0f} rows/s")
    upd = data.select(["host", "metric", "time"]).slice(0, n // 10).append_column("value", pa.array([1.0] * (n // 10)))
    usrc = os.path.join(work, "upd.parquet")
    pq.write_table(upd, usrc)
    t0 = time.perf_counter()
    r = mutation_merge(spark, spark.read.parquet(usrc), uri, op="update")
    tm = time.perf_counter() - t0
    print(f"mutation merge (update): {r.updated:,} rows in {tm:.1f}s = {r.updated / tm:,.0f} rows/s")
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
