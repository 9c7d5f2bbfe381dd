"""Random histories through the Delta mirror, both delta_export modes and Delta's VACUUM (#34's "Done when").

Each seeded history mixes inserts, updates (NaN among the doubles), deletes, upserts,
compactions, every schema change (add with and without a default, rename, drop, drop +
re-add under another type), range partitions added and dropped. After each step the table
is mirrored, and at random points exported (append and apply) and VACUUMed by Delta
(`RETAIN 0 HOURS`). Every mirrored version is read by delta-spark (VERSION AS OF) and
delta-rs (QueryBuilder), every exported version checked against the engine (append: the
change log equals changes(); apply: the replica equals scan(as_of=v)), NaN compared as NaN,
and check() runs on our table after every VACUUM.
"""
import json
import math
import os
import random
import re

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf
from helpers import norm_table

deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyroaring")

TYPES = ["int32", "int64", "double", "string"]
STEP = 100                                    # width of each range partition of k


@pytest.fixture
def delta_spark(spark):
    """delta-spark, reading Parquet as it can read our files (see test_delta_mirror's delta_reader)."""
    from spark_jobs.read import reads_byte_stream_split
    from spark_jobs.session import has_delta
    if not has_delta(spark):
        pytest.skip("the Spark session has no Delta Lake")
    off = not reads_byte_stream_split(spark)
    if off:
        spark.conf.set("spark.sql.parquet.enableVectorizedReader", "false")
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    yield spark
    spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    if off:
        spark.conf.unset("spark.sql.parquet.enableVectorizedReader")


def rows(table, cols):
    """Sorted tuples of `cols`, NaN as NaN (equal to itself), None apart: comparable across readers."""
    t = norm_table(table, cols)

    def key(x):
        if x is None:
            return (2, 0)
        if isinstance(x, float) and math.isnan(x):
            return (1, 0)
        return (0, x)
    return sorted(tuple(key(x) for x in r) for r in zip(*(t.column(c).to_pylist() for c in cols)))


def cols_at(t, v):
    return [c.name for c in t.snapshot(v).schema.columns]


def values(rng, typ, n, nan=True):
    if typ == "int32":
        return pa.array(rng.integers(-1000, 1000, n, dtype=np.int32))
    if typ == "int64":
        return pa.array(rng.integers(-10**12, 10**12, n, dtype=np.int64))
    if typ == "double":
        x = rng.normal(0, 10, n)
        if nan:
            x[rng.random(n) < 0.25] = np.nan
        return pa.array(x, mask=rng.random(n) < 0.1)
    return pa.array([f"s{int(i)}" for i in rng.integers(0, 10**6, n)])


def batch(rng, t, keys, only=None):
    """Rows for `keys` with every column of the current schema (or `only`), random values."""
    out = {"k": pa.array(np.asarray(keys, dtype=np.int64))}
    for c in t.schema.columns:
        if c.name != "k" and (only is None or c.name in only):
            a = values(rng, c.type.name if hasattr(c.type, "name") else str(c.type), len(keys))
            out[c.name] = a
    return pa.table(out)


def live_keys(t):
    return np.asarray(t.scan(columns=["k"]).to_arrow().column("k").to_numpy(), dtype=np.int64)


class History:
    """One seeded history: the table, its range partitions and extra columns, and the ops."""

    def __init__(self, root, seed):
        self.rng = np.random.default_rng(seed)
        self.r = random.Random(seed)
        sch = tf.Schema([tf.Column("k", "int64"), tf.Column("f", "double", nullable=True),
                         tf.Column("s", "string", nullable=True)], primary_key="k")
        self.ranges = [(0, STEP), (STEP, 2 * STEP)]
        part = tf.PartitionSchema(range=tf.RangePartition(["k"], bounds=list(self.ranges)))
        self.t = tf.create_table(str(root / "t"), sch, partitioning=part)
        self.n = 0

    def fresh(self, what):
        self.n += 1
        return f"{what}{self.n}"

    def extra(self):
        """Columns a schema change may touch: never the key, nor f (the NaN column)."""
        return [c for c in self.t.schema.columns if c.name not in ("k", "f")]

    def new_keys(self, n):
        have = set(live_keys(self.t).tolist())
        pool = [k for lo, hi in self.ranges for k in range(lo, hi) if k not in have]
        return sorted(self.r.sample(pool, min(n, len(pool))))

    def some_keys(self, n):
        have = live_keys(self.t).tolist()
        return sorted(self.r.sample(have, min(n, len(have))))

    # --- the operations; each returns a label -----------------------------------------------
    def insert(self):
        ks = self.new_keys(self.r.randint(5, 40))
        if ks:
            self.t.insert(batch(self.rng, self.t, ks))
        return f"insert {len(ks)}"

    def update(self):
        ks = self.some_keys(self.r.randint(1, 20))
        names = [c.name for c in self.t.schema.columns if c.name != "k"]
        only = {"f"} | set(self.r.sample(names, self.r.randint(0, len(names))))
        if ks:
            self.t.update(batch(self.rng, self.t, ks, only))
        return f"update {len(ks)} {sorted(only)}"

    def delete(self):
        ks = self.some_keys(self.r.randint(1, 15))
        if ks:
            self.t.delete(pa.table({"k": pa.array(ks, pa.int64())}))
        return f"delete {len(ks)}"

    def upsert(self):
        ks = sorted(set(self.some_keys(self.r.randint(1, 15)) + self.new_keys(self.r.randint(1, 15))))
        self.t.upsert(batch(self.rng, self.t, ks))
        return f"upsert {len(ks)}"

    def compact(self):
        return f"compact {len(self.t.compact())}"

    def add_plain(self):
        name, typ = self.fresh("a"), self.r.choice(TYPES)
        self.t.alter().add_column(name, typ).commit()
        return f"add {name} {typ}"

    def add_default(self):
        name, typ = self.fresh("d"), self.r.choice(["int32", "int64", "double"])
        default = {"int32": 7, "int64": -3, "double": 1.5}[typ]
        self.t.alter().add_column(name, typ, nullable=False, default=default).commit()
        return f"add {name} {typ} default {default}"

    def rename(self):
        if not self.extra():
            return self.add_plain()
        old, new = self.r.choice(self.extra()).name, self.fresh("r")
        self.t.alter().rename_column(old, new).commit()
        return f"rename {old} {new}"

    def drop(self):
        if not self.extra():
            return self.add_plain()
        name = self.r.choice(self.extra()).name
        self.t.alter().drop_column(name).commit()
        return f"drop {name}"

    def readd(self):
        """Drop + re-add under the same name with another type, after an upsert that writes the
        column: the append log then holds it under its old type, so append mode must refuse."""
        nullable = [c for c in self.extra() if c.nullable]
        if not nullable:
            self.add_plain()
            nullable = [c for c in self.extra() if c.nullable]
        c = self.r.choice(nullable)
        self.upsert()
        old = c.type.name if hasattr(c.type, "name") else str(c.type)
        typ = self.r.choice([x for x in TYPES if x != old])
        self.t.alter().drop_column(c.name).add_column(c.name, typ).commit()
        return f"re-add {c.name} {old}->{typ}"

    def add_range(self):
        hi = max(h for _, h in self.ranges)
        with self.t.alter() as a:
            a.add_range_partition(hi, hi + STEP)
        self.ranges.append((hi, hi + STEP))
        return f"add range [{hi}, {hi + STEP})"

    def drop_range(self):
        if len(self.ranges) < 2:
            return self.add_range()
        lo, hi = self.r.choice(self.ranges)
        with self.t.alter() as a:
            a.drop_range_partition(lo, hi)
        self.ranges.remove((lo, hi))
        return f"drop range [{lo}, {hi})"

    def steps(self, n):
        """The first step inserts; every kind of write, schema and partition change comes at least once."""
        must = ["add_plain", "add_default", "rename", "drop", "readd", "add_range", "drop_range", "compact",
                "update", "delete", "upsert"]
        data = ["insert", "update", "delete", "upsert", "update", "insert"]
        rest = must + [self.r.choice(data) for _ in range(n - 1 - len(must))]
        self.r.shuffle(rest)
        return ["insert"] + rest


# --- the readers -------------------------------------------------------------------------------
def exported_versions(spark, path):
    """(Delta version, our version) of each export commit (userMetadata), in Delta's order."""
    from delta.tables import DeltaTable
    hist = DeltaTable.forPath(spark, path).history().select("version", "userMetadata").collect()
    return [(h["version"], json.loads(h["userMetadata"])["tableformat"]["version"])
            for h in sorted(hist, key=lambda h: h["version"]) if h["userMetadata"]]


def check_mirror(spark, t, m, r, what):
    """One mirrored version, through delta-spark's time travel and delta-rs."""
    cols = cols_at(t, r.table_version)
    want = rows(t.scan(as_of=r.table_version).to_arrow(), cols)
    got = spark.sql(f"SELECT * FROM delta.`{m}` VERSION AS OF {r.delta_version}").toArrow()
    assert got.column_names == cols, what
    assert rows(got, cols) == want, what
    dt = deltalake.DeltaTable(m, version=r.delta_version)
    got = pa.table(deltalake.QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all())
    assert got.column_names == cols, what
    assert rows(got, cols) == want, what


def check_mirror_latest(spark, t, m, what):
    cols = cols_at(t, t.version)
    df = spark.read.format("delta").load(m)
    assert rows(df.toArrow(), cols) == rows(t.scan().to_arrow(), cols), what
    want = sorted(t.scan(filter=[("f", ">", 0.0)]).to_arrow().column("k").to_pylist())
    assert sorted(x.k for x in df.where("f > 0.0").select("k").collect()) == want, what   # NaN ranks above 0
    got = pa.table(deltalake.QueryBuilder().register("t", deltalake.DeltaTable(m)).execute("SELECT * FROM t")
                   .read_all())
    assert rows(got, cols) == rows(t.scan().to_arrow(), cols), what


class AppendLog:
    """An append export; on the typed refusal of a re-added column, a new one from the version it names."""

    def __init__(self, root):
        self.root, self.n, self.start, self.checked = root, 0, 0, 0
        self.out = str(root / "append0")
        self.restarts = []

    def run(self, spark, t, what):
        from spark_jobs.export import delta_export, delta_watermark
        while True:
            try:
                delta_export(spark, t.uri, self.out, "exp", "append", start=self.start)
                break
            except tf.ExportSchemaError as e:
                m = re.search(r"was added again at version (\d+).*start=(\d+)", str(e))
                assert m and m.group(1) == m.group(2), str(e)
                v = int(m.group(2))
                assert self.checked < v <= t.version, (str(e), self.checked)
                w = delta_watermark(self.out, "exp")
                assert w is not None and w < v, what            # it wrote nothing it refused
                self.check(spark, t, what)                       # what it holds is still right
                self.n += 1
                self.out, self.start, self.checked = str(self.root / f"append{self.n}"), v, v
                self.restarts.append(v)
        assert delta_watermark(self.out, "exp") == t.version, what
        self.check(spark, t, what)

    def check(self, spark, t, what):
        """Each of the log's versions equals changes() of that version; nothing before `start`."""
        from spark_jobs.export import delta_watermark
        w = delta_watermark(self.out, "exp")
        if w is None:
            return
        got = spark.read.format("delta").load(self.out).toArrow()
        assert got.num_rows == t.changes(self.start, w).num_rows, what
        vs = got.column("_version").to_numpy()
        for v in sorted(set(vs.tolist())):
            assert self.start < v <= w, what
            cols = ["_op", "_version"] + cols_at(t, v)
            mine = got.filter(pa.array(vs == v))
            assert rows(mine, cols) == rows(t.changes(v - 1, v), cols), (what, v)
        self.checked = w


class ApplyReplica:
    def __init__(self, root):
        self.out = str(root / "apply")
        self.seen = 0                                   # Delta versions checked by time travel

    def run(self, spark, t, what):
        from spark_jobs.export import delta_export, delta_watermark
        delta_export(spark, t.uri, self.out, "replica", "apply")
        assert delta_watermark(self.out, "replica") == t.version, what
        self.check_latest(spark, t, t.version, what)
        for dv, v in exported_versions(spark, self.out):
            if dv >= self.seen:
                got = spark.read.format("delta").option("versionAsOf", dv).load(self.out).toArrow()
                cols = cols_at(t, v)
                assert sorted(got.column_names) == sorted(cols), (what, v)
                assert rows(got, cols) == rows(t.scan(as_of=v).to_arrow(), cols), (what, v)
                self.seen = dv + 1

    def check_latest(self, spark, t, v, what):
        got = spark.read.format("delta").load(self.out).toArrow()
        cols = cols_at(t, v)
        assert sorted(got.column_names) == sorted(cols), what
        assert rows(got, cols) == rows(t.scan(as_of=v).to_arrow(), cols), what


def vacuum(spark, path):
    spark.sql(f"VACUUM delta.`{path}` RETAIN 0 HOURS")


@pytest.mark.parametrize("seed", [1, 2])
def test_delta_mirror_and_exports_over_a_random_history(delta_spark, tmp_path, seed):
    spark = delta_spark
    h = History(tmp_path, seed)
    t, m = h.t, str(tmp_path / "m")
    log, replica = AppendLog(tmp_path), ApplyReplica(tmp_path)
    r = random.Random(seed * 7919)
    done, vacuums = [], 0
    plan = h.steps(12)
    for i, op in enumerate(plan):
        label = getattr(h, op)()
        what = f"seed {seed} step {i}: {label} (after {done})"
        done.append(label)
        res = t.mirror_delta(m)
        if res.delta_version is not None:
            check_mirror(spark, t, m, res, what)
        last = i == len(plan) - 1
        if last or r.random() < 0.3:
            log.run(spark, t, what)
            replica.run(spark, t, what)
        if last or r.random() < 0.2:
            vacuums += 1
            for p in [m, replica.out, log.out]:
                if os.path.exists(os.path.join(p, "_delta_log")):
                    vacuum(spark, p)
            assert t.check().ok, what
            check_mirror_latest(spark, t, m, what)
            if replica.seen:
                replica.check_latest(spark, t, t.version if last else
                                     exported_versions(spark, replica.out)[-1][1], what)
            log.check(spark, t, what)
    assert vacuums >= 1 and any(x.startswith("re-add") for x in done) and any(
        x.startswith("drop range") for x in done)
    assert log.restarts, done                            # the re-add made append start a new log
    f = t.changes(0).column("f").to_numpy(zero_copy_only=False)
    assert np.isnan(f).any()
