"""Scale benchmark (issue 26): the same workload at growing sizes, each size in a fresh process.

    python -m benchmarks.bench_scale [--rows 2000000,16000000]

Per size: a time-major load of the metrics schema (2 hash buckets), against `pq.write_table`
of the same rows; a 1% update of `value`; a 1,000-key lookup, first and second (warm) call;
and the peak RSS of the load and update (the input held in memory throughout; the peak of
generating it is left out) against the input's Arrow size. Targets:
a warm 1,000-key lookup at the largest size within 2x of the smallest's, and peak RSS of
loading then updating at most 2x the input. Wall and CPU times: the machine may be shared.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .bench_core import generate, in_order, metrics_schema


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def reset_peak_rss() -> None:
    """Linux: start the process's peak RSS afresh (clear_refs 5 resets VmHWM, which ru_maxrss
    reads), so the figure is that of the load and update, not of generating the input (which
    peaks higher than the input it leaves: 2.6 GB for 16M rows of 1.1 GB)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass                          # elsewhere: the whole process's peak, an upper bound


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        return float("nan")


def child(n: int) -> dict:
    import tableformat as tf
    data = in_order(generate(n), "time")
    rng = np.random.default_rng(11)
    keys = data.select(["host", "metric", "time"]).take(pa.array(rng.choice(n, 1000, replace=False)))
    pick = np.sort(rng.choice(n, n // 100, replace=False))
    upd = data.select(["host", "metric", "time"]).take(pa.array(pick)).append_column(
        "value", pa.array(rng.normal(0, 1, len(pick))))
    work = tempfile.mkdtemp(prefix="tf-bench-scale-")
    try:
        _, floor_w, floor_c = timed(lambda: pq.write_table(data, os.path.join(work, "floor.parquet")))
        parts = tf.PartitionSchema(hash=[tf.HashPartition(["host", "metric"], buckets=2)])
        t = tf.create_table(os.path.join(work, "ours"), metrics_schema(), partitioning=parts)
        reset_peak_rss()
        before_mb = _rss_mb()         # the input, and what generating it left in Arrow's allocator
        _, load_w, load_c = timed(lambda: t.insert(data))
        _, upd_w, upd_c = timed(lambda: t.update(upd))
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024      # load + update, input held
        got, first_w, first_c = timed(lambda: t.lookup(keys))
        assert got.num_rows == 1000
        _, warm_w, warm_c = timed(lambda: t.lookup(keys))
        return {"rows": n, "input_mb": data.nbytes / 2**20, "floor_w": floor_w, "floor_c": floor_c,
                "load_w": load_w, "load_c": load_c, "upd_w": upd_w, "upd_c": upd_c,
                "first_w": first_w, "first_c": first_c, "warm_w": warm_w, "warm_c": warm_c,
                "rss_mb": rss_mb, "before_mb": before_mb}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="2000000,16000000", help="comma-separated sizes")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    sizes = [int(x) for x in args.rows.split(",") if x]
    res = []
    for n in sizes:
        p = subprocess.run([sys.executable, "-m", "benchmarks.bench_scale", "--child", str(n)],
                           capture_output=True, text=True, check=True)
        res.append(json.loads(p.stdout.strip().splitlines()[-1]))
    print(f"load average {os.getloadavg()[0]:.1f}; wall s (CPU s)")
    print(f"{'rows':>11} {'input MB':>9} {'load / pq.write_table':>22} {'1% update':>12} "
          f"{'first 1k lookup':>16} {'warm 1k lookup':>15} {'peak RSS / input':>17}")
    for r in res:
        print(f"{r['rows']:>11,} {r['input_mb']:9.0f} {r['load_w'] / r['floor_w']:9.2f}x ({r['load_c'] / r['floor_c']:.2f}x CPU)"
              f" {r['upd_w']:6.2f} ({r['upd_c']:.2f}) {r['first_w']:7.3f} ({r['first_c']:.3f})"
              f" {r['warm_w']:6.3f} ({r['warm_c']:.3f}) {r['rss_mb'] / r['input_mb']:9.2f}x ({r['rss_mb']:.0f} MB)")
    if len(res) > 1:
        a, b = res[0], res[-1]
        g = b["warm_c"] / max(a["warm_c"], 1e-9)
        print(f"warm lookup CPU, {b['rows']:,} vs {a['rows']:,} rows: {g:.2f}x (<= 2x: {'met' if g <= 2 else 'MISSED'})")
    big = res[-1]
    m = big["rss_mb"] / big["input_mb"]
    print(f"peak RSS of load + update at {big['rows']:,} rows: {m:.2f}x input (<= 2x: {'met' if m <= 2 else 'MISSED'}); "
          f"RSS before the load {big['before_mb']:.0f} MB ({big['before_mb'] / big['input_mb']:.2f}x input: the input "
          "and what generating it left in Arrow's allocator, which the load reuses)")


if __name__ == "__main__":
    main()
