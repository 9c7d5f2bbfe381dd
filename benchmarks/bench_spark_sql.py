"""Spark SQL benchmark (issue #35): the JVM planner, SQL pruning through a view, exact counts, catalog reads.

    python -m benchmarks.bench_spark_sql [--rowsets 10000] [--rows 1000000] [--ranges 100] [--s3] [--skip ...]

- plan: a table of `--rowsets` rowsets (10 inserts into rowsets/10 range partitions, a checkpoint
  at version 10) opened from its checkpoint and planned for a full read: Python's
  `Snapshot.read_plan`, and the JVM planner (`tableformat.plan.PlanCli`, run with C1 only and
  the serial collector) in a fresh JVM (cold:
  the whole process, JVM start included) and again in the same JVM (warm: what a Spark driver
  pays per query), with the JVM's own step times.
- sql: `SELECT count(*), sum(v) ... WHERE k >= a AND k < b` selecting 1% of a range-partitioned
  table, through a view of today's `register_view` (JVM planner: planned at each query, pruned
  by the WHERE) and of the view before issue #35 item 6 (Python's full plan handed to the
  connector as JSON, `connector_part`: no pruning), on local disk and (`--s3`) on the loopback
  S3 server through s3a; rowsets opened against rowsets holding the answer.
- count: `count(*)` of a view over a table with pending deletes, against the engine's.
- catalog: bench_spark's connector rows read through the catalog (`spark.sql.catalog.tf`).
Every figure is printed with the load average before and after it: the machine is shared.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import numpy as np
import pyarrow as pa

import tableformat as tf

from .bench_spark import LoopbackS3, alternating, connector_read_rows


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def ranged_table(uri: str, ranges: int, per_range: int, inserts: int = 1, storage_options: dict | None = None,
                 checkpoint_interval: int | None = None):
    """int64 `k` range-partitioned into `ranges` ranges; `inserts` inserts each adding one rowset
    per range of `per_range` rows; a double `v` and a string `s`."""
    width = per_range * inserts
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double", nullable=True),
                        tf.Column("s", "string", nullable=True)], primary_key="k")
    part = tf.PartitionSchema(range=tf.RangePartition(["k"], bounds=[(0, ranges * width)],
                                                      splits=[i * width for i in range(1, ranges)]))
    props = {"checkpoint_interval": checkpoint_interval} if checkpoint_interval else {}
    t = tf.create_table(uri, schema, partitioning=part, properties=props, storage_options=storage_options)
    for j in range(inserts):
        k = ((np.arange(ranges) * width + j * per_range)[:, None] + np.arange(per_range)[None, :]).ravel()
        t.insert(pa.table({"k": pa.array(k, pa.int64()), "v": pa.array(k * 0.5),
                           "s": pa.array(np.char.add("s", (k % 97).astype(str)))}))
    return t


class PlanCli:
    """The JVM planner in a process of its own: one summary request a line."""

    def __init__(self):
        import pyspark

        from spark_jobs.connector import build_jar
        jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
        self.start = time.perf_counter()
        # a short-lived JVM: C1 only and the serial collector cut its cold CPU by half or more (measured)
        self.proc = subprocess.Popen(["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp",
                                      f"{build_jar()}:{jars}/*", "tableformat.plan.PlanCli"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)

    def plan(self, uri: str) -> dict:
        self.proc.stdin.write(json.dumps({"table": uri, "as_of": None, "columns": None, "filter": None,
                                          "summary": True}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(30)


def _children_cpu() -> float:
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def plan_figures(work: str, rowsets: int) -> None:
    """Open from the checkpoint and plan a full read: Python, the JVM cold and warm."""
    uri = os.path.join(work, "plan")
    t0 = time.perf_counter()
    t = ranged_table(uri, rowsets // 10, 10, inserts=10, checkpoint_interval=10)
    print(f"plan: {len(t.state.rowsets)} rowsets, version {t.version} (checkpoint at 10), "
          f"written in {time.perf_counter() - t0:.0f}s")
    py = []
    for _ in range(3):
        load, w0, c0 = _load(), time.perf_counter(), time.process_time()
        plan = tf.open_table(uri).snapshot().read_plan()
        py.append((time.perf_counter() - w0, time.process_time() - c0, load))
    assert len(plan.rowsets) == rowsets
    for i, (wall, cpu, load) in enumerate(py):
        print(f"  python open+read_plan run {i + 1}: {wall:6.2f}s wall, {cpu:6.2f}s cpu  (load {load})")
    load = _load()
    cpu0 = _children_cpu()
    cli = PlanCli()
    first = cli.plan(uri)
    cold = time.perf_counter() - cli.start
    cli.close()
    assert first["rowsets"] == rowsets, first
    print(f"  jvm cold (fresh JVM, start to plan): {cold:6.2f}s wall, the process's cpu {_children_cpu() - cpu0:.2f}s "
          f"(JIT and GC threads included); inside, ms: {first['ms']}  (load {load})")
    cli = PlanCli()
    cli.plan(uri)
    for i in range(4):
        load, w0 = _load(), time.perf_counter()
        got = cli.plan(uri)
        print(f"  jvm warm run {i + 1}: {time.perf_counter() - w0:6.2f}s wall; inside, ms: {got['ms']}  (load {load})")
    cli.close()
    print("  target: <= 1 s and faster than the Python planner")


def _old_view(spark, name: str, t, storage_options: dict | None):
    """register_view before issue #35 item 6: Python's plan of every rowset as the connector's JSON."""
    from spark_jobs.connector.plan import connector_part
    snap = tf.open_table(t.uri, storage_options=storage_options).snapshot()
    plan = snap.read_plan()
    connector_part(spark, t.storage, plan, plan.rowsets).createOrReplaceTempView(name)


def _rowsets_scanned(df) -> int:
    text = df._jdf.queryExecution().executedPlan().toString()
    m = re.search(r"\((\d+) rowsets", text)
    return int(m.group(1)) if m else -1


def sql_figures(spark, root: str, n: int, ranges: int, s3: dict | None, repeat: int) -> None:
    """1% of the keys by the range key: today's view against the view before item 6."""
    from spark_jobs.jvm_paths import configure_s3a
    from spark_jobs.read import register_view
    uri = root.rstrip("/") + "/sql"
    t0 = time.perf_counter()
    t = ranged_table(uri, ranges, n // ranges, storage_options=s3)
    if s3:
        configure_s3a(spark, t.storage, s3)
    where = "on S3 (moto) through s3a" if s3 else "on local disk"
    print(f"sql: {n:,} rows in {ranges} ranges, {len(t.state.rowsets)} rowsets {where}; written in "
          f"{time.perf_counter() - t0:.0f}s")
    lo = n // 2
    hi = lo + n // 100
    q = "SELECT count(*) AS c, sum(v) AS s FROM {} WHERE k >= %d AND k < %d" % (lo, hi)
    register_view(spark, "tf_new", uri, storage_options=s3)
    _old_view(spark, "tf_old", t, s3)
    holding = len(t.snapshot().read_plan(None, [("k", ">=", lo), ("k", "<", hi)]).rowsets)
    new, old = spark.sql(q.format("tf_new")), spark.sql(q.format("tf_old"))
    assert new.collect() == old.collect(), (new.collect(), old.collect())
    assert new.collect()[0].c == hi - lo
    load = _load()
    d_new, d_old = alternating(lambda: spark.sql(q.format("tf_new")).collect(),
                               lambda: spark.sql(q.format("tf_old")).collect(), repeat)
    print(f"  rowsets opened: view {_rowsets_scanned(new)}, old view {_rowsets_scanned(old)}; holding the answer "
          f"{holding} (target <= 2x)")
    print(f"  query: view {d_new:.2f}s, old view {d_old:.2f}s: {d_old / d_new:.1f}x faster "
          f"(target >= 5x on S3)  (load {load}->{_load()})")
    _count_figure(spark, t, s3)


def _count_figure(spark, t, s3: dict | None) -> None:
    """count(*) through the view with pending deletes: exact?"""
    from spark_jobs.read import register_view
    keys = t.scan(columns=["k"]).to_arrow()["k"]
    t.delete(pa.table({"k": keys.take(pa.array(np.arange(0, len(keys), 100)))}))
    register_view(spark, "tf_count", t.uri, storage_options=s3)
    got = spark.sql("SELECT count(*) AS c FROM tf_count").collect()[0].c
    expect = t.scan().count()
    print(f"  count(*) with {len(keys) // 100 + (len(keys) % 100 > 0):,} pending deletes: {got:,}, engine "
          f"{expect:,}: {'exact' if got == expect else 'WRONG'}")


def catalog_reader(spark, s3: dict | None):
    """bench_spark's reads through the catalog: SELECT from tf.`<uri>` [VERSION AS OF v]."""
    from spark_jobs.jvm_paths import jvm_path
    spark.conf.set("spark.sql.catalog.tf", "tableformat.catalog.TableFormatCatalog")
    spark.conf.set("spark.sql.catalog.tf.warehouse", tempfile.mkdtemp(prefix="tf-bench-wh-"))

    def read(spark_, uri, as_of=None, storage_options=None):
        path = jvm_path(tf.Storage(uri, storage_options), "").rstrip("/")
        return spark_.sql(f"SELECT * FROM tf.`{path}`" + ("" if as_of is None else f" VERSION AS OF {int(as_of)}"))
    return read


def _arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rowsets", type=int, default=10_000)
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the sql and catalog tables")
    ap.add_argument("--ranges", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--s3", action="store_true", help="also the sql and catalog figures on the loopback S3 server")
    ap.add_argument("--skip", default="", help="comma-separated: plan, sql, catalog")
    return ap.parse_args()


def main() -> None:
    args = _arguments()
    skip = set(args.skip.split(","))
    work = tempfile.mkdtemp(prefix="tf-bench-sql-")
    try:
        if "plan" not in skip:
            plan_figures(work, args.rowsets)
        if skip >= {"sql", "catalog"}:
            return
        from spark_jobs.session import get_spark, s3a_packages
        spark = get_spark("tableformat-bench-sql", packages=s3a_packages() if args.s3 else ())
        spark.sparkContext.setLogLevel("ERROR")
        if "sql" not in skip:
            sql_figures(spark, work, args.rows, args.ranges, None, args.repeat)
        if "catalog" not in skip:
            connector_read_rows(spark, work, args.rows, args.repeat, reader=catalog_reader(spark, None))
        if args.s3:
            with LoopbackS3() as (root, opts):
                if "sql" not in skip:
                    sql_figures(spark, root, args.rows, args.ranges, opts, args.repeat)
                if "catalog" not in skip:
                    connector_read_rows(spark, root, args.rows, args.repeat, s3=opts,
                                        reader=catalog_reader(spark, opts))
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
