"""A small end-to-end demo on the embedded default (a local directory).

    python -m tableformat.demo [--dir DIR] [--rows N]

Creates a metrics table (host, metric, time), inserts with the primary key
enforced, scans with pruning, travels back in time and prints what it did.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import tableformat as tf

T0 = 1_700_000_000_000_000


def generate(n: int, start: int = 0) -> pa.Table:
    i = np.arange(start, start + n)
    rng = np.random.default_rng(start)
    return pa.table({
        "host": pa.array([f"host-{x % 50:03d}" for x in i]),
        "metric": pa.array(np.array(["cpu", "mem", "disk"], dtype=object)[(i // 50) % 3]),
        "time": pa.array(T0 + (i // 150) * 60_000_000, pa.timestamp("us", tz="UTC")),
        "value": pa.array(rng.normal(50, 10, n)),
    })


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=None, help="where to put the table (default: a temporary directory)")
    ap.add_argument("--rows", type=int, default=300_000)
    args = ap.parse_args(argv)
    root = args.dir or tempfile.mkdtemp(prefix="tableformat-demo-")
    uri = os.path.join(root, "metrics")
    shutil.rmtree(uri, ignore_errors=True)

    schema = tf.Schema([
        tf.Column("host", "string"), tf.Column("metric", "string"), tf.Column("time", "unixtime_micros"),
        tf.Column("value", "double", nullable=True),
        tf.Column("tag", "varchar(16)", nullable=True, default="none"),
    ], primary_key=["host", "metric", "time"])
    parts = tf.PartitionSchema(hash=[tf.HashPartition(["host", "metric"], buckets=4)],
                               range=tf.RangePartition(["time"]))
    table = tf.create_table(uri, schema, partitioning=parts)
    print(f"created {table!r}")
    print(f"  {schema!r}")
    print(f"  {len(table.state.partitioning.tablet_ids())} tablets")

    t = time.perf_counter()
    res = table.insert(generate(args.rows))
    print(f"insert: {res.inserted:,} rows as version {res.version} in {time.perf_counter() - t:.2f}s "
          f"({res.rowsets_added} rowsets, {res.bytes_written / 2**20:.1f} MiB)")

    try:
        table.insert(generate(3, start=10))
    except tf.DuplicateKeyError as e:
        print(f"insert of existing keys refused: {e}")
    res2 = table.insert_ignore(generate(1000, start=args.rows - 500))
    print(f"insert_ignore: {res2.inserted} inserted, {res2.ignored} ignored (version {res2.version})")

    t = time.perf_counter()
    one = table.scan(filter=[("host", "=", "host-007"), ("metric", "=", "mem")]).to_arrow()
    print(f"scan host-007/mem: {one.num_rows} rows in {(time.perf_counter() - t) * 1000:.1f} ms "
          f"(avg value {pc.mean(one['value']).as_py():.2f})")
    total = pc.sum(table.scan(columns=["value"]).to_arrow()["value"]).as_py()
    print(f"sum(value) over {table.scan().count():,} rows = {total:,.1f}")
    print(f"as of version {res.version}: {table.scan(as_of=res.version).count():,} rows; "
          f"as of its timestamp {res.timestamp.to_datetime().isoformat()}: "
          f"{table.scan(as_of=res.timestamp).count():,} rows")
    print("history:")
    for h in table.history():
        print(f"  v{h.version} {tf.Timestamp(h.timestamp).to_datetime().isoformat()} {h.operation} {dict(h.counts)}")
    if not args.dir:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
