"""CDC benchmark: ordered upserts (sequence_column) against plain upserts, the CLI's file load
against the API, and the DuckDB/Polars readers against to_arrow, each in the same run.

    python -m benchmarks.bench_cdc [--rows 1000000]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import tableformat as tf

from .bench_core import timed


def schema() -> tf.Schema:
    return tf.Schema([tf.Column("id", "int64"), tf.Column("value", "double", nullable=True),
                      tf.Column("lsn", "int64")], primary_key=["id"])


def line(name: str, ours: float, base: float, base_name: str) -> None:
    print(f"{name:<46} {ours:8.3f}s   {base_name:<22} {base:8.3f}s   ratio {ours / base:5.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="tf-bench-cdc-")
    n = args.rows
    rng = np.random.default_rng(1)
    data = pa.table({"id": pa.array(np.arange(n), pa.int64()), "value": rng.normal(size=n),
                     "lsn": pa.array(np.full(n, 100), pa.int64())})
    parts = tf.PartitionSchema(hash=[tf.HashPartition(["id"], buckets=4)])
    m = max(n // 100, 1)
    ev_ids = np.concatenate([rng.choice(n, m, replace=False), np.arange(n, n + m // 10)])
    events = pa.table({"id": pa.array(ev_ids, pa.int64()), "value": rng.normal(size=len(ev_ids)),
                       "lsn": pa.array(rng.integers(50, 150, len(ev_ids)), pa.int64())})   # about half stale
    print(f"{n} rows, {events.num_rows} upsert events (about half stale); writes best of one, reads best of "
          "three; noisy on a shared machine")

    plain = tf.create_table(os.path.join(work, "plain"), schema(), parts)
    ordered = tf.create_table(os.path.join(work, "ordered"), schema(), parts,
                              properties={"sequence_column": "lsn"})
    plain.insert(data)
    ordered.insert(data)
    tp, rp = timed(lambda: plain.upsert(events))
    to, ro = timed(lambda: ordered.upsert(events))
    line(f"ordered upsert ({ro.ignored} skipped)", to, tp, "plain upsert")

    # the CLI's file load against the API's insert of the same rows
    src = os.path.join(work, "in.parquet")
    pq.write_table(data, src)
    api = tf.create_table(os.path.join(work, "api"), schema(), parts)
    tf.create_table(os.path.join(work, "cli"), schema(), parts)
    ta, _ = timed(lambda: api.insert(pq.read_table(src)))
    tc, _ = timed(lambda: subprocess.run([sys.executable, "-m", "tableformat.cli", "insert",
                                          os.path.join(work, "cli"), "--input", src, "--progress", "never"],
                                         check=True, capture_output=True))
    line("CLI insert --input parquet (incl. start-up)", tc, ta, "API insert")

    # readers over a table with pending deltas
    scan = ordered.scan
    tr, _ = timed(lambda: scan().to_arrow(), 3)       # best of 3; the readers' first call imports the library
    try:
        td, _ = timed(lambda: scan().to_duckdb("m"), 3)
        line("scan().to_duckdb", td, tr, "scan().to_arrow")
    except tf.MissingDependencyError as e:
        print(f"to_duckdb skipped: {e}")
    try:
        tpl, _ = timed(lambda: scan().to_polars(), 3)
        line("scan().to_polars", tpl, tr, "scan().to_arrow")
    except tf.MissingDependencyError as e:
        print(f"to_polars skipped: {e}")
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
