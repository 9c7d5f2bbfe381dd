"""Spark benchmark: the data source against spark.read.parquet on the same base files; job throughput.

    python -m benchmarks.bench_spark [--rows 2000000]
    python -m benchmarks.bench_spark --writes-only --rss-rows 2000000,10000000   # insert/merge/RSS rows
    python -m benchmarks.bench_spark --delta-only [--rows 1000000]   # Delta Lake (delta-spark) as the peer
    python -m benchmarks.bench_spark --connector-only [--s3]   # the JVM connector (--s3: through s3a on moto)

Writes: the insert against Spark's own repartitionByRange + sortWithinPartitions + write.parquet
of the same DataFrame (same run); the peak RSS of any Python worker during an insert, sampled
from outside (psutil over the driver's descendant Python processes), each size in a fresh
process; a merge of 1% updates.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq

import tableformat as tf

from .bench_core import best, generate, metrics_partitioning, metrics_schema


def native_read_rows(spark, work: str, n: int) -> None:
    """read_table (spark_jobs.read) against spark.read.parquet of the same base files, same run.

    Both sides build their DataFrame inside the timed call, so read_table's planning (opening
    the log, the read plan) is counted. Each pair is warmed once (JIT, page cache), then run in
    turns, best of 5 each, so neither side pays for running first. Targets from issue 13."""
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

    def pair(label, o, p, target):
        return (label, *alternating(o, p), target)

    rows = [pair("read_table sum(value), compacted", ours("sum(value)"), parquet(f"sum({vid})"), 0.9),
            pair("read_table full row, compacted", ours(f"sum(hash({names}))"), parquet(f"sum(hash({all_cols}))"), 0.8)]
    pick = np.random.default_rng(7).choice(n, n // 100, replace=False)
    upd = data.select(["host", "metric", "time"]).take(pa.array(pick))
    t.update(upd.append_column("value", pa.array(np.full(len(pick), 1.0))))
    assert len(t.state.deltas) == len(t.state.rowsets)       # every rowset has pending updates
    rows.append(pair("read_table sum(value), 1% updated", ours("sum(value)"), parquet(f"sum({vid})"), 0.7))
    print(f"rows={n:,}; {len(t.state.rowsets)} rowsets")
    print(f"{'query':<36} {'read_table':>11} {'parquet':>9} {'throughput':>11}  target")
    for label, d, p, target in rows:
        print(f"{label:<36} {d:10.2f}s {p:8.2f}s {p / d:10.2f}x   >= {target}x")
    floors(spark, t, uri, files, vid, parquet(f"sum({vid})"))


def connector_read_rows(spark, work: str, n: int, repeat: int = 5, s3: dict | None = None) -> None:
    """The JVM connector (read_table's default path when the session has its jar) against
    spark.read.parquet of the same base files, same session, sides alternated after a warm-up.
    Numeric columns are written PLAIN: pyspark 4.2's vectorized reader (the baseline) cannot
    decode BYTE_STREAM_SPLIT (bitshuffle). Targets from issue 22.
    `s3` (storage options of a table root `work` on S3): both sides read through s3a."""
    import numpy as np
    from spark_jobs.connector import loaded
    from spark_jobs.jvm_paths import configure_s3a, jvm_path
    from spark_jobs.read import read_table
    why = loaded(spark)
    if why:
        print(f"connector rows skipped: {why}")
        return
    uri = work.rstrip("/") + "/connector"
    read_kw = {"storage_options": s3} if s3 else {}
    plain = {"time", "value", "price", "count"}
    schema = tf.Schema([tf.Column(c.name, c.type.name, nullable=c.nullable, default=c.default,
                                  **({"encoding": "plain"} if c.name in plain else {}))
                        for c in metrics_schema().columns], primary_key=metrics_schema().primary_key)
    t = tf.create_table(uri, schema, partitioning=metrics_partitioning(),
                        properties={"history_max_age": -1}, storage_options=s3)
    data = generate(n)
    t.insert(data)
    if s3:
        configure_s3a(spark, t.storage, s3)
    base_files = lambda: [jvm_path(t.storage, f.path) for r in t.state.rowsets.values() for f in r.base]
    files = base_files()
    vid = f"c{t.schema.column('value').id}"
    all_cols = ", ".join(f"c{c.id}" for c in t.schema.columns)
    names = ", ".join(f"`{c}`" for c in t.schema.names)

    def parquet(expr, fs=None):
        return lambda: spark.read.parquet(*(fs or files)).selectExpr(expr).collect()

    def ours(expr, **kw):
        return lambda: read_table(spark, uri, **read_kw, **kw).selectExpr(expr).collect()

    def tasks(kw=None, fs=None):
        return (read_table(spark, uri, **read_kw, **(kw or {})).rdd.getNumPartitions(),
                spark.read.parquet(*(fs or files)).rdd.getNumPartitions())

    rows = []

    def pair(label, o, p, target, kw=None, fs=None):
        before = os.getloadavg()[0]         # the machine is shared: each figure says how loaded it was
        d, q = alternating(o, p, repeat)
        rows.append((label, d, q, target, *tasks(kw, fs), f"{before:.1f}->{os.getloadavg()[0]:.1f}"))

    pair("sum(value), compacted", ours("sum(value)"), parquet(f"sum({vid})"), 0.95)
    rng = np.random.default_rng(7)
    pick = rng.choice(n, n // 100 + n // 1000, replace=False)
    keys = data.select(["host", "metric", "time"])
    old = t.version
    t.update(keys.take(pa.array(pick[: n // 100])).append_column("value", pa.array(np.full(n // 100, 1.0))))
    t.delete(keys.take(pa.array(pick[n // 100:])))
    pair("sum(value), 1% upd + 0.1% del", ours("sum(value)"), parquet(f"sum({vid})"), 0.85)
    pair("full row, same deltas", ours(f"sum(hash({names}))"), parquet(f"sum(hash({all_cols}))"), 0.85)
    t.compact()
    t.vacuum(retain_seconds=0, grace_seconds=0)
    files = base_files()
    assert t.snapshot(old).read_plan().read_ts is not None     # behind the horizon: UNDO records
    pair("sum(value) as_of behind horizon", ours("sum(value)", as_of=old), parquet(f"sum({vid})", files), 0.6,
         {"as_of": old}, files)
    where = f"on {uri} through s3a" if s3 else "on local disk"
    print(f"rows={n:,}; {len(t.state.rowsets)} rowsets {where}; best of {repeat}, alternated, after a warm-up")
    print(f"{'query':<34} {'connector':>10} {'parquet':>9} {'ratio':>7}  target   tasks (ours/parquet)  load")
    for label, d, q, target, to, tp, load in rows:
        print(f"{label:<34} {d:9.2f}s {q:8.2f}s {q / d:6.2f}x  >= {target}x  {to}/{tp}  {load}")


class LoopbackS3:
    """moto's S3 server on 127.0.0.1 with one bucket: (s3://bucket, storage options). It serves
    every request in one Python process, so absolute times are its; both sides pay it alike."""

    def __enter__(self):
        import socket

        import s3fs
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        exe = os.path.join(os.path.dirname(sys.executable), "moto_server")
        self.proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        opts = {"endpoint_url": url, "key": "bench", "secret": "bench-secret"}
        for _ in range(150):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        s3fs.S3FileSystem(client_kwargs={"endpoint_url": url}, key="bench", secret="bench-secret").mkdir("bench")
        return "s3://bench", opts

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(10)


def floors(spark, t, uri, files, vid, baseline) -> None:
    """Hand-built plans, not read_table, against the same baseline. The sum with each base row's
    (file size, row index) key (kept alive by a max) is about what any plan matching REDO records to
    base rows by position pays before it applies a single change. The sum after
    a broadcast anti-join of that key with the REDO files' keys (membership only, no values) is
    the cheapest join Spark offers for it."""
    from pyspark.sql import functions as F
    redo = {}
    for rs in t.state.rowsets.values():
        for d in t.state.deltas_of(rs.id):
            redo["file://" + os.path.join(uri, d.path)] = rs.base[0].size
    sizes = "map(" + ", ".join(f"'{p.rsplit('/', 2)[-2]}', {s}L" for p, s in redo.items()) + ")"
    keyed = lambda: spark.read.schema(f"{vid} double").parquet(*files).selectExpr(
        vid, "shiftleft(_metadata.file_size, 32) | _metadata.row_index AS k")
    changed = lambda: spark.read.schema("rowid bigint").parquet(*redo).selectExpr(
        f"shiftleft(element_at({sizes}, substring_index(substring_index(_metadata.file_path, '/', -2), '/', 1)), 32)"
        " | rowid AS k")
    plans = [("bound: sum with a row-index key", lambda: keyed().selectExpr(f"sum({vid})", "max(k)").collect()),
             ("reference: + anti-join on REDO keys", lambda: keyed().join(F.broadcast(changed()), "k", "left_anti")
              .selectExpr(f"sum({vid})").collect())]
    for label, f in plans:
        d, p = alternating(f, baseline)
        print(f"{label:<36} {d:10.2f}s {p:8.2f}s {p / d:10.2f}x")


def alternating(a, b, repeat: int = 5) -> tuple[float, float]:
    """Best wall time of each of two queries, run in turns after one warm-up each: the JVM
    keeps compiling as it runs, so whichever ran all its repeats last would be favoured."""
    a(), b()
    ta, tb = [], []
    for _ in range(repeat):
        for f, ts in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
    return min(ta), min(tb)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--reads-only", action="store_true", help="only the native read rows (read_table)")
    ap.add_argument("--connector-only", action="store_true", help="only the JVM connector rows")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--s3", action="store_true",
                    help="with --connector-only: the table on the loopback S3 server (moto), both sides through s3a")
    ap.add_argument("--writes-only", action="store_true", help="only the insert, merge and RSS rows")
    ap.add_argument("--rss-rows", default="2000000",
                    help="comma-separated input sizes for the worker-RSS rows (add 10000000 for the 10M row)")
    ap.add_argument("--rss-child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--delta-only", action="store_true",
                    help="only the Delta Lake peer table (delta-spark, deletion vectors and change feed on)")
    args = ap.parse_args()
    if args.rss_child:
        return rss_child(args.rss_child)
    if args.delta_only:
        return bench_delta(args.rows)
    if args.writes_only:
        return bench_writes(args.rows, [int(x) for x in args.rss_rows.split(",") if x])
    if args.connector_only:
        from spark_jobs.session import get_spark
        from spark_jobs.session import s3a_packages
        spark = get_spark("tableformat-bench", packages=s3a_packages() if args.s3 else ())
        spark.sparkContext.setLogLevel("ERROR")
        if args.s3:
            with LoopbackS3() as (root, opts):
                connector_read_rows(spark, root, args.rows, args.repeat, s3=opts)
        else:
            work = tempfile.mkdtemp(prefix="tf-bench-spark-")
            connector_read_rows(spark, work, args.rows, args.repeat)
            shutil.rmtree(work, ignore_errors=True)
        spark.stop()
        return
    if args.reads_only:
        from spark_jobs.session import get_spark
        spark = get_spark("tableformat-bench")
        spark.sparkContext.setLogLevel("ERROR")
        work = tempfile.mkdtemp(prefix="tf-bench-spark-")
        native_read_rows(spark, work, args.rows)
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
        return
    from spark_jobs.session import get_spark
    from spark_jobs.session import s3a_packages
    spark = get_spark("tableformat-bench", packages=s3a_packages())
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
    connector_read_rows(spark, work, n, args.repeat)
    with LoopbackS3() as (root, opts):
        connector_read_rows(spark, root, n, args.repeat, s3=opts)

    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    bench_writes(n, [int(x) for x in args.rss_rows.split(",") if x])


# --- writes: Spark sorts, Python streams ----------------------------------------------------

class WorkerRSS:
    """Peak RSS of any single Python process below this one (Spark's Python daemon and workers),
    sampled from outside every 50 ms."""

    def __init__(self):
        import psutil
        self.psutil, self.me, self.peak, self.stop = psutil, psutil.Process(), 0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            for p in self.me.children(recursive=True):
                try:
                    if "python" in p.name().lower():
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


def _write_input(work: str, n: int, seed: int = 3) -> str:
    """The input as Parquet in 1M-row pieces (so a 10M-row input never sits in this process whole)."""
    src = os.path.join(work, f"in-{n}")
    os.makedirs(src, exist_ok=True)
    step = 1_000_000
    for i, start in enumerate(range(0, n, step)):
        part = generate(min(step, n - start), seed=seed + i, time_offset=10**9 + start * 1000)
        pq.write_table(part, os.path.join(src, f"part-{i:04d}.parquet"))
    return src


def bench_insert(spark, work: str, n: int) -> None:
    """The insert against Spark's own sorted Parquet write of the same DataFrame, same run."""
    from spark_jobs.insert import partitioned_insert
    src = _write_input(work, n)
    df = spark.read.parquet(src)
    parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
    key = ["host", "metric", "time"]

    def spark_sorted_write():
        out = os.path.join(work, f"sorted-{time.perf_counter_ns()}")
        df.repartitionByRange(parts, *key).sortWithinPartitions(*key).write.parquet(out)
        shutil.rmtree(out, ignore_errors=True)

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
    src = _write_input(work, n, seed=11)
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
        src = _write_input(work, n)
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


# --- Delta Lake (delta-spark) as the peer: same session, same DataFrame, same machine ----------------
def _dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def bench_delta(n: int) -> None:
    """Each step on a Delta table (deletion vectors and change data feed on) and on ours: seconds,
    bytes written (files are never deleted before vacuum, so the directory's growth), our ratio."""
    from pyspark.sql import functions as F
    from delta.tables import DeltaTable
    from spark_jobs.compaction import compact_table
    from spark_jobs.insert import partitioned_insert
    from spark_jobs.merge import mutation_merge
    from spark_jobs.read import read_table
    from spark_jobs.session import get_spark
    spark = get_spark("tableformat-bench-delta", delta=True)
    spark.sparkContext.setLogLevel("ERROR")
    for k in ("enableDeletionVectors", "enableChangeDataFeed"):
        spark.conf.set(f"spark.databricks.delta.properties.defaults.{k}", "true")
    work = tempfile.mkdtemp(prefix="tf-bench-delta-")
    keys = ["host", "metric", "time"]
    cond = " AND ".join(f"t.{k} = s.{k}" for k in keys)
    dpath, uri = os.path.join(work, "delta"), os.path.join(work, "ours")
    rows: list[tuple] = []

    def step(name, delta_fn, ours_fn, speed_target=None):
        b0, t0 = _dir_bytes(dpath) if os.path.exists(dpath) else 0, time.perf_counter()
        d_out = delta_fn()
        d_s, d_b = time.perf_counter() - t0, (_dir_bytes(dpath) if os.path.exists(dpath) else 0) - b0
        b0, t0 = _dir_bytes(uri), time.perf_counter()
        o_out = ours_fn()
        o_s, o_b = time.perf_counter() - t0, _dir_bytes(uri) - b0
        rows.append((name, d_s, d_b, o_s, o_b, speed_target, d_out, o_out))
        print(f"  {name}: Delta {d_s:.2f}s {d_b / 2**20:.2f} MiB, ours {o_s:.2f}s {o_b / 2**20:.2f} MiB", flush=True)
        return d_out, o_out

    try:
        src = _write_input(work, n, seed=21)
        df = spark.read.parquet(src).cache()
        df.count()
        tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
        step("load", lambda: df.write.format("delta").save(dpath),
             lambda: partitioned_insert(spark, df, uri).version)
        load_version = tf.open_table(uri).version
        upd = df.select(*keys).sample(fraction=0.01, seed=1).withColumn("value", F.lit(1.0)).cache()
        n_upd = upd.count()
        step(f"merge: 1% updates to one column ({n_upd:,} rows)",
             lambda: DeltaTable.forPath(spark, dpath).alias("t").merge(upd.alias("s"), cond)
             .whenMatchedUpdate(set={"value": "s.value"}).execute(),
             lambda: mutation_merge(spark, upd, uri, op="update").version, "merge")
        merge_dv = DeltaTable.forPath(spark, dpath).history(1).collect()[0]["version"]
        merge_ov = tf.open_table(uri).version
        old = df.sample(fraction=0.005, seed=2).withColumn("value", F.lit(2.0))
        new = df.sample(fraction=0.005, seed=3).withColumn("time", F.col("time") + F.expr("INTERVAL 3650 DAYS"))
        ups = old.unionByName(new).cache()
        n_ups = ups.count()
        step(f"upsert: 1% rows, half new keys ({n_ups:,} rows)",
             lambda: DeltaTable.forPath(spark, dpath).alias("t").merge(ups.alias("s"), cond)
             .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(),
             lambda: mutation_merge(spark, ups, uri, op="upsert").version)
        dels = df.select(*keys).sample(fraction=0.001, seed=4).cache()
        n_del = dels.count()
        step(f"delete 0.1% ({n_del:,} keys; Delta: merge whenMatchedDelete)",
             lambda: DeltaTable.forPath(spark, dpath).alias("t").merge(dels.alias("s"), cond)
             .whenMatchedDelete().execute(),
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
        dup = df.limit(10)

        def ours_dup():
            try:
                partitioned_insert(spark, dup, uri)
                return "accepted"
            except tf.DuplicateKeyError:
                return "DuplicateKeyError"
        d_dup, o_dup = step("duplicate keys inserted (10 rows)",
                            lambda: dup.write.format("delta").mode("append").save(dpath) or "silently accepted",
                            ours_dup)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
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


if __name__ == "__main__":
    main()
