"""The zero-copy Iceberg mirror (Table.mirror_iceberg, `tableformat mirror URI --iceberg PATH`), spec §16.

Every mirrored snapshot is read back by pyiceberg (`StaticTable.from_metadata`, the Hadoop
layout's version-hint, time travel by snapshot id) and compared with the engine's rows at the
version it describes, with row filters on every type (NaN and NULL included) whose results must
equal the same predicate applied to the engine's rows: statistics that pruned a file wrongly
would lose rows. Spark's Iceberg runtime has no build for Spark 4.2 or 4.3 on Maven Central
(the newest is iceberg-spark-runtime-4.1_2.13:1.12.0, which fails on Spark 4.3 with
IncompatibleClassChangeError), and DuckDB's iceberg extension downloads from the internet:
neither runs here (README "Iceberg"). Iceberg's own maintenance is exercised through pyiceberg's
expire_snapshots on the registered mirror.
"""
import datetime
import decimal
import json
import math
import os
import random
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tableformat as tf
from tableformat.cli import main as cli_main
from helpers import ROOT, small_rows, small_schema

pytest.importorskip("pyiceberg")
from pyiceberg.expressions import (And, EqualTo, GreaterThan, GreaterThanOrEqual, IsNaN, IsNull,  # noqa: E402
                                   LessThan, NotNaN, NotNull, Or)
from pyiceberg.table import StaticTable  # noqa: E402

STEP = 100
TYPES = ["bool", "int8", "int16", "int32", "int64", "float", "double", "date", "unixtime_micros",
         "decimal(12,2)", "decimal(30,4)", "string", "varchar(8)", "binary"]


# --- comparing -------------------------------------------------------------------------------------
def _key(x):
    if x is None:
        return (2, "")
    if isinstance(x, float) and math.isnan(x):
        return (1, "")
    if isinstance(x, datetime.datetime):
        return (0, x.astimezone(datetime.timezone.utc).isoformat())
    return (0, repr(x) if isinstance(x, (bytes, decimal.Decimal, datetime.date)) else x)


def rows(table: pa.Table, cols) -> list:
    """Sorted tuples of `cols`, NaN equal to NaN, NULL apart, Iceberg's int for int8/int16."""
    return sorted(tuple(_key(x) for x in r) for r in zip(*(table.column(c).to_pylist() for c in cols)))


def cols_of(t, v):
    return [c.name for c in t.snapshot(v).schema.columns]


def read(m, snapshot_id=None, row_filter=None):
    st = StaticTable.from_metadata(m)
    kw = {} if row_filter is None else {"row_filter": row_filter}
    return st.scan(snapshot_id=snapshot_id, **kw).to_arrow()


# --- a random history over every type --------------------------------------------------------------
def values(rng, typ, n):
    null = rng.random(n) < 0.15
    if typ == "bool":
        return pa.array(rng.random(n) < 0.5, mask=null)
    if typ in ("int8", "int16", "int32", "int64"):
        hi = {"int8": 100, "int16": 30000, "int32": 10**9, "int64": 10**15}[typ]
        return pa.array(rng.integers(-hi, hi, n), pa.from_numpy_dtype(np.dtype(typ)), mask=null)
    if typ in ("float", "double"):
        x = rng.normal(0, 10, n)
        x[rng.random(n) < 0.2] = np.nan
        x[rng.random(n) < 0.05] = 0.0
        return pa.array(x.astype(np.float32 if typ == "float" else np.float64), mask=null)
    if typ == "date":
        return pa.array(rng.integers(-5000, 20000, n).astype(np.int32), pa.date32(), mask=null)
    if typ == "unixtime_micros":
        return pa.array(rng.integers(0, 2 * 10**15, n), pa.timestamp("us", tz="UTC"), mask=null)
    if typ.startswith("decimal"):
        p, s = (int(x) for x in typ[8:-1].split(","))
        ints = rng.integers(-10**(min(p, 15) - 1), 10**(min(p, 15) - 1), n)
        return pa.array([None if z else decimal.Decimal(int(i)).scaleb(-s) for i, z in zip(ints, null)],
                        pa.decimal128(p, s))
    if typ == "binary":
        return pa.array([None if z else bytes([int(i) % 7, int(i) % 251]) for i, z in zip(rng.integers(0, 10**6, n), null)],
                        pa.binary())
    width = 8 if typ.startswith("varchar") else 90         # some strings longer than the 64-byte bound
    return pa.array([None if z else ("é" if i % 5 == 0 else "s") + str(int(i)) * (1 + int(i) % width // 6)
                     for i, z in zip(rng.integers(0, 10**6, n), null)], pa.string())


class History:
    """Seeded writes, schema and range changes, compactions, restores and vacuums."""

    def __init__(self, root, seed):
        self.rng = np.random.default_rng(seed)
        self.r = random.Random(seed)
        self.root = root
        self.side = []                                   # snapshots a step mirrored itself
        cols = [tf.Column("k", "int64")] + [tf.Column(f"c_{typ.split('(')[0]}{i}", typ, nullable=True)
                                            for i, typ in enumerate(TYPES)]
        self.ranges = [(0, STEP), (STEP, 2 * STEP)]
        part = tf.PartitionSchema(range=tf.RangePartition(["k"], bounds=list(self.ranges)))
        # no history kept past a vacuum (an ALTER within history_max_age holds the horizon back):
        # then only the mirror's registry keeps the files earlier snapshots read
        self.t = tf.create_table(str(root / "t"), tf.Schema(cols, primary_key="k"), partitioning=part,
                                 properties={"history_max_age": 0})
        self.n = 0

    def batch(self, keys, only=None):
        out = {"k": pa.array(np.asarray(keys, dtype=np.int64))}
        for c in self.t.schema.columns:
            if c.name != "k" and (only is None or c.name in only):
                a = values(self.rng, str(c.type), len(keys))
                out[c.name] = a if c.nullable else pc.fill_null(a, pa.scalar(0, a.type))   # add_default's int32
        return pa.table(out)

    def live(self):
        return self.t.scan(columns=["k"]).to_arrow().column("k").to_pylist()

    def new_keys(self, n):
        have = set(self.live())
        pool = [k for lo, hi in self.ranges for k in range(lo, hi) if k not in have]
        return sorted(self.r.sample(pool, min(n, len(pool))))

    def some_keys(self, n):
        have = self.live()
        return sorted(self.r.sample(have, min(n, len(have))))

    def insert(self):
        ks = self.new_keys(self.r.randint(10, 50))
        if ks:
            self.t.insert(self.batch(ks))
        return f"insert {len(ks)}"

    def update(self):
        ks = self.some_keys(self.r.randint(1, 20))
        names = [c.name for c in self.t.schema.columns if c.name != "k"]
        if ks:
            self.t.update(self.batch(ks, set(self.r.sample(names, self.r.randint(1, 4)))))
        return f"update {len(ks)}"

    def delete(self):
        ks = self.some_keys(self.r.randint(1, 15))
        if ks:
            self.t.delete(pa.table({"k": pa.array(ks, pa.int64())}))
        return f"delete {len(ks)}"

    def upsert(self):
        ks = sorted(set(self.some_keys(self.r.randint(1, 15)) + self.new_keys(self.r.randint(1, 15))))
        self.t.upsert(self.batch(ks))
        return f"upsert {len(ks)}"

    def compact(self):
        return f"compact {len(self.t.compact())}"

    def extra(self):
        return [c for c in self.t.schema.columns if c.name != "k"]

    def add(self):
        self.n += 1
        typ = self.r.choice(TYPES)
        self.t.alter().add_column(f"a{self.n}", typ).commit()
        return f"add a{self.n} {typ}"

    def add_default(self):
        self.n += 1
        self.t.alter().add_column(f"d{self.n}", "int32", nullable=False, default=7).commit()
        return f"add d{self.n} default 7"

    def rename(self):
        self.n += 1
        old = self.r.choice(self.extra()).name
        self.t.alter().rename_column(old, f"r{self.n}_{old}").commit()
        return f"rename {old}"

    def drop(self):
        c = self.r.choice(self.extra())
        self.t.alter().drop_column(c.name).add_column(c.name, self.r.choice(TYPES)).commit()
        return f"drop + re-add {c.name}"

    def add_range(self):
        hi = max(h for _, h in self.ranges)
        with self.t.alter() as a:
            a.add_range_partition(hi, hi + STEP)
        self.ranges.append((hi, hi + STEP))
        return f"add range {hi}"

    def drop_range(self):
        lo, hi = self.r.choice(self.ranges)
        with self.t.alter() as a:
            a.drop_range_partition(lo, hi)
        self.ranges.remove((lo, hi))
        return f"drop range {lo}"

    def restore(self):
        """Delete some rows, mirror that (the caller mirrors after each step), restore them next."""
        v = self.t.version
        self.t.tag("before")                              # history_max_age is 0: a tag keeps v readable
        self.delete()
        r = self.t.mirror_iceberg(str(self.root / "m"))
        self.side.append((r.snapshot_id, self.t.version, self.t.scan().to_arrow(), cols_of(self.t, self.t.version)))
        self.t.restore("before")
        self.t.untag("before")
        return f"restore {v}"

    def vacuum(self):
        """An update whose mirroring compacts files out of our state, then a vacuum keeping no history:
        only the mirror's registry keeps the files earlier snapshots read."""
        self.update()
        r = self.t.mirror_iceberg(str(self.root / "m"))
        self.side.append((r.snapshot_id, self.t.version, self.t.scan().to_arrow(), cols_of(self.t, self.t.version)))
        res = self.t.vacuum(retain_seconds=0, grace_seconds=0)
        assert res.files, "the vacuum had nothing to delete"
        return f"vacuum {len(res.files)}"

    def steps(self, n):
        must = ["add", "add_default", "rename", "drop", "add_range", "drop_range", "compact", "update", "delete",
                "upsert", "restore", "vacuum"]
        data = ["insert", "update", "delete", "upsert", "insert"]
        rest = must + [self.r.choice(data) for _ in range(n - 1 - len(must))]
        self.r.shuffle(rest)
        return ["insert"] + rest


def filters(table: pa.Table, rng: random.Random):
    """(pyiceberg expression, the mask Iceberg's semantics give on `table`) for each column: a
    value from the data compared with <, >=, =, and IS NULL / NOT NULL, IS NaN / NOT NaN for floats."""
    out = []
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        valid = [x for x in col.to_pylist() if x is not None and not (isinstance(x, float) and math.isnan(x))]
        out.append((IsNull(name), pc.is_null(col)))
        out.append((NotNull(name), pc.is_valid(col)))
        if pa.types.is_floating(col.type):
            out.append((IsNaN(name), pc.fill_null(pc.is_nan(col), False)))
            out.append((NotNaN(name), pc.invert(pc.fill_null(pc.is_nan(col), True))))
        if not valid or pa.types.is_boolean(col.type) or pa.types.is_binary(col.type):
            if valid and pa.types.is_boolean(col.type):
                out.append((EqualTo(name, True), pc.fill_null(pc.equal(col, True), False)))
            continue
        v = rng.choice(valid)
        scalar = pa.scalar(v, col.type)
        lit = v
        if isinstance(v, datetime.datetime):
            lit = v.isoformat()
        elif isinstance(v, (datetime.date, decimal.Decimal)):
            lit = str(v)
        for expr, fn in ((LessThan, pc.less), (GreaterThanOrEqual, pc.greater_equal), (EqualTo, pc.equal),
                         (GreaterThan, pc.greater)):
            out.append((expr(name, lit), pc.fill_null(fn(col, scalar), False)))
    return out


def check_snapshot(m, sid, want: pa.Table, cols, what, rng=None):
    got = read(m, sid)
    assert got.column_names == cols, what
    assert rows(got, cols) == rows(want, cols), what
    if rng is None:
        return
    for expr, mask in filters(want, rng):
        exp = want.filter(mask)
        res = read(m, sid, expr)
        assert rows(res, cols) == rows(exp, cols), (what, str(expr))
    one = want.column_names[1]
    both = Or(IsNull(one), And(NotNull("k"), GreaterThan("k", STEP)))
    assert rows(read(m, sid, both), cols) == rows(want.filter(pc.or_(pc.is_null(want.column(one)),
                                                                     pc.greater(want.column("k"), STEP))), cols), what


@pytest.mark.parametrize("seed", [1, 2])
def test_pyiceberg_reads_every_mirrored_snapshot_of_a_random_history(tmp_path, seed):
    h = History(tmp_path, seed)
    t, m = h.t, str(tmp_path / "m")
    rng = random.Random(seed)
    mirrored = []                                        # (snapshot id, our version, rows then)
    done = []
    for i, op in enumerate(h.steps(18)):
        label = getattr(h, op)()
        what = f"seed {seed} step {i}: {label} (after {done})"
        done.append(label)
        mirrored.extend(h.side)
        h.side.clear()
        res = t.mirror_iceberg(m)
        if res.snapshot_id is None:
            assert mirrored and mirrored[-1][1] == t.version, what
            continue
        assert res.table_version == t.version
        want = t.scan().to_arrow()
        mirrored.append((res.snapshot_id, t.version, want, cols_of(t, t.version)))
        check_snapshot(m, res.snapshot_id, want, mirrored[-1][3], what, rng)
        check_snapshot(m, None, want, mirrored[-1][3], what)     # the current snapshot, via version-hint
        assert t.check().ok, what
        for sid, v, old, cols in mirrored:                  # earlier snapshots survive our vacuum
            check_snapshot(m, sid, old, cols, f"{what}: snapshot of version {v}")
    st = StaticTable.from_metadata(m)
    assert [s.snapshot_id for s in st.metadata.snapshots] == [s for s, *_ in mirrored]
    assert [int(s.summary["tableformat.version"]) for s in st.metadata.snapshots] == [v for _, v, *_ in mirrored]
    assert any(x.startswith("restore") for x in done) and any(x.startswith("vacuum") for x in done), done
    floats = [c for _, _, w, _ in mirrored for c in w.columns if pa.types.is_floating(c.type)]
    assert any(pc.any(pc.is_nan(c)).as_py() for c in floats)


# --- the metadata ----------------------------------------------------------------------------------
@pytest.fixture
def mirrored(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    m = str(tmp_path / "m")
    t.insert(small_rows(range(0, 300)))
    r1 = t.mirror_iceberg(m)
    t.delete(small_rows(range(3, 300, 11)).select(["k"]))
    r2 = t.mirror_iceberg(m)
    t.update_ignore(small_rows(range(1, 300, 7), salt=1).select(["k", "v"]))
    r3 = t.mirror_iceberg(m)
    t.alter().rename_column("s", "name").drop_column("d").add_column("extra", "int32").commit()
    r4 = t.mirror_iceberg(m)
    return t, m, [r1, r2, r3, r4]


def _meta(m):
    hint = open(os.path.join(m, "metadata", "version-hint.text")).read()
    return int(hint), json.load(open(os.path.join(m, "metadata", f"v{hint}.metadata.json")))


def test_the_metadata_is_a_v2_hadoop_table_of_one_snapshot_per_run(mirrored):
    t, m, rs = mirrored
    n, meta = _meta(m)
    assert n == 4 and [r.metadata_version for r in rs] == [1, 2, 3, 4]
    assert meta["format-version"] == 2 and meta["properties"]["gc.enabled"] == "false"
    assert [s["snapshot-id"] for s in meta["snapshots"]] == [r.snapshot_id for r in rs]
    assert [s["parent-snapshot-id"] for s in meta["snapshots"][1:]] == [r.snapshot_id for r in rs[:-1]]
    for s, r in zip(meta["snapshots"], rs):
        assert int(s["summary"]["tableformat.version"]) == r.table_version
        ts = int(t.snapshot(r.table_version).timestamp)
        assert int(s["summary"]["tableformat.timestamp"]) == ts and s["timestamp-ms"] == ts // 1000
    mapping = json.loads(meta["properties"]["schema.name-mapping.default"])
    ids = {c.id for c in small_schema().columns} | {t.schema.column("extra").id}
    assert {e["field-id"]: e["names"] for e in mapping} == {i: [f"c{i}"] for i in ids}   # dropped d too
    cur = next(s for s in meta["schemas"] if s["schema-id"] == meta["current-schema-id"])
    assert [(f["id"], f["name"]) for f in cur["fields"]] == [(c.id, c.name) for c in t.schema.columns]
    assert cur["identifier-field-ids"] == [t.schema.column("k").id]
    assert rs[1].delete_files == 1 and rs[1].added == 0 and set(rs[2].compacted.values()) == {"pending REDO updates"}
    assert rs[3].added == rs[3].removed == 0 and rs[3].delete_files == 0            # renames and drops are free
    assert t.mirror_iceberg(m).snapshot_id is None and _meta(m)[0] == 4              # nothing new: no snapshot
    st = StaticTable.from_metadata(m)
    # time travel by timestamp: the snapshot as of our version's commit time
    assert st.metadata.snapshot_by_id(rs[1].snapshot_id).timestamp_ms == int(t.snapshot(rs[1].table_version)
                                                                               .timestamp) // 1000
    for r in rs:                     # as of each mirrored version's commit time (and a little after)
        ts = int(t.snapshot(r.table_version).timestamp) // 1000
        assert st.snapshot_as_of_timestamp(ts).snapshot_id == r.snapshot_id
        if r is not rs[-1]:
            assert st.snapshot_as_of_timestamp(ts + 1).snapshot_id in (r.snapshot_id, rs[rs.index(r) + 1].snapshot_id)
    for r in rs:
        files = st.scan(snapshot_id=r.snapshot_id).plan_files()
        for task in files:
            assert task.file.file_path.startswith("file://" + t.uri + "/tablets/")   # ours, in place
            assert all(d.file_path.startswith("file://" + m + "/data/deletes-") for d in task.delete_files)


def test_statistics_are_exact_for_the_file(tmp_path):
    s = tf.Schema([tf.Column("k", "int64"), tf.Column("f", "double", nullable=True),
                   tf.Column("g", "float", nullable=True), tf.Column("s", "string", nullable=True),
                   tf.Column("n", "int32", nullable=True)], primary_key="k")
    t = tf.create_table(str(tmp_path / "t"), s)
    t.insert(pa.table({"k": pa.array([1, 2, 3, 4], pa.int64()), "f": [1.0, float("nan"), None, -2.0],
                       "g": pa.array([0.0, 1.5, None, 2.5], pa.float32()), "s": ["b", "x" * 100, None, "a"],
                       "n": pa.array([None] * 4, pa.int32())}))
    t.delete(pa.table({"k": pa.array([4], pa.int64())}))                       # -2.0, 'a' stay in the bounds
    m = str(tmp_path / "m")
    t.mirror_iceberg(m)
    (task,) = StaticTable.from_metadata(m).scan().plan_files()
    f = task.file
    ids = {c.name: c.id for c in t.schema.columns}
    assert f.record_count == 4 and f.value_counts[ids["k"]] == 4
    assert f.null_value_counts[ids["f"]] == 1 and f.nan_value_counts[ids["f"]] == 1
    assert ids["f"] not in f.lower_bounds and ids["f"] not in f.upper_bounds          # NaN: no bound is exact
    assert f.nan_value_counts[ids["g"]] == 0
    assert f.lower_bounds[ids["g"]] == np.float32(-0.0).tobytes() and f.upper_bounds[ids["g"]] == np.float32(2.5).tobytes()
    assert f.lower_bounds[ids["k"]] == (1).to_bytes(8, "little") and f.upper_bounds[ids["k"]] == (4).to_bytes(8, "little")
    assert f.lower_bounds[ids["s"]] == b"a" and ids["s"] not in f.upper_bounds        # a 100-byte max: no upper
    assert f.null_value_counts[ids["n"]] == 4
    assert len(task.delete_files) == 1
    got = read(m, row_filter=LessThan("f", 0.0))
    assert got.column("k").to_pylist() == []                                         # k=4 is deleted
    assert sorted(read(m, row_filter=IsNaN("f")).column("k").to_pylist()) == [2]


def test_our_vacuum_keeps_every_file_a_retained_snapshot_references(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    m = str(tmp_path / "m")
    t.insert(small_rows(range(100)))
    r1 = t.mirror_iceberg(m)
    first = t.scan().to_arrow()
    (rs,) = t.state.rowsets.values()
    t.update(small_rows(range(0, 100, 2), salt=3).select(["k", "v"]))
    r2 = t.mirror_iceberg(m)                                 # compacts: the first file leaves our state
    assert r2.compacted and r2.removed == 1
    res = t.vacuum(retain_seconds=0, grace_seconds=0)
    assert rs.base[0].path not in res.files and os.path.exists(os.path.join(t.uri, rs.base[0].path))
    assert t.check().ok
    cols = [c.name for c in t.schema.columns]
    assert rows(read(m, r1.snapshot_id), cols) == rows(first, cols)
    assert rows(read(m, r2.snapshot_id), cols) == rows(t.scan().to_arrow(), cols)
    reg = [json.loads(open(os.path.join(t.uri, "_mirrors", n)).read()) for n in os.listdir(os.path.join(t.uri, "_mirrors"))]
    assert reg[0]["format"] == "iceberg" and reg[0]["snapshots"] == sorted([r1.snapshot_id, r2.snapshot_id])
    assert rs.base[0].path in reg[0]["files"]


def test_snapshots_expired_from_the_metadata_release_their_files(tmp_path):
    """Our registry follows the snapshots the metadata retains: once an Iceberg writer expires the
    first (here: a metadata version written as Iceberg's Hadoop catalog would), the next mirror
    run stops keeping its files, and our vacuum may delete them."""
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    m = str(tmp_path / "m")
    t.insert(small_rows(range(100)))
    r1 = t.mirror_iceberg(m)
    (rs,) = t.state.rowsets.values()
    t.update(small_rows(range(0, 100, 2), salt=3).select(["k", "v"]))
    t.mirror_iceberg(m)
    n, meta = _meta(m)
    meta["snapshots"] = [s for s in meta["snapshots"] if s["snapshot-id"] != r1.snapshot_id]
    meta["snapshot-log"] = [s for s in meta["snapshot-log"] if s["snapshot-id"] != r1.snapshot_id]
    del meta["snapshots"][0]["parent-snapshot-id"]
    with open(os.path.join(m, "metadata", f"v{n + 1}.metadata.json"), "w") as f:
        json.dump(meta, f)
    t.insert(small_rows(range(200, 210)))
    t.mirror_iceberg(m)
    res = t.vacuum(retain_seconds=0, grace_seconds=0)
    assert rs.base[0].path in res.files and t.check().ok
    cols = [c.name for c in t.schema.columns]
    assert rows(read(m), cols) == rows(t.scan().to_arrow(), cols)


def test_refusals_are_typed_and_leave_everything_unchanged(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    t.insert(small_rows(range(50)))
    t.update(small_rows(range(0, 50, 5), salt=1).select(["k", "v"]))
    v = t.version
    with pytest.raises(tf.MirrorError, match="pending REDO updates"):
        t.mirror_iceberg(str(tmp_path / "m"), compact=False)
    files = {os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs}
    for bad in (str(tmp_path), f"file://{tmp_path}/", f"file://{t.uri}", f"{t.uri}/../t/mirror", t.uri):
        with pytest.raises(tf.PathOverlapError, match="Iceberg mirror.*outside the table's directory"):
            t.mirror_iceberg(bad)
    with pytest.raises(tf.InvalidOptionError):
        t.mirror_iceberg("")
    assert t.version == v and not os.path.exists(tmp_path / "m" / "metadata")
    assert {os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs} == files


def test_cli_mirror_iceberg(tmp_path, capsys):
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    t.insert(small_rows(range(50)))
    t.update(small_rows(range(0, 50, 5), salt=1).select(["k", "v"]))
    assert cli_main(["mirror", t.uri, "--iceberg", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert "compacted rowset" in out and "pending REDO updates" in out and "metadata v1" in out
    assert rows(read(str(tmp_path / "m")), ["k", "v"]) == rows(t.scan().to_arrow(), ["k", "v"])
    assert cli_main(["mirror", t.uri, "--iceberg", t.uri + "/x"]) == 1
    assert "PathOverlapError" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli_main(["mirror", t.uri, "--iceberg", str(tmp_path / "m"), "--delta", str(tmp_path / "d")])


# --- kill -9 -------------------------------------------------------------------------------------
KILLER = textwrap.dedent("""
    import os, signal, sys
    import tableformat as tf
    from tableformat.format.storage import Storage
    point = sys.argv[3]
    def die(rel):
        if point in rel:
            os.kill(os.getpid(), signal.SIGKILL)
    w, p = Storage.write, Storage.put_if_absent
    Storage.write = lambda self, rel, data: (die(rel), w(self, rel, data))[1]
    Storage.put_if_absent = lambda self, rel, data: (die(rel), p(self, rel, data))[1]
    tf.open_table(sys.argv[1]).mirror_iceberg(sys.argv[2])
""")


@pytest.mark.parametrize("point", ["deletes-", "-m0.avro", "snap-", ".metadata.json", "version-hint"])
def test_kill_9_mid_mirror_leaves_the_last_snapshot_readable_and_the_next_run_finishes(tmp_path, point):
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    m = str(tmp_path / "m")
    t.insert(small_rows(range(100)))
    r1 = t.mirror_iceberg(m)
    before = t.scan().to_arrow()
    t.delete(small_rows(range(0, 100, 4)).select(["k"]))
    t.insert(small_rows(range(500, 520)))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", KILLER, t.uri, m, point], env=env, capture_output=True, timeout=120)
    assert p.returncode == -signal.SIGKILL, p.stderr.decode()
    cols = [c.name for c in t.schema.columns]
    committed = point == "version-hint"                 # killed after v2 was created
    st = StaticTable.from_metadata(m)                   # the version-hint's metadata: readable
    assert st.metadata.current_snapshot_id == r1.snapshot_id
    assert rows(st.scan().to_arrow(), cols) == rows(before, cols)
    r = t.mirror_iceberg(m)
    assert (r.snapshot_id is None) == committed and r.metadata_version == 2
    assert rows(read(m), cols) == rows(t.scan().to_arrow(), cols)
    assert rows(read(m, r1.snapshot_id), cols) == rows(before, cols)
    assert t.check().ok


def test_mirror_on_the_loopback_s3_server(s3_table_root, s3_endpoint):
    root, opts = s3_table_root
    t = tf.create_table(f"{root}/t", small_schema(), storage_options=opts)
    m = f"{root}/mirror"
    t.insert(small_rows(range(200)))
    t.delete(small_rows(range(0, 200, 9)).select(["k"]))
    r1 = t.mirror_iceberg(m, storage_options=opts)
    assert r1.delete_files == 1
    props = {"s3.endpoint": s3_endpoint, "s3.access-key-id": "testing", "s3.secret-access-key": "sekrit-do-not-print",
             "s3.region": "us-east-1"}
    st = StaticTable.from_metadata(f"{m}/metadata/v1.metadata.json", properties=props)
    cols = ["k", "s", "v", "d", "ts"]
    assert rows(st.scan().to_arrow(), cols) == rows(t.scan().to_arrow(), cols)


def test_pyiceberg_expire_snapshots_on_the_mirror_leaves_our_table_ok(tmp_path):
    """Iceberg's own maintenance on the mirror, through a catalog that registers it (pyiceberg's
    SQL catalog; Spark's procedures need a runtime jar this Spark lacks): expiring every snapshot
    but the current one deletes none of our files, our table checks ok, the mirror still reads,
    and the next mirror run goes on from the Hadoop layout's own chain."""
    pytest.importorskip("sqlalchemy")
    from pyiceberg.catalog.sql import SqlCatalog
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    m = str(tmp_path / "m")
    t.insert(small_rows(range(100)))
    r1 = t.mirror_iceberg(m)
    t.update(small_rows(range(0, 100, 2), salt=3).select(["k", "v"]))
    r2 = t.mirror_iceberg(m)
    t.delete(small_rows(range(1, 100, 5)).select(["k"]))
    r3 = t.mirror_iceberg(m)
    ours = {os.path.join(d, f) for d, _, fs in os.walk(t.uri) for f in fs}
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/cat.db", warehouse=f"file://{tmp_path}/wh")
    cat.create_namespace("ns")
    tbl = cat.register_table(("ns", "mirror"), f"{m}/metadata/v3.metadata.json")
    tbl.maintenance.expire_snapshots().by_ids([r1.snapshot_id, r2.snapshot_id]).commit()
    tbl = cat.load_table(("ns", "mirror"))
    assert [s.snapshot_id for s in tbl.metadata.snapshots] == [r3.snapshot_id]
    assert tbl.properties["gc.enabled"] == "false"
    assert {os.path.join(d, f) for d, _, fs in os.walk(t.uri) for f in fs} == ours
    assert t.check().ok
    cols = [c.name for c in t.schema.columns]
    assert rows(tbl.scan().to_arrow(), cols) == rows(t.scan().to_arrow(), cols)
    t.insert(small_rows(range(300, 310)))
    assert t.mirror_iceberg(m).metadata_version == 4
    assert rows(read(m), cols) == rows(t.scan().to_arrow(), cols)


def test_a_run_that_loses_the_race_registers_what_the_winner_retains(tmp_path, monkeypatch):
    """Two runs at once: the loser (MirrorError, nothing committed) had registered its own view
    before losing; it registers the winner's snapshots instead, so our vacuum keeps their files."""
    from tableformat.format.storage import Storage
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    m = str(tmp_path / "m")
    t.insert(small_rows(range(100)))
    t.mirror_iceberg(m)
    t.insert(small_rows(range(200, 220)))
    real = Storage.put_if_absent
    won = []

    def racing(self, rel, data):
        if rel == "metadata/v2.metadata.json" and not won:
            monkeypatch.setattr(Storage, "put_if_absent", real)
            won.append(tf.open_table(t.uri).mirror_iceberg(m))       # the other run commits v2 first
        return real(self, rel, data)
    monkeypatch.setattr(Storage, "put_if_absent", racing)
    with pytest.raises(tf.MirrorError, match="another writer committed metadata version 2"):
        t.mirror_iceberg(m)
    (reg,) = [json.loads(open(os.path.join(t.uri, "_mirrors", n)).read()) for n in os.listdir(os.path.join(t.uri, "_mirrors"))]
    st = StaticTable.from_metadata(m)
    assert reg["snapshots"] == sorted(s.snapshot_id for s in st.metadata.snapshots) and won[0].snapshot_id in reg["snapshots"]
    assert set(reg["files"]) == {rs.base[0].path for rs in t.refresh().rowsets.values()}
    assert t.mirror_iceberg(m).snapshot_id is None


def test_keep_snapshots_expires_the_oldest_and_releases_their_files(tmp_path, capsys):
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    m = str(tmp_path / "m")
    t.insert(small_rows(range(100)))
    r1 = t.mirror_iceberg(m)
    (rs,) = t.state.rowsets.values()
    t.update(small_rows(range(0, 100, 2), salt=3).select(["k", "v"]))
    r2 = t.mirror_iceberg(m, keep_snapshots=2)                       # compacts: rs leaves our state
    assert [s.snapshot_id for s in StaticTable.from_metadata(m).metadata.snapshots] == [r1.snapshot_id, r2.snapshot_id]
    assert rs.base[0].path not in t.vacuum(retain_seconds=0, grace_seconds=0).files   # r1 still reads it
    t.insert(small_rows(range(300, 310)))
    assert cli_main(["mirror", t.uri, "--iceberg", m, "--keep-snapshots", "2"]) == 0
    st = StaticTable.from_metadata(m)
    assert [s.snapshot_id for s in st.metadata.snapshots][0] == r2.snapshot_id and len(st.metadata.snapshots) == 2
    assert r1.snapshot_id not in {e.snapshot_id for e in st.metadata.snapshot_log}
    res = t.vacuum(retain_seconds=0, grace_seconds=0)
    assert rs.base[0].path in res.files and t.check().ok                # no retained snapshot reads it now
    cols = [c.name for c in t.schema.columns]
    assert rows(read(m), cols) == rows(t.scan().to_arrow(), cols)
    assert rows(read(m, r2.snapshot_id), cols) == rows(t.scan(as_of=r2.table_version).to_arrow(), cols)
    with pytest.raises(tf.InvalidOptionError, match="keep_snapshots"):
        t.mirror_iceberg(m, keep_snapshots=0)
    assert cli_main(["mirror", t.uri, "--delta", str(tmp_path / "d"), "--keep-snapshots", "2"]) == 1
    assert "--keep-snapshots is for --iceberg" in capsys.readouterr().err
