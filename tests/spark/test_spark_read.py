"""Native Spark reads (spark_jobs.read): Spark's Parquet reader over the base files, REDO records
applied in the JVM, per-rowset fallback to the Python data source. Every read equals the
engine's own scan of the same snapshot. Table.inspect's metadata tables read as Spark views."""
import decimal
import logging

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf

from helpers import replaced_base_file_table, T0, assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema

pyspark = pytest.importorskip("pyspark")

KEY = ["host", "metric", "time"]
PYTHON_SCAN = "BatchScan tableformat"      # how the Python data source shows in a physical plan


@pytest.fixture(autouse=True)
def join_path(monkeypatch):
    """This file tests Spark's Parquet scan plus a join; the JVM connector has its own suite
    (test_spark_connector.py), which runs the same cases."""
    monkeypatch.setenv("TABLEFORMAT_SPARK_READ", "join")


def to_arrow(df, expect: pa.Schema) -> pa.Table:
    got = df.toArrow()
    return got.cast(expect) if got.num_rows else expect.empty_table()


def same(df, expect: pa.Table):
    """Equal rows, in any order (sorted by the key, or by every column when the key is not read)."""
    sort = KEY if set(KEY) <= set(expect.column_names) else expect.column_names
    assert_same_rows(to_arrow(df, expect.schema), expect, sort)


def plan_text(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def keys(t, rows):
    return t.select(KEY).take(pa.array(rows))


@pytest.fixture
def mutated(tmp_path):
    """A table whose rowsets are clean, updated, deleted from and reinserted into, with NaN,
    NULL and decimal values among the updates; and the versions before and after."""
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(3000)
    t.insert(data)
    v1 = t.version
    t.insert(metrics_rows(600, seed=2, start=3000))          # more rowsets, left clean
    upd = keys(data, range(0, 300, 3))
    n = upd.num_rows
    t.update(upd.append_column("value", pa.array([np.nan if i % 5 == 0 else float(i) for i in range(n)]))
             .append_column("price", pa.array([None if i % 4 == 0 else decimal.Decimal(i).scaleb(-2)
                                              for i in range(n)], pa.decimal128(18, 2))))
    t.update(keys(data, range(0, 300, 6)).append_column("tag", pa.array([None, "x"] * 25)))
    t.update(keys(data, range(0, 90, 9)).append_column("value", pa.array([-1.5] * 10)))   # newer wins
    t.delete(keys(data, range(1, 400, 7)))
    gone = data.take(pa.array([8, 15]))                      # deleted above, then inserted again
    t.insert(gone.set_column(3, "value", pa.array([111.0, 222.0])))
    t.update(keys(data, [8]).append_column("value", pa.array([333.0])))
    return t, v1


def test_current_read_with_updates_deletes_and_reinserts_matches_the_engine(spark, mutated):
    from spark_jobs.read import read_table
    t, _ = mutated
    plan = t.snapshot().read_plan()
    assert any(r.clean for r in plan.rowsets) and any(not r.clean for r in plan.rowsets)
    df = read_table(spark, t.uri)
    assert "FileScan parquet" in plan_text(df) and PYTHON_SCAN not in plan_text(df)
    assert "max_by" in plan_text(df)     # several REDO files per rowset: the newest change wins
    same(df, t.scan().to_arrow())
    same(read_table(spark, t.uri, columns=["value", "host"]), t.scan(["value", "host"]).to_arrow())
    assert read_table(spark, t.uri).count() == t.scan().count()


def test_as_of_version_and_timestamp(spark, mutated):
    from spark_jobs.read import read_table
    t, v1 = mutated
    same(read_table(spark, t.uri, as_of=v1), t.scan(as_of=v1).to_arrow())
    mid = t.version - 2
    same(read_table(spark, t.uri, as_of=str(mid)), t.scan(as_of=mid).to_arrow())
    ts = t.history()[mid].timestamp
    same(read_table(spark, t.uri, as_of=tf.Timestamp(ts + 1)), t.scan(as_of=mid).to_arrow())


def test_filters_equal_the_engine(spark, mutated):
    from spark_jobs.read import read_table
    t, _ = mutated
    for flt in [("value", ">", 0.5), ("value", ">=", float("nan")), [("host", "=", "h003"), ("value", "<", 0.0)],
                ("tag", "is null"), ("metric", "in", ["cpu", None]), ("time", "<", T0 + 30 * 3_000_000_000),
                ("price", ">=", decimal.Decimal("5000.00")), ("value", "!=", -1.5)]:
        same(read_table(spark, t.uri, filter=flt), t.scan(filter=flt).to_arrow())
    same(read_table(spark, t.uri, columns=["price"], filter=("value", "=", -1.5)),
         t.scan(["price"], filter=("value", "=", -1.5)).to_arrow())
    with pytest.raises(tf.InvalidFilterError, match=r"filter on 'value': 'x' \(str\) is not a valid double"):
        read_table(spark, t.uri, filter=("value", ">", "x"))
    with pytest.raises(tf.UnknownScanColumnError, match=r"unknown column\(s\) \['nope'\]"):
        read_table(spark, t.uri, columns=["nope"])


def test_nan_rows_are_not_lost_to_parquet_statistics(spark, tmp_path):
    """Parquet min/max leave NaN out: a row group of small numbers and NaN still matches `> 0.5`."""
    from spark_jobs.read import read_table
    t = tf.create_table(str(tmp_path / "n"), metrics_schema())
    t.insert(metrics_rows(50).set_column(3, "value", pa.array([0.1, np.nan] * 25)))
    for flt in [("value", ">", 0.5), ("value", ">=", 0.1), ("value", "!=", 0.1), ("value", "in", [np.nan]),
                ("value", "<", np.nan), ("value", "=", np.nan)]:
        expect = t.scan(filter=flt).to_arrow()
        assert expect.num_rows
        same(read_table(spark, t.uri, filter=flt), expect)


def test_dropped_readded_and_renamed_columns(spark, tmp_path):
    from spark_jobs.read import read_table
    t = tf.create_table(str(tmp_path / "a"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(500)
    t.insert(data)
    v_before = t.version
    with t.alter() as a:
        a.drop_column("tag")
        a.add_column("tag", "string", default="fresh")      # a new column ID: old tags never show
        a.add_column("n", "int32", nullable=False, default=7)
        a.rename_column("value", "v")
    t.insert(metrics_rows(100, seed=5, start=500).drop(["tag", "value"]))
    t.update(keys(data, range(0, 50, 5)).append_column("n", pa.array(list(range(10)), pa.int32())))
    t.update(keys(data, range(0, 50, 10)).append_column("tag", pa.array(["u"] * 5)))
    expect = t.scan().to_arrow()
    assert set(expect.column("tag").to_pylist()) == {"u", "fresh"}      # old rows read the read default
    same(read_table(spark, t.uri), expect)
    old = read_table(spark, t.uri, as_of=v_before)
    assert old.columns == metrics_schema().names
    same(old, t.scan(as_of=v_before).to_arrow())


def test_several_column_groups_are_joined_on_row_index(spark, tmp_path):
    from spark_jobs.read import read_table
    t = tf.create_table(str(tmp_path / "g"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(2000)
    t.insert(data)
    t.update(keys(data, range(0, 2000, 2)).append_column("value", pa.array([2.5] * 1000)))
    rs = max(t.state.rowsets.values(), key=lambda r: r.num_rows)
    action = tf.CompactionAction("major_delta", rs.tablet, (rs.id,), 1.0, "test", 0,
                                 (t.schema.column("value").id,))
    t.compact(tf.CompactionPlan((action,), 0, t.version))
    assert len(t.state.rowsets[rs.id].base) == 2
    t.update(keys(data, range(1, 2000, 10)).append_column("price", pa.array([None] * 200, pa.decimal128(18, 2))))
    same(read_table(spark, t.uri), t.scan().to_arrow())
    same(read_table(spark, t.uri, columns=["value"]), t.scan(["value"]).to_arrow())


def test_compacted_table_is_a_plain_parquet_scan(spark, tmp_path):
    from spark_jobs.read import read_table
    t = tf.create_table(str(tmp_path / "c"), metrics_schema(), partitioning=metrics_partitioning())
    t.insert(metrics_rows(1000))
    df = read_table(spark, t.uri).selectExpr("sum(value)")
    text = plan_text(df)
    assert "FileScan parquet" in text
    for python_or_join in ("BatchEvalPython", "ArrowEvalPython", PYTHON_SCAN, "Join"):
        assert python_or_join not in text
    assert "ReadSchema: struct<c3:double>" in text        # only the value column is decoded
    # one updated rowset: only its rows are joined with the deltas
    data = metrics_rows(1000)
    t.update(keys(data, [0]).append_column("value", pa.array([5.0])))
    text = plan_text(read_table(spark, t.uri))
    assert text.count("Join") == 1 and "BroadcastHashJoin" in text   # the updated rowset's rows with its changes
    assert "Union" in text                                            # ... beside the clean rowsets' plain scan
    assert "max_by" not in text          # one commit's REDO file: its records are the changes, no aggregation
    same(read_table(spark, t.uri), t.scan().to_arrow())


def test_register_view_and_sql(spark, mutated):
    from spark_jobs.read import register_view
    t, v1 = mutated
    register_view(spark, "tf_metrics", t.uri)
    got = spark.sql("SELECT host, count(*) AS n, sum(price) AS p FROM tf_metrics GROUP BY host").toArrow()
    expect = t.scan().to_arrow().group_by("host").aggregate([("host", "count"), ("price", "sum")])
    assert dict(zip(got["host"].to_pylist(), zip(got["n"].to_pylist(), got["p"].to_pylist()))) == \
        dict(zip(expect["host"].to_pylist(), zip(expect["host_count"].to_pylist(), expect["price_sum"].to_pylist())))
    register_view(spark, "tf_old", t.uri, as_of=v1)
    assert spark.sql("SELECT count(*) AS n FROM tf_old").collect()[0].n == t.scan(as_of=v1).count()


def test_forcing_each_path(spark, mutated, caplog):
    from spark_jobs.read import read_table
    t, _ = mutated
    expect = t.scan().to_arrow()
    with caplog.at_level(logging.WARNING, logger="spark_jobs.read"):
        py = read_table(spark, t.uri, path="python")
    assert PYTHON_SCAN in plan_text(py) and "FileScan parquet" not in plan_text(py)
    assert [r.message for r in caplog.records if "Python data source" in r.message]
    same(py, expect)
    nat = read_table(spark, t.uri, path="native")
    assert "FileScan parquet" in plan_text(nat) and PYTHON_SCAN not in plan_text(nat)
    same(nat, expect)
    with pytest.raises(tf.InvalidOptionError, match="path must be one of .*, got 'jvm'"):
        read_table(spark, t.uri, path="jvm")


def test_object_store_scheme_falls_back_unless_declared(spark, s3_table_root, caplog):
    from spark_jobs.read import read_table
    root, opts = s3_table_root
    t = tf.create_table(root + "/m", metrics_schema(), partitioning=metrics_partitioning(), storage_options=opts)
    data = metrics_rows(400)
    t.insert(data)
    t.update(keys(data, range(0, 40, 2)).append_column("value", pa.array([9.0] * 20)))
    with caplog.at_level(logging.WARNING, logger="spark_jobs.read"):
        df = read_table(spark, t.uri, storage_options=opts)
    lines = [r.message for r in caplog.records if "Python data source" in r.message]
    assert len(lines) == 1 and "s3://" in lines[0]
    same(df, t.scan().to_arrow())
    with pytest.raises(tf.NativeReadUnavailableError, match="jvm_schemes"):
        read_table(spark, t.uri, storage_options=opts, path="native")


def test_version_behind_the_history_horizon_falls_back_per_rowset(spark, tmp_path, caplog):
    from spark_jobs.read import read_table
    t = tf.create_table(str(tmp_path / "h"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(2000)
    t.insert(data)
    t.update(keys(data, range(0, 2000, 4)).append_column("value", pa.array([4.0] * 500)))
    old = t.version
    expect_old = t.scan(as_of=old).to_arrow()
    t.update(keys(data, range(0, 2000, 8)).append_column("value", pa.array([8.0] * 250)))
    t.delete(keys(data, range(3, 2000, 50)))
    # major-delta compact one rowset: its history is now in UNDO records
    rs = max(t.state.rowsets.values(), key=lambda r: r.num_rows)
    action = tf.CompactionAction("major_delta", rs.tablet, (rs.id,), 1.0, "test", 0,
                                 (t.schema.column("value").id,))
    t.compact(tf.CompactionPlan((action,), 0, t.version))
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert t.state.history_horizon > old
    plan = t.snapshot(old).read_plan()
    assert plan.read_ts is not None
    assert sum(not r.native for r in plan.rowsets) == 1 and len(plan.rowsets) > 1
    with caplog.at_level(logging.WARNING, logger="spark_jobs.read"):
        df = read_table(spark, t.uri, as_of=old)
    lines = [r.message for r in caplog.records if "Python data source" in r.message]
    assert len(lines) == 1 and "1 of" in lines[0] and "UNDO" in lines[0]
    assert PYTHON_SCAN in plan_text(df) and "FileScan parquet" in plan_text(df)   # the others stay native
    same(df, expect_old)
    assert t.scan(as_of=old).to_arrow().num_rows == expect_old.num_rows
    with pytest.raises(tf.NativeReadUnavailableError, match="UNDO"):
        read_table(spark, t.uri, as_of=old, path="native")
    same(read_table(spark, t.uri), t.scan().to_arrow())


def test_empty_table_and_pruned_to_nothing(spark, metrics_table):
    from spark_jobs.read import read_table
    df = read_table(spark, metrics_table.uri)
    assert df.count() == 0 and df.columns == metrics_schema().names
    metrics_table.insert(metrics_rows(100))
    assert read_table(spark, metrics_table.uri, filter=("host", "=", "nobody")).count() == 0


def test_rowsets_whose_join_keys_would_clash_are_read_apart(spark, tmp_path):
    """Deltas are joined on (base file size << 32 | row index): rowsets with base files of one
    size are read by separate scans, or each would take the other's changes."""
    from spark_jobs.read import read_table
    t = tf.create_table(str(tmp_path / "k"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(8)
    for i in range(8):                       # one-row rowsets: several base files of one size
        t.insert(data.slice(i, 1))
    sizes = [r.base[0].size for r in t.state.rowsets.values()]
    assert len(set(sizes)) < len(sizes)
    t.update(keys(data, range(8)).append_column("value", pa.array([float(i) for i in range(8)])))
    df = read_table(spark, t.uri)
    assert plan_text(df).count("BroadcastHashJoin") == len(sizes) - len(set(sizes)) + 1
    same(df, t.scan().to_arrow())
    assert sorted(r.value for r in read_table(spark, t.uri, columns=["value"]).collect()) == [float(i) for i in range(8)]


def test_a_replaced_base_file_with_deltas_is_refused(spark, tmp_path):
    """The join key holds the base file's size, so the read checks it against the log's (§8.2)."""
    from spark_jobs.read import read_table
    t = replaced_base_file_table(tmp_path / "r")
    with pytest.raises(Exception, match="does not have the size the table log recorded"):
        read_table(spark, t.uri).collect()


# --- Table.inspect as Spark views (spark_jobs.metadata_tables) --------------------------------

def test_views_equal_inspect(spark, table_uri):
    from spark_jobs.metadata_tables import register_metadata_views
    t = tf.create_table(table_uri, metrics_schema(), metrics_partitioning())
    rows = metrics_rows(600)
    t.insert(rows)
    t.delete(rows.slice(0, 60).select(["host", "metric", "time"]))
    views = register_metadata_views(spark, "metrics", table_uri)
    assert views == [f"metrics__{k}" for k in ("history", "tablets", "rowsets", "deltas", "files", "tags")]
    r = t.inspect("rowsets")
    got = spark.sql("SELECT sum(rows), sum(deleted_rows), count(*) FROM metrics__rowsets").collect()[0]
    assert tuple(got) == (sum(r.column("rows").to_pylist()), 60, r.num_rows)
    first = spark.sql("SELECT min_key.host AS h FROM metrics__rowsets ORDER BY min_key_hex LIMIT 1").collect()[0]
    assert first.h == r.sort_by("min_key_hex").column("min_key")[0].as_py()["host"]
    ops = [x.operation for x in spark.sql("SELECT operation FROM metrics__history ORDER BY version").collect()]
    assert ops == ["CREATE TABLE", "INSERT", "DELETE"]
    assert spark.sql("SELECT count(*) FROM metrics__tags").collect()[0][0] == 0
    assert spark.sql("SELECT count(*) FROM metrics__files WHERE kind = 'redo'").collect()[0][0] == \
        t.inspect("deltas").num_rows


def test_bad_arguments(spark, table_uri):
    from spark_jobs.metadata_tables import register_metadata_views
    tf.create_table(table_uri, metrics_schema(), metrics_partitioning())
    with pytest.raises(tf.InvalidOptionError, match="kinds"):
        register_metadata_views(spark, "m", table_uri, kinds=["snapshots"])
    with pytest.raises(tf.InvalidOptionError, match="view name"):
        register_metadata_views(spark, "m; drop", table_uri)
    with pytest.raises(tf.TableNotFoundError, match=r"' \(no _log/ commits\)"):
        register_metadata_views(spark, "m", table_uri + "-nope")
