"""Core benchmark: load, scans, point lookups and a PK-checked insert, against plain Parquet.

    python -m benchmarks.bench_core [--rows 2000000] [--dir DIR] [--rss-rows 10000000]

Every figure is printed beside the same work done with plain pyarrow.parquet in
the same run, as a ratio, so machine speed cancels out. The load is timed as the
best of --load-repeat runs, each beside its own `pq.write_table`, with the CPU
seconds of both (wall time is noisy on a shared machine; CPU time much less so).
The insert's peak memory is measured in a fresh process (--rss-rows, 0 to skip):
the input is read from an Arrow IPC file, then inserted; the figure is the peak
RSS (ru_maxrss) over the RSS with the input loaded, against the input's Arrow size.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import tableformat as tf
from tableformat.format.cfile_set import FILE_CACHE   # internal: the block cache, cleared for the cold figures

METRICS = ["cpu", "mem", "disk_io", "net_in", "net_out", "load1", "load5", "swap", "iops", "latency"]
T0 = 1_700_000_000_000_000  # 2023-11-14, microseconds


def metrics_schema() -> tf.Schema:
    """A metrics table (host, metric, time), plus a few typed columns."""
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


def in_order(data: pa.Table, order: str) -> pa.Table:
    """The generated rows (one series after another) as the given load order."""
    n = data.num_rows
    if order == "time":
        per, i = max(1, n // 10_000), np.arange(n)
        return data.take(pa.array((i % 10_000) * per + i // 10_000)) if n % 10_000 == 0 else data
    if order == "random":
        return data.take(pa.array(np.random.default_rng(3).permutation(n)))
    return data


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


def lookup_latency(table, data: pa.Table, picks: np.ndarray) -> None:
    """Single-key lookups of the rows at `picks`, each a scan with an equality filter on every
    key column: their median and p95 latency."""
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


def _arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--lookups", type=int, default=1000)
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    ap.add_argument("--load-repeat", type=int, default=3, help="loads timed, each beside a pq.write_table")
    ap.add_argument("--load-order", choices=["series", "time", "random"], default="series",
                    help="row order of the loaded input: one series after another (default), all series "
                         "at each time point, or shuffled")
    ap.add_argument("--rss-rows", type=int, default=10_000_000,
                    help="rows of the insert whose peak memory is measured in a fresh process (0: skip)")
    ap.add_argument("--rss-child", nargs=2, metavar=("IPC", "TABLE"), help=argparse.SUPPRESS)
    return ap.parse_args()


def main() -> None:
    args = _arguments()
    if args.rss_child:
        return _rss_child(*args.rss_child)
    work = args.dir or tempfile.mkdtemp(prefix="tf-bench-")
    os.makedirs(work, exist_ok=True)
    n = args.rows
    data = in_order(generate(n), args.load_order)
    print(f"rows={n:,}  arrow size={data.nbytes / 2**20:.0f} MiB  order={args.load_order}  dir={work}")
    print(f"{'figure':<38} {'ours':>9}  {'parquet':>9}  {'ratio':>7}")

    ppath = os.path.join(work, "plain.parquet")
    uri = os.path.join(work, "metrics")

    def load():
        t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
        t.insert(data)
        return t
    loads = []
    for _ in range(max(1, args.load_repeat)):       # each load beside its own baseline: load drifts
        pw = _wall_and_cpu(lambda: pq.write_table(data, ppath, compression="lz4"))
        shutil.rmtree(uri, ignore_errors=True)      # the previous load's table: not part of this one
        ld = _wall_and_cpu(load)
        loads.append((ld[0] / pw[0], pw, ld))
    ratio, (t_pw, c_pw, _), (t_load, c_load, table) = min(loads, key=lambda x: x[0])
    row("load (create + PK-checked insert)", t_load, t_pw, "<= 1.5x")
    print(f"{'  the same load in CPU seconds':<38} {c_load:8.3f}s  {c_pw:8.3f}s  {c_load / c_pw:6.2f}x   "
          f"(wall ratios of the {len(loads)} runs: {', '.join(f'{x[0]:.2f}' for x in loads)})")
    t_pr, _ = timed(lambda: pq.read_table(ppath), repeat=3)
    t_pr1, _ = timed(lambda: pc.sum(pq.read_table(ppath, columns=["value"])["value"]), repeat=3)

    FILE_CACHE.clear()
    table = tf.open_table(uri)
    t_scan, scanned = timed(lambda: table.scan().to_arrow(), repeat=3)
    assert scanned.num_rows == n
    row("full scan, all columns", t_scan, t_pr, "<= 1.2x")
    t_sum, s = timed(lambda: pc.sum(table.scan(columns=["value"]).to_arrow()["value"]), repeat=3)
    row("sum(value)", t_sum, t_pr1, "-")

    rng = np.random.default_rng(1)
    lookup_latency(table, data, rng.integers(0, n, args.lookups))

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
    if args.rss_rows:
        insert_peak_memory(args.rss_rows, work)
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)


def _wall_and_cpu(fn):
    """(wall seconds, CPU seconds of the whole process, result)."""
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    out = fn()
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), out


def insert_peak_memory(n: int, work: str) -> None:
    """Peak RSS of inserting n rows, in a fresh process, against the input's Arrow size."""
    ipc = os.path.join(work, "rss-input.arrow")
    data = generate(n)
    with pa.OSFile(ipc, "wb") as f, pa.ipc.new_file(f, data.schema) as w:
        w.write_table(data)
    del data
    table = os.path.join(work, "rss-table")
    out = subprocess.run([sys.executable, "-m", "benchmarks.bench_core", "--rss-child", ipc, table],
                         check=True, capture_output=True, text=True).stdout.split()
    input_bytes, base, peak, secs = int(out[0]), int(out[1]), int(out[2]), float(out[3])
    gib = 2 ** 30
    print(f"insert of {n:,} rows, fresh process ({secs:.1f} s): input {input_bytes / gib:.2f} GiB (Arrow), "
          f"RSS with the input loaded {base / gib:.2f} GiB, peak {peak / gib:.2f} GiB")
    print(f"{'  peak RSS over the loaded input':<38} {(peak - base) / gib:8.2f}GiB = "
          f"{(peak - base) / input_bytes:.2f}x the input   target <= 2x the input")
    print(f"{'  peak RSS of the whole process':<38} {peak / gib:8.2f}GiB = {peak / input_bytes:.2f}x the input")
    shutil.rmtree(table, ignore_errors=True)
    os.remove(ipc)


def _rss_child(ipc: str, table: str) -> None:
    import psutil
    with pa.OSFile(ipc, "rb") as f:              # read, not memory-mapped: the input is in RSS
        data = pa.ipc.open_file(f).read_all()
    base = psutil.Process().memory_info().rss
    t0 = time.perf_counter()
    tf.create_table(table, metrics_schema(), partitioning=metrics_partitioning()).insert(data)
    secs = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(data.nbytes, base, peak, secs)


def _expect_dup(table, dup):
    try:
        table.insert(dup)
    except tf.DuplicateKeyError:
        return
    raise AssertionError("expected DuplicateKeyError")


if __name__ == "__main__":
    main()
