"""Core benchmark: load, scans, point lookups and a PK-checked insert, against plain Parquet.

    python -m benchmarks.bench_core [--rows 2000000] [--dir DIR]

Every figure is printed beside the same work done with plain pyarrow.parquet in
the same run, as a ratio, so machine speed cancels out.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import tableformat as tf
from tableformat.diskrowset import FILE_CACHE

METRICS = ["cpu", "mem", "disk_io", "net_in", "net_out", "load1", "load5", "swap", "iops", "latency"]
T0 = 1_700_000_000_000_000  # 2023-11-14, microseconds


def metrics_schema() -> tf.Schema:
    """The schema-design seed's metrics table, plus a few typed columns."""
    return tf.Schema([
        tf.Column("host", "string"), tf.Column("metric", "string"), tf.Column("time", "unixtime_micros"),
        tf.Column("value", "double", nullable=True),
        tf.Column("price", "decimal(18,2)", nullable=True),
        tf.Column("count", "int64", nullable=True),
        tf.Column("ok", "bool", nullable=True),
        tf.Column("tag", "varchar(16)", nullable=True, default="none"),
    ], primary_key=["host", "metric", "time"])


def metrics_partitioning() -> tf.PartitionSchema:
    mid = T0 + 500_000 * 1_000_000
    return tf.PartitionSchema(hash=[tf.HashPartition(["host", "metric"], buckets=4)],
                              range=tf.RangePartition(["time"], bounds=[(None, None)], splits=[mid]))


def generate(n: int, seed: int = 0, time_offset: int = 0) -> pa.Table:
    """n rows: 1000 hosts x 10 metrics x n/10000 time points, one second apart."""
    rng = np.random.default_rng(seed)
    i = np.arange(n)
    hosts = np.array([f"host-{h:04d}" for h in range(1000)], dtype=object)
    per_series = max(1, n // 10_000)
    series = i // per_series
    t = T0 + ((i % per_series) * 1_000_000 + time_offset)
    return pa.table({
        "host": pa.array(hosts[series % 1000]),
        "metric": pa.array(np.array(METRICS, dtype=object)[(series // 1000) % 10]),
        "time": pa.array(t, pa.timestamp("us", tz="UTC")),
        "value": pa.array(rng.normal(50, 10, n)),
        "price": pa.array(rng.integers(0, 10**6, n), pa.int64()).cast(pa.decimal128(38, 0)).cast(pa.decimal128(18, 2)),
        "count": pa.array(rng.integers(0, 1000, n)),
        "ok": pa.array(rng.random(n) < 0.9),
        "tag": pa.array(np.array(["alpha", "beta", "gamma", "delta"], dtype=object)[rng.integers(0, 4, n)]),
    })


def timed(fn, repeat: int = 1):
    """(best seconds of `repeat` runs, the last result)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def best(fn, repeat: int = 3) -> float:
    return timed(fn, repeat)[0]


def row(name: str, ours: float, base: float | None, target: str) -> None:
    ratio = f"{ours / base:6.2f}x" if base else "   -   "
    b = f"{base:8.3f}s" if base is not None else "    -    "
    print(f"{name:<38} {ours:8.3f}s  {b}  {ratio}   target {target}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--lookups", type=int, default=1000)
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    args = ap.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="tf-bench-")
    os.makedirs(work, exist_ok=True)
    n = args.rows
    data = generate(n)
    print(f"rows={n:,}  arrow size={data.nbytes / 2**20:.0f} MiB  dir={work}")
    print(f"{'figure':<38} {'ours':>9}  {'parquet':>9}  {'ratio':>7}")

    ppath = os.path.join(work, "plain.parquet")
    t_pw, _ = timed(lambda: pq.write_table(data, ppath, compression="lz4"))
    t_pr, _ = timed(lambda: pq.read_table(ppath), repeat=3)
    t_pr1, _ = timed(lambda: pc.sum(pq.read_table(ppath, columns=["value"])["value"]), repeat=3)

    uri = os.path.join(work, "metrics")
    shutil.rmtree(uri, ignore_errors=True)

    def load():
        t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
        t.insert(data)
        return t
    t_load, table = timed(load)
    row("load (create + PK-checked insert)", t_load, t_pw, "<= 2x")

    FILE_CACHE.clear()
    table = tf.open_table(uri)
    t_scan, scanned = timed(lambda: table.scan().to_arrow(), repeat=3)
    assert scanned.num_rows == n
    row("full scan, all columns", t_scan, t_pr, "<= 1.2x")
    t_sum, s = timed(lambda: pc.sum(table.scan(columns=["value"]).to_arrow()["value"]), repeat=3)
    row("sum(value)", t_sum, t_pr1, "-")

    rng = np.random.default_rng(1)
    picks = rng.integers(0, n, args.lookups)
    keys = data.select(["host", "metric", "time"]).take(pa.array(picks)).to_pylist()
    lat = []
    for k in keys:
        t0 = time.perf_counter()
        r = table.scan(filter=[("host", "=", k["host"]), ("metric", "=", k["metric"]),
                               ("time", "=", k["time"])]).to_arrow()
        lat.append(time.perf_counter() - t0)
        assert r.num_rows == 1
    med = statistics.median(lat)
    print(f"{'single-key lookup (median of %d)' % len(lat):<38} {med * 1000:7.2f}ms  p95 "
          f"{np.percentile(lat, 95) * 1000:.2f}ms   target median <= 5 ms")

    new = generate(n // 100, seed=7, time_offset=n // 10_000 * 1_000_000 + 17)  # new keys after the loaded ones
    new = new.take(pa.array(rng.permutation(new.num_rows)))
    FILE_CACHE.clear()
    table = tf.open_table(uri)
    t_ins, res = timed(lambda: table.insert(new))
    assert res.inserted == new.num_rows
    row("1% PK-checked insert (cold caches)", t_ins, None, "<= 0.5 s")
    dup = data.slice(0, n // 100)
    t_dup, _ = timed(lambda: _expect_dup(table, dup))
    row("1% insert of existing keys (rejected)", t_dup, None, "-")
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)


def _expect_dup(table, dup):
    try:
        table.insert(dup)
    except tf.DuplicateKeyError:
        return
    raise AssertionError("expected DuplicateKeyError")


if __name__ == "__main__":
    main()
