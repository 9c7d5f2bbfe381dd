"""Helpers shared by test files (not fixtures: those are in conftest.py).

Test files import from here and never from one another, so a test file can move or be split
without breaking another. `pythonpath = ["tests"]` in pyproject.toml makes `import helpers` work
from any directory under tests/.
"""
import decimal
import itertools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import tableformat as tf
from tableformat.maintenance.compaction import CompactionAction, CompactionPlan

TESTS = Path(__file__).resolve().parent      # tests/: helpers.py lives here
ROOT = TESTS.parent                            # the repository
T0 = 1_700_000_000_000_000


def moto_command(host: str, port: int) -> list[str] | None:
    """The S3 server of the test's own environment: the moto_server beside sys.executable (or its
    module run by this interpreter), never the first one on PATH (another environment's)."""
    beside = os.path.join(os.path.dirname(sys.executable), "moto_server")
    if os.path.exists(beside):
        return [beside, "-H", host, "-p", str(port)]
    import importlib.util
    if importlib.util.find_spec("moto") is not None and importlib.util.find_spec("moto.server") is not None:
        return [sys.executable, "-m", "moto.server", "-H", host, "-p", str(port)]
    return None


def start_moto(stderr=subprocess.DEVNULL) -> tuple[subprocess.Popen, str]:
    """A loopback S3 server on a free port, up and listening: (its process, its endpoint URL).
    Skips the test when moto_server is not installed (pip install -e '.[dev]')."""
    import socket
    import time
    import pytest
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = moto_command("127.0.0.1", port)
    if cmd is None:
        pytest.skip("moto_server is not installed in this environment (pip install -e '.[dev]')")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.2)
    return proc, f"http://127.0.0.1:{port}"


def server_requests(log) -> list[tuple[str, str, int]]:
    """(method, path with query, status) of each request a `logged_s3_root` server answered, in order."""
    import re
    plain = re.sub(r"\x1b\[[0-9;]*m", "", Path(log).read_text())          # the server colours its lines
    return [(m.group(1), m.group(2), int(m.group(3)))
            for m in re.finditer(r'"([A-Z]+) (\S+) HTTP/[0-9.]+" (\d{3}) ', plain)]


def row_group_reads(monkeypatch) -> list:
    """The row groups every ParquetFile.read_row_groups call decodes from now on (a list that
    grows with each call): how a test sees which row groups a read decoded."""
    import pyarrow.parquet as pq
    read = []
    orig = pq.ParquetFile.read_row_groups

    def spy(self, row_groups, *a, **kw):
        read.append(list(row_groups))
        return orig(self, row_groups, *a, **kw)
    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    return read


def dag_helper_modules():
    """airflow/dags' helper modules (tableformat_config, tableformat_export), imported into this
    process WITHOUT importing Airflow: `import airflow` configures logging for the whole process
    (root at INFO, a handler on the sys.stdout of that moment, which under pytest is a capture
    stream that is closed later), and py4j's connections, closed at interpreter exit, then log
    into it: "--- Logging error ---" at the end of the run (issue #34). They need Airflow only
    inside a DAG task; skipped when Airflow is not installed."""
    import importlib.util

    import pytest
    if importlib.util.find_spec("airflow") is None:
        pytest.skip("Airflow is not installed (pip install -e '.[airflow]')")
    dags = str(ROOT / "airflow" / "dags")
    if dags not in sys.path:
        sys.path.insert(0, dags)
    import tableformat_config
    import tableformat_export
    return tableformat_config, tableformat_export


# --- the metrics table most engine tests use ------------------------------------------------

def metrics_schema():
    return tf.Schema([
        tf.Column("host", "string"), tf.Column("metric", "string"), tf.Column("time", "unixtime_micros"),
        tf.Column("value", "double", nullable=True, encoding="bitshuffle", compression="lz4"),
        tf.Column("price", "decimal(18,2)", nullable=True),
        tf.Column("tag", "varchar(16)", nullable=True, default="none"),
    ], primary_key=["host", "metric", "time"])


def metrics_partitioning():
    return tf.PartitionSchema(hash=[tf.HashPartition(["host", "metric"], buckets=4)],
                              range=tf.RangePartition(["time"], bounds=[(T0, T0 + 10**12)], splits=[T0 + 10**11]))


def metrics_rows(n, seed=0, hosts=20, start=0):
    rng = np.random.default_rng(seed)
    i = np.arange(start, start + n)
    return pa.table({
        "host": pa.array([f"h{x % hosts:03d}" for x in i]),
        "metric": pa.array(np.array(["cpu", "mem", "disk"], dtype=object)[(i // hosts) % 3]),
        "time": pa.array(T0 + (i // (hosts * 3)) * 3_000_000_000, pa.timestamp("us", tz="UTC")),
        "value": pa.array(np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n))).cast(pa.float64()),
        "price": pa.array([decimal.Decimal(int(x)).scaleb(-2) if x % 7 else None
                           for x in rng.integers(0, 10**6, n)], pa.decimal128(18, 2)),
        "tag": pa.array([["a", "b", None, "c"][x % 4] for x in i]),
    })


def sort_rows(t: pa.Table, keys=("host", "metric", "time")) -> pa.Table:
    return t.sort_by([(k, "ascending") for k in keys]) if t.num_rows else t


def table_files(root) -> set:
    out = set()
    for d, _, files in os.walk(root):
        for f in files:
            out.add(os.path.join(d, f))
    return out


def norm_value(v):
    """NaN as a string, so that NaN compares equal to NaN in lists of rows."""
    return "NaN" if isinstance(v, float) and v != v else v


def assert_same_rows(got: pa.Table, expect: pa.Table, keys=("host", "metric", "time")):
    """Same rows regardless of order (NaN equal to NaN)."""
    got, expect = sort_rows(got, keys), sort_rows(expect, keys)
    assert got.num_rows == expect.num_rows
    assert got.column_names == expect.column_names
    for c in expect.column_names:
        assert [norm_value(v) for v in got[c].to_pylist()] == [norm_value(v) for v in expect[c].to_pylist()], c


def in_columns(t: pa.Table, schema: pa.Schema, renames: dict) -> pa.Table:
    """Rows read in other columns (a change stream's batch from before an ALTER) in `schema`'s:
    renamed by `renames`, the columns they lack NULL, cast to its types."""
    t = t.rename_columns([renames.get(n, n) for n in t.column_names])
    return pa.table({f.name: t.column(f.name).cast(f.type) if f.name in t.column_names
                     else pa.nulls(t.num_rows, f.type) for f in schema})


# --- a small key/value table, and history built by hand --------------------------------------

def kv(path, **props):
    return tf.create_table(str(path), tf.Schema([tf.Column("key", "string"),
                                                 tf.Column("val", "int64", nullable=True),
                                                 tf.Column("s", "string", nullable=True)],
                                                primary_key="key"), properties=props or None)


def kv_schema():
    """The key/value schema whose `s` column defaults to "d"."""
    return tf.Schema([tf.Column("key", "string"), tf.Column("val", "int64", nullable=True),
                      tf.Column("s", "string", nullable=True, default="d")], primary_key="key")


def seed_key_history(t):
    """One key inserted, updated, deleted and inserted again: four commits."""
    t.insert(pa.table({"key": ["row"], "val": [1]}))
    t.update(pa.table({"key": ["row"], "val": [2]}))
    t.delete(pa.table({"key": ["row"]}))
    t.insert(pa.table({"key": ["row"], "val": [3]}))


def read(t, as_of=None, **kw):
    """The rows as of a version (or now), in key order, as dicts."""
    return t.scan(as_of=as_of, ordered=True, **kw).to_arrow().to_pylist()


def every_version(t, versions=None):
    vs = range(t.version + 1) if versions is None else versions
    return {v: read(t, v) for v in vs}


def compact_one(t, kind, rowsets, columns=()):
    """Run one compaction action of tablet r0 on the given rowsets; it must commit."""
    plan = CompactionPlan((CompactionAction(kind, "r0", tuple(rowsets), 1.0, "test", 0, tuple(columns)),), 0,
                          t.version)
    res = t.compact(plan)
    assert len(res) == 1 and res[0].operation == f"COMPACT {kind.upper()}"
    return res[0]


def force(t, kind, rowsets, columns=(), committed=True):
    """Run one compaction action of our choosing; it must commit unless `committed` is False
    (a race may leave it nothing to do)."""
    tablet = t.state.rowsets[rowsets[0]].tablet
    plan = CompactionPlan((CompactionAction(kind, tablet, tuple(rowsets), 1.0, "test", 0, tuple(columns)),), 0,
                          t.version)
    done = t.compact(plan)
    if committed:
        assert len(done) == 1, done
    return done


def merge_all(t):
    """Merge every tablet's rowsets into one."""
    by_tablet = {}
    for r in t.state.rowsets.values():
        by_tablet.setdefault(r.tablet, []).append(r.id)
    for ids in by_tablet.values():
        force(t, "merge", ids)


def col_ids(t, *names):
    return [t.schema.column(n).id for n in names]


def vacuum0(t):
    """Vacuum with no retention: every file no retained version needs goes now."""
    return t.vacuum(retain_seconds=0, grace_seconds=0)


def kt(ks, vs=None):
    """Keys (and values) of a table with int64 key `k` and int64 column `a`."""
    cols = {"k": pa.array(ks, pa.int64())}
    if vs is not None:
        cols["a"] = pa.array(vs, pa.int64())
    return pa.table(cols)


def model_rows(m):
    """A model {k: a} as the rows a key-ordered scan of a `kt` table returns."""
    return [{"k": k, "a": v} for k, v in sorted(m.items())]


def during_next_commit(t, fn):
    """Run `fn` (through another handle) just before `t` tries to commit its next log version:
    a deterministic concurrent commit."""
    fired = []

    def hook(step, path):
        if step == "commit" and "_log/" in path and not fired:
            fired.append(1)
            fn()
    t.storage.fault_hook = hook
    return fired


# --- the command line, as a real process ------------------------------------------------------

CLI = [sys.executable, "-m", "tableformat.cli"]


def run(*args, code=0, env=None):
    """Run the command; the exit status must be `code` (stderr is shown when it is not)."""
    r = subprocess.run([*CLI, *map(str, args)], check=False, capture_output=True, text=True, timeout=120,
                       env={**os.environ, **(env or {})})
    assert r.returncode == code, f"exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    return r


def run_many(*calls):
    """Independent commands at once, one process each: (args, code[, env]) -> results, in order."""
    procs = [subprocess.Popen([*CLI, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, **(env[0] if env else {})})
             for args, _code, *env in calls]
    out = []
    for p, (args, code, *_) in zip(procs, calls):
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == code, f"{args}: exit {p.returncode}\nstdout: {stdout}\nstderr: {stderr}"
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


def one_line_error(r, cls):
    """Scripts and humans both rely on this: one line, the typed error, no traceback."""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"error: {cls}: "), lines[0]
    assert "Traceback" not in r.stderr
    return lines[0]


# --- the small table Delta exports and mirrors are checked on ---------------------------------

def int_string_schema():
    """An int64 key `k` and a nullable string `v`."""
    return tf.Schema([tf.Column("k", "int64"), tf.Column("v", "string", nullable=True)], primary_key="k")


def small_schema():
    return tf.Schema([tf.Column("k", "int64"), tf.Column("s", "string", nullable=True),
                      tf.Column("v", "double", nullable=True), tf.Column("d", "decimal(12,2)", nullable=True),
                      tf.Column("ts", "unixtime_micros", nullable=True)], primary_key=["k"])


def small_rows(keys, salt=0):
    keys = np.asarray(keys, dtype=np.int64)
    return pa.table({"k": keys, "s": pa.array([f"s{k}-{salt}" for k in keys]),
                     "v": (keys * 1.5 + salt).astype(np.float64),
                     "d": pa.array([decimal.Decimal(int(k) * 100 + salt).scaleb(-2) for k in keys], pa.decimal128(12, 2)),
                     "ts": pa.array(T0 + keys * 1000 + salt, pa.timestamp("us", tz="UTC"))})


def norm_table(table, cols):
    """Sorted by every column given, timestamps as integer micros: comparable across Spark and Arrow."""
    out = {}
    for c in cols:
        a = table.column(c)
        if pa.types.is_timestamp(a.type):
            a = pc.cast(pc.cast(a, pa.timestamp("us", tz="UTC")), pa.int64())
        elif pa.types.is_large_string(a.type) or pa.types.is_string_view(a.type):
            a = a.cast(pa.string())
        elif pa.types.is_binary_view(a.type):      # delta-rs answers views of strings as binary views
            a = a.cast(pa.binary()).cast(pa.string())
        out[c] = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
    t = pa.table(out)
    return t.sort_by([(c, "ascending") for c in cols if not pa.types.is_list(t.column(c).type)])


def replaced_base_file_table(root):
    """A table whose one rowset has a REDO update and a base file rewritten behind the log's back
    (same rows, another size): every reader must refuse it, never return its rows."""
    import pyarrow.parquet as pq
    t = tf.create_table(str(root), metrics_schema())
    data = metrics_rows(100)
    t.insert(data)
    t.update(data.select(["host", "metric", "time"]).take(pa.array([3])).append_column("value", pa.array([7.0])))
    (rs,) = t.state.rowsets.values()
    path = os.path.join(str(root), rs.base[0].path)
    pq.write_table(pq.read_table(path), path, compression="none")
    return t


def int_keyed(path, composite: bool, partitioned: bool, props: dict):
    """A table keyed by an int64 `k` (after a string `h` of 0-3 "x"s derived from it when
    `composite`, so byte order differs from number order) with an int64 `a`, 2 hash buckets on
    `k` when `partitioned`; and the function building its rows from keys (and values of `a`)."""
    cols = [tf.Column("k", "int64"), tf.Column("a", "int64", nullable=True)]
    pk = ["k"]
    if composite:
        cols = [tf.Column("h", "string")] + cols
        pk = ["h", "k"]
    part = tf.PartitionSchema(hash=[tf.HashPartition(["k"], buckets=2)]) if partitioned else None
    t = tf.create_table(str(path), tf.Schema(cols, primary_key=pk), partitioning=part, properties=props)

    def rows(ks, vs=None):
        c = {"h": pa.array(["x" * (k % 4) for k in ks], pa.string())} if composite else {}
        c["k"] = pa.array(ks, pa.int64())
        if vs is not None:
            c["a"] = pa.array(vs, pa.int64())
        return pa.table(c)
    return t, rows


HISTORY_STEPS = ("insert", "insert", "update", "delete", "upsert", "upsert", "apply", "compact", "compact", "alter",
                 "range")
# the steps a replica follows: no ALTER (the replica's table has its own, fixed columns)
STREAM_STEPS = tuple(k for k in HISTORY_STEPS if k != "alter")


def change_history(path, seed, steps=25, nkeys=40, kinds=HISTORY_STEPS):
    """A table with a random history for change reads: inserts, updates, deletes, upserts (some
    with a stale sequence, so skipped rows), per-row ops (a key deleted and inserted again in one
    commit among them), compactions, an added column and a range partition dropped and added again
    (its keys move to new tablets with the same hash buckets); `kinds`: the steps drawn from.
    Returns (table, versions): the version after each step."""
    import random
    rng = random.Random(seed)
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("a", "int64", nullable=True),
                     tf.Column("b", "string", nullable=True), tf.Column("lsn", "int64")], primary_key="k")
    half = nkeys // 2
    part = tf.PartitionSchema(hash=[tf.HashPartition(["k"], 2)],
                              range=tf.RangePartition(["k"], bounds=[(0, half), (half, nkeys)]))
    t = tf.create_table(str(path), sch, partitioning=part,
                        properties={"sequence_column": "lsn", "rowset_target_bytes": 1 << 16})
    lsn = [1]
    live: set = set()
    extra: list = []
    ranges = {"high": True}
    versions = [t.version]

    def rows(ks, stale=()):
        out = {"k": pa.array(ks, pa.int64()),
               "a": pa.array([rng.choice([None, rng.randint(0, 9)]) for _ in ks], pa.int64()),
               "b": pa.array([rng.choice([None, f"s{rng.randint(0, 9)}"]) for _ in ks], pa.string())}
        seq = []
        for k in ks:
            lsn[0] += 1
            seq.append(0 if k in stale else lsn[0])
        out["lsn"] = pa.array(seq, pa.int64())
        for c in extra:
            out[c] = pa.array([rng.randint(0, 9) for _ in ks], pa.int64())
        return pa.table(out)

    for _ in range(steps):
        keyspace = [k for k in range(nkeys) if ranges["high"] or k < half]
        ks = sorted(rng.sample(keyspace, min(len(keyspace), rng.randint(1, 8))))
        op = rng.choice(kinds)
        if op == "insert":
            ks = [k for k in ks if k not in live]
            if not ks:
                continue
            t.insert(rows(ks))
            live.update(ks)
        elif op == "update":
            ks = [k for k in ks if k in live]
            if not ks:
                continue
            t.update(rows(ks))
        elif op == "delete":
            ks = [k for k in ks if k in live]
            if not ks:
                continue
            t.delete(pa.table({"k": pa.array(ks, pa.int64())}))
            live.difference_update(ks)
        elif op == "upsert":
            stale = {k for k in ks if k in live and rng.random() < 0.3}
            t.upsert(rows(ks, stale))
            live.update(ks)
        elif op == "apply":
            ops, ids = [], []
            for k in ks:
                seq = rng.choice([["delete", "insert"], ["update", "delete"], ["upsert"]] if k in live
                                 else [["insert"], ["insert", "update"], ["insert", "delete"]])
                ops += seq
                ids += [k] * len(seq)
                if seq[-1] == "delete":
                    live.discard(k)
                else:
                    live.add(k)
            t.apply(rows(ids).append_column("op", pa.array(ops)))
        elif op == "compact":
            if rng.random() < 0.5:
                merge_all(t)
            else:
                t.compact(t.compaction_plan())
        elif op == "alter":
            if extra:
                continue
            with t.alter() as a:
                a.add_column("d", "int64", nullable=True)
            extra.append("d")
        else:
            with t.alter() as a:
                if ranges["high"]:
                    a.drop_range_partition(half, nkeys)
                else:
                    a.add_range_partition(half, nkeys)
            if ranges["high"]:
                live = {k for k in live if k < half}
            ranges["high"] = not ranges["high"]
        versions.append(t.version)
    return t, versions


def range_keyed(path, ranges=10, width=100, storage_options=None):
    """A table keyed by int64 `k` in `ranges` range partitions of `width` keys each (one rowset
    each after the insert), with a double `v` holding NULL, NaN, -0.0 and 0.0, and a string `s`."""
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double", nullable=True),
                        tf.Column("s", "string", nullable=True)], primary_key="k")
    part = tf.PartitionSchema(range=tf.RangePartition(["k"], bounds=[(0, ranges * width)],
                                                      splits=[i * width for i in range(1, ranges)]))
    t = tf.create_table(str(path), schema, partitioning=part, storage_options=storage_options)
    k = np.arange(ranges * width)
    v = np.sin(k).astype(float)
    v[k % 13 == 0] = np.nan
    v[k % 17 == 0] = -0.0
    v[k % 19 == 0] = 0.0
    t.insert(pa.table({"k": pa.array(k, pa.int64()),
                       "v": pa.array(v, mask=(k % 11 == 0)),
                       "s": pa.array([f"s{x % 7}" for x in k])}))
    return t


_catalogs = itertools.count()


def spark_catalog(spark, warehouse) -> str:
    """A tableformat catalog (`tableformat.catalog.TableFormatCatalog`) over `warehouse`, of its own
    for one test: Spark keeps a catalog once it is initialized, so each gets a new name."""
    name = f"tfc{next(_catalogs)}"
    spark.conf.set(f"spark.sql.catalog.{name}", "tableformat.catalog.TableFormatCatalog")
    spark.conf.set(f"spark.sql.catalog.{name}.warehouse", str(warehouse))
    return name


def delete_unplanned_base_files(t, flt) -> int:
    """Delete the base files of every rowset the engine's plan of `flt` leaves out, so that a read
    which opens one fails; the number of rowsets the engine plans (what a pruned read must match)."""
    snap = t.snapshot()
    plan = snap.read_plan(filter=flt)
    keep = {b.path for r in plan.rowsets for b in r.base}
    for r in snap.read_plan().rowsets:
        for b in r.base:
            if b.path not in keep:
                os.remove(os.path.join(t.uri, b.path))
    return len(plan.rowsets)


def txn_behind_the_horizon(path):
    """Versions 0 and 1 in the created format, 2 a txn commit that raises the log's format to 6,
    then inserts, a merge and a vacuum that moves the history horizon past all three: they are
    read from the horizon's files (specs/format.md §8.3)."""
    t = kv(path)
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.commit_fragments([t.snapshot().write_mutation(pa.table({"key": ["b"], "val": [2]}), "upsert")], txn=("q", 5))
    for k in "cde":
        t.insert(pa.table({"key": [k], "val": [3]}))
    merge_all(t)
    vacuum0(t)
    assert tf.open_table(t.uri).state.history_horizon > 2
    return t


# --- pyspark's own `bin/spark-sql`, with no Python reachable (issue #35 item 5, #45) ---------
def _spark_home() -> Path | None:
    import importlib.util
    spec = importlib.util.find_spec("pyspark")
    return Path(spec.origin).resolve().parent if spec and spec.origin else None


SPARK_HOME = _spark_home()
CATALOG = "tableformat.catalog.TableFormatCatalog"
MARK = "-- query "


def spark_sql_command(jar: str, tmp, conf: dict, lines: list[str], *options: str, env: dict | None = None):
    """(argv, environment) of `bin/spark-sql -S -f` of a script of `lines`, with no Python reachable;
    `env` adds to the environment (HADOOP_USER_NAME, ...)."""
    script = Path(tmp) / "queries.sql"
    script.write_text("\n".join(lines) + "\n")
    cmd = [str(SPARK_HOME / "bin" / "spark-sql"), "--master", "local[1]", "--jars", jar,
           "--conf", "spark.ui.enabled=false", "--conf", f"spark.sql.catalog.tf={CATALOG}", *options]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    cmd += ["-S", "-f", str(script)]
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "PYTHON", "VIRTUAL_ENV"))}
    environ.update(SPARK_HOME=str(SPARK_HOME), PYSPARK_PYTHON="/nonexistent/python",
                   PYSPARK_DRIVER_PYTHON="/nonexistent/python", SPARK_LOCAL_IP="127.0.0.1", **(env or {}))
    return cmd, environ


def run_spark_sql(jar: str, tmp, conf: dict, lines: list[str], *options: str,
                  env: dict | None = None) -> subprocess.CompletedProcess:
    """`bin/spark-sql -S -f` of a script of `lines`, with no Python reachable."""
    cmd, environ = spark_sql_command(jar, tmp, conf, lines, *options, env=env)
    return subprocess.run(cmd, env=environ, capture_output=True, text=True, timeout=600, cwd=tmp)  # derby.log, metastore_db


def spark_sql(jar, tmp, conf: dict, queries: list[str], env: dict | None = None) -> list[list[list[str]]]:
    """Each query's rows (tab-separated fields) as `bin/spark-sql -S -f` prints them."""
    lines = []
    for i, q in enumerate(queries):
        lines.append(f"SELECT '{MARK}{i}';")
        lines.append(q.rstrip(";") + ";")
    proc = run_spark_sql(jar, tmp, conf, lines, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out: list[list[list[str]]] = []
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            out.append([])
        elif out:
            out[-1].append(line.split("\t"))
    assert len(out) == len(queries), proc.stdout[-2000:] + proc.stderr[-2000:]
    return out


def value(text: str):
    return None if text == "NULL" else float(text)


def engine_rows(t, **scan) -> list[tuple]:
    a = t.scan(columns=["k", "v", "s"], **scan).to_arrow().sort_by("k")
    return [(k, v, s) for k, v, s in zip(*(a[c].to_pylist() for c in ("k", "v", "s")))]


def cli_rows(rows) -> list[tuple]:
    return [(int(k), value(v), None if s == "NULL" else s) for k, v, s in rows]


def same(got, expect):
    norm = [(k, "nan" if v is not None and v != v else v, s) for k, v, s in expect]
    assert [(k, "nan" if v is not None and v != v else v, s) for k, v, s in got] == norm


# Issue #45's SQL user, on any store: CREATE with a key, INSERT, a duplicate INSERT (refused, typed,
# nothing committed), ALTER, another INSERT.
SQL_USER_SCRIPT = [
    "CREATE NAMESPACE tf.ns;",
    "CREATE TABLE tf.ns.t (k BIGINT NOT NULL, v DOUBLE, s STRING, CONSTRAINT pk PRIMARY KEY (k)) "
    "PARTITIONED BY (bucket(3, k));",
    "INSERT INTO tf.ns.t SELECT id, id * 0.25, CAST(id AS STRING) FROM range(1000);",
    "INSERT INTO tf.ns.t VALUES (5000, 1.0, 'new'), (7, 2.0, 'dup');",
    "ALTER TABLE tf.ns.t ADD COLUMN n INT;",
    "INSERT INTO tf.ns.t VALUES (1000, NULL, 'after', 5);"]


def sql_user_history(jar, tmp, conf: dict, open_table, env: dict | None = None):
    """Run SQL_USER_SCRIPT in spark-sql (errors go on), then check the table the engine opens
    (`open_table()`): the duplicate refused once, the history, check(), and every version read
    back by VERSION AS OF equal to the engine's rows at it. Returns the table."""
    import tableformat as tf
    proc = run_spark_sql(jar, tmp, conf, SQL_USER_SCRIPT, "--hiveconf", "hive.cli.errors.ignore=true", env=env)
    out = proc.stdout + proc.stderr
    assert out.count("1 key(s) of the INSERT already exist in table tf.ns.t") == 1, out[-5000:]
    t = open_table()
    assert isinstance(t, tf.Table)
    assert [h.operation for h in t.history()] == ["CREATE TABLE", "INSERT", "ALTER TABLE", "INSERT"]
    assert t.check().ok and t.scan().count() == 1001
    versions = list(range(1, t.version + 1))
    got = spark_sql(jar, tmp, conf, [f"SELECT k, v, s FROM tf.ns.t VERSION AS OF {v} ORDER BY k" for v in versions],
                    env=env)
    for v, rows in zip(versions, got):
        same(cli_rows(rows), engine_rows(t, as_of=v))
    return t
