"""Conformance of the JVM connector (spark_jobs/connector, format `tableformat-jvm`): one table of
cases, each read by the engine's own scan, by the connector and by the Python data source, with
identical rows required (specs/format.md §9.4). The connector path is forced (`path="native"`)
and checked in the physical plan, so no case passes by falling back."""
import decimal
import os

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf

from helpers import replaced_base_file_table, assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema

pyspark = pytest.importorskip("pyspark")

KEY = ["host", "metric", "time"]
CONNECTOR_SCAN = "BatchScan tableformat_jvm"
PYTHON_SCAN = "BatchScan tableformat@"


pytestmark = pytest.mark.usefixtures("jvm_connector")


def keys(t, rows):
    return t.select(KEY).take(pa.array(rows))


def plan_text(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def _check(spark, t, key, read, python=True):
    """One read through the three readers: engine, connector and (with `python`) the Python data source."""
    from spark_jobs.read import read_table
    columns, flt, as_of = read.get("columns"), read.get("filter"), read.get("as_of")
    expect = t.scan(columns=columns, filter=flt, as_of=as_of).to_arrow()
    sort = key if set(key) <= set(expect.column_names) else expect.column_names
    for path in ("native", "python") if python else ("native",):
        df = read_table(spark, t.uri, columns=columns, filter=flt, as_of=as_of, path=path)
        text = plan_text(df)
        if path == "native":
            assert CONNECTOR_SCAN in text and PYTHON_SCAN not in text and "FileScan parquet" not in text, text
        got = df.toArrow()
        got = got.cast(expect.schema) if got.num_rows else expect.schema.empty_table()
        assert_same_rows(got, expect, sort)
        if path == "native":
            assert df.count() == expect.num_rows               # an empty projection: count() alone


def mutated(tmp_path):
    """Pending updates, deletes and reinserts; several REDO files changing one row (the newest
    wins); NULL and NaN updates; clean rowsets beside changed ones."""
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(3000)
    t.insert(data)
    v1 = t.version
    t.insert(metrics_rows(600, seed=2, start=3000))
    n = 100
    t.update(keys(data, range(0, 300, 3)).append_column(
        "value", pa.array([np.nan if i % 5 == 0 else (-0.0 if i % 7 == 0 else float(i)) for i in range(n)]))
        .append_column("price", pa.array([None if i % 4 == 0 else decimal.Decimal(i).scaleb(-2) for i in range(n)],
                                         pa.decimal128(18, 2))))
    t.update(keys(data, range(0, 300, 6)).append_column("tag", pa.array([None, "x"] * 25)))
    t.update(keys(data, range(0, 90, 9)).append_column("value", pa.array([-1.5] * 10)))
    t.delete(keys(data, range(1, 400, 7)))
    gone = data.take(pa.array([8, 15]))
    t.insert(gone.set_column(3, "value", pa.array([111.0, 222.0])))
    t.update(keys(data, [8]).append_column("value", pa.array([333.0])))
    ts = t.history()[v1].timestamp
    t.tag("first", as_of=v1)
    reads = [{}, {"columns": ["value"]}, {"columns": ["host", "tag"]},
             {"filter": ("value", ">", 0.5)}, {"filter": ("value", "=", np.nan)},
             {"filter": [("host", "=", "h003"), ("tag", "is null")]}, {"filter": ("price", "<", decimal.Decimal("1"))},
             {"as_of": v1}, {"as_of": tf.Timestamp(ts) if hasattr(tf, "Timestamp") else ts}, {"as_of": "first"},
             {"as_of": t.version - 2}]
    return t, KEY, reads


def every_type(tmp_path):
    """Every column type, dictionary-encoded and plain pages, decimal(38), timestamps, binary,
    NaN and -0.0, with updates (NULL ones too) on each."""
    cols = [tf.Column("k", "int64"), tf.Column("i8", "int8", nullable=True), tf.Column("i16", "int16", nullable=True),
            tf.Column("i32", "int32", nullable=True, encoding="run_length"),
            tf.Column("i64", "int64", nullable=True, encoding="plain"),
            tf.Column("f", "float", nullable=True), tf.Column("d", "double", nullable=True, encoding="plain"),
            tf.Column("b", "bool", nullable=True), tf.Column("s", "string", nullable=True),
            tf.Column("sp", "string", nullable=True, encoding="plain"), tf.Column("bin", "binary", nullable=True),
            tf.Column("d9", "decimal(9,2)", nullable=True), tf.Column("d18", "decimal(18,4)", nullable=True),
            tf.Column("d38", "decimal(38,10)", nullable=True), tf.Column("dt", "date", nullable=True),
            tf.Column("ts", "unixtime_micros", nullable=True), tf.Column("vc", "varchar(8)", nullable=True)]
    t = tf.create_table(str(tmp_path / "types"), tf.Schema(cols, ["k"]),
                        partitioning=tf.PartitionSchema(hash=[tf.HashPartition(["k"], buckets=2)]))
    n = 2000
    i = np.arange(n)
    rng = np.random.default_rng(1)

    def rows(idx, salt=0):
        m = len(idx)
        return pa.table({
            "k": pa.array(idx, pa.int64()), "i8": pa.array((idx + salt) % 100 - 50, pa.int8()),
            "i16": pa.array((idx * 7 + salt) % 30000, pa.int16()), "i32": pa.array((idx + salt) % 5, pa.int32()),
            "i64": pa.array(idx * 1_000_000_007 + salt, pa.int64()),
            "f": pa.array(np.where(idx % 11 == 0, np.nan, rng.normal(size=m)), pa.float32()),
            "d": pa.array(np.where(idx % 13 == 0, -0.0, np.where(idx % 17 == 0, np.nan, rng.normal(size=m))), pa.float64()),
            "b": pa.array(idx % 3 == salt % 3), "s": pa.array([f"s{x % 7}" for x in idx]),
            "sp": pa.array([f"unique-{x}-{salt}" for x in idx]), "bin": pa.array([bytes([x % 256, 0, 255]) for x in idx]),
            "d9": pa.array([decimal.Decimal(int(x) - 1000).scaleb(-2) for x in idx], pa.decimal128(9, 2)),
            "d18": pa.array([decimal.Decimal(int(x) * 12345678901).scaleb(-4) for x in idx], pa.decimal128(18, 4)),
            "d38": pa.array([decimal.Decimal(10**27 * (int(x) - 1000) + 7).scaleb(-10) for x in idx], pa.decimal128(38, 10)),
            "dt": pa.array((idx % 20000).astype("int32"), pa.date32()),
            "ts": pa.array(1_700_000_000_000_000 + idx * 1_000_003, pa.timestamp("us", tz="UTC")),
            "vc": pa.array([f"v{x % 50}" for x in idx]),
        })
    t.insert(rows(i))
    up = rows(i[::5], salt=1)
    t.update(up)
    nulls = pa.table({"k": pa.array(i[1::10], pa.int64())})
    for c in cols[1:]:
        nulls = nulls.append_column(c.name, pa.nulls(nulls.num_rows, c.arrow_type))
    t.update(nulls)
    t.delete(pa.table({"k": pa.array(i[3::50], pa.int64())}))
    reads = [{}, {"columns": ["d38", "ts"]}, {"filter": ("i32", "=", 2)}, {"filter": ("s", "=", "s3")},
             {"filter": ("d", ">=", 0.0)}, {"filter": ("k", "<", 500)}, {"filter": ("d38", ">", decimal.Decimal(0))}]
    return t, ["k"], reads


def column_groups(tmp_path):
    """A major delta compaction adds a column group: the rowset's files are read in lockstep."""
    t = tf.create_table(str(tmp_path / "g"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(2000)
    t.insert(data)
    t.update(keys(data, range(0, 2000, 2)).append_column("value", pa.array([2.5] * 1000)))
    rs = max(t.state.rowsets.values(), key=lambda r: r.num_rows)
    action = tf.CompactionAction("major_delta", rs.tablet, (rs.id,), 1.0, "test", 0, (t.schema.column("value").id,))
    t.compact(tf.CompactionPlan((action,), 0, t.version))
    assert len(t.state.rowsets[rs.id].base) == 2
    t.update(keys(data, range(1, 2000, 10)).append_column("price", pa.array([None] * 200, pa.decimal128(18, 2))))
    t.delete(keys(data, range(5, 2000, 97)))
    return t, KEY, [{}, {"columns": ["value"]}, {"columns": ["host", "value", "price"]}, {"filter": ("value", "<", 1.0)}]


def schema_changes(tmp_path):
    """Dropped, added and re-added columns: read defaults for rows written before."""
    t = tf.create_table(str(tmp_path / "a"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(500)
    t.insert(data)
    v_before = t.version
    with t.alter() as a:
        a.drop_column("tag")
        a.add_column("tag", "string", default="fresh")
        a.add_column("n", "int32", nullable=False, default=7)
        a.add_column("when", "unixtime_micros", nullable=True, default=1_700_000_000_000_000)
        a.add_column("amount", "decimal(38,4)", nullable=True, default="12.5")
        a.rename_column("value", "v")
    t.insert(metrics_rows(100, seed=5, start=500).drop(["tag", "value"]))
    t.update(keys(data, range(0, 50, 5)).append_column("n", pa.array(list(range(10)), pa.int32())))
    t.update(keys(data, range(0, 50, 10)).append_column("tag", pa.array(["u"] * 5)))
    return t, KEY, [{}, {"columns": ["n", "amount"]}, {"filter": ("tag", "=", "fresh")}, {"as_of": v_before}]


def behind_the_horizon(tmp_path):
    """Versions behind the history horizon read the horizon's files with UNDO records (rule 6),
    and history-only rowsets hold rows deleted since."""
    t = tf.create_table(str(tmp_path / "h"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(2000)
    t.insert(data)
    t.update(keys(data, range(0, 2000, 4)).append_column("value", pa.array([4.0] * 500)))
    old = t.version
    t.tag("old", as_of=old)
    t.update(keys(data, range(0, 2000, 8)).append_column("value", pa.array([8.0] * 250)))
    t.delete(keys(data, range(3, 2000, 50)))
    mid = t.version
    mid_ts = t.history()[mid].timestamp
    t.compact()
    t.update(keys(data, range(2, 2000, 16)).append_column("value", pa.array([16.0] * 125)))
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert t.state.history_horizon > mid
    assert t.snapshot(old).read_plan().read_ts is not None
    assert any(r.history_only for r in t.state.rowsets.values())
    return t, KEY, [{"as_of": old}, {"as_of": "old"}, {"as_of": mid}, {"as_of": tf.Timestamp(mid_ts)},
                    {"as_of": old, "filter": ("value", ">", 3.0)}, {"as_of": old, "columns": ["value"]}, {}]


def plain_pages(tmp_path):
    """PLAIN and dictionary pages only: Spark's vectorized reader decodes them, and filters on
    columns no delta changes are pushed into it (row groups and pages skipped; the row index
    keeps rowids right)."""
    cols = [tf.Column("k", "int64", encoding="plain"), tf.Column("g", "int32", nullable=True, encoding="plain"),
            tf.Column("v", "double", nullable=True, encoding="plain"), tf.Column("s", "string", nullable=True)]
    t = tf.create_table(str(tmp_path / "p"), tf.Schema(cols, ["k"]), properties={"row_group_rows": 1000})
    k = np.arange(20000)
    t.insert(pa.table({"k": pa.array(k, pa.int64()), "g": pa.array(k // 1000, pa.int32()),
                       "v": pa.array(k * 0.5), "s": pa.array([f"x{i % 10}" for i in k])}))
    t.update(pa.table({"k": pa.array(k[::7], pa.int64()), "v": pa.array(np.full(len(k[::7]), -1.0))}))
    t.delete(pa.table({"k": pa.array(k[3::101], pa.int64())}))
    return t, ["k"], [{}, {"filter": ("g", "=", 3)}, {"filter": [("k", ">=", 15000), ("s", "=", "x5")]},
                      {"filter": ("v", "<", 0.0)}, {"columns": ["s"], "filter": ("g", "<=", 1)}]


CASES = [mutated, every_type, column_groups, schema_changes, behind_the_horizon, plain_pages]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_connector_equals_the_engine_and_the_python_source(spark, tmp_path, case):
    t, key, reads = case(tmp_path)
    for i, read in enumerate(reads):
        # the Python data source is slow: it reads the first two of each case's reads and every time travel
        _check(spark, t, key, read, python=i < 2 or "as_of" in read)


def test_large_rowsets_are_split_by_row_groups(spark, tmp_path):
    """A rowset larger than the split size is read by several tasks (whole row groups each);
    the row index keeps rowids right, so deltas land on the right rows."""
    from spark_jobs.read import read_table
    t = tf.create_table(str(tmp_path / "s"), metrics_schema(), properties={"row_group_rows": 1000})
    data = metrics_rows(20000)
    t.insert(data)
    t.update(keys(data, range(0, 20000, 37)).append_column("value", pa.array([9.0] * len(range(0, 20000, 37)))))
    t.delete(keys(data, range(5, 20000, 101)))
    old = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "65536")
    try:
        df = read_table(spark, t.uri, path="native")
        assert df.rdd.getNumPartitions() > 2
        got = df.toArrow()
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", old)
    expect = t.scan().to_arrow()
    assert_same_rows(got.cast(expect.schema), expect, KEY)


def test_a_replaced_base_file_is_refused(spark, tmp_path):
    from spark_jobs.read import read_table
    t = replaced_base_file_table(tmp_path / "r")
    for columns in (None, ["host"]):
        with pytest.raises(Exception, match="CorruptFileError.*does not have the size the table log recorded"):
            read_table(spark, t.uri, columns=columns, path="native").collect()


def test_filters_are_returned_to_spark_and_pushed_only_where_exact(spark, tmp_path):
    from spark_jobs.read import read_table
    t, _, _ = mutated(tmp_path)
    df = read_table(spark, t.uri, filter=[("host", "=", "h003"), ("value", ">", 0.5)], path="native")
    text = plan_text(df)
    assert "Filter" in text                       # Spark evaluates every filter above the scan
    assert t.scan(filter=[("host", "=", "h003"), ("value", ">", 0.5)]).count() == df.count()


# --- adversarial cases: delta ranking, cuts between records, NULLs and non-ASCII in pushdown, packed rowsets -----

def check_native(spark, t, read, key=("k",)):
    from spark_jobs.read import read_table
    columns, flt, as_of = read.get("columns"), read.get("filter"), read.get("as_of")
    expect = t.scan(columns=columns, filter=flt, as_of=as_of).to_arrow()
    df = read_table(spark, t.uri, columns=columns, filter=flt, as_of=as_of, path="native")
    text = df._jdf.queryExecution().executedPlan().toString()
    assert CONNECTOR_SCAN in text or "Scan ExistingRDD" in text, text       # the latter: every rowset pruned
    got = df.toArrow()
    got = got.cast(expect.schema) if got.num_rows else expect.schema.empty_table()
    sort = list(key) if set(key) <= set(expect.column_names) else expect.column_names
    if sort:                                  # (an Arrow table of no columns has no rows: count() below)
        assert_same_rows(got, expect, sort)
    assert df.count() == expect.num_rows, read


def small_schema(**enc):
    cols = [tf.Column("k", "int64", encoding=enc.get("k", "plain")),
            tf.Column("g", "int32", nullable=True, encoding=enc.get("g", "plain")),
            tf.Column("v", "double", nullable=True), tf.Column("s", "string", nullable=True)]
    return tf.Schema(cols, ["k"])


def small_rows(k, salt=0):
    k = np.asarray(k)
    return pa.table({"k": pa.array(k, pa.int64()),
                     "g": pa.array([None if x % 10 == 0 else int(x % 7) for x in k], pa.int32()),
                     "v": pa.array(k * 1.0 + salt), "s": pa.array([f"é{x % 5}\x00{salt}" for x in k])})


def test_update_delete_reinsert_across_files(spark, tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema(), properties={"row_group_rows": 128})
    k = np.arange(600)
    t.insert(small_rows(k))
    t.update(small_rows(k[::3], salt=1).select(["k", "v"]))
    t.delete(pa.table({"k": pa.array(k[::6], pa.int64())}))
    t.insert(small_rows(k[::6], salt=2))
    t.update(small_rows(k[::12], salt=3).select(["k", "g"]))
    t.delete(pa.table({"k": pa.array(k[::24], pa.int64())}))
    t.upsert(small_rows(k[::48], salt=4))
    for read in [{}, {"columns": ["g"]}, {"filter": ("g", "=", 3)}, {"filter": ("g", "!=", 3)},
                 {"filter": ("g", "is null")}, {"filter": ("g", "in", [1, 2])}, {"filter": ("s", "=", "é1\x000")},
                 {"filter": ("s", ">", "é2")}, {"columns": ["s"], "filter": ("v", ">", 300.0)}]:
        check_native(spark, t, read)


def test_a_new_commit_is_seen_in_the_same_session(spark, tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema(), properties={"row_group_rows": 128})
    k = np.arange(300)
    t.insert(small_rows(k))
    t.update(small_rows(k[::3], salt=1).select(["k", "v"]))
    check_native(spark, t, {})
    check_native(spark, t, {"columns": ["v"]})
    t.update(small_rows(k[::5], salt=7).select(["k", "v"]))
    t.delete(pa.table({"k": pa.array(k[::4], pa.int64())}))
    check_native(spark, t, {})
    check_native(spark, t, {"columns": ["v"]})


def test_every_row_deleted_and_packed_shapes(spark, tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema(), properties={"row_group_rows": 128})
    t.insert(small_rows(np.arange(0, 100)))
    t.insert(small_rows(np.arange(100, 200)))
    t.delete(pa.table({"k": pa.array(np.arange(0, 100), pa.int64())}))
    with t.alter() as a:
        a.add_column("n", "int32", nullable=True, default=5)
    t.insert(small_rows(np.arange(200, 260)).append_column("n", pa.array(np.arange(60) % 3, pa.int32())))
    t.update(pa.table({"k": pa.array([150, 210], pa.int64()), "n": pa.array([None, 9], pa.int32())}))
    for read in [{}, {"filter": ("n", "=", 5)}, {"filter": ("n", "is null")}, {"columns": ["n"]},
                 {"filter": ("k", "<", 120)}]:
        check_native(spark, t, read)


def test_minor_delta_compaction_and_cuts_between_records(spark, tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema(), properties={"row_group_rows": 128})
    k = np.arange(400)
    t.insert(small_rows(k))
    versions = [t.version]
    for salt in range(1, 5):
        t.update(small_rows(k[::salt + 1], salt=salt * 10).select(["k", "v", "s"]))
        versions.append(t.version)
    t.delete(pa.table({"k": pa.array(k[::7], pa.int64())}))
    versions.append(t.version)
    t.insert(small_rows(k[::7], salt=99))
    t.update(small_rows(k[::14], salt=77).select(["k", "v"]))
    versions.append(t.version)
    (rs,) = [r for r in t.state.rowsets.values() if r.num_rows == 400]
    t.compact(tf.CompactionPlan((tf.CompactionAction("minor_delta", rs.tablet, (rs.id,), 1.0, "test", 0),), 0,
                                t.version))
    for v in versions + [None]:
        check_native(spark, t, {"as_of": v} if v is not None else {})
        check_native(spark, t, {"as_of": v, "filter": ("v", ">", 100.0), "columns": ["s"]} if v is not None
              else {"filter": ("s", "=", "é1\x0030")})


def test_behind_the_horizon_with_two_compactions(spark, tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema(g="bitshuffle"), properties={"row_group_rows": 128})
    k = np.arange(300)
    t.insert(small_rows(k))
    versions = [t.version]
    t.update(small_rows(k[::3], salt=1).select(["k", "v"]))
    versions.append(t.version)
    t.update(small_rows(k[::6], salt=2).select(["k", "v", "g"]))
    versions.append(t.version)
    t.delete(pa.table({"k": pa.array(k[::5], pa.int64())}))
    versions.append(t.version)
    t.insert(small_rows(k[::10], salt=3))
    versions.append(t.version)
    t.update(small_rows(k[::4], salt=4).select(["k", "s"]))
    versions.append(t.version)
    t.compact()
    t.update_ignore(small_rows(k[::7], salt=5).select(["k", "v", "s"]))
    t.delete_ignore(pa.table({"k": pa.array(k[1::11], pa.int64())}))
    versions.append(t.version)
    t.compact()
    t.upsert(small_rows(k[1::22], salt=6))
    t.update_ignore(small_rows(k[::9], salt=7).select(["k", "g"]))
    versions.append(t.version)
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert t.state.history_horizon > versions[-2]
    for v in versions:
        for read in [{"as_of": v}, {"as_of": v, "columns": ["g"]}, {"as_of": v, "filter": ("g", ">", 2)},
                     {"as_of": v, "filter": ("s", "=", "é1\x004")}]:
            check_native(spark, t, read)


def test_one_commit_touching_a_row_several_times(spark, tmp_path):
    """Records of one row with one timestamp: batch order within a file, log order across files."""
    t = tf.create_table(str(tmp_path / "t"), small_schema(), properties={"row_group_rows": 128})
    k = np.arange(300)
    t.insert(small_rows(k))
    ops = ["update", "update", "delete", "insert", "delete", "insert", "update", "delete", "upsert", "update",
           "upsert", "delete"]
    keys = [1, 1, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5]
    batch = small_rows(np.array(keys), salt=1)
    batch = batch.set_column(2, "v", pa.array([float(i) for i in range(len(keys))])).append_column("op", pa.array(ops))
    t.apply(batch)
    t.update(small_rows(k[10:40], salt=2).select(["k", "v"]))
    snap = t.snapshot()
    # fragments of one commit change disjoint rows (§10.3 refuses two that change one row)
    f1 = snap.write_mutation(small_rows(k[20:30], salt=3).select(["k", "v", "s"]), op="update")
    f2 = snap.write_mutation(small_rows(k[30:45], salt=4).select(["k", "v"]), op="update")
    f3 = snap.write_mutation(pa.table({"k": pa.array(k[45:47], pa.int64())}), op="delete")
    t.commit_fragments([f1, f2, f3])
    for read in [{}, {"columns": ["v"]}, {"filter": ("v", "<", 20.0)}, {"as_of": t.version - 1}]:
        check_native(spark, t, read)


def test_split_rowsets_with_pushed_filters(spark, tmp_path):
    """Byte ranges of one base file, row groups skipped by a pushed key filter, deletes and updates
    next to the row-group boundaries."""
    t = tf.create_table(str(tmp_path / "t"), small_schema(g="plain"), properties={"row_group_rows": 500})
    k = np.arange(6000)
    t.insert(small_rows(k))
    edge = np.concatenate([k[499::500], k[500::500], k[::997]])
    t.update_ignore(small_rows(np.unique(edge), salt=5).select(["k", "v", "g"]))
    t.delete_ignore(pa.table({"k": pa.array(np.unique(np.concatenate([k[498::500], k[1::500]])), pa.int64())}))
    old = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "16384")
    try:
        for read in [{}, {"filter": [("k", ">=", 1499), ("k", "<", 4001)]}, {"filter": ("k", "=", 2500)},
                     {"filter": ("k", ">", 5999)}, {"columns": [], "filter": ("k", "<", 1001)},
                     {"filter": ("g", "=", 3)}, {"filter": ("s", "=", "é3\x000")}]:
            check_native(spark, t, read)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", old)


def test_typed_cells_updated_to_null_and_back(spark, tmp_path):
    import datetime
    import decimal
    cols = [tf.Column("k", "int64"), tf.Column("d9", "decimal(9,2)", nullable=True),
            tf.Column("d38", "decimal(38,6)", nullable=True), tf.Column("b", "bool", nullable=True),
            tf.Column("bin", "binary", nullable=True), tf.Column("dt", "date", nullable=True),
            tf.Column("ts", "unixtime_micros", nullable=True), tf.Column("s", "string", nullable=True)]
    t = tf.create_table(str(tmp_path / "t"), tf.Schema(cols, ["k"]), properties={"row_group_rows": 128})
    n = 400
    k = np.arange(n)

    def data(idx, salt):
        return pa.table({
            "k": pa.array(idx, pa.int64()),
            "d9": pa.array([decimal.Decimal(int(x) * 7 - 900 + salt).scaleb(-2) for x in idx], pa.decimal128(9, 2)),
            "d38": pa.array([decimal.Decimal(-(10**31) + int(x) + salt).scaleb(-6) for x in idx], pa.decimal128(38, 6)),
            "b": pa.array((idx + salt) % 2 == 0), "bin": pa.array([bytes([x % 256, 0, salt]) for x in idx]),
            "dt": pa.array([datetime.date(1500 + int(x), 1, 1 + salt) for x in idx], pa.date32()),
            "ts": pa.array(-10**15 + idx * 10**9 + salt, pa.timestamp("us", tz="UTC")),
            "s": pa.array([f"s{x % 3}" for x in idx])})
    t.insert(data(k, 0))
    nulls = pa.table({"k": pa.array(k[::3], pa.int64())})
    for c in cols[1:]:
        nulls = nulls.append_column(c.name, pa.nulls(nulls.num_rows, c.arrow_type))
    t.update(nulls)
    t.update(data(k[::6], 5))                         # back from NULL on half of them
    t.delete(pa.table({"k": pa.array(k[::9], pa.int64())}))
    t.update_ignore(data(k[1::4], 7).select(["k", "s", "b"]))
    for read in [{}, {"columns": ["d38", "bin"]}, {"filter": ("d9", "is null")}, {"filter": ("b", "=", True)},
                 {"filter": ("s", "=", "s1")}, {"filter": ("dt", "<", datetime.date(1600, 1, 1))},
                 {"filter": ("d38", ">", decimal.Decimal(-(10**25)))}]:
        check_native(spark, t, read)
    from spark_jobs.read import read_table
    df = read_table(spark, t.uri, path="native")
    assert df.limit(7).count() == 7
    assert len(df.filter("b").limit(3).collect()) == 3


def test_one_commit_touching_a_row_several_times_behind_the_horizon(spark, tmp_path):
    """UNDO records of one row with one timestamp: the one that undoes the commit's first change wins."""
    t = tf.create_table(str(tmp_path / "t"), small_schema(), properties={"row_group_rows": 128})
    k = np.arange(200)
    t.insert(small_rows(k))
    versions = [t.version]
    ops = ["update", "update", "delete", "insert", "update", "delete", "upsert", "update", "update", "delete"]
    keys = [1, 1, 2, 2, 2, 3, 3, 3, 4, 4]
    batch = small_rows(np.array(keys), salt=1)
    batch = batch.set_column(2, "v", pa.array([float(i) for i in range(len(keys))])).append_column("op", pa.array(ops))
    t.apply(batch)
    versions.append(t.version)
    t.update(small_rows(k[:6], salt=2).select(["k", "v"]).filter(pa.array([x not in (3, 4) for x in range(6)])))
    versions.append(t.version)
    t.compact()
    t.update(small_rows(k[::5], salt=3).select(["k", "v"]))
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert t.state.history_horizon > versions[-1]
    for v in versions:
        for read in [{"as_of": v}, {"as_of": v, "columns": ["v"]}]:
            check_native(spark, t, read)


def test_filters_on_signed_zeros_nan_and_nulls(spark, tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    v = [-0.0, 0.0, np.nan, -1.0, None, 2.0] * 20
    k = np.arange(len(v))
    t.insert(pa.table({"k": pa.array(k, pa.int64()), "g": pa.array([None if x % 4 == 0 else int(x % 3) for x in k],
                                                                     pa.int32()),
                       "v": pa.array(v, pa.float64()), "s": pa.array([None if x % 5 == 0 else f"ü{x % 4}" for x in k])}))
    t.update(pa.table({"k": pa.array(k[::7], pa.int64()), "v": pa.array([np.nan, -0.0] * 9, pa.float64())}))
    for f in [("v", "=", 0.0), ("v", "<", 0.0), ("v", ">", -0.0), ("v", "!=", 0.0), ("v", "in", [0.0, np.nan]),
              ("v", "=", np.nan), ("v", ">=", np.nan), ("g", "!=", 1), ("g", "in", [0, 2]), ("g", "not in", [0]),
              ("s", "in", ["ü1", "ü3"]), ("s", "!=", "ü2"), ("s", "is not null")]:
        try:
            expect_ok = t.scan(filter=f).count() >= 0
        except tf.TableFormatError:
            expect_ok = False
        if expect_ok:
            check_native(spark, t, {"filter": f})


@pytest.mark.parametrize("max_bytes,open_cost,max_num", [(None, None, None), (None, 4096, None), (20000, 2048, None),
                                                          (65536, 16384, None), (20000, 2048, 3)])
def test_tasks_are_packed_as_spark_packs_the_same_files(spark, tmp_path, max_bytes, open_cost, max_num):
    """The connector cuts and packs rowsets by Spark's own file-scan rules (FilePartition), so a
    read runs as many tasks as spark.read.parquet of the same base files: on few cores one more
    task is a whole extra wave."""
    from spark_jobs.read import read_table
    t = tf.create_table(str(tmp_path / "p"), metrics_schema(), partitioning=metrics_partitioning(),
                        properties={"row_group_rows": 500})
    t.insert(metrics_rows(12000))
    files = [str(tmp_path / "p" / f.path) for r in t.state.rowsets.values() for f in r.base]
    assert len(files) > 2
    conf = {"spark.sql.files.maxPartitionBytes": max_bytes, "spark.sql.files.openCostInBytes": open_cost,
            "spark.sql.files.maxPartitionNum": max_num}       # Spark repacks into at most maxPartitionNum tasks
    old = {k: spark.conf.get(k, None) for k in conf}
    try:
        for k, v in conf.items():
            if v is not None:
                spark.conf.set(k, str(v))
        ours = read_table(spark, t.uri, path="native").rdd.getNumPartitions()
        theirs = spark.read.parquet(*files).rdd.getNumPartitions()
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
    assert ours == theirs, (ours, theirs, [os.path.getsize(f) for f in files])


def test_spark_reads_byte_stream_split_pages_where_it_can(spark, tmp_path):
    """The connector's own page decoder is only for a Spark that cannot decode BYTE_STREAM_SPLIT
    (4.2): where Spark can (4.3, SPARK-56894), the JVM's probe says so and Spark's vectorized
    reader reads bitshuffle columns, filters pushed, with the same rows."""
    from spark_jobs.read_join import reads_byte_stream_split
    probe = spark._jvm.tableformat.parquet.ByteStreamSplitProbe
    assert probe.sparkDecodes(spark._jsparkSession) == reads_byte_stream_split(spark)
    t = tf.create_table(str(tmp_path / "t"), small_schema(k="bitshuffle", g="bitshuffle"),
                        properties={"row_group_rows": 128})
    k = np.arange(1000)
    t.insert(small_rows(k))
    t.update(small_rows(k[::7], salt=1).select(["k", "v"]))
    t.delete(pa.table({"k": pa.array(k[::11], pa.int64())}))
    for read in [{}, {"filter": ("k", ">", 950)}, {"filter": ("g", "=", 3)}, {"columns": ["v"], "filter": ("v", "<", 40.0)}]:
        check_native(spark, t, read)


def test_in_place_deletes_and_updates_in_reused_reader_vectors(spark, tmp_path):
    """Small batches (several per row group and page) whose NULL-free reader vectors are compacted
    and updated in place: dictionary ids, string offsets, prefix pages, decimals of each width,
    booleans, timestamps, a second column group and read defaults, batch after batch."""
    import decimal
    cols = [tf.Column("k", "int64", encoding="plain"), tf.Column("sd", "string", encoding="dictionary"),
            tf.Column("sp", "string", encoding="plain"), tf.Column("sx", "string", encoding="prefix"),
            tf.Column("i", "int32", nullable=True, encoding="run_length"), tf.Column("b", "bool", nullable=True),
            tf.Column("d9", "decimal(9,2)", nullable=True), tf.Column("d18", "decimal(18,3)", nullable=True),
            tf.Column("d38", "decimal(38,4)", nullable=True), tf.Column("ts", "unixtime_micros", nullable=True),
            tf.Column("v", "double", nullable=True, encoding="plain")]
    t = tf.create_table(str(tmp_path / "t"), tf.Schema(cols, ["k"]), properties={"row_group_rows": 1000})
    n = 3000
    k = np.arange(n)

    def data(idx, salt):
        idx = np.asarray(idx)
        return pa.table({
            "k": pa.array(idx, pa.int64()), "sd": pa.array([f"d{(x + salt) % 9}" for x in idx]),
            "sp": pa.array([f"plain-{x}-{salt}" for x in idx]), "sx": pa.array([f"prefix/{x // 3}/{salt}" for x in idx]),
            "i": pa.array((idx + salt) % 4, pa.int32()), "b": pa.array((idx + salt) % 3 == 0),
            "d9": pa.array([decimal.Decimal(int(x) + salt).scaleb(-2) for x in idx], pa.decimal128(9, 2)),
            "d18": pa.array([decimal.Decimal(int(x) * 10**9 + salt).scaleb(-3) for x in idx], pa.decimal128(18, 3)),
            "d38": pa.array([decimal.Decimal(10**30 + int(x) + salt).scaleb(-4) for x in idx], pa.decimal128(38, 4)),
            "ts": pa.array(1_600_000_000_000_000 + idx * 1000 + salt, pa.timestamp("us", tz="UTC")),
            "v": pa.array(idx * 0.25 + salt)})
    t.insert(data(k, 0))
    t.update(data(k[::7], 1).select(["k", "v"]))
    rs = max(t.state.rowsets.values(), key=lambda r: r.num_rows)
    action = tf.CompactionAction("major_delta", rs.tablet, (rs.id,), 1.0, "test", 0, (t.schema.column("v").id,))
    t.compact(tf.CompactionPlan((action,), 0, t.version))
    with t.alter() as a:
        a.add_column("n", "int32", nullable=False, default=7)
        a.add_column("w", "string", nullable=True, default="dflt")
    t.update(data(k[::5], 2).drop(["v"]))                           # non-NULL values: written in place
    t.update(pa.table({"k": pa.array(k[1000:1100:3], pa.int64()), "i": pa.nulls(34, pa.int32()),
                       "d38": pa.nulls(34, pa.decimal128(38, 4))}))  # NULLs in some batches only
    t.update(pa.table({"k": pa.array(k[::11], pa.int64()), "n": pa.array(k[::11] % 5, pa.int32()),
                       "w": pa.array([f"w{x}" for x in k[::11]])}))
    t.update(data(k[::13], 3).select(["k", "v", "sd"]))
    t.delete(pa.table({"k": pa.array(np.unique(np.concatenate([k[::4], k[2000:2300]])), pa.int64())}))
    old = spark.conf.get("spark.sql.parquet.columnarReaderBatchSize")
    spark.conf.set("spark.sql.parquet.columnarReaderBatchSize", "96")
    try:
        for read in [{}, {"columns": ["sd", "sx", "d38"]}, {"columns": ["n", "w", "b"]}, {"filter": ("sd", "=", "d3")},
                     {"filter": ("k", ">=", 2500)}, {"filter": ("i", "is null")}, {"as_of": t.version - 3}]:
            check_native(spark, t, read)
    finally:
        spark.conf.set("spark.sql.parquet.columnarReaderBatchSize", old)


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_cases_in_small_batches(spark, tmp_path, case):
    """The same cases in batches of 64 rows: pages and row groups span many batches of vectors
    that Spark's reader reuses after the connector compacted or updated them in place."""
    t, key, reads = case(tmp_path)
    old = spark.conf.get("spark.sql.parquet.columnarReaderBatchSize")
    spark.conf.set("spark.sql.parquet.columnarReaderBatchSize", "64")
    try:
        for read in reads:
            check_native(spark, t, read, key=key)
    finally:
        spark.conf.set("spark.sql.parquet.columnarReaderBatchSize", old)


def test_the_delta_cache_bound_is_a_spark_setting(spark, tmp_path):
    """spark.tableformat.deltaCache.size bounds the executors' delta cache (DeltaLoader.cacheBytes,
    read through reflection); unset, the default bound stays."""
    from spark_jobs.read import read_table
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    k = np.arange(100)
    t.insert(small_rows(k))
    t.update(small_rows(k[::3], salt=1).select(["k", "v"]))
    loader = spark._jvm.tableformat.connector.Contract._java_lang_class.getClassLoader()   # the connector jar's
    field = spark._jvm.java.lang.Class.forName("tableformat.deltas.DeltaLoader", True, loader) \
        .getDeclaredField("cacheBytes")
    field.setAccessible(True)
    default = field.getLong(None)
    spark.conf.set("spark.tableformat.deltaCache.size", "3m")
    try:
        assert read_table(spark, t.uri, path="native").count() == 100
        assert field.getLong(None) == 3 << 20
    finally:
        spark.conf.unset("spark.tableformat.deltaCache.size")
        field.setLong(None, default)


def _two_rowsets(root):
    t = tf.create_table(str(root), tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double", nullable=True)],
                                             ["k"]))
    for lo in (0, 100):
        t.insert(pa.table({"k": pa.array(range(lo, lo + 100), pa.int64()), "v": [i * 0.5 for i in range(lo, lo + 100)]}))
    return t


def _valid_parquet_of_length(rows: pa.Table, size: int) -> bytes:
    """Another valid Parquet file of `rows` exactly `size` bytes long (padded in its footer's metadata)."""
    import io
    import pyarrow.parquet as pq
    for pad in range(size):
        for extra in ("", "y"):                   # a second key fills the byte a length prefix's growth skips
            buf = io.BytesIO()
            with pq.ParquetWriter(buf, rows.schema, compression="lz4", write_page_checksum=True,
                                  store_schema=False) as w:
                w.write_table(rows)
                w.add_key_value_metadata({"pad": "x" * pad, "pad2": extra})
            if len(buf.getvalue()) == size:
                return buf.getvalue()
        if len(buf.getvalue()) > size:
            break
    raise AssertionError(f"no padding gives {size} bytes")


@pytest.mark.parametrize("same_length", [True, False])
def test_a_base_file_swapped_for_another_valid_parquet_file_is_refused_on_whole_reads(spark, tmp_path, same_length):
    """§8.2: a read of every column and row of a base file checks the CRC-32 the log recorded, in the JVM
    as in the engine: the catalog's SQL, read_table and format("tableformat-jvm") refuse the file by name.
    The swapped-in file holds another rowset's keys (duplicated keys, lost rows if read)."""
    import pyarrow.parquet as pq
    from helpers import spark_catalog
    from spark_jobs.read import read_table
    t = _two_rowsets(tmp_path / "wh" / "ns" / "t")
    a, b = sorted(t.state.rowsets.values(), key=lambda r: r.min_key)
    target = tmp_path / "wh" / "ns" / "t" / b.base[0].path
    other = pq.read_table(tmp_path / "wh" / "ns" / "t" / a.base[0].path)
    target.write_bytes(_valid_parquet_of_length(other, b.base[0].size) if same_length
                       else (tmp_path / "wh" / "ns" / "t" / a.base[0].path).read_bytes())
    assert (target.stat().st_size == b.base[0].size) == same_length
    with pytest.raises(tf.CorruptFileError, match=b.base[0].path):
        t.scan().to_arrow()
    why = "fails its checksum" if same_length else "does not have the size the table log recorded"
    c = spark_catalog(spark, tmp_path / "wh")
    for df in (spark.sql(f"SELECT * FROM {c}.ns.t"), read_table(spark, t.uri), read_table(spark, t.uri, path="native"),
               spark.read.format("tableformat-jvm").load(t.uri)):
        with pytest.raises(Exception, match=f"CorruptFileError.*{b.base[0].path}.*{why}"):
            df.collect()


def test_a_partial_read_verifies_page_crcs_not_the_whole_file(spark, tmp_path):
    """§5, §8.2: a column subset or a filtered read does not read the whole file, so it does not check its
    CRC-32; it still verifies every page it decodes. A damaged page of `v` fails the subset that reads it."""
    import pyarrow.parquet as pq
    from helpers import spark_catalog
    from spark_jobs.read import read_table
    t = _two_rowsets(tmp_path / "wh" / "ns" / "t")
    c = spark_catalog(spark, tmp_path / "wh")
    rs = min(t.state.rowsets.values(), key=lambda r: r.min_key)
    path = tmp_path / "wh" / "ns" / "t" / rs.base[0].path
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(1)             # c1: v
    raw = bytearray(path.read_bytes())
    end = chunk.data_page_offset + chunk.total_compressed_size - 1           # the last byte of v's last page
    raw[end] ^= 0xFF
    path.write_bytes(bytes(raw))
    assert sorted(r.k for r in spark.sql(f"SELECT k FROM {c}.ns.t").collect()) == list(range(200))
    assert spark.sql(f"SELECT k FROM {c}.ns.t WHERE k >= 100").count() == 100
    for df in (spark.sql(f"SELECT v FROM {c}.ns.t"), read_table(spark, t.uri, columns=["v"], path="native"),
               spark.sql(f"SELECT * FROM {c}.ns.t WHERE k < 50")):
        with pytest.raises(Exception, match="(?i)checksum|crc"):
            df.collect()
    with pytest.raises(Exception, match=f"CorruptFileError.*{rs.base[0].path}.*fails its checksum"):
        spark.sql(f"SELECT * FROM {c}.ns.t").collect()
