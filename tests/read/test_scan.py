"""Scans: exact filters under pruning, projections, ordering, snapshots and time travel."""
import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tableformat as tf

from helpers import T0, assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema

DATA = metrics_rows(4000, seed=1)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("scan") / "metrics")
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning(),
                        properties={"rowset_target_bytes": 1 << 16, "row_group_rows": 256,
                                    "pk_index_block_rows": 64})
    t.insert(DATA.slice(0, 2500))
    t.insert(DATA.slice(2500))
    return t


_CMP = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
        ">=": pc.greater_equal}


def _float_compare(c, op, v):
    """Spark's order on floats: NaN = NaN and above every number, -0.0 = 0.0 (IEEE == already)."""
    nan = pc.is_nan(c)
    if v != v:
        return {"=": nan, ">=": nan, "!=": pc.invert(nan), "<": pc.invert(nan), "<=": pc.is_valid(c),
                ">": pc.and_(nan, pa.scalar(False))}[op]      # > NaN: nothing
    ieee = _CMP[op](c, pa.scalar(v, c.type))          # false for NaN, except != (true)
    return pc.or_(ieee, nan) if op in (">", ">=") else ieee


def reference(data: pa.Table, flt) -> pa.Table:
    """The same filter in plain pyarrow, written independently of tableformat's code."""
    mask = pa.array([True] * data.num_rows)
    for col, op, *rest in flt:
        c = data[col]
        v = rest[0] if rest else None
        is_float = pa.types.is_floating(c.type)
        if op == "is null":
            m = pc.is_null(c)
        elif op == "is not null":
            m = pc.is_valid(c)
        elif op == "in" and is_float:
            m = pa.array([False] * data.num_rows)
            for x in v:
                m = pc.or_(m, pc.fill_null(_float_compare(c, "=", x), False))
        elif op == "in":
            m = pc.is_in(c, value_set=pa.array(v, c.type))
        elif is_float:
            m = _float_compare(c, op, v)
        else:
            m = _CMP[op](c, pa.scalar(v, c.type))
        mask = pc.and_(mask, pc.fill_null(m, False))
    return data.filter(mask)


HOSTS = [f"h{i:03d}" for i in range(22)]
TIMES = [T0 + i * 3_000_000_000 for i in range(0, 70, 3)] + [T0 + 1, T0 - 5]

term = st.one_of(
    st.tuples(st.just("host"), st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), st.sampled_from(HOSTS)),
    st.tuples(st.just("host"), st.just("in"), st.lists(st.sampled_from(HOSTS), max_size=4)),
    st.tuples(st.just("metric"), st.sampled_from(["=", "!=", "<", ">="]), st.sampled_from(["cpu", "mem", "disk", "x"])),
    st.tuples(st.just("metric"), st.just("in"), st.lists(st.sampled_from(["cpu", "mem", "disk"]), max_size=3)),
    st.tuples(st.just("time"), st.sampled_from(["=", "<", "<=", ">", ">="]), st.sampled_from(TIMES)),
    st.tuples(st.just("value"), st.sampled_from(["<", ">", ">=", "<="]), st.floats(-2, 2)),
    st.tuples(st.just("price"), st.sampled_from(["<", ">", "="]),
              st.integers(0, 10**6).map(lambda x: decimal.Decimal(x).scaleb(-2))),
    st.tuples(st.sampled_from(["value", "price", "tag"]), st.sampled_from(["is null", "is not null"])),
    st.tuples(st.just("tag"), st.sampled_from(["=", "!=", "in"]), st.sampled_from(["a", "b", "zz"]))
    .map(lambda t: (t[0], t[1], [t[2]] if t[1] == "in" else t[2])),
)


def _ts(flt):
    out = []
    for t in flt:
        if t[0] == "time":
            t = (t[0], t[1], pa.scalar(t[2], pa.timestamp("us", tz="UTC")).as_py())
        out.append(t)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(term, max_size=4))
def test_filters_are_exact(loaded, flt):
    flt = _ts(flt)
    got = loaded.scan(filter=flt).to_arrow()
    assert_same_rows(got, reference(DATA, flt))


def test_point_lookup_reads_one_rowset_and_few_rows(loaded):
    row = DATA.slice(1234, 1).to_pylist()[0]
    flt = [("host", "=", row["host"]), ("metric", "=", row["metric"]), ("time", "=", row["time"])]
    sc = loaded.scan(filter=flt)
    tasks = sc.plan()
    assert len(tasks) == 1
    assert tasks[0].stop - tasks[0].start == 1       # the PK index seek found exactly one row
    assert sc.to_arrow().to_pylist() == [row]


def _tablets(table, flt):
    from tableformat.read.predicate import column_bounds, parse_filter
    from tableformat.read.scan import prune_tablets
    st = table.state
    return set(prune_tablets(st, column_bounds(parse_filter(st.schema, flt))))


def test_hash_pruning_needs_every_hashed_column(loaded):
    assert len(_tablets(loaded, [])) == 8
    assert len(_tablets(loaded, [("host", "=", "h001")])) == 8     # host alone cannot prune (host, metric)
    both = _tablets(loaded, [("host", "=", "h001"), ("metric", "=", "cpu")])
    assert len(both) == 2                                          # one bucket x two ranges
    assert len(_tablets(loaded, [("host", "in", ["h001", "h002"]), ("metric", "=", "cpu")])) <= 4
    ranged = _tablets(loaded, [("host", "=", "h001"), ("metric", "=", "cpu"), ("time", ">=", T0 + 10**11 + 1)])
    assert len(ranged) == 1 and ranged <= both
    assert len(_tablets(loaded, [("time", "<", T0 + 5)])) == 4     # range level prunes alone
    # the pruned plan still finds every matching row
    flt = [("host", "=", "h001"), ("metric", "=", "cpu")]
    assert {t.rowset.tablet for t in loaded.scan(filter=flt).plan()} <= both
    assert loaded.scan(filter=[("host", "in", [])]).plan() == []


def test_stats_prune_rowsets(loaded):
    assert loaded.scan(filter=[("price", ">", decimal.Decimal("99999999"))]).plan() == []
    # NaN is above every number (specs/format.md §13): only rowsets holding NaN can match.
    vid = loaded.schema.column("value").id
    with_nan = {rs.id for rs in loaded.state.rowsets.values() if rs.stats[vid]["nan"] > 0}
    plan = loaded.scan(filter=[("value", ">", 1e9)]).plan()
    assert {t.rowset.id for t in plan} == with_nan
    got = loaded.scan(filter=[("value", ">", 1e9)]).to_arrow()["value"]
    assert len(got) == pc.sum(pc.is_nan(DATA["value"])).as_py() > 0 and pc.all(pc.is_nan(got)).as_py()
    assert loaded.scan(filter=[("value", "<", -1e9)]).plan() == []


def test_key_range_seek_reads_only_rows_in_range(loaded):
    flt = [("host", "=", "h003"), ("metric", "=", "mem")]
    tasks = loaded.scan(filter=flt).plan()
    read = sum(t.stop - t.start for t in tasks)
    expect = reference(DATA, flt).num_rows
    assert read == expect


def test_projection_and_order(loaded):
    got = loaded.scan(columns=["value", "host"], ordered=True).to_arrow()
    assert got.column_names == ["value", "host"]
    keyed = loaded.scan(columns=["host", "metric", "time"], ordered=True).to_arrow()
    expect = DATA.select(["host", "metric", "time"]).sort_by([("host", "ascending"), ("metric", "ascending"),
                                                               ("time", "ascending")])
    assert keyed.to_pylist() == expect.to_pylist()
    with pytest.raises(tf.InvalidFilterError, match="unknown column"):
        loaded.scan(columns=["nope"])


def test_reader_and_batches(loaded):
    r = loaded.scan(filter=[("metric", "=", "cpu")]).to_reader()
    assert isinstance(r, pa.RecordBatchReader)
    assert r.read_all().num_rows == reference(DATA, [("metric", "=", "cpu")]).num_rows
    assert sum(b.num_rows for b in loaded.scan()) == DATA.num_rows
    assert loaded.scan(filter=[("host", "=", "zzz")]).to_arrow().schema == loaded.schema.arrow_schema()


@pytest.mark.parametrize("flt,msg", [
    ([("nope", "=", 1)], "unknown column"), ([("host", "~", "a")], "unknown filter operator"),
    ([("time", "=", "not a time")], "not a valid"), ([("host", "in", "abc")], "needs a list"),
    ([("host", "=")], "needs a value"), ("host = 1", "must be"), ([("host", "=", None)], "is null"),
])
def test_bad_filters(loaded, flt, msg):
    with pytest.raises(tf.InvalidFilterError, match=msg):
        loaded.scan(filter=flt)


def test_time_travel_by_version_timestamp_and_datetime(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), metrics_schema())
    r1 = t.insert(DATA.slice(0, 100))
    r2 = t.insert(DATA.slice(100, 50))
    assert t.scan(as_of=0).count() == 0
    assert t.scan(as_of=1).count() == 100
    assert t.scan(as_of=r1.timestamp).count() == 100
    assert t.scan(as_of=tf.Timestamp(r2.timestamp - 1)).count() == 100
    assert t.scan(as_of=r2.timestamp).count() == 150
    assert t.scan(as_of=r1.timestamp.to_datetime()).count() == 100
    assert t.scan(as_of=r2.timestamp.to_datetime().isoformat()).count() == 150
    with pytest.raises(tf.VersionNotFoundError, match=r"version 3 does not exist; versions are 0\.\.2"):
        t.scan(as_of=3)
    with pytest.raises(tf.VersionNotFoundError, match="before the table was created"):
        t.scan(as_of=dt.datetime(2000, 1, 1))
    with pytest.raises(tf.InvalidOptionError,
                       match=r"as_of must be a version \(int\), a tf\.Timestamp, a datetime or an ISO string; got"):
        t.scan(as_of=1.5)


def test_snapshot_is_stable_while_table_moves(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), metrics_schema())
    t.insert(DATA.slice(0, 100))
    snap = t.snapshot()
    other = tf.open_table(str(tmp_path / "t"))
    other.insert(DATA.slice(100, 100))
    assert snap.scan().count() == 100
    assert snap.scan(filter=[("metric", "=", "cpu")]).count() == reference(DATA.slice(0, 100), [("metric", "=", "cpu")]).num_rows
    assert t.scan().count() == 200        # a fresh scan sees the new commit
    assert snap.version == 1
