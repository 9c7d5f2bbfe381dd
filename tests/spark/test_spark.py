"""Spark: the data source and the pipeline jobs, on local[2], checked against the pure-Python engine."""
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark")

import tableformat as tf  # noqa: E402

from helpers import ROOT, assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema  # noqa: E402

KEY = ["host", "metric", "time"]


@pytest.fixture
def loaded(tmp_path):
    uri = str(tmp_path / "m")
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    t.insert(metrics_rows(3000))
    return uri, t


def to_arrow(df):
    return df.toArrow()


def norm(t: pa.Table, schema=None) -> pa.Table:
    """Spark returns naive UTC timestamps and float-typed NULL decimals via pandas; compare on Python values."""
    cols = {}
    for name in t.column_names:
        col = t.column(name)
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.timestamp("us")).cast(pa.int64())
        cols[name] = col
    return pa.table(cols)


def same(df_or_table, expect: pa.Table):
    got = to_arrow(df_or_table) if not isinstance(df_or_table, pa.Table) else df_or_table
    got = norm(got.select(expect.column_names))
    exp = norm(expect)
    assert_same_rows(got, exp.cast(got.schema) if got.schema != exp.schema else exp)


def test_read_matches_the_engine(spark, loaded):
    uri, t = loaded
    df = spark.read.format("tableformat").load(uri)
    assert [f.name for f in df.schema.fields] == t.schema.names
    same(df, t.scan().to_arrow())
    flt = df.filter("host = 'h003' AND metric = 'mem' AND value > 0")
    same(flt, t.scan(filter=[("host", "=", "h003"), ("metric", "=", "mem"), ("value", ">", 0.0)]).to_arrow())


def test_register_is_the_one_call_a_session_needs(spark, loaded):
    """spark_jobs.register (README "Spark Connect") on a session with Python filter pushdown off,
    which would refuse every read of the source (DATA_SOURCE_PUSHDOWN_DISABLED): it turns it on."""
    import spark_jobs
    uri, t = loaded
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    try:
        spark_jobs.register(spark)
        df = spark.read.format("tableformat").load(uri).filter("metric = 'mem'")
        same(df, t.scan(filter=[("metric", "=", "mem")]).to_arrow())
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")


def test_pushed_filters_prune_partitions(loaded):
    from pyspark.sql.datasource import EqualTo, GreaterThan, StringStartsWith
    from spark_jobs.common import spark_schema
    from spark_jobs.datasource import TableFormatReader
    uri, t = loaded
    reader = TableFormatReader({"path": uri}, spark_schema(t.schema))
    every = len(reader.partitions())
    left = list(reader.pushFilters([EqualTo(("host",), "h003"), EqualTo(("metric",), "mem"),
                                    StringStartsWith(("tag",), "a"), GreaterThan(("value",), 0.5)]))
    assert len(left) == 1 and isinstance(left[0], StringStartsWith)   # the rest is handled by the source
    assert 0 < len(reader.partitions()) < every


def test_sql_view_time_travel_and_pruned_columns(spark, loaded):
    uri, t = loaded
    v1 = t.version
    t.update(metrics_rows(3000).select(KEY).slice(0, 100).append_column("value", pa.array([1000.0] * 100)))
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW m USING tableformat OPTIONS (path '{uri}')")
    assert spark.sql("SELECT count(*) AS n FROM m WHERE value = 1000").collect()[0].n == 100
    old = spark.read.format("tableformat").option("as_of", str(v1)).load(uri)
    assert old.filter("value = 1000").count() == 0
    ts = t.history()[v1].timestamp
    assert spark.read.format("tableformat").option("as_of", f"ts:{ts}").load(uri).filter("value = 1000").count() == 0
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW v (value DOUBLE) USING tableformat OPTIONS (path '{uri}')")
    got = spark.sql("SELECT sum(value) AS s FROM v").collect()[0].s
    ref = t.scan(columns=["value"]).to_arrow()["value"]
    assert got == pytest.approx(float(np.nansum(ref.to_numpy(zero_copy_only=False))), nan_ok=True) or np.isnan(got)
    one = spark.read.format("tableformat").option("columns", "value").load(uri)
    assert one.columns == ["value"] and one.count() == 3000


def test_append_write_enforces_the_primary_key(spark, loaded, tmp_path):
    uri, t = loaded
    extra = metrics_rows(200, start=5000)
    spark.createDataFrame(extra).write.format("tableformat").mode("append").save(uri)
    assert t.version == 2 and t.scan().count() == 3200
    with pytest.raises(Exception, match="DuplicateKeyError"):
        spark.createDataFrame(extra.slice(0, 10)).write.format("tableformat").mode("append").save(uri)
    assert t.version == 2 and t.scan().count() == 3200
    with pytest.raises(Exception, match="TableNotFoundError"):
        spark.createDataFrame(extra).write.format("tableformat").mode("append").save(
            str(tmp_path / "nope"))


def test_partitioned_insert_equals_engine_insert(spark, tmp_path):
    from spark_jobs.insert import partitioned_insert
    data = metrics_rows(4000, seed=4)
    a = tf.create_table(str(tmp_path / "a"), metrics_schema(), partitioning=metrics_partitioning())
    b = tf.create_table(str(tmp_path / "b"), metrics_schema(), partitioning=metrics_partitioning())
    a.insert(data)
    res = partitioned_insert(spark, spark.createDataFrame(data), str(tmp_path / "b"))
    assert res.inserted == 4000 and res.version == 1
    assert_same_rows(b.scan().to_arrow(), a.scan().to_arrow())
    assert {r.tablet for r in b.state.rowsets.values()} == {r.tablet for r in a.state.rowsets.values()}
    dup = spark.createDataFrame(pa.concat_tables([data.slice(0, 5), metrics_rows(5, start=9000)]))
    with pytest.raises(tf.DuplicateKeyError, match="5 key"):
        partitioned_insert(spark, dup, str(tmp_path / "b"))
    assert b.version == 1
    r = partitioned_insert(spark, dup, str(tmp_path / "b"), on_duplicate="ignore")
    assert (r.inserted, r.ignored) == (5, 5)
    dup2 = spark.createDataFrame(metrics_rows(5, start=9000))
    r = partitioned_insert(spark, dup2, str(tmp_path / "b"), on_duplicate="collect", error_path=str(tmp_path / "err"))
    assert (r.inserted, r.ignored) == (0, 5)
    assert pq.read_table(str(tmp_path / "err")).num_rows == 5


def test_failed_job_leaves_the_table_unchanged(spark, loaded):
    from spark_jobs.insert import partitioned_insert
    uri, t = loaded
    bad = metrics_rows(300, start=7000)
    hosts = bad["host"].to_pylist()
    hosts[150] = None                               # one task fails validation
    bad = bad.set_column(0, pa.field("host", pa.string()), pa.array(hosts))
    with pytest.raises(Exception, match="NullValueError|not nullable"):
        partitioned_insert(spark, spark.createDataFrame(bad), uri)
    assert t.version == 1 and t.scan().count() == 3000


def test_mutation_merge_equals_engine_apply(spark, tmp_path):
    from spark_jobs.merge import mutation_merge
    data = metrics_rows(2000, seed=2)
    a = tf.create_table(str(tmp_path / "a"), metrics_schema(), partitioning=metrics_partitioning())
    b = tf.create_table(str(tmp_path / "b"), metrics_schema(), partitioning=metrics_partitioning())
    a.insert(data)
    b.insert(data)
    ops = np.array(["update", "delete", "upsert"], dtype=object)[np.arange(300) % 3]
    batch = data.select(KEY).slice(0, 300).append_column("value", pa.array(np.arange(300, dtype=float)))
    new = metrics_rows(50, start=8000).select(KEY + ["value"])
    mixed = pa.concat_tables([batch, new]).append_column(
        "op", pa.array(list(ops) + ["insert"] * 50))
    ra = a.apply(mixed)
    rb = mutation_merge(spark, spark.createDataFrame(mixed), str(tmp_path / "b"), op_column="op")
    assert (ra.inserted, ra.updated, ra.deleted) == (rb.inserted, rb.updated, rb.deleted) == (50, 200, 100)
    assert_same_rows(b.scan().to_arrow(), a.scan().to_arrow())
    ca, cb = a.changes(1), b.changes(1)
    assert sorted(zip(ca["_op"].to_pylist(), ca["host"].to_pylist(), ca["time"].to_pylist())) == \
        sorted(zip(cb["_op"].to_pylist(), cb["host"].to_pylist(), cb["time"].to_pylist()))
    gone = spark.createDataFrame(data.select(KEY).slice(1, 1))   # deleted above
    with pytest.raises(tf.KeyNotFoundError,
                       match=r"1 key\(s\) not found in table 'b' \(first: \('h001', 'cpu', '2023-11-14"):
        mutation_merge(spark, gone, str(tmp_path / "b"), op="delete")
    assert b.version == 2
    r = mutation_merge(spark, gone, str(tmp_path / "b"), op="delete", on_error="collect",
                       error_path=str(tmp_path / "err"))
    assert r.ignored == 1 and pq.read_table(str(tmp_path / "err")).num_rows == 1


def test_change_export_is_incremental_and_exactly_once(spark, loaded, tmp_path):
    from spark_jobs.export import change_export, export_version, read_watermark
    uri, t = loaded
    out = str(tmp_path / "out")
    t.update(metrics_rows(3000).select(KEY).slice(0, 10).append_column("value", pa.array([1.0] * 10)))
    r1 = change_export(spark, uri, out)
    assert (r1["start"], r1["end"], r1["rows"]) == (0, 2, 3010)
    t.delete(metrics_rows(3000).select(KEY).slice(20, 5))
    t.insert(metrics_rows(7, start=6000))
    export_version(uri, None, out, None, 3)          # a run that died after one of its tasks
    assert read_watermark(out) == 2
    r2 = change_export(spark, uri, out)
    assert (r2["start"], r2["end"], r2["rows"]) == (2, 4, 12)
    assert change_export(spark, uri, out)["rows"] == 0
    exported = pq.read_table(out)
    engine = t.changes(0)
    assert exported.num_rows == engine.num_rows == 3022
    assert sorted(exported["_version"].to_pylist()) == sorted(engine["_version"].to_pylist())


def test_change_export_carries_the_rows_of_a_dropped_range_partition(spark, tmp_path):
    """#34.3: dropping [10, 20) took 10 rows out and the export listed none, so a replica
    applying it kept them. The export holds the ALTER's 10 deletes."""
    from spark_jobs.export import change_export
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double", nullable=True)], primary_key="k")
    part = tf.PartitionSchema(range=tf.RangePartition(["k"], bounds=[(0, 10), (10, 20)]))
    t = tf.create_table(str(tmp_path / "t"), sch, partitioning=part)
    t.insert(pa.table({"k": pa.array(range(20), pa.int64()), "v": [float(i) for i in range(20)]}))
    with t.alter() as a:
        a.drop_range_partition(10, 20)
    out = str(tmp_path / "out")
    assert change_export(spark, t.uri, out)["rows"] == 30
    exported = pq.read_table(out).to_pylist()
    assert sorted((r["_op"], r["k"]) for r in exported if r["_version"] == 2) == [("delete", k) for k in range(10, 20)]


def test_time_travel_backfill(spark, loaded, tmp_path):
    from spark_jobs.backfill import time_travel_backfill
    uri, t = loaded
    t.delete(metrics_rows(3000).select(KEY).slice(0, 100))
    n = time_travel_backfill(spark, uri, 1, str(tmp_path / "bf"),
                             sql="SELECT metric, count(*) AS n FROM source GROUP BY metric")
    got = {r["metric"]: r["n"] for r in pq.read_table(str(tmp_path / "bf")).to_pylist()}
    old = t.scan(as_of=1, columns=["metric"]).to_arrow()["metric"].value_counts().to_pylist()
    assert n == 3 and got == {x["values"]: x["counts"] for x in old}


def test_compaction_job_runs_the_plan_in_parallel(spark, tmp_path):
    from spark_jobs.compaction import compact_table
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(2000)
    for i in range(3):
        t.insert(data.take(pa.array(np.arange(i, 2000, 3))))
    expect = t.scan().to_arrow()
    res = compact_table(spark, str(tmp_path / "m"))
    assert res["actions"] >= 2 and res["committed"] == res["actions"]
    assert len({r["tablet"] for r in res["results"]}) >= 2
    assert_same_rows(t.scan().to_arrow(), expect)
    assert len(t.state.rowsets) < 3 * 8 and t.check().ok
    # after a vacuum with no retention, Spark time travel reads version 1 through UNDO records,
    # also in a session that read (and cached) version 1 from its old files before the vacuum
    v1 = t.scan(as_of=1).to_arrow()
    assert_same_rows(to_arrow(spark.read.format("tableformat").option("as_of", "1").load(str(tmp_path / "m"))), v1)
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert t.state.history_horizon > 1
    old = spark.read.format("tableformat").option("as_of", "1").load(str(tmp_path / "m"))
    assert_same_rows(to_arrow(old), v1)


def _big_and_small(uri):
    """A big rowset and a small one whose keys interleave with all of it (an upsert's new keys)."""
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double")], primary_key=["k"])
    t = tf.create_table(uri, schema, properties={"rowset_target_bytes": 1 << 20})
    t.insert(pa.table({"k": np.arange(0, 40000, 2), "v": np.random.default_rng(0).random(20000)}))
    t.insert(pa.table({"k": np.arange(1, 40000, 400), "v": np.zeros(100)}))
    return t


def test_compaction_job_follows_the_engines_policy(spark, tmp_path):
    """The job rewrites what Table.compact() would: not the big rowset for the small one over
    it (explained), but both once the big one is rewritten for its deleted rows."""
    from spark_jobs.compaction import compact_table
    t = _big_and_small(str(tmp_path / "t"))
    before = set(t.state.rowsets)
    res = compact_table(spark, t.uri)
    assert res["actions"] == 0 and "not rewritten for 1 smaller overlapping rowset(s)" in res["explain"]
    assert set(tf.open_table(t.uri).state.rowsets) == before
    t.delete(pa.table({"k": np.arange(0, 4000, 2)}))           # a tenth of its rows: a rewrite pays
    expect = t.scan().to_arrow()
    res = compact_table(spark, t.uri)
    assert res["committed"] == res["actions"] == 1 and "rewritten anyway" in res["explain"]
    t = tf.open_table(t.uri)
    assert len([r for r in t.state.rowsets.values() if not r.history_only]) == 1
    assert_same_rows(t.scan().to_arrow(), expect, ("k",))


def test_compaction_job_plan_only_prints_what_the_plan_gives_up(tmp_path, capsys):
    from spark_jobs.compaction import main
    t = _big_and_small(str(tmp_path / "t"))
    main(["--table", t.uri, "--plan-only"])
    out = capsys.readouterr().out
    assert out.startswith(f"Compaction plan at version {t.version}: 0 action(s)")
    assert "Given up:" in out and "probe up to 2 rowsets" in out


@pytest.mark.parametrize("job", ["insert", "merge", "export", "backfill", "pipeline", "compaction"])
def test_every_job_has_help(job):
    r = subprocess.run([sys.executable, "-m", f"spark_jobs.{job}", "--help"], capture_output=True, text=True,
                       cwd=str(ROOT))
    assert r.returncode == 0 and "usage" in r.stdout.lower()


def _once(marker, action):
    """A mapInArrow function that runs `action` the first time any task sees a batch (a marker
    file makes it once per test, across tasks and re-runs): a concurrent writer during a job."""
    def fn(batches):
        for b in batches:
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL)
                os.close(fd)
                action()
            except FileExistsError:
                pass
            yield b
    return fn


def _ab_table_racing_a_delete(spark, tmp_path, rows, delete):
    """A table holding a=1, b=2 and a DataFrame of `rows` whose reading runs `delete` of 'a' on the
    table once, during the job."""
    uri = str(tmp_path / "t")
    schema = tf.Schema([tf.Column("key", "string"), tf.Column("val", "int64", nullable=True)], primary_key="key")
    tf.create_table(uri, schema).insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))

    def delete_a():
        getattr(tf.open_table(uri), delete)(pa.table({"key": ["a"]}))
    df = spark.createDataFrame(pa.table(rows).to_pandas())
    return uri, df.mapInArrow(_once(str(tmp_path / "marker"), delete_a), df.schema)


def test_partitioned_insert_ignore_obeys_commit_order(spark, tmp_path):
    """insert_ignore skips 'a' as existing; a delete_ignore of 'a' commits during the job. The log
    says delete, then insert: so the table must hold 'a' with the job's value (the job runs again)."""
    from spark_jobs.insert import partitioned_insert
    uri, df = _ab_table_racing_a_delete(spark, tmp_path, {"key": ["a", "c"], "val": [10, 30]}, "delete_ignore")
    res = partitioned_insert(spark, df, uri, on_duplicate="ignore")
    got = sorted(tf.open_table(uri).to_arrow().to_pylist(), key=lambda r: r["key"])
    assert got == [{"key": "a", "val": 10}, {"key": "b", "val": 2}, {"key": "c", "val": 30}]
    assert (res.inserted, res.ignored) == (2, 0)
    ops = [h.operation for h in tf.open_table(uri).history()]
    assert ops[-2:] == ["DELETE_IGNORE", "INSERT_IGNORE"]


def test_merge_that_loses_to_a_delete_of_its_row_runs_again(spark, tmp_path):
    """The merge updates 'a'; a delete of 'a' commits during the job: the engine's key-level rule
    (the merge's rows must still be live) makes the job plan again, and update_ignore then skips."""
    from spark_jobs.merge import mutation_merge
    uri, df = _ab_table_racing_a_delete(spark, tmp_path, {"key": ["a", "b"], "val": [10, 20]}, "delete")
    res = mutation_merge(spark, df, uri, op="update_ignore")
    got = sorted(tf.open_table(uri).to_arrow().to_pylist(), key=lambda r: r["key"])
    assert got == [{"key": "b", "val": 20}]
    assert (res.updated, res.ignored) == (1, 1)


def test_jobs_with_nothing_to_write_commit_nothing(spark, tmp_path):
    """An empty input (every task empty): the insert and the merge return their zero counts and
    leave the log as it was."""
    from spark_jobs.insert import partitioned_insert
    from spark_jobs.merge import mutation_merge
    uri = str(tmp_path / "t")
    schema = tf.Schema([tf.Column("key", "string"), tf.Column("val", "int64", nullable=True)], primary_key="key")
    t = tf.create_table(uri, schema)
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    empty = spark.createDataFrame([], "key string, val long")
    res = partitioned_insert(spark, empty, uri)
    assert (res.version, res.inserted) == (1, 0)
    res = mutation_merge(spark, empty, uri, op="upsert")
    assert (res.version, res.inserted, res.updated) == (1, 0, 0)
    assert tf.open_table(uri).version == 1
