"""Batch change reads in Spark, with real local Spark (spark_jobs/changes.py): the DataFrame is
Table.changes() exactly, computed in several partitions, with Delta's option names and, on request,
Delta's change feed columns; bad options are typed errors."""
import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tableformat as tf

pytest.importorskip("pyspark")

from helpers import change_history, merge_all, vacuum0  # noqa: E402
from spark_jobs.datasource import NAME  # noqa: E402
from spark_jobs.errors import typed_errors  # noqa: E402
from spark_jobs.read import read_changes  # noqa: E402


def canon(t: pa.Table) -> list:
    """Rows as sorted reprs, timestamps as UTC microseconds (Spark returns them in its session zone)."""
    cols = {n: (c.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()) if pa.types.is_timestamp(c.type) else c)
            for n, c in zip(t.column_names, t.columns)}
    return sorted(repr(sorted(r.items())) for r in pa.table(cols).to_pylist())


def feed(spark, uri, **opts):
    r = spark.read.format(NAME).option("readChangeFeed", "true")
    for k, v in opts.items():
        r = r.option(k, str(v))
    return r.load(uri)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return change_history(tmp_path_factory.mktemp("cdf") / "t", 8, steps=30)


OPTIONS = [dict(mode="all"), dict(mode="net"), dict(mode="all", before_image=True),
           dict(mode="net", before_image=True), dict(mode="all", images="changed"),
           dict(mode="all", skipped=True)]


def test_dataframe_equals_changes_on_a_random_history(spark, history):
    t, versions = history
    rng = random.Random(1)
    pairs = [(versions[0], versions[-1]), tuple(sorted(rng.sample(versions, 2)))]
    for a, b in pairs:
        for kw in OPTIONS:
            want = t.changes(a, b, **kw)
            df = read_changes(spark, t.uri, a, b, **kw)
            assert df.columns == want.column_names
            got = df.toArrow()
            assert canon(got) == canon(want), (a, b, kw)


def test_delta_option_names_are_inclusive_versions_and_timestamps(spark, history):
    t, versions = history
    hist = t.history()
    a, b = versions[3], versions[-4]
    want = t.changes(a - 1, b, mode="net", before_image=True)
    df = feed(spark, t.uri, startingVersion=a, endingVersion=b, mode="net", before_image="true")
    assert canon(df.toArrow()) == canon(want)
    # the commit timestamps themselves: startingTimestamp takes its commit, endingTimestamp too
    iso = {v: tf.Timestamp(hist[v].timestamp).to_datetime().isoformat() for v in (a, b)}
    df = feed(spark, t.uri, startingTimestamp=iso[a], endingTimestamp=iso[b], mode="net", before_image="true")
    assert canon(df.toArrow()) == canon(want)
    # Delta's own spelling: "yyyy-MM-dd HH:mm:ss[.SSSSSS]", UTC
    plain = {v: tf.Timestamp(hist[v].timestamp).to_datetime().strftime("%Y-%m-%d %H:%M:%S.%f") for v in (a, b)}
    df = feed(spark, t.uri, startingTimestamp=plain[a], endingTimestamp=plain[b], mode="net", before_image="true")
    assert canon(df.toArrow()) == canon(want)
    # no end: the latest version
    assert canon(feed(spark, t.uri, startingVersion=a).toArrow()) == canon(t.changes(a - 1))


def test_an_empty_range_is_an_empty_dataframe_with_the_columns(spark, history):
    t, versions = history
    for columns in ("tableformat", "delta"):
        df = read_changes(spark, t.uri, versions[-1], versions[-1], columns=columns, before_image=True)
        want = t.changes(versions[-1], versions[-1], before_image=True).column_names
        assert df.count() == 0 and (df.columns == want if columns == "tableformat" else "_change_type" in df.columns)


def test_computed_in_one_partition_per_part(spark, history):
    t, versions = history
    for mode in ("all", "net"):
        plan = t.change_plan(versions[0], mode=mode)
        df = feed(spark, t.uri, startingVersion=versions[0] + 1, mode=mode)
        assert df.rdd.getNumPartitions() == len(plan.parts) > 1
        per_part = df.rdd.mapPartitions(lambda rows: [sum(1 for _ in rows)]).collect()
        assert sum(1 for n in per_part if n) > 1 and sum(per_part) == t.changes(versions[0], mode=mode).num_rows


def test_num_partitions_packs_parts_by_cost_and_keeps_the_rows(spark, history):
    """numPartitions: at most that many tasks (Spark's per-task cost paid a few times, not once per
    rowset), every part in exactly one of them, balanced by the parts' cost from the log."""
    from spark_jobs.changes import pack, part_cost
    t, versions = history
    for mode in ("all", "net"):
        plan = t.change_plan(versions[0], mode=mode)
        assert len(plan.parts) > 2
        df = feed(spark, t.uri, startingVersion=versions[0] + 1, mode=mode, numPartitions=2)
        assert df.rdd.getNumPartitions() == 2
        assert canon(df.toArrow()) == canon(t.changes(versions[0], mode=mode))
        groups = pack([(None, p) for p in plan.parts], 2)
        assert sorted(map(id, (p for g in groups for _, p in g))) == sorted(map(id, plan.parts))
        loads = sorted(sum(part_cost(p) for _, p in g) for g in groups)
        assert loads[-1] - loads[0] <= max(part_cost(p) for p in plan.parts)   # greedy balance bound
    assert read_changes(spark, t.uri, versions[0], num_partitions=3).rdd.getNumPartitions() == 3
    with pytest.raises(tf.InvalidOptionError, match="numPartitions"):
        with typed_errors():
            feed(spark, t.uri, startingVersion=1, numPartitions="0").collect()


def delta_model(ch: pa.Table, names: list) -> list:
    """Delta's change feed rows from changes(before_image=True), row by row."""
    out = []
    for r in ch.to_pylist():
        meta = {"_commit_version": r["_version"], "_commit_timestamp": r["_timestamp"],
                "_commit_order": r["_commit_order"]}
        after = {n: r[n] for n in names}
        before = {n: r["_before_" + n] for n in names}
        if r["_op"] == "insert":
            out.append({**after, "_change_type": "insert", **meta})
        elif r["_op"] == "delete":
            out.append({**before, "_change_type": "delete", **meta})
        else:
            out.append({**before, "_change_type": "update_preimage", **meta})
            out.append({**after, "_change_type": "update_postimage", **meta})
    return out


@pytest.mark.parametrize("mode", ["all", "net"])
def test_delta_columns_equal_a_model_of_changes(spark, history, mode):
    t, versions = history
    a = versions[2]
    df = feed(spark, t.uri, startingVersion=a + 1, mode=mode, changeFeedColumns="delta")
    names = [c.name for c in t.schema.columns]
    assert df.columns == names + ["_change_type", "_commit_version", "_commit_timestamp", "_commit_order"]
    want = pa.Table.from_pylist(delta_model(t.changes(a, mode=mode, before_image=True), names))
    got = df.toArrow()
    assert canon(got) == canon(want)
    kinds = set(pc.unique(got.column("_change_type")).to_pylist())
    assert kinds == {"insert", "delete", "update_preimage", "update_postimage"}


def test_bad_options_are_typed_errors(spark, tmp_path, history):
    t, versions = history
    with pytest.raises(tf.InvalidOptionError, match="startingVersion 9 is after endingVersion 4"):
        with typed_errors():
            feed(spark, t.uri, startingVersion=9, endingVersion=4).collect()
    with pytest.raises(tf.InvalidOptionError, match="exactly one of startingVersion and startingTimestamp"):
        with typed_errors():
            feed(spark, t.uri).collect()
    with pytest.raises(tf.InvalidOptionError, match="changeFeedColumns"):
        with typed_errors():
            feed(spark, t.uri, startingVersion=1, changeFeedColumns="hudi").collect()
    with pytest.raises(tf.InvalidOptionError, match="skipped"):
        with typed_errors():
            feed(spark, t.uri, startingVersion=1, changeFeedColumns="delta", skipped="true").collect()
    with pytest.raises(tf.InvalidOptionError, match="after the last version"):
        with typed_errors():
            feed(spark, t.uri, startingVersion=versions[-1] + 1).collect()
    with pytest.raises(tf.VersionNotFoundError, match="does not exist"):
        with typed_errors():
            feed(spark, t.uri, startingVersion=versions[-1] + 5).collect()
    with pytest.raises(tf.InvalidOptionError, match="mode"):
        read_changes(spark, t.uri, 0, mode="net", skipped=True)
    # behind the history horizon
    s = tf.create_table(str(tmp_path / "h"), tf.Schema([tf.Column("k", "int64"), tf.Column("v", "int64")],
                                                       primary_key="k"))
    s.insert(pa.table({"k": pa.array([1, 2], pa.int64()), "v": pa.array([1, 2], pa.int64())}))
    s.update(pa.table({"k": pa.array([1], pa.int64()), "v": pa.array([5], pa.int64())}))
    merge_all(s)
    vacuum0(s)
    assert s.state.history_horizon > 1
    with pytest.raises(tf.HistoryExpiredError, match="no longer kept"):
        with typed_errors():
            feed(spark, s.uri, startingVersion=1).collect()
    with pytest.raises(tf.HistoryExpiredError, match="no longer kept"):
        read_changes(spark, s.uri, 0)
    assert feed(spark, s.uri, startingVersion=s.state.history_horizon + 1).count() == 0


def test_a_data_column_named_as_a_delta_change_column_is_a_typed_error_for_the_delta_columns(tmp_path):
    """Review of #44: changeFeedColumns=delta over a table with such a column failed with an untyped
    KeyError; it is a SchemaError naming the column, and the tableformat columns still read."""
    from spark_jobs.changes import change_schema
    t = tf.create_table(str(tmp_path / "t"), tf.Schema([tf.Column("k", "int64"),
                                                        tf.Column("_change_type", "string", nullable=True)],
                                                       primary_key="k"))
    t.insert(pa.table({"k": pa.array([1], pa.int64()), "_change_type": ["x"]}))
    o = {"path": t.uri, "readChangeFeed": "true", "startingVersion": "0"}
    with pytest.raises(tf.SchemaError, match="_change_type.*changeFeedColumns"):
        change_schema({**o, "changeFeedColumns": "delta"})
    assert "_change_type" in change_schema(o).fieldNames()
