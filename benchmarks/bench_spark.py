"""Spark benchmark: the data source against spark.read.parquet on the same base files; job throughput.

    python -m benchmarks.bench_spark [--rows 2000000]
    python -m benchmarks.bench_spark --writes-only --rss-rows 2000000,10000000   # insert/merge/RSS rows
    python -m benchmarks.bench_spark --delta-only [--rows 1000000]   # Delta Lake (delta-spark) as the peer
    python -m benchmarks.bench_spark --changes-only [--rows 2000000]   # batch change read vs Delta's readChangeFeed
    python -m benchmarks.bench_spark --sink-only [--rows 2000000] [--batches 10]   # streaming upserts vs Delta
    python -m benchmarks.bench_spark --stream-only [--rows 2000000]   # the change stream: rows/s, latency, RSS
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
import time

import pyarrow as pa

import tableformat as tf

from .bench_core import best, generate, metrics_partitioning, metrics_schema
from .bench_spark_writes import bench_writes, rss_child


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


def connector_read_rows(spark, work: str, n: int, repeat: int = 5, s3: dict | None = None, reader=None) -> None:
    """The JVM connector (read_table's default path when the session has its jar) against
    spark.read.parquet of the same base files, same session, sides alternated after a warm-up.
    Numeric columns are written PLAIN: pyspark 4.2's vectorized reader (the baseline) cannot
    decode BYTE_STREAM_SPLIT (bitshuffle). Targets from issue 22.
    `s3` (storage options of a table root `work` on S3): both sides read through s3a. `reader`
    (spark, uri, as_of=, storage_options=) -> DataFrame replaces read_table (bench_spark_sql: the catalog)."""
    import numpy as np
    from spark_jobs.connector import loaded
    from spark_jobs.jvm_paths import configure_s3a, jvm_path
    from spark_jobs.read import read_table
    reader, why = reader or read_table, loaded(spark)
    if why:
        print(f"connector rows skipped: {why}")
        return
    uri = work.rstrip("/") + "/connector"
    read_kw = {"storage_options": s3} if s3 else {}
    t, data = _plain_table(uri, n, s3)
    if s3:
        configure_s3a(spark, t.storage, s3)
    base_files = lambda: [jvm_path(t.storage, f.path) for r in t.state.rowsets.values() for f in r.base]
    files, vid = base_files(), f"c{t.schema.column('value').id}"
    all_cols, names = ", ".join(f"c{c.id}" for c in t.schema.columns), ", ".join(f"`{c}`" for c in t.schema.names)

    def parquet(expr, fs=None):
        return lambda: spark.read.parquet(*(fs or files)).selectExpr(expr).collect()

    def ours(expr, **kw):
        return lambda: reader(spark, uri, **read_kw, **kw).selectExpr(expr).collect()

    def tasks(kw=None, fs=None):
        return (reader(spark, uri, **read_kw, **(kw or {})).rdd.getNumPartitions(),
                spark.read.parquet(*(fs or files)).rdd.getNumPartitions())

    rows = []

    def pair(label, o, p, target, kw=None, fs=None):
        before = os.getloadavg()[0]         # the machine is shared: each figure says how loaded it was
        d, q = alternating(o, p, repeat)
        rows.append((label, d, q, target, *tasks(kw, fs), f"{before:.1f}->{os.getloadavg()[0]:.1f}"))

    pair("sum(value), compacted", ours("sum(value)"), parquet(f"sum({vid})"), 0.95)
    pair("sum(value), compacted, warm JVM", _jvm_alone(spark, t, "sum(value)"), parquet(f"sum({vid})"), 0.95)
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
    _report_connector(rows, f"rows={n:,}; {len(t.state.rowsets)} rowsets {where}; best of {repeat}, alternated, "
                            "after a warm-up")


def _jvm_alone(spark, t, expr: str):
    """The query through the connector alone (issue #47 item 4): the JVM plans from the log, warm
    after the first query (LogCache: one listing of `_log/`, nothing read twice); read_table also
    opens the table in Python first."""
    from spark_jobs.jvm_paths import jvm_path
    path = jvm_path(t.storage, "").rstrip("/")
    return lambda: spark.read.format("tableformat-jvm").load(path).selectExpr(expr).collect()


def _report_connector(rows: list[tuple], title: str) -> None:
    print(title)
    print(f"{'query':<34} {'connector':>10} {'parquet':>9} {'ratio':>7}  target   tasks (ours/parquet)  load")
    for label, d, q, target, to, tp, load in rows:
        print(f"{label:<34} {d:9.2f}s {q:8.2f}s {q / d:6.2f}x  >= {target}x  {to}/{tp}  {load}")


def _plain_table(uri: str, n: int, s3: dict | None):
    """The metrics table with its numeric columns PLAIN (the baseline reader cannot decode
    BYTE_STREAM_SPLIT), history kept (reads behind the horizon), n rows inserted: (table, rows)."""
    plain = {"time", "value", "price", "count"}
    schema = tf.Schema([tf.Column(c.name, c.type.name, nullable=c.nullable, default=c.default,
                                  **({"encoding": "plain"} if c.name in plain else {}))
                        for c in metrics_schema().columns], primary_key=metrics_schema().primary_key)
    t = tf.create_table(uri, schema, partitioning=metrics_partitioning(),
                        properties={"history_max_age": -1}, storage_options=s3)
    data = generate(n)
    t.insert(data)
    return t, data


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


def datasource_rows(spark, work: str, n: int) -> None:
    """The Python data source (`format("tableformat")`) against spark.read.parquet of the same
    base files: a one-column sum through the full and the pruned schema, and a full-row read."""
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


def _arguments() -> argparse.Namespace:
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
    ap.add_argument("--changes-only", action="store_true",
                    help="only the batch change read against Delta's readChangeFeed (delta-spark)")
    ap.add_argument("--commits", type=int, default=10,
                    help="with --changes-only / --stream-only: commits of changes read")
    ap.add_argument("--stream-only", action="store_true",
                    help="only the change stream: AvailableNow rows/s, ProcessingTime latency, worker RSS")
    ap.add_argument("--sink-only", action="store_true",
                    help="only the streaming sink (1%% upserts a micro-batch) against Delta's foreachBatch + MERGE")
    ap.add_argument("--batches", type=int, default=10, help="with --sink-only: micro-batches")
    return ap.parse_args()


def main() -> None:
    args = _arguments()
    if args.changes_only:
        from .bench_spark_delta import bench_changes
        return bench_changes(args.rows, args.commits, args.repeat)
    if args.sink_only:
        from .bench_spark_sink import bench_sink
        return bench_sink(args.rows, args.batches)
    if args.stream_only:
        from .bench_spark_stream import bench_stream
        return bench_stream(args.rows, args.commits)
    if args.rss_child:
        return rss_child(args.rss_child)
    if args.delta_only:
        from .bench_spark_delta import bench_delta
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
    datasource_rows(spark, work, n)

    native_read_rows(spark, work, n)
    connector_read_rows(spark, work, n, args.repeat)
    with LoopbackS3() as (root, opts):
        connector_read_rows(spark, root, n, args.repeat, s3=opts)

    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    bench_writes(n, [int(x) for x in args.rss_rows.split(",") if x])


if __name__ == "__main__":
    main()
