"""Conformance of the JVM connector (spark_jobs/connector, format `tableformat-jvm`): one table of
cases, each read by the engine's own scan, by the connector and by the Python data source, with
identical rows required (specs/format.md §9.4). The connector path is forced (`path="native"`)
and checked in the physical plan, so no case passes by falling back."""
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tableformat as tf

from helpers import assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema

pyspark = pytest.importorskip("pyspark")

KEY = ["host", "metric", "time"]
CONNECTOR_SCAN = "BatchScan tableformat_jvm"
PYTHON_SCAN = "BatchScan tableformat@"


@pytest.fixture(scope="module", autouse=True)
def connector(spark):
    from spark_jobs.connector import loaded
    why = loaded(spark)
    if why:
        pytest.skip(f"the JVM connector is unavailable: {why}")


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
    t = tf.create_table(str(tmp_path / "r"), metrics_schema())
    data = metrics_rows(100)
    t.insert(data)
    t.update(keys(data, [3]).append_column("value", pa.array([7.0])))
    (rs,) = t.state.rowsets.values()
    path = str(tmp_path / "r" / rs.base[0].path)
    pq.write_table(pq.read_table(path), path, compression="none")     # same rows, another size
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
