"""Compaction benchmark: scans under accumulating deltas, before and after compact().

    python -m benchmarks.bench_compaction [--rows 2000000] [--only history]

`history`: a one-column scan with 1% of rows updated and 0.1% deleted (pending, then after
compact(), history kept) against a clean load of the same live rows (issue 14: history never
costs the present), and the same for all columns while pending.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import tableformat as tf

from .bench_core import generate, metrics_partitioning, metrics_schema
from .bench_core import best as _best


def best(fn):
    return _best(fn, 7)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--only", choices=["history", "deltas"], default=None)
    args = ap.parse_args()
    if args.only != "deltas":
        history_scan(args.rows)
    if args.only != "history":
        delta_scans(args.rows)


def interleaved(fns, rounds: int = 15) -> list[float]:
    """Best time of each function, run in turns so that load on the machine hits them alike."""
    return [w for w, _ in interleaved_cpu(fns, rounds)]


def interleaved_cpu(fns, rounds: int = 15) -> list[tuple[float, float]]:
    """(best wall seconds, best CPU seconds of the whole process) of each function, run in turns.
    CPU time is the steadier figure on a shared machine."""
    best_w, best_c = [float("inf")] * len(fns), [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            best_w[i] = min(best_w[i], time.perf_counter() - t0)
            best_c[i] = min(best_c[i], time.process_time() - c0)
    return list(zip(best_w, best_c))


def history_scan(n: int) -> None:
    """One-column scan with pending updates and deletes, then after compact() with the whole
    history retained, each against a clean load of the same live rows in the same run."""
    work = tempfile.mkdtemp(prefix="tf-bench-history-")
    data = generate(n)
    key = ["host", "metric", "time"]
    t = tf.create_table(os.path.join(work, "dirty"), metrics_schema(), partitioning=metrics_partitioning())
    t.insert(data)
    rng = np.random.default_rng(2)
    upd = np.sort(rng.choice(n, n // 100, replace=False))
    new_values = pa.array(rng.normal(0, 1, len(upd)))
    t.update(data.select(key).take(pa.array(upd)).append_column("value", new_values))
    dele = np.sort(rng.choice(n, n // 1000, replace=False))
    t.delete(data.select(key).take(pa.array(dele)))
    live = np.ones(n, bool)
    live[dele] = False
    values = data.column("value").to_numpy().copy()
    values[upd] = new_values.to_numpy()
    clean_rows = data.set_column(3, "value", pa.array(values)).filter(pa.array(live))
    c = tf.create_table(os.path.join(work, "clean"), metrics_schema(), partitioning=metrics_partitioning())
    c.insert(clean_rows)

    def one_column(tbl):
        return lambda: pc.sum(tbl.scan(columns=["value"]).to_arrow()["value"])
    (base, base_cpu), (pending, pending_cpu) = interleaved_cpu([one_column(c), one_column(t)], 25)
    print(f"rows={n:,}  one-column scan of a clean load {base:.3f}s ({base_cpu:.3f} CPU s)")
    print(f"{'1% updated + 0.1% deleted, pending':<44} {pending:.3f}s = {pending / base:.2f}x clean   target <= 1.5x")
    print(f"{'  the same in CPU seconds':<44} {pending_cpu:.3f}s = {pending_cpu / base_cpu:.2f}x clean")
    (base, base_cpu), (pending, pending_cpu) = interleaved_cpu([lambda: c.scan().to_arrow(),
                                                                lambda: t.scan().to_arrow()], 5)
    print(f"{'  all columns, pending':<44} {pending:.3f}s = {pending / base:.2f}x clean ({base:.3f}s); "
          f"CPU {pending_cpu / base_cpu:.2f}x")
    t.compact()
    (base, base_cpu), (after, after_cpu) = interleaved_cpu([one_column(c), one_column(t)], 25)
    print(f"{'the same after compact() (history kept)':<44} {after:.3f}s = {after / base:.2f}x clean "
          f"({base:.3f}s)   target <= 1.05x")
    print(f"{'  the same in CPU seconds':<44} {after_cpu:.3f}s = {after_cpu / base_cpu:.2f}x clean")
    tasks = t.scan(columns=["value"]).plan()
    hist = [r for r in t.state.rowsets.values() if r.history_only]
    print(f"  after compact() the scan reads {len(tasks)} rowset(s), {sum(x.stop - x.start for x in tasks):,} rows, "
          f"{sum(len(x.deltas) for x in tasks)} delta file(s); {len(hist)} history-only rowset(s) of "
          f"{sum(r.num_rows for r in hist):,} deleted rows skipped (the clean load: "
          f"{len(c.scan(columns=['value']).plan())} rowset(s))")
    assert math.isclose(pc.sum(t.scan(columns=["value"]).to_arrow()["value"]).as_py(),
                        pc.sum(clean_rows["value"]).as_py(), rel_tol=1e-9)
    assert t.scan().count() == clean_rows.num_rows
    assert t.scan(as_of=1).count() == n and t.check().ok
    shutil.rmtree(work, ignore_errors=True)


def delta_scans(n: int) -> None:
    work = tempfile.mkdtemp(prefix="tf-bench-compact-")
    data = generate(n)
    uri = os.path.join(work, "metrics")
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    t.insert(data)
    clean = best(lambda: t.scan().to_arrow())
    rng = np.random.default_rng(1)
    print(f"rows={n:,}  clean full scan {clean:.3f}s")
    for _ in range(10):
        rows = np.sort(rng.choice(n, n // 100, replace=False))
        t.update(data.select(["host", "metric", "time"]).take(pa.array(rows)).append_column(
            "value", pa.array(rng.normal(0, 1, len(rows)))))
    dirty = best(lambda: t.scan().to_arrow())
    print(f"after 10 rounds of 1% updates: scan {dirty:.3f}s = {dirty / clean:.2f}x clean")

    plan = t.compaction_plan()
    print(plan)
    # bytes rewritten by the major compaction of `value` against that column's base size
    vid = t.schema.column("value").id
    col_bytes = 0
    import pyarrow.parquet as pq
    for rs in t.state.rowsets.values():
        md = pq.ParquetFile(os.path.join(uri, rs.base[0].path)).metadata
        for g in range(md.num_row_groups):
            for c in range(md.num_columns):
                if md.row_group(g).column(c).path_in_schema == f"c{vid}":
                    col_bytes += md.row_group(g).column(c).total_compressed_size
    before = {os.path.join(d, f) for d, _, fs in os.walk(uri) for f in fs}
    t0 = time.perf_counter()
    majors = [a for a in plan.actions if a.kind == "major_delta"]
    others = [a for a in plan.actions if a.kind != "major_delta"]
    t.compact(tf.CompactionPlan(tuple(majors), plan.budget_bytes, plan.version))
    t_major = time.perf_counter() - t0
    written = sum(os.path.getsize(p) for p in {os.path.join(d, f) for d, _, fs in os.walk(uri) for f in fs} - before
                  if "/base-" in p)
    undo = sum(os.path.getsize(p) for p in {os.path.join(d, f) for d, _, fs in os.walk(uri) for f in fs} - before
               if "/undo-" in p)
    print(f"major delta compaction of `value`: {t_major:.2f}s, base bytes rewritten {written / 2**20:.2f} MiB "
          f"vs the column's {col_bytes / 2**20:.2f} MiB = {written / max(1, col_bytes):.2f}x   target <= 1.5x; "
          f"UNDO written {undo / 2**20:.2f} MiB")
    if others:
        t.compact(tf.CompactionPlan(tuple(others), plan.budget_bytes, t.version))
    t.compact()
    after = best(lambda: t.scan().to_arrow())
    print(f"scan after compact(): {after:.3f}s = {after / clean:.2f}x a clean table's scan   target <= 1.1x")
    assert t.scan().count() == n and t.check().ok
    # History by UNDO: vacuum with no retention frees the superseded files; the load version
    # stays readable from the compacted files.
    load_version = 1
    expect = t.scan(as_of=load_version).count()
    res = t.vacuum(retain_seconds=0, grace_seconds=0)
    now = best(lambda: t.scan().to_arrow())
    old = best(lambda: t.scan(as_of=load_version).to_arrow())
    assert t.scan(as_of=load_version).count() == expect
    print(f"vacuum(retain_seconds=0) freed {res.bytes / 2**20:.1f} MiB ({len(res.files)} files); time travel to "
          f"the load version through UNDO: {old:.3f}s = {old / now:.2f}x the current scan")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
