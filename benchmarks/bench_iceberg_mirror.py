"""The zero-copy Iceberg mirror (issue 49): what a mirror run costs, and what reading it costs.

    python -m benchmarks.bench_iceberg_mirror [--rows 2000000] [--deletes 0.01]

A metrics table (bench_core) of ROWS rows with DELETES of them deleted (pending REDO deletes),
then, each against baselines from the same run:

- mirroring: `mirror_iceberg` (first run, a run with nothing new, a run after 0.1% more
  deletes): seconds and bytes written, beside `mirror_delta` of the same table and beside what a
  copying export costs (`pq.write_table` of the live rows);
- reading: a pyiceberg scan of the mirror (position deletes applied) against a pyarrow read of
  the same base files (no deletes applied: the floor) and our own `scan()`, all columns and with
  a filter on `time` (the last tenth), best of READS.
"""
from __future__ import annotations

import argparse
import datetime
import os
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import tableformat as tf

from .bench_core import generate, metrics_schema

READS = 3


def best(fn, repeat: int = READS) -> tuple[float, object]:
    b, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        b = min(b, time.perf_counter() - t0)
    return b, out


def dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--deletes", type=float, default=0.01)
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="bench_iceberg_")
    try:
        data = generate(args.rows)
        t = tf.create_table(os.path.join(root, "t"), metrics_schema())
        t.insert(data)
        rng = np.random.default_rng(1)
        gone = rng.choice(args.rows, int(args.rows * args.deletes), replace=False)
        t.delete(data.select(["host", "metric", "time"]).take(pa.array(np.sort(gone))))
        files = [os.path.join(t.uri, rs.base[0].path) for rs in t.state.rowsets.values()]
        print(f"{args.rows} rows, {len(gone)} pending deletes, {len(files)} base file(s), "
              f"{sum(map(os.path.getsize, files)) / 2**20:.1f} MiB of base data")

        ice, delta, copy = (os.path.join(root, x) for x in ("ice", "delta", "copy.parquet"))
        s, r = timed(lambda: t.mirror_iceberg(ice))
        print(f"mirror_iceberg, first run:      {s:7.3f} s  {dir_bytes(ice) / 2**10:9.1f} KiB written  ({r})")
        s, r = timed(lambda: t.mirror_iceberg(ice))
        print(f"mirror_iceberg, nothing new:    {s:7.3f} s")
        try:
            s, _ = timed(lambda: t.mirror_delta(delta))
            print(f"mirror_delta (baseline):        {s:7.3f} s  {dir_bytes(delta) / 2**10:9.1f} KiB written")
        except tf.MissingDependencyError as e:
            print(f"mirror_delta (baseline):        not run ({e})")
        s, live = timed(lambda: t.scan().to_arrow())
        s2, _ = timed(lambda: pq.write_table(live, copy, compression="lz4"))
        print(f"copying export (baseline):      {s + s2:7.3f} s  {os.path.getsize(copy) / 2**10:9.1f} KiB written "
              f"(scan {s:.3f} s + write {s2:.3f} s)")
        before = dir_bytes(ice)
        more = rng.choice(np.setdiff1d(np.arange(args.rows), gone), int(args.rows * 0.001), replace=False)
        t.delete(data.select(["host", "metric", "time"]).take(pa.array(np.sort(more))))
        s, r = timed(lambda: t.mirror_iceberg(ice))
        print(f"mirror_iceberg, +0.1% deletes:  {s:7.3f} s  {(dir_bytes(ice) - before) / 2**10:9.1f} KiB written")

        reads(t, ice, data, files, live.num_rows - len(more), args.rows)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def reads(t, ice: str, data: pa.Table, files: list[str], n: int, rows: int) -> None:
    """pyiceberg's scan of the mirror beside pyarrow's read of the same files and our scan()."""
    from pyiceberg.expressions import GreaterThanOrEqual
    from pyiceberg.table import StaticTable

    st = StaticTable.from_metadata(ice)
    lo, hi = (int(x.cast(pa.int64()).as_py()) for x in pc.min_max(data.column("time")).values())
    cut = hi - (hi - lo) // 10
    a, got = best(lambda: st.scan().to_arrow())
    b, raw = best(lambda: pa.concat_tables([pq.read_table(f) for f in files]))
    c, ours = best(lambda: t.scan().to_arrow())
    assert got.num_rows == ours.num_rows == n and raw.num_rows == rows
    print(f"read all columns:  pyiceberg {a:.3f} s | pyarrow, same files, no deletes {b:.3f} s "
          f"({a / b:.2f}x) | our scan() {c:.3f} s")
    tcol = f"c{t.schema.column('time').id}"
    lit = (datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
           + datetime.timedelta(microseconds=cut)).isoformat()
    a, got = best(lambda: st.scan(row_filter=GreaterThanOrEqual("time", lit)).to_arrow())
    b, raw = best(lambda: pq.read_table(files, filters=[(tcol, ">=", pa.scalar(cut, pa.timestamp("us", "UTC")))]))
    c, ours = best(lambda: t.scan(filter=[("time", ">=", pa.scalar(cut, pa.timestamp("us", "UTC")))]).to_arrow())
    assert got.num_rows == ours.num_rows, (got.num_rows, ours.num_rows, lit)
    print(f"read time >= cut:  pyiceberg {a:.3f} s ({got.num_rows} rows) | pyarrow, same files {b:.3f} s "
          f"({a / b:.2f}x) | our scan() {c:.3f} s")


if __name__ == "__main__":
    main()
