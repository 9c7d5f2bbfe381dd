"""Spark gives the engine's answers exactly (issue #24, items 1-5): filter values placed in the
column's domain as the engine places them (specs/format.md §13), on the native and the Python
data-source paths; and the Spark merge (`mutation_merge`, whose tasks run `merge_task`) orders,
groups and counts as the engine does, for every key type (§14)."""
import datetime as dt
import decimal
import math

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf

pyspark = pytest.importorskip("pyspark")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from spark_jobs.merge import mutation_merge  # noqa: E402
from spark_jobs.read import read_table  # noqa: E402

D = decimal.Decimal
UTC = dt.timezone.utc
PATHS = ("native", "python")


def _col(name, kind, **kw):
    # plain: pyspark 4.2's Parquet reader cannot decode BYTE_STREAM_SPLIT (the bitshuffle default)
    enc = "plain" if kind not in ("string", "binary") and not kind.startswith(("varchar", "bool")) else None
    return tf.Column(name, kind, **({"encoding": enc} if enc else {}), **kw)


def spark_keys(spark, uri, flt, path):
    return sorted(r[0] for r in read_table(spark, uri, columns=["k"], filter=flt, path=path).collect())


def engine_keys(uri, flt):
    return sorted(tf.open_table(uri).scan(["k"], filter=flt).to_arrow().column("k").to_pylist())


# --- item 1-3: the examples ---------------------------------------------------------

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
def test_spark_filters_equal_the_engine(spark, typed_table, flt):
    try:
        expect = engine_keys(typed_table, flt)
    except tf.InvalidFilterError:
        for path in PATHS:
            with pytest.raises(tf.InvalidFilterError):
                read_table(spark, typed_table, columns=["k"], filter=flt, path=path)
        return
    for path in PATHS:
        assert spark_keys(spark, typed_table, flt, path) == expect, (path, flt)
