"""Filters mean one thing everywhere (specs/format.md §13): NaN and ±0, exact values, out-of-range
values (a date against a nanosecond timestamp, a decimal beyond its column), empty projections; operators,
statistics pruning, PK-range seeks and partition pruning agree."""
import datetime as dt
import decimal
import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tableformat as tf
import pandas as pd

UTC = dt.timezone.utc
NAN = float("nan")
D = decimal.Decimal


def keys(t, flt, col="k"):
    return sorted(t.scan(columns=[col], filter=flt).to_arrow()[col].to_pylist())


# --- NaN and signed zero ---------------------------------------------------------------------

@pytest.fixture
def floats(tmp_path):
    """Three rowsets, each with NaN, -0.0 and numbers; one with no NaN at all."""
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double", nullable=True),
                        tf.Column("f", "float", nullable=True)], "k")
    t = tf.create_table(str(tmp_path / "f"), schema)
    t.insert(pa.table({"k": [1, 2, 3, 4], "v": [NAN, -0.0, 1.0, None], "f": [NAN, -0.0, 0.5, None]}))
    t.insert(pa.table({"k": [5, 6, 7], "v": [2.0, 3.0, 5.0], "f": [2.0, 3.0, 5.0]}))
    t.insert(pa.table({"k": [8, 9], "v": [NAN, 0.0], "f": [0.1, 0.0]}))
    assert len(t.state.rowsets) == 3
    return t


def test_nan_equals_nan_in_every_rowset(floats):
    assert keys(floats, ("v", "in", [NAN])) == [1, 8]
    assert keys(floats, ("v", "=", NAN)) == [1, 8]
    assert keys(floats, [("v", ">=", NAN), ("v", "<=", NAN)]) == [1, 8]
    assert keys(floats, ("v", "!=", NAN)) == [2, 3, 5, 6, 7, 9]
    assert keys(floats, ("f", "in", [NAN, 5.0])) == [1, 7]


def test_nan_is_above_every_number(floats):
    assert keys(floats, ("v", ">", 0.5)) == [1, 3, 5, 6, 7, 8]
    assert keys(floats, ("v", ">=", math.inf)) == [1, 8]
    assert keys(floats, ("v", "<", NAN)) == [2, 3, 5, 6, 7, 9] and keys(floats, ("v", ">", NAN)) == []
    assert keys(floats, ("v", "<=", NAN)) == [1, 2, 3, 5, 6, 7, 8, 9]          # every non-NULL row
    assert keys(floats, ("v", "<", 1e300)) == [2, 3, 5, 6, 7, 9]
    assert keys(floats, [("v", "=", NAN), ("v", ">", 0.0)]) == [1, 8]
    assert keys(floats, [("v", ">", 2.0), ("v", "<", NAN)]) == [6, 7]


def test_minus_zero_equals_zero(floats):
    assert keys(floats, ("v", "in", [0.0])) == [2, 9]
    assert keys(floats, ("v", "in", [-0.0, 5.0])) == [2, 7, 9]
    assert keys(floats, ("v", "=", 0.0)) == keys(floats, ("v", "=", -0.0)) == [2, 9]
    assert keys(floats, ("f", "in", [0.0])) == [2, 9]


def test_float32_compares_exactly_as_double(floats):
    assert keys(floats, ("f", "=", 0.1)) == []                    # float32(0.1) is not 0.1
    assert keys(floats, ("f", "=", float(pa.scalar(0.1, pa.float32()).as_py()))) == [8]
    assert keys(floats, ("f", ">", 0.1)) == [1, 3, 5, 6, 7, 8]


def test_nan_statistics_are_recorded(floats):
    stats = [rs.stats[floats.schema.column("v").id] for rs in floats.state.rowsets.values()]
    assert sorted(s["nan"] for s in stats) == [0, 1, 1]
    no_nan = floats.scan(filter=("v", "=", NAN)).plan()
    assert len(no_nan) == 2                     # the rowset without NaN is pruned
    assert len(floats.scan(filter=("v", ">", 10.0)).plan()) == 2        # NaN > 10: not pruned with NaN
    assert len(floats.scan(filter=("v", ">", 4.0)).plan()) == 3
    assert len(floats.scan(filter=("v", "<", -1.0)).plan()) == 0


# --- values are never silently changed ------------------------------------------------------

@pytest.fixture
def ints(tmp_path):
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("d", "date", nullable=True),
                        tf.Column("s", "varchar(4)", nullable=True), tf.Column("p", "decimal(6,2)", nullable=True)],
                       "k")
    parts = tf.PartitionSchema(range=tf.RangePartition(["k"], splits=[100, 200]))
    t = tf.create_table(str(tmp_path / "i"), schema, partitioning=parts,
                        properties={"row_group_rows": 128, "pk_index_block_rows": 16})
    n = 300
    t.insert(pa.table({"k": list(range(n)), "d": [dt.date(2024, 1, 1 + i % 28) for i in range(n)],
                       "s": ["abcd", "ab", None] * 100, "p": [D(i) / 4 for i in range(n)]},
                      schema=pa.schema([("k", pa.int64()), ("d", pa.date32()), ("s", pa.string()),
                                        ("p", pa.decimal128(6, 2))])))
    return t


def test_non_integral_values_compare_exactly_on_int_columns(ints):
    assert keys(ints, ("k", "=", 2.7)) == []
    assert keys(ints, ("k", ">=", 1.5))[:2] == [2, 3]
    assert keys(ints, ("k", "<", 1.5)) == [0, 1]
    assert keys(ints, ("k", "<=", D("2.5"))) == [0, 1, 2]
    assert keys(ints, ("k", "in", [2.5, 3, 4.0])) == [3, 4]
    assert len(keys(ints, ("k", "!=", 2.5))) == 300
    assert keys(ints, [("k", ">", 199.5), ("k", "<", 201.5)]) == [200, 201]      # across a range partition


def test_datetime_on_a_date_column_is_not_truncated(ints):
    noon = dt.datetime(2024, 1, 3, 12, tzinfo=UTC)
    assert keys(ints, ("d", "=", noon)) == []
    assert keys(ints, ("d", "=", dt.datetime(2024, 1, 3))) == keys(ints, ("d", "=", dt.date(2024, 1, 3)))
    assert keys(ints, ("d", ">", noon)) == keys(ints, ("d", ">=", dt.date(2024, 1, 4)))


def test_long_varchar_filter_values_are_not_truncated(ints):
    assert keys(ints, ("s", "=", "abcdzz")) == []
    assert len(keys(ints, ("s", "<", "abcdzz"))) == 200


def test_decimal_filter_values_are_not_rounded(ints):
    assert keys(ints, ("p", "=", D("0.251"))) == []
    assert keys(ints, ("p", "=", 0.25)) == [1]
    assert keys(ints, ("p", "<", D("0.501"))) == [0, 1, 2]


@pytest.mark.parametrize("col,default", [("int32", 1.7), ("int8", 2**70), ("date", dt.datetime(2024, 1, 1, 5)),
                                         ("decimal(5,2)", D("1.234")), ("int64", "3"), ("string", 5)])
def test_defaults_are_exact(col, default):
    with pytest.raises(tf.SchemaError, match="default of column 'x': .* is not a valid "):
        tf.Column("x", col, default=default)
    assert tf.Column("x", "int32", default=2.0).default == 2


def test_partition_bounds_are_exact(tmp_path):
    schema = tf.Schema([tf.Column("k", "int64")], "k")
    with pytest.raises(tf.errors.PartitionSchemaError,
                       match=r"split for 'k': 200\.5 is not a valid int64: the type has no such value \(it would"):
        tf.create_table(str(tmp_path / "p"), schema,
                        partitioning=tf.PartitionSchema(range=tf.RangePartition(["k"], splits=[200.5])))
    assert not (tmp_path / "p").exists() or not any((tmp_path / "p").iterdir())


@pytest.mark.parametrize("flt", [("k", "=", "2"), ("k", "<", b"x"), ("k", "=", True), ("d", "=", 3),
                                 ("s", "=", 5), ("p", "<", "abc"), ("k", "in", [1, "x"])])
def test_wrong_typed_values_raise(ints, flt):
    with pytest.raises(tf.errors.InvalidFilterError, match=r"filter on '\w+': .* is not a valid "):
        ints.scan(filter=flt).to_arrow()


# --- out-of-range values --------------------------------------------------------------------

def test_out_of_range_filter_values_are_exact(ints):
    assert len(keys(ints, ("k", "<", 2**70))) == 300
    assert keys(ints, ("k", ">", 2**70)) == [] and keys(ints, ("k", ">=", -2**70))[:1] == [0]
    assert keys(ints, ("k", "in", [1, 2**64])) == [1]
    assert keys(ints, ("k", "<", float("inf")))[-1] == 299
    assert keys(ints, ("k", "=", NAN)) == [] and len(keys(ints, ("k", "!=", NAN))) == 300
    assert len(keys(ints, ("k", "<", NAN))) == 300 and keys(ints, ("k", ">=", NAN)) == []     # NaN above all
    assert len(keys(ints, ("p", "<=", NAN))) == 300


def test_extreme_timestamps_and_dates_round_trip(tmp_path):
    schema = tf.Schema([tf.Column("t", "unixtime_micros"), tf.Column("d", "date", nullable=True)], "t")
    t = tf.create_table(str(tmp_path / "x"), schema)
    ts = [-2**63, -2**62, 0, 2**62, 2**63 - 1]
    days = [-2**31, -800_000, 0, 3_000_000, 2**31 - 1]
    data = pa.table({"t": pa.array(ts, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                     "d": pa.array(days, pa.int32()).cast(pa.date32())})
    t.insert(data)
    got = t.scan(ordered=True).to_arrow()
    assert got["t"].cast(pa.int64()).to_pylist() == ts and got["d"].cast(pa.int32()).to_pylist() == days
    assert t.scan(filter=("t", "=", 2**62)).count() == 1
    assert t.scan(filter=("t", ">", 2**62)).count() == 1
    assert t.scan(filter=("t", "<", 2**70)).count() == 5
    assert t.scan(filter=("t", "in", [2**63 - 1, 2**64])).count() == 1
    assert t.scan(filter=("t", ">=", dt.datetime(9999, 12, 31, tzinfo=UTC))).count() == 2
    assert t.scan(filter=("d", "=", pa.scalar(2**31 - 1, pa.int32()).cast(pa.date32()))).count() == 1
    assert t.scan(filter=("d", ">", dt.date(9999, 12, 31))).count() == 2
    t.update(pa.table({"t": data["t"].slice(4, 1), "d": pa.array([-2**31], pa.int32()).cast(pa.date32())}))
    assert t.scan(filter=("d", "<", dt.date(1, 1, 1))).count() == 3


def test_extreme_defaults(tmp_path):
    c = tf.Column("t", "unixtime_micros", default=pa.scalar(2**63 - 1, pa.timestamp("us", tz="UTC")))
    assert c.default == 2**63 - 1
    schema = tf.Schema([tf.Column("k", "int64"), c], "k")
    t = tf.create_table(str(tmp_path / "x"), schema)
    t.insert(pa.table({"k": [1]}))
    assert tf.open_table(t.uri).to_arrow()["t"].cast(pa.int64()).to_pylist() == [2**63 - 1]


# --- an empty projection --------------------------------------------------------------------

def test_empty_projection_counts_live_rows(tmp_path):
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double", nullable=True)], "k")
    t = tf.create_table(str(tmp_path / "e"), schema)
    t.insert(pa.table({"k": list(range(3000)), "v": [float(i) for i in range(3000)]}))
    assert t.scan(columns=[]).to_arrow().num_rows == 3000
    t.delete(pa.table({"k": list(range(0, 3000, 2))}))          # many deletes
    t.delete(pa.table({"k": [1]}))
    out = t.scan(columns=[]).to_arrow()
    assert out.num_rows == 1499 and out.num_columns == 0
    assert t.scan(columns=[]).count() == 1499
    assert sum(b.num_rows for b in t.scan(columns=[])) == 1499
    assert t.scan(columns=[], filter=("v", "<", 100.0)).to_arrow().num_rows == 49


# --- property: every operator against a plain-Python reference ------------------------------

INT64 = (-2**63, 2**63 - 1)
POOL = {
    "d": [NAN, 0.0, -0.0, 1.5, -1.5, math.inf, -math.inf, 1.7976931348623157e308, 5e-324, 3.0],
    "f": [NAN, 0.0, -0.0, 0.5, -2.0, math.inf, 3.0],
    "i": [0, 1, -1, 2**31 - 1, -2**31, 7],
    "p": [D("0.00"), D("1.50"), D("-99.99"), D("99.99"), D("3.00")],
    "s": ["", "a", "ab", "b", "\u00e9", "zz"],
    "ts": [-2**63, 0, 2**62, 2**63 - 1, 1_700_000_000_000_000],
}
TYPES = {"d": "double", "f": "float", "i": "int32", "p": "decimal(4,2)", "s": "string", "ts": "unixtime_micros"}
EXTRA = {   # values of the right kind that are not (all) in the data, or not of the column's type
    "d": [2**53 + 1, D("0.1"), 0.1, 1, -(2**1100)],
    "f": [0.1, 2**24 + 1, 1e39, D("0.5")],
    "i": [2**31, -2**31 - 1, 2**70, 0.5, -0.5, 1.0, NAN, math.inf, -math.inf, D("6.99")],
    "p": [D("1.505"), 1.5, 0.1, 100, -100, NAN, math.inf, 3],
    "s": ["a\x00", "\U0001f600", "abc"],
    "ts": [2**64, -2**64, dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC), dt.datetime(9999, 12, 31, tzinfo=UTC),
           dt.datetime(1, 1, 1, tzinfo=UTC)],
}
WRONG = {"d": ["1", True, b"x", dt.date(2020, 1, 1)], "f": ["x", False], "i": ["1", True, b"", dt.datetime(2020, 1, 1)],
         "p": [True, b"1", dt.date(2020, 1, 1)], "s": [1, b"a", 1.5], "ts": [1.5, "2020-01-01", dt.date(2020, 1, 1), True]}


def _num(col, v):
    """A value as an exact Python number/str/bytes for the reference (timestamps as micros)."""
    if col == "ts" and isinstance(v, dt.datetime):
        d = v - dt.datetime(1970, 1, 1, tzinfo=UTC)
        return (d.days * 86400 + d.seconds) * 10**6 + d.microseconds
    return v


def _isnan(v):
    return isinstance(v, float) and v != v


def ref_compare(op, r, v):
    """Spark's order, for the engine and Spark alike: NaN = NaN and above every number (+inf
    too, on every numeric column), -0.0 = 0.0 (Python's == already says so), exact values."""
    rk, vk = (1, 0) if _isnan(r) else (0, r), (1, 0) if _isnan(v) else (0, v)
    return {"=": rk == vk, "!=": rk != vk, "<": rk < vk, "<=": rk <= vk, ">": rk > vk, ">=": rk >= vk}[op]


def ref_match(row, term):
    col, op = term[0], term[1]
    r = row[col]
    if op == "is null":
        return r is None
    if op == "is not null":
        return r is not None
    if r is None:
        return False
    if op == "in":
        return any(v is not None and ref_compare("=", r, _num(col, v)) for v in term[2])
    return ref_compare(op, r, _num(col, term[2]))


@st.composite
def filter_term(draw, cols=tuple(TYPES), wrong=True, ops=("=", "!=", "<", "<=", ">", ">=", "in", "is null",
                                                            "is not null")):
    col = draw(st.sampled_from(cols))
    op = draw(st.sampled_from(ops))
    if op in ("is null", "is not null"):
        return (col, op)
    vals = POOL[col] + EXTRA[col] + (WRONG[col] if wrong else [])
    if op == "in":
        return (col, op, draw(st.lists(st.sampled_from(vals + [None]), max_size=4)))
    return (col, op, draw(st.sampled_from(vals)))


def _typed_ok(term):
    col = term[0]
    if len(term) == 2:
        return True
    vals = term[2] if term[1] == "in" else [term[2]]
    for v in vals:
        if v is None:
            continue
        if col == "s":
            if not isinstance(v, str):
                return False
        elif col == "ts":
            if isinstance(v, bool) or not (isinstance(v, int) or isinstance(v, dt.datetime)):
                return False
        elif isinstance(v, bool) or not isinstance(v, (int, float, D)):
            return False
    return True


def _rows(n, seed):
    import random
    rnd = random.Random(seed)
    out = []
    for k in range(n):
        out.append({"k": k, **{c: (None if rnd.random() < 0.1 else rnd.choice(POOL[c])) for c in TYPES}})
    return out


def _arrow(rows, schema):
    cols = {}
    for c in ["k"] + list(TYPES):
        vals = [r[c] for r in rows]
        if c == "ts":
            cols[c] = pa.array(vals, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
        else:
            cols[c] = pa.array(vals, schema.column(c).arrow_type)
    return pa.table(cols)


@pytest.fixture(scope="module")
def prop_table(tmp_path_factory):
    """Three rowsets plus pending REDO deltas (updates and deletes not compacted); the expected rows."""
    schema = tf.Schema([tf.Column("k", "int64")] + [tf.Column(c, t, nullable=True) for c, t in TYPES.items()], "k")
    t = tf.create_table(str(tmp_path_factory.mktemp("prop") / "t"), schema,
                        partitioning=tf.PartitionSchema(hash=[tf.HashPartition(["k"], buckets=2)]),
                        properties={"row_group_rows": 128, "pk_index_block_rows": 16})
    rows = _rows(240, 7)
    for a, b in [(0, 80), (80, 160), (160, 240)]:
        t.insert(_arrow(rows[a:b], schema))
    upd = _rows(240, 8)[::5]
    t.update(_arrow(upd, schema))
    for r in upd:
        rows[r["k"]] = r
    dels = list(range(3, 240, 7))
    t.delete(pa.table({"k": dels}))
    live = [r for r in rows if r["k"] not in set(dels)]
    assert any(t.state.deltas_of(rs) for rs in t.state.rowsets)
    return t, live


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(filter_term(), min_size=1, max_size=3))
def test_every_operator_matches_the_reference(prop_table, flt):
    t, live = prop_table
    if not all(_typed_ok(term) for term in flt):
        with pytest.raises(tf.errors.InvalidFilterError, match=r"filter on '\w+': .* is not a valid "):
            t.scan(filter=flt).to_arrow()
        return
    want = sorted(r["k"] for r in live if all(ref_match(r, term) for term in flt))
    assert keys(t, flt) == want
    assert t.scan(columns=[], filter=flt).to_arrow().num_rows == len(want)


# --- Spark: pushdown on, results as Spark evaluates them ------------------------------------

SPARK_COLS = ("d", "f", "i", "s", "ts")


def _spark_lit(col, v):
    from pyspark.sql import functions as F
    if col == "ts":
        v = dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=_num(col, v)) if isinstance(v, int) else v
        return F.lit(v)
    if col in ("d", "f"):
        return F.lit(float(v))          # a double literal: Spark casts a float column to double
    return F.lit(v)


def _spark_filter(df, flt):
    from pyspark.sql import functions as F
    for term in flt:
        c = F.col(term[0])
        op = term[1]
        if op == "is null":
            df = df.filter(c.isNull())
        elif op == "is not null":
            df = df.filter(c.isNotNull())
        elif op == "in":
            df = df.filter(c.isin([_spark_lit(term[0], v) for v in term[2] if v is not None]))
        else:
            lit = _spark_lit(term[0], term[2])
            df = df.filter({"=": c == lit, "!=": c != lit, "<": c < lit, "<=": c <= lit, ">": c > lit,
                            ">=": c >= lit}[op])
    return df


def _spark_term(draw_term):
    """Well-typed terms Spark can write: timestamps within Python's datetime range, ints within int32."""
    col, op = draw_term[0], draw_term[1]
    if op in ("is null", "is not null"):
        return True
    vals = draw_term[2] if op == "in" else [draw_term[2]]
    for v in vals:
        if v is None:
            continue
        if col == "i" and not (isinstance(v, int) and not isinstance(v, bool) and -2**31 <= v < 2**31):
            return False
        if col in ("d", "f") and not (isinstance(v, float) or (isinstance(v, int) and not isinstance(v, bool)
                                                         and -2**53 <= v <= 2**53)):
            return False
        if col == "s" and not isinstance(v, str):
            return False
        if col == "ts" and not (isinstance(v, dt.datetime) or
                                (isinstance(v, int) and not isinstance(v, bool) and -62135596800 * 10**6 <= v
                                 < 253402300800 * 10**6)):
            return False
    return True


@pytest.fixture(scope="module")
def spark_prop_table(tmp_path_factory):
    """A table like prop_table but with timestamps Spark (and Python) can hold, and its live rows."""
    schema = tf.Schema([tf.Column("k", "int64")] + [tf.Column(c, TYPES[c], nullable=True) for c in SPARK_COLS], "k")
    t = tf.create_table(str(tmp_path_factory.mktemp("sprop") / "t"), schema,
                        partitioning=tf.PartitionSchema(hash=[tf.HashPartition(["k"], buckets=2)]),
                        properties={"row_group_rows": 128, "pk_index_block_rows": 16})
    # Not before 1900: Spark shifts older Python datetime literals (Julian/Gregorian rebase) itself.
    ok_ts = [0, 1_700_000_000_000_000, -2208988800 * 10**6, 253402300799 * 10**6]

    def rows(seed):
        import random
        rnd = random.Random(seed)
        return [{"k": k, "d": None if rnd.random() < .1 else rnd.choice(POOL["d"]),
                 "f": None if rnd.random() < .1 else rnd.choice(POOL["f"]),
                 "i": None if rnd.random() < .1 else rnd.choice(POOL["i"]),
                 "s": None if rnd.random() < .1 else rnd.choice(POOL["s"]),
                 "ts": None if rnd.random() < .1 else rnd.choice(ok_ts)} for k in range(120)]

    def arrow(rs):
        return pa.table({"k": pa.array([r["k"] for r in rs], pa.int64()),
                         "d": pa.array([r["d"] for r in rs], pa.float64()),
                         "f": pa.array([r["f"] for r in rs], pa.float32()),
                         "i": pa.array([r["i"] for r in rs], pa.int32()),
                         "s": pa.array([r["s"] for r in rs], pa.string()),
                         "ts": pa.array([r["ts"] for r in rs], pa.int64()).cast(pa.timestamp("us", tz="UTC"))})
    live = rows(1)
    for a, b in [(0, 40), (40, 80), (80, 120)]:
        t.insert(arrow(live[a:b]))
    upd = rows(2)[::4]
    t.update(arrow(upd))
    for r in upd:
        live[r["k"]] = r
    t.delete(pa.table({"k": list(range(5, 120, 9))}))
    live = [r for r in live if r["k"] not in set(range(5, 120, 9))]
    return t, live


SPARK_POOL_TS = [0, 1_700_000_000_000_000, -2208988800 * 10**6, 253402300799 * 10**6,
                 dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)]


@st.composite
def spark_term(draw):
    col = draw(st.sampled_from(SPARK_COLS))
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "in", "is null", "is not null"]))
    if op in ("is null", "is not null"):
        return (col, op)
    vals = SPARK_POOL_TS if col == "ts" else [v for v in POOL[col] + EXTRA[col] if _spark_term((col, "=", v))]
    if op == "in":
        return (col, op, draw(st.lists(st.sampled_from(vals), min_size=1, max_size=3)))
    return (col, op, draw(st.sampled_from(vals)))


F32_01 = float(pa.scalar(0.1, pa.float32()).as_py())


def test_spark_pushdown_examples_agree_with_spark(spark, floats):
    """Pushdown examples, and float32 compared with doubles (Spark casts the column to double)."""
    from pyspark.sql import functions as F
    df = spark.read.format("tableformat").load(floats.uri).select("k", "v", "f")
    live = [r for r in floats.to_arrow().to_pylist()]
    v, f = F.col("v"), F.col("f")
    for name, cond, term in [("v = NaN", v == F.lit(NAN), ("v", "=", NAN)),
                             ("v > 0.5", v > F.lit(0.5), ("v", ">", 0.5)),
                             ("v < NaN", v < F.lit(NAN), ("v", "<", NAN)),
                             ("v <= NaN", v <= F.lit(NAN), ("v", "<=", NAN)),
                             ("v >= inf", v >= F.lit(math.inf), ("v", ">=", math.inf)),
                             ("v in (0.0, 5.0)", v.isin(0.0, 5.0), ("v", "in", [0.0, 5.0])),
                             ("v in (-0.0, NaN)", v.isin(-0.0, NAN), ("v", "in", [-0.0, NAN])),
                             ("f > 0.1", f > F.lit(0.1), ("f", ">", 0.1)),
                             ("f >= 0.1", f >= F.lit(0.1), ("f", ">=", 0.1)),
                             ("f = 0.1", f == F.lit(0.1), ("f", "=", 0.1)),
                             ("f = float32(0.1)", f == F.lit(F32_01), ("f", "=", F32_01)),
                             ("f <= float32(0.1)", f <= F.lit(F32_01), ("f", "<=", F32_01)),
                             ("f < NaN", f < F.lit(NAN), ("f", "<", NAN)),
                             ("f in (0.1, 0.5, -0.0)", f.isin(0.1, 0.5, -0.0), ("f", "in", [0.1, 0.5, -0.0])),
                             ("f > 0.5", f > F.lit(0.5), ("f", ">", 0.5))]:
        got = sorted(r.k for r in df.filter(cond).collect())
        want = sorted(r["k"] for r in live if ref_match(r, term))
        assert got == want, name


def test_pushfilters_claims_float_comparisons(floats):
    """The engine evaluates float comparisons as Spark does, so the source keeps them all."""
    from pyspark.sql.datasource import EqualTo, GreaterThan, GreaterThanOrEqual, In, LessThan, LessThanOrEqual
    from spark_jobs.common import spark_schema
    from spark_jobs.datasource import TableFormatReader
    reader = TableFormatReader({"path": floats.uri}, spark_schema(floats.schema))
    pushed = [GreaterThan(("v",), 0.5), GreaterThanOrEqual(("f",), F32_01), LessThan(("v",), NAN),
              LessThanOrEqual(("v",), NAN), EqualTo(("v",), NAN), In(("f",), (0.0, 5.0))]
    assert list(reader.pushFilters(pushed)) == []
    assert len(reader.filters) == len(pushed)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(spark_term(), min_size=1, max_size=2))
def test_spark_pushdown_matches_spark_semantics(spark, spark_prop_table, flt):
    t, live = spark_prop_table
    df = _spark_filter(spark.read.format("tableformat").load(t.uri), flt)
    got = sorted(r.k for r in df.select("k").collect())
    want = sorted(r["k"] for r in live if all(ref_match(r, term) for term in flt))
    assert got == want


# --- a date compared with a nanosecond timestamp ----------------------------------------------

def _dates(tmp_path):
    s = tf.Schema([tf.Column("k", "int64"), tf.Column("d", "date")], "k")
    t = tf.create_table(str(tmp_path / "t"), s)
    t.insert(pa.table({"k": [1, 2], "d": [dt.date(2020, 1, 1), dt.date(2020, 1, 2)]}))
    return t


NANOS_TS = pd.Timestamp("2020-01-01 00:00:00.000000001")


def test_date_equals_nanosecond_timestamp_matches_nothing(tmp_path):
    t = _dates(tmp_path)
    assert keys(t, ("d", "=", NANOS_TS)) == []          # observed [1]


def test_date_in_nanosecond_timestamp_matches_nothing(tmp_path):
    t = _dates(tmp_path)
    assert keys(t, ("d", "in", [NANOS_TS])) == []       # observed [1]


def test_date_ge_nanosecond_timestamp_excludes_the_midnight_date(tmp_path):
    t = _dates(tmp_path)
    assert keys(t, ("d", ">=", NANOS_TS)) == [2]        # observed [1, 2]


def test_date_ne_nanosecond_timestamp_is_every_row(tmp_path):
    t = _dates(tmp_path)
    assert keys(t, ("d", "!=", NANOS_TS)) == [1, 2]     # observed [2]


def test_same_value_on_a_timestamp_column_is_consistent(tmp_path):
    s = tf.Schema([tf.Column("k", "int64"), tf.Column("ts", "unixtime_micros")], "k")
    t = tf.create_table(str(tmp_path / "u"), s)
    t.insert(pa.table({"k": [1], "ts": pa.array([dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)],
                                                  pa.timestamp("us", tz="UTC"))}))
    assert keys(t, ("ts", "=", NANOS_TS.tz_localize("UTC"))) == []      # passes: the timestamp path is exact


# --- filter values beyond a decimal, NaT on a date: exact or typed, never an untyped error ----

@pytest.fixture
def decimal_and_date(tmp_path):
    s = tf.Schema([tf.Column("k", "int64"), tf.Column("d", "decimal(6,2)", nullable=True),
                   tf.Column("dd", "date", nullable=True)], "k")
    t = tf.create_table(str(tmp_path / "t"), s)
    t.insert(pa.table({"k": [1], "d": pa.array([decimal.Decimal("1.00")], pa.decimal128(6, 2)),
                       "dd": [dt.date(2020, 1, 1)]}))
    return t


@pytest.mark.parametrize("flt", [("d", "in", ["1e999999999"]), ("d", "=", decimal.Decimal("1e999999999")),
                                 ("d", "<", decimal.Decimal("-1e999999999"))])
def test_huge_decimal_exponent_is_exact_or_typed(decimal_and_date, flt):
    """Once decimal.InvalidOperation. A value beyond decimal(6,2) is out of range, and out-of-range
    values compare exactly (specs/format.md §13): no row equals 1e999999999 or is below -1e999999999."""
    assert keys(decimal_and_date, flt) == []
    col, op, v = flt
    if op == "in":      # beside a value in the data, the huge one neither fails nor matches
        assert keys(decimal_and_date, (col, "in", [*v, "1.00"])) == [1]
    else:               # the complement is every row
        assert keys(decimal_and_date, (col, {"=": "!=", "<": ">="}[op], v)) == [1]


def test_nat_on_a_date_column_is_a_typed_error(decimal_and_date):
    with pytest.raises(tf.InvalidFilterError,  # observed: ValueError
                       match=r"filter on 'dd': NaT \(NaTType\) is not a valid date; it is NULL \(NaT\)"):
        decimal_and_date.scan(columns=["k"], filter=("dd", "=", pd.NaT)).to_arrow()
