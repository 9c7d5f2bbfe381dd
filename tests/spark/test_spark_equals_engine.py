"""Spark gives the engine's answers exactly: filter values placed in the
column's domain as the engine places them (specs/format.md §13), on the native and the Python
data-source paths; and the Spark merge (`mutation_merge`, whose tasks run `merge_task`) orders,
groups and counts as the engine does, for every key type (§14)."""
import datetime as dt
import decimal
import re

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf

pyspark = pytest.importorskip("pyspark")
from hypothesis import HealthCheck, example, given, settings, strategies as st  # noqa: E402

from spark_jobs.merge import mutation_merge  # noqa: E402
from spark_jobs.read import read_table  # noqa: E402

D = decimal.Decimal
UTC = dt.timezone.utc
PATHS = ("native", "python")


def _col(name, kind, **kw):
    # plain: pyspark 4.2's Parquet reader cannot decode BYTE_STREAM_SPLIT (bitshuffle; plain is the default, explicit here)
    enc = "plain" if kind not in ("string", "binary") and not kind.startswith(("varchar", "bool")) else None
    return tf.Column(name, kind, **({"encoding": enc} if enc else {}), **kw)


def spark_keys(spark, uri, flt, path):
    return sorted(r[0] for r in read_table(spark, uri, columns=["k"], filter=flt, path=path).collect())


def engine_keys(uri, flt):
    return sorted(tf.open_table(uri).scan(["k"], filter=flt).to_arrow().column("k").to_pylist())


# --- exact values at the edges: float on bigint, beyond int64, no columns, far timestamps ----

@pytest.fixture(scope="module")
def bigint_table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("bigint") / "t")
    t = tf.create_table(uri, tf.Schema([_col("k", "int64"), _col("n", "int32", nullable=True)], primary_key=["k"]))
    t.insert(pa.table({"k": pa.array([2**53 + 1, 2**53, 3, 4], pa.int64()),
                       "n": pa.array([1, 2, None, 5], pa.int32())}))
    return uri


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("flt, expect", [
    (("k", ">", float(2**53)), [2**53 + 1]),                 # Spark cast bigint to double: lost 2**53+1
    (("k", "<=", float(2**53)), [3, 4, 2**53]),              # ... and matched 2**53+1 too
    (("k", "<=", 2.5), []),
    (("k", ">=", 3.5), [4, 2**53, 2**53 + 1]),
    (("k", "in", [3.0, 4.5, float(2**53)]), [3, 2**53]),
    (("k", "!=", float(2**53)), [3, 4, 2**53 + 1]),
])
def test_a_float_value_on_a_bigint_column_is_not_rounded(spark, bigint_table, flt, expect, path):
    assert spark_keys(spark, bigint_table, [flt], path) == engine_keys(bigint_table, [flt]) == sorted(expect)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("flt, expect", [
    (("k", "<", 2**70), [3, 4, 2**53, 2**53 + 1]),
    (("n", "in", [1, 2**64]), [2**53 + 1]),
    (("n", ">", -2**80), [4, 2**53, 2**53 + 1]),
    (("k", ">", D(2**70)), []),
    (("n", "!=", 2**64), [4, 2**53, 2**53 + 1]),
])
def test_values_beyond_int64_give_the_rows_not_a_crash(spark, bigint_table, flt, expect, path):
    assert spark_keys(spark, bigint_table, [flt], path) == engine_keys(bigint_table, [flt]) == sorted(expect)


@pytest.mark.parametrize("path", PATHS)
def test_count_with_no_columns_is_the_live_row_count(spark, tmp_path, path):
    uri = str(tmp_path / "t")
    t = tf.create_table(uri, tf.Schema([_col("k", "int64"), tf.Column("s", "string", nullable=True)],
                                       primary_key=["k"]))
    t.insert(pa.table({"k": pa.array(range(10), pa.int64()), "s": ["x"] * 10}))
    t.delete(pa.table({"k": pa.array([2, 5], pa.int64())}))            # a rowset with deltas
    assert read_table(spark, uri, columns=[], path=path).count() == 8
    assert read_table(spark, uri, columns=[], filter=[("k", ">", 4.5)], path=path).count() == 4
    assert read_table(spark, uri, columns=[], path=path).columns == []


@pytest.fixture
def new_york(spark):
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    yield
    spark.conf.set("spark.sql.session.timeZone", old)


@pytest.mark.parametrize("path", PATHS)
def test_timestamps_beyond_pythons_datetime_are_compared_exactly(spark, tmp_path, path, new_york):
    """Spark pushes a filter's value to the Python data source as a datetime: one Python cannot
    hold (past year 9999) failed the whole query; and the session's time zone changes nothing."""
    uri = str(tmp_path / "t")
    t = tf.create_table(uri, tf.Schema([_col("k", "int64"), _col("ts", "unixtime_micros"), _col("dt", "date")],
                                       primary_key=["k"]))
    t.insert(pa.table({"k": pa.array([1, 2, 3, 4], pa.int64()),
                       "ts": pa.array([-2**62, 0, 5, 2**62], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                       "dt": pa.array([-2**31, 0, 5, 2**31 - 1], pa.int32()).cast(pa.date32())}))
    for flt, expect in [(("ts", ">", 2**62 - 1), [4]), (("ts", "<", -2**62 + 1), [1]), (("ts", "in", [0, 2**62]), [2, 4]),
                        (("ts", "<=", dt.datetime(1970, 1, 1, tzinfo=UTC)), [1, 2]),
                        (("ts", "=", pa.scalar(5, pa.timestamp("us", tz="UTC"))), [3]),
                        (("dt", ">", dt.date(9999, 12, 31)), [4]), (("dt", "<", dt.date(1, 1, 1)), [1]),
                        (("dt", "in", [dt.date(1970, 1, 6), dt.date(1970, 1, 1)]), [2, 3])]:
        assert spark_keys(spark, uri, [flt], path) == engine_keys(uri, [flt]) == expect, flt


@pytest.mark.parametrize("path", PATHS)
def test_read_defaults_of_added_columns_keep_their_exact_value(spark, tmp_path, path):
    """Rows written before a column was added read its default: a timestamp or date Python
    cannot hold is kept as int microseconds / days, which a cast read as seconds (or refused)."""
    uri = str(tmp_path / "t")
    t = tf.create_table(uri, tf.Schema([_col("k", "int64")], primary_key=["k"]))
    t.insert(pa.table({"k": pa.array([1, 2], pa.int64())}))
    with t.alter() as a:
        a.add_column("far", "unixtime_micros", nullable=False, default=2**62, encoding="plain")
        a.add_column("near", "unixtime_micros", nullable=False, default=1_700_000_000_000_001, encoding="plain")
        a.add_column("day", "date", nullable=False, default=dt.date(2024, 2, 29), encoding="plain")
        a.add_column("big", "int64", nullable=False, default=2**53 + 1, encoding="plain")
        a.add_column("d", "decimal(20,3)", nullable=False, default=D("12345678901234567.891"), encoding="plain")
    df = read_table(spark, uri, columns=["k", "far", "near", "day", "big", "d"], path=path)
    got = df.selectExpr("k", "unix_micros(far)", "unix_micros(near)", "unix_date(day)", "big", "d").collect()
    assert sorted(tuple(r) for r in got) == [
        (k, 2**62, 1_700_000_000_000_001, (dt.date(2024, 2, 29) - dt.date(1970, 1, 1)).days, 2**53 + 1,
         D("12345678901234567.891")) for k in (1, 2)]
    assert spark_keys(spark, uri, [("far", "=", 2**62)], path) == engine_keys(uri, [("far", "=", 2**62)]) == [1, 2]


# --- the property: Spark's filter results equal the engine's --------------------------------

COLUMNS = {"i8": "int8", "i32": "int32", "i64": "int64", "f32": "float", "f64": "double", "d": "decimal(9,2)",
           "ts": "unixtime_micros", "dt": "date"}


@pytest.fixture(scope="module")
def typed_table(tmp_path_factory):
    """Small: one rowset with deltas, one clean; NULLs, NaN, -0.0, the types' extremes."""
    uri = str(tmp_path_factory.mktemp("typed") / "t")
    t = tf.create_table(uri, tf.Schema([_col("k", "int64")] + [_col(n, k, nullable=True) for n, k in COLUMNS.items()],
                                       primary_key=["k"]))
    i8 = [-128, 127, 0, 1, -1, None, 2, 100]
    i32 = [-2**31, 2**31 - 1, 0, 5, None, -5, 2**24 + 1, 7]
    i64 = [-2**63, 2**63 - 1, 2**53, 2**53 + 1, None, 0, -2**53 - 1, 3]
    f32 = [float("nan"), -0.0, 0.1, float("inf"), None, -1e30, 3.5, float("-inf")]
    f64 = [float("nan"), -0.0, 0.0, 0.1, None, 2.0**53 + 2, float("inf"), -2.5]
    d = [D("-9999999.99"), D("9999999.99"), D("0.00"), D("2.50"), None, D("-2.51"), D("1.05"), D("3.00")]
    ts = [-2**63, 2**63 - 1, 0, 1_700_000_000_000_001, None, -1, 86_400_000_000, 5]
    dts = [-2**31, 2**31 - 1, 0, 19_000, None, -1, 1, 2]

    def rows(k0, sl):
        return pa.table({"k": pa.array(range(k0, k0 + len(i8[sl])), pa.int64()),
                         "i8": pa.array(i8[sl], pa.int8()), "i32": pa.array(i32[sl], pa.int32()),
                         "i64": pa.array(i64[sl], pa.int64()), "f32": pa.array(f32[sl], pa.float32()),
                         "f64": pa.array(f64[sl], pa.float64()), "d": pa.array(d[sl], pa.decimal128(9, 2)),
                         "ts": pa.array(ts[sl], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                         "dt": pa.array(dts[sl], pa.int32()).cast(pa.date32())})
    t.insert(rows(0, slice(0, 8)))
    t.insert(rows(100, slice(0, 8)))
    # deltas on the first rowset: the native path joins them; values move, some to NULL
    t.update(pa.table({"k": pa.array([0, 3, 5], pa.int64()), "i64": pa.array([7, None, 2**62], pa.int64()),
                       "f64": pa.array([float("nan"), 1.5, -0.0]), "d": pa.array([D("2.49"), None, D("0.01")],
                                                                                   pa.decimal128(9, 2))}))
    t.delete(pa.table({"k": pa.array([101], pa.int64())}))
    return uri


NUMBERS = st.one_of(
    st.sampled_from([0, 1, -1, 2, 3, 5, 7, 100, 127, 128, -128, -129, 2**31 - 1, 2**31, -2**31, 2**53, 2**53 + 1,
                     2**62, 2**63 - 1, 2**63, -2**63, -2**63 - 1, 2**64, 2**70, -2**80, 19_000, 86_400_000_000]),
    st.sampled_from([0.0, -0.0, 0.1, 2.5, -2.5, 3.5, 1.5, 2.0**53, 2.0**53 + 2, 2.0**63, -2.0**63, 1e30, -1e30,
                     float("nan"), float("inf"), float("-inf"), 2.0**31, 127.5, -128.5, float(np.float32(0.1))]),
    st.sampled_from([D("2.5"), D("2.50"), D("2.505"), D("-2.51"), D("1.05"), D("9999999.99"), D("10000000"),
                     D("-9999999.995"), D("1E+30"), D("0.001"), D("3"), D("NaN"), D("-Infinity")]),
    st.integers(-2**65, 2**65), st.floats(allow_nan=True, allow_infinity=True))
DATES = st.one_of(st.dates(), st.sampled_from([dt.date(1970, 1, 1), dt.date(2022, 1, 9), dt.date(1969, 12, 31)]),
                  st.datetimes(timezones=st.just(UTC)))
TIMES = st.one_of(st.integers(-2**63, 2**63 - 1), st.sampled_from([0, 5, -1, 86_400_000_000, 1_700_000_000_000_001]),
                  st.datetimes(timezones=st.just(UTC)))


@st.composite
def terms(draw):
    col = draw(st.sampled_from(sorted(COLUMNS)))
    values = DATES if col == "dt" else TIMES if col == "ts" else NUMBERS
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "in", "is null", "is not null"]))
    if op.startswith("is"):
        return (col, op)
    if op == "in":
        return (col, "in", draw(st.lists(st.one_of(values, st.none()), max_size=4)))
    return (col, op, draw(values))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flt=st.lists(terms(), min_size=1, max_size=2))
@example(flt=[("i64", ">", float(2**53)), ("f32", "in", [-0.0, float("nan"), None])])
@example(flt=[("ts", ">=", 2**62), ("i8", "<", 2**70)])
@example(flt=[("d", "<=", D("2.505")), ("dt", "in", [dt.date(1970, 1, 1), dt.datetime(2022, 1, 9, 12, tzinfo=UTC)])])
@example(flt=[("f64", "!=", float("nan")), ("i32", "in", [1.0, 2**64, 5])])
def test_spark_filters_equal_the_engine(spark, typed_table, flt):
    try:
        expect = engine_keys(typed_table, flt)
    except tf.InvalidFilterError as e:
        for path in PATHS:             # the engine's own message: the same check rejects the filter
            with pytest.raises(tf.InvalidFilterError, match=re.escape(str(e))):
                read_table(spark, typed_table, columns=["k"], filter=flt, path=path)
        return
    for path in PATHS:
        assert spark_keys(spark, typed_table, flt, path) == expect, (path, flt)


# --- the Spark merge orders, groups and counts as the engine does -----------------

def _rows(t: pa.Table) -> list:
    """Rows in a canonical order; timestamps as int microseconds (past year 9999 too)."""
    t = t.cast(pa.schema([f.with_type(pa.int64()) if pa.types.is_timestamp(f.type) else f for f in t.schema]))
    return sorted((r for r in t.to_pylist()), key=repr)


def _same_tables(engine_uri, spark_uri):
    e, s = tf.open_table(engine_uri), tf.open_table(spark_uri)
    assert _rows(s.to_arrow()) == _rows(e.to_arrow())
    assert [h.counts for h in s.history()] == [h.counts for h in e.history()]
    drop = ["_timestamp"]
    assert _rows(s.changes(0).drop(drop)) == _rows(e.changes(0).drop(drop))
    assert _rows(s.changes(0, skipped=True).drop(drop)) == _rows(e.changes(0, skipped=True).drop(drop))
    assert s.check().ok


def _twin_tables(tmp_path, schema, **kw):
    part = tf.PartitionSchema(hash=[tf.HashPartition(list(schema.primary_key), buckets=2)])
    return [tf.create_table(str(tmp_path / n), schema, part, **kw).uri for n in ("engine", "spark")]


def test_over_long_varchar_keys_merge_in_input_order(spark, tmp_path):
    schema = tf.Schema([tf.Column("k", "varchar(2)"), tf.Column("v", "string", nullable=True)], primary_key=["k"])
    e_uri, s_uri = _twin_tables(tmp_path, schema)
    for uri in (e_uri, s_uri):
        tf.open_table(uri).insert(pa.table({"k": ["ab", "cd"], "v": ["a0", "c0"]}))
    batch = pa.table({"k": ["ab9", "ab1", "cdz", "cd"], "v": ["first", "second", "x1", "x2"]})
    tf.open_table(e_uri).upsert(batch)
    mutation_merge(spark, spark.createDataFrame(batch), s_uri, op="upsert", partitions=2)
    got = {r["k"]: r["v"] for r in tf.open_table(s_uri).to_arrow().to_pylist()}
    assert got == {"ab": "second", "cd": "x2"}                 # the later row of the batch wins
    _same_tables(e_uri, s_uri)


def test_a_spark_merge_records_the_stale_count(spark, tmp_path):
    schema = tf.Schema([tf.Column("id", "int64"), tf.Column("v", "string", nullable=True), tf.Column("lsn", "int64")],
                       primary_key=["id"])
    e_uri, s_uri = _twin_tables(tmp_path, schema, properties={"sequence_column": "lsn"})
    first = pa.table({"id": pa.array(range(20), pa.int64()), "v": ["v0"] * 20, "lsn": pa.array([10] * 20, pa.int64())})
    rng = np.random.default_rng(5)
    cdc = pa.table({"id": pa.array(rng.integers(0, 30, 60), pa.int64()), "v": [f"e{i}" for i in range(60)],
                    "lsn": pa.array(rng.integers(0, 20, 60), pa.int64())})
    tf.open_table(e_uri).insert(first)
    tf.open_table(e_uri).upsert(cdc)
    tf.open_table(s_uri).insert(first)
    mutation_merge(spark, spark.createDataFrame(cdc), s_uri, op="upsert", partitions=2)
    counts = tf.open_table(s_uri).history()[-1].counts
    assert counts.get("stale", 0) > 0
    assert counts == tf.open_table(e_uri).history()[-1].counts
    _same_tables(e_uri, s_uri)


def _ts(us):
    return pa.array(us, pa.int64()).cast(pa.timestamp("us", tz="UTC"))


# key columns (as Arrow arrays from a pool of values) per key type: repeats, collisions after
# varchar truncation, NUL bytes, bytes above 0x7f, negative and extreme numbers
KEY_TYPES = {
    "int": ([tf.Column("k", "int64")], lambda idx: {"k": pa.array(np.array([-2**63, -1, 0, 1, 7, 2**40, 2**63 - 1])[idx % 7], pa.int64())}),
    "string": ([tf.Column("k", "string")],
               lambda idx: {"k": pa.array(np.array(["", "a", "a\x00", "ab", "b", "é", "\uffff"], object)[idx % 7])}),
    "varchar": ([tf.Column("k", "varchar(2)")],
                lambda idx: {"k": pa.array(np.array(["ab", "ab9", "ab1", "cd", "cdz", "cé", "céx", "c", "zz"],
                                                     object)[idx % 9])}),
    "binary": ([tf.Column("k", "binary")],
               lambda idx: {"k": pa.array(np.array([b"", b"\x00", b"\x00\x00", b"\xff", b"a", b"a\x00", b"\x80"],
                                                    object)[idx % 7], pa.binary())}),
    "decimal": ([tf.Column("k", "decimal(6,2)")],
                lambda idx: {"k": pa.array(np.array([D("-9999.99"), D("-1.00"), D("0.00"), D("0.01"), D("1.50"),
                                                      D("9999.99"), D("12.30")], object)[idx % 7],
                                           pa.decimal128(6, 2))}),
    "timestamp": ([tf.Column("k", "unixtime_micros")],
                  lambda idx: {"k": _ts(np.array([-2**62, -1, 0, 1, 1_700_000_000_000_000, 2**62, 5])[idx % 7])}),
    "composite": ([tf.Column("a", "varchar(1)"), tf.Column("b", "int32")],
                  lambda idx: {"a": pa.array(np.array(["x", "xy", "y", "", "xz"], object)[idx % 5]),
                               "b": pa.array((idx // 5 % 3) - 1, pa.int32())}),
}


@pytest.mark.parametrize("key_type", sorted(KEY_TYPES))
def test_spark_merge_equals_the_engine_on_a_random_op_stream(spark, tmp_path, key_type):
    """Through mutation_merge, so the tasks run merge_task: native layout for the types Spark
    orders as the engine, (tablet, encoded key) for the others (varchar)."""
    cols, make_keys = KEY_TYPES[key_type]
    schema = tf.Schema(cols + [tf.Column("v", "string", nullable=True), tf.Column("n", "int64", nullable=True)],
                       primary_key=[c.name for c in cols])
    e_uri, s_uri = _twin_tables(tmp_path, schema)
    rng = np.random.default_rng(sum(map(ord, key_type)))
    ops = np.array(["upsert", "insert_ignore", "update_ignore", "delete_ignore"], object)
    for b in range(3):
        n = 16
        idx = rng.integers(0, 15, n)
        batch = pa.table({**make_keys(idx), "v": [f"b{b}r{i}" for i in range(n)],
                          "n": pa.array(rng.integers(-5, 5, n), pa.int64()),
                          "op": pa.array(ops[rng.integers(0, 4, n)] if b else ["upsert"] * n, pa.string())})
        e_res = tf.open_table(e_uri).apply(batch, op_column="op")
        s_res = mutation_merge(spark, spark.createDataFrame(batch), s_uri, op_column="op", on_error="fail",
                               partitions=2)
        assert (s_res.inserted, s_res.updated, s_res.deleted, s_res.ignored) == \
            (e_res.inserted, e_res.updated, e_res.deleted, e_res.ignored)
    _same_tables(e_uri, s_uri)
