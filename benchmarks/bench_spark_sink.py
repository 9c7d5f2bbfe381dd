"""#36's streaming sink: 1% upserts per micro-batch into a table of n rows, ours (spark_jobs.sink,
exactly once through the `txn` action) against Delta's foreachBatch + MERGE, in one session
(pyspark 4.2 + delta-spark: run it with /work/venv-delta's Python).

    python -m benchmarks.bench_spark --sink-only [--rows 2000000] [--batches 10]

Both queries read the same Parquet files, one file a micro-batch (half updates of existing keys,
half new keys), with Trigger.AvailableNow; throughput is input rows over the query's wall time.
Python RSS: the peak of any Python worker below the driver (sampled from outside), and the
driver's own peak (where a small batch is planned).
"""
from __future__ import annotations

import os
import resource
import shutil
import tempfile
import time

import pyarrow.compute as pc

import tableformat as tf

from .bench_spark_delta import COND, delta_and_ours, delta_session
from .bench_spark_writes import WorkerRSS


def _stream_input(spark, df, src: str, batches: int) -> int:
    """`batches` Parquet files, each 1% of the table (half existing keys with a new value, half new
    keys), modification times in batch order; the rows written in all."""
    from pyspark.sql import functions as F
    os.makedirs(src)
    total = 0
    for i in range(batches):
        old = df.sample(fraction=0.005, seed=300 + i).withColumn("value", F.lit(float(i)))
        new = (df.sample(fraction=0.005, seed=400 + i)
               .withColumn("time", F.col("time") + F.expr(f"INTERVAL {3650 * (i + 1)} DAYS")))
        out = os.path.join(src + "-tmp", str(i))
        old.unionByName(new).dropDuplicates(["host", "metric", "time"]).coalesce(1).write.parquet(out)
        part = next(f for f in os.listdir(out) if f.endswith(".parquet"))
        dest = os.path.join(src, f"batch-{i:04d}.parquet")
        os.replace(os.path.join(out, part), dest)
        os.utime(dest, (1_000_000 + i, 1_000_000 + i))
        total += spark.read.parquet(dest).count()
    shutil.rmtree(src + "-tmp", ignore_errors=True)
    return total


def _run(spark, schema, src: str, checkpoint: str, fn) -> float:
    """One AvailableNow query over the input files through foreachBatch `fn`: its seconds."""
    t0 = time.perf_counter()
    q = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(src)
         .writeStream.foreachBatch(fn).option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    q.awaitTermination()
    return time.perf_counter() - t0


def bench_sink(n: int, batches: int = 10) -> None:
    from delta.tables import DeltaTable
    from spark_jobs.sink import UpsertSink
    spark = delta_session("tableformat-bench-sink")
    work = tempfile.mkdtemp(prefix="tf-bench-sink-")
    dpath, uri, src = (os.path.join(work, x) for x in ("delta", "ours", "stream-in"))
    try:
        df = delta_and_ours(spark, work, n, dpath, uri)
        rows = _stream_input(spark, df, src, batches)

        def delta_batch(bdf, batch_id):
            (DeltaTable.forPath(spark, dpath).alias("t").merge(bdf.alias("s"), COND)
             .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
        d_s = _run(spark, df.schema, src, os.path.join(work, "ck-delta"), delta_batch)
        driver0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        with WorkerRSS() as rss:
            o_s = _run(spark, df.schema, src, os.path.join(work, "ck-ours"), UpsertSink(uri))
        driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        d_sum = spark.read.format("delta").load(dpath).selectExpr("count(*)", "sum(value)").first()
        o_tab = tf.open_table(uri)
        values = o_tab.snapshot().scan(["value"]).to_arrow().column("value")
        o_sum = (len(values), pc.sum(values).as_py())
        assert d_sum[0] == o_sum[0] and abs(d_sum[1] - o_sum[1]) <= 1e-6 * max(1.0, abs(d_sum[1])), (d_sum, o_sum)
        commits = sum(1 for h in o_tab.history() if h.operation.startswith("STREAM") or h.operation == "MERGE")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"streaming sink: {n:,} rows, {batches} micro-batches of 1% upserts ({rows:,} rows; "
          f"local Spark, one session); ours committed {commits} batches")
    print(f"{'query':<44} {'seconds':>8} {'rows/s':>10} {'vs Delta':>9}")
    print(f"{'Delta foreachBatch + MERGE':<44} {d_s:8.2f} {rows / d_s:10,.0f}")
    print(f"{'ours, UpsertSink (exactly once)':<44} {o_s:8.2f} {rows / o_s:10,.0f} {d_s / o_s:8.2f}x")
    print(f"target >= 5x Delta's throughput: {d_s / o_s:.2f}x  {'met' if d_s >= 5 * o_s else 'missed'}")
    print(f"Python worker peak RSS during ours: {rss.peak / 2**20:.0f} MiB "
          f"({'met' if rss.peak <= 2**30 else 'missed'} <= 1 GB); driver peak {driver / 2**20:.0f} MiB "
          f"(before ours {driver0 / 2**20:.0f} MiB)")
