"""Mutation benchmark: updates, deletes, upserts, scans with deltas, time travel, change history.

    python -m benchmarks.bench_mutations [--rows 2000000]

Runs the same steps on delta-rs (`deltalake`, installed by the `bench` extra)
in the same run, and prints seconds, bytes written and ratios.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile

import numpy as np
import pyarrow as pa

import tableformat as tf
from tableformat.format.cfile_set import FILE_CACHE   # internal: the block cache, cleared for the cold figures

from .bench_core import generate, metrics_partitioning, metrics_schema, timed

KEY = ["host", "metric", "time"]


def dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def line(name, ours, base=None, extra="", target=""):
    ratio = f"{base / ours:6.1f}x faster" if base else ""
    b = f"{base:8.3f}s" if base is not None else "     -   "
    print(f"{name:<44} {ours:8.3f}s  {b}  {ratio:<14} {extra:<22} {target}")


def _arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--no-delta", action="store_true", help="skip the delta-rs comparison")
    return ap.parse_args()


def _workload(n: int):
    """The load and the changes made to it: 1% updates of one column, 0.1% deletes (other rows),
    an upsert of 1% of which half are new keys: (data, updates, deletes, upserts, new keys)."""
    data = generate(n)
    rng = np.random.default_rng(5)
    upd_rows = np.sort(rng.choice(n, n // 100, replace=False))
    upd = data.select(KEY).take(pa.array(upd_rows)).append_column(
        "value", pa.array(rng.normal(0, 1, len(upd_rows))))
    del_rows = np.sort(rng.choice(np.setdiff1d(np.arange(n), upd_rows), n // 1000, replace=False))
    dels = data.select(KEY).take(pa.array(del_rows))
    keep = np.setdiff1d(np.arange(n), np.concatenate([del_rows]))
    old_half = data.take(pa.array(rng.choice(keep, n // 200, replace=False)))
    new_half = generate(n // 200, seed=9, time_offset=(n // 10_000) * 1_000_000 + 3)
    ups = pa.concat_tables([old_half, new_half]).combine_chunks()
    ups = ups.set_column(3, "value", pa.array(rng.normal(0, 1, ups.num_rows)))
    return data, upd, dels, ups, new_half.num_rows


def main() -> None:
    args = _arguments()
    work = args.dir or tempfile.mkdtemp(prefix="tf-bench-mut-")
    n = args.rows
    data, upd, dels, ups, n_new = _workload(n)

    uri = os.path.join(work, "metrics")
    shutil.rmtree(uri, ignore_errors=True)
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    load = t.insert(data)
    FILE_CACHE.clear()       # the engine's block cache (format.cfile_set): every scan figure starts cold
    t = tf.open_table(uri)
    t_clean = min(timed(lambda: t.scan().to_arrow())[0] for _ in range(3))

    dt, dpath = None, os.path.join(work, "delta")
    if not args.no_delta:
        import deltalake
        shutil.rmtree(dpath, ignore_errors=True)
        deltalake.write_deltalake(dpath, data)
        dt = deltalake.DeltaTable(dpath)

    print(f"rows={n:,}  update={upd.num_rows:,}  delete={dels.num_rows:,}  upsert={ups.num_rows:,} (half new)")
    print(f"{'step':<44} {'ours':>9}  {'delta-rs':>9}  {'':<14} {'bytes written':<22} target")
    _changes(t, uri, dt, dpath, upd, dels, ups, n_new)
    _reads(uri, dt, dpath, load.version, n, t_clean, n - dels.num_rows + n_new,
           upd.num_rows + dels.num_rows + ups.num_rows)
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)


def _changes(t, uri: str, dt, dpath: str, upd: pa.Table, dels: pa.Table, ups: pa.Table, n_new: int) -> None:
    """The update, the delete and the upsert, each on ours and (with `dt`) on delta-rs by a merge."""
    pred = " AND ".join(f"t.{k} = s.{k}" for k in KEY)
    b0 = dir_bytes(uri)
    t_upd, r = timed(lambda: t.update(upd))
    wrote = dir_bytes(uri) - b0
    d_upd = None
    if dt is not None:
        d0 = dir_bytes(dpath)
        d_upd, _ = timed(lambda: dt.merge(upd, pred, source_alias="s", target_alias="t")
                         .when_matched_update(updates={"value": "s.value"}).execute())
        dwrote = dir_bytes(dpath) - d0
    line("update one column of 1%", t_upd, d_upd, f"{wrote / 2**20:.2f} MiB"
         + (f" (delta {dwrote / 2**20:.0f} MiB)" if dt is not None else ""), "<= 1 MB, >= 5x faster")

    b0 = dir_bytes(uri)
    t_del, _ = timed(lambda: t.delete(dels))
    wrote = dir_bytes(uri) - b0
    d_del = None
    if dt is not None:
        d_del, _ = timed(lambda: dt.merge(dels, pred, source_alias="s", target_alias="t")
                         .when_matched_delete().execute())
    line("delete 0.1%", t_del, d_del, f"{wrote / 2**20:.2f} MiB")

    b0 = dir_bytes(uri)
    t_ups, r = timed(lambda: t.upsert(ups))
    wrote = dir_bytes(uri) - b0
    assert r.inserted == n_new and r.updated == ups.num_rows - n_new, r
    d_ups = None
    if dt is not None:
        d_ups, _ = timed(lambda: dt.merge(ups, pred, source_alias="s", target_alias="t")
                         .when_matched_update_all().when_not_matched_insert_all().execute())
    line("upsert 1% (half new keys)", t_ups, d_ups, f"{wrote / 2**20:.2f} MiB")


def _reads(uri: str, dt, dpath: str, load_version: int, n: int, t_clean: float, rows_after: int,
           changed: int) -> None:
    """Reads with those changes pending: the full scan, time travel to the load, the change history."""
    FILE_CACHE.clear()
    t = tf.open_table(uri)
    t_after, after = timed(lambda: t.scan().to_arrow())
    t_after = min(t_after, *(timed(lambda: t.scan().to_arrow())[0] for _ in range(2)))
    assert after.num_rows == rows_after
    d_scan = timed(lambda: dt.to_pyarrow_table())[0] if dt is not None else None
    line("full scan with those deltas pending", t_after, d_scan, f"{t_after / t_clean:.2f}x the clean scan",
         "<= 1.3x clean scan")

    t_tt, old = timed(lambda: t.scan(as_of=load_version).to_arrow())
    assert old.num_rows == n
    d_tt = None
    if dt is not None:
        d_tt, _ = timed(lambda: __import__("deltalake").DeltaTable(dpath, version=0).to_pyarrow_table())
    line("time travel to the load version", t_tt, d_tt, f"{t_tt / t_after:.2f}x the current scan",
         "<= 1.5x current scan")

    t_ch, ch = timed(lambda: t.changes(load_version))
    t_chc, chc = timed(lambda: t.changes(load_version, images="changed"))
    d_ch = None
    if dt is not None:
        try:
            d_ch, _ = timed(lambda: dt.load_cdf(starting_version=1).read_all())
        except Exception as e:  # CDF must be enabled on the Delta table; report instead of failing
            print(f"  (delta-rs change data feed unavailable: {type(e).__name__})")
    line("change history since load (full images)", t_ch, d_ch, f"{t_ch / t_clean:.0%} of a full scan",
         "<= 10% of a full scan")
    line("change history since load (changed cells)", t_chc, None, f"{t_chc / t_clean:.0%} of a full scan",
         "<= 10% of a full scan")
    assert ch.num_rows == chc.num_rows == changed


if __name__ == "__main__":
    main()
