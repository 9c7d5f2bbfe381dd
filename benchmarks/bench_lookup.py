"""Lookup benchmark: Table.lookup against DuckDB's native table joined on its PRIMARY KEY,
and against today's way (a scan with IN lists / = filters), all in one run.

    python -m benchmarks.bench_lookup [--rows 2000000] [--lookups 1000] [--dir DIR]

Every figure is printed beside DuckDB's and the scan's from the same run, so machine
speed cancels out. "cold" clears the process caches and opens the table again; "warm"
is a handle that has looked keys up before (other keys than the ones timed).
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

import tableformat as tf
from tableformat.format.cfile_set import FILE_CACHE   # internal: the block cache, cleared for the cold figures

from .bench_core import generate, metrics_partitioning, metrics_schema

KEY = ["host", "metric", "time"]


def best(fn, repeat: int = 3):
    out, t_best = None, float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        t_best = min(t_best, time.perf_counter() - t)
    return t_best, out


def median_ms(fn, items) -> float:
    lat = []
    for x in items:
        t = time.perf_counter()
        fn(x)
        lat.append(time.perf_counter() - t)
    return statistics.median(lat) * 1000


def in_list_scan(table, keys: pa.Table) -> pa.Table:
    """Today's way: IN lists per key column, then the exact keys."""
    flt = [(k, "in", pc.unique(keys.column(k)).to_pylist()) for k in KEY]
    got = table.scan(filter=flt).to_arrow()
    return got.join(keys, KEY, join_type="inner")


def _arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--lookups", type=int, default=1000)
    ap.add_argument("--singles", type=int, default=200)
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    return ap.parse_args()


def main() -> None:
    args = _arguments()
    import duckdb
    work = args.dir or tempfile.mkdtemp(prefix="tf-bench-lookup-")
    os.makedirs(work, exist_ok=True)
    n = args.rows
    data = generate(n)
    uri = os.path.join(work, "metrics")
    shutil.rmtree(uri, ignore_errors=True)
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    t.insert(data)
    rng = np.random.default_rng(11)
    key_sets = [data.select(KEY).take(pa.array(rng.choice(n, args.lookups, replace=False))) for _ in range(4)]
    singles = [data.select(KEY).slice(int(i), 1) for i in rng.choice(n, args.singles, replace=False)]

    con = duckdb.connect(os.path.join(work, "duck.db"))
    con.execute("CREATE TABLE m (host VARCHAR, metric VARCHAR, time TIMESTAMPTZ, value DOUBLE, "
                "price DECIMAL(18,2), count BIGINT, ok BOOLEAN, tag VARCHAR, PRIMARY KEY (host, metric, time))")
    con.register("src", data)
    con.execute("INSERT INTO m SELECT * FROM src")
    con.unregister("src")

    def duck_join(keys):
        con.register("k", keys)
        out = con.execute("SELECT m.* FROM k JOIN m USING (host, metric, time)").to_arrow_table()
        con.unregister("k")
        return out
    duck_join(key_sets[3])                                     # warm DuckDB's buffer pool
    t_duck = min(best(lambda ks=ks: duck_join(ks), 1)[0] for ks in key_sets[:3])
    stmt = "SELECT * FROM m WHERE host = ? AND metric = ? AND time = ?"
    d_single = median_ms(lambda k: con.execute(stmt, [k.column(0)[0].as_py(), k.column(1)[0].as_py(),
                                                      k.column(2)[0].as_py()]).to_arrow_table(), singles)

    FILE_CACHE.clear()
    cold = tf.open_table(uri)
    t_cold, got = best(lambda: cold.lookup(key_sets[0]), 1)
    assert got.num_rows == args.lookups
    warm = tf.open_table(uri)
    warm.lookup(key_sets[3])                                   # other keys: the handle is warm
    t_warm = min(best(lambda ks=ks: warm.lookup(ks), 1)[0] for ks in key_sets[:3])
    ours_single = median_ms(lambda k: warm.lookup(k), singles)

    t_in, got_in = best(lambda: in_list_scan(warm, key_sets[0]), 1)
    assert got_in.num_rows == args.lookups
    filt = lambda k: warm.scan(filter=[(c, "=", k.column(c)[0].as_py()) for c in KEY]).to_arrow()  # noqa: E731
    scan_single = median_ms(filt, singles)

    print(f"rows={n:,}  lookups={args.lookups}  singles={args.singles}  dir={work}")
    print(f"{'figure':<40} {'ours':>9} {'duckdb PK':>10} {'IN-scan':>9}   target")
    print(f"{'%d keys, warm handle' % args.lookups:<40} {t_warm:8.4f}s {t_duck:9.4f}s {t_in:8.4f}s   "
          f"<= duckdb ({t_warm / t_duck:.2f}x)")
    print(f"{'%d keys, cold (caches cleared)' % args.lookups:<40} {t_cold:8.4f}s {t_duck:9.4f}s {t_in:8.4f}s   -")
    print(f"{'one key, median (warm handle)':<40} {ours_single:7.3f}ms {d_single:8.3f}ms {scan_single:7.3f}ms   "
          f"<= 1.5 ms")
    con.close()
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
