"""Spark on HDFS (local[2], the shared session): the JVM connector reads hdfs:// tables natively with
no `jvm_schemes` (pyspark's Hadoop client has HDFS), and the insert, merge, compaction, export and
backfill jobs run against hdfs:// URIs with the table's storage_options."""
import logging

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import tableformat as tf  # noqa: E402

from helpers import assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema  # noqa: E402

KEY = ["host", "metric", "time"]


def test_spark_jobs_on_hdfs(spark, hdfs_table_root, caplog):
    from spark_jobs.backfill import time_travel_backfill
    from spark_jobs.compaction import compact_table
    from spark_jobs.export import change_export
    from spark_jobs.insert import partitioned_insert
    from spark_jobs.merge import mutation_merge
    from spark_jobs.read import read_table
    root, opts = hdfs_table_root
    uri = f"{root}/m"
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning(), storage_options=opts)
    data = metrics_rows(3000)
    for i in range(3):      # overlapping rowsets, so compaction has work
        part = data.take(pa.array(np.arange(i, 3000, 3)))
        partitioned_insert(spark, spark.createDataFrame(part.to_pandas()), uri, storage_options=opts)
    upd = data.select(KEY).slice(0, 300).append_column("value", pa.array([7.5] * 300))
    mutation_merge(spark, spark.createDataFrame(upd.to_pandas()), uri, op="update", storage_options=opts)
    t = tf.open_table(uri, storage_options=opts)
    assert t.version == 4 and t.scan(filter=[("value", "=", 7.5)]).count() == 300
    expect = t.scan().to_arrow()

    # the connector reads hdfs:// natively: no jvm_schemes, no rowset through the Python source
    with caplog.at_level(logging.WARNING, logger="spark_jobs.read"):
        df = read_table(spark, uri, storage_options=opts, path="native")
        plan = df._jdf.queryExecution().executedPlan().toString()
        assert "BatchScan tableformat_jvm" in plan, plan
        assert_same_rows(df.toArrow().cast(expect.schema), expect)
    assert not [r for r in caplog.records if "Python data source" in r.message]

    res = compact_table(spark, uri, storage_options=opts)
    assert res["actions"] >= 1 and res["committed"] == res["actions"]
    t = tf.open_table(uri, storage_options=opts)
    assert_same_rows(t.scan().to_arrow(), expect)
    assert t.check().ok

    out = f"{root}/changes"              # the export's output on HDFS too
    r = change_export(spark, uri, out, storage_options=opts, output_options=opts)
    assert (r["start"], r["end"], r["rows"]) == (0, t.version, 3300)      # compactions change no row
    assert change_export(spark, uri, out, storage_options=opts, output_options=opts)["rows"] == 0

    bf = f"{root}/backfill"              # written by Spark's own Parquet writer through hdfs://
    n = time_travel_backfill(spark, uri, 1, bf, storage_options=opts,
                             sql="SELECT metric, count(*) AS n FROM source GROUP BY metric")
    got = {row["metric"]: row["n"] for row in spark.read.parquet(bf).collect()}
    old = t.scan(as_of=1, columns=["metric"]).to_arrow()["metric"].value_counts().to_pylist()
    assert n == 3 and got == {x["values"]: x["counts"] for x in old}


@pytest.mark.parametrize("uri", ["hdfs://namenode:8020/w/m", "webhdfs://namenode:9870/w/m"])
def test_hadoop_schemes_need_no_jvm_schemes(uri):
    from spark_jobs.jvm_paths import jvm_path, jvm_unreadable
    storage = tf.Storage(uri)                 # no request: WebHDFS is asked only on I/O
    assert jvm_unreadable(storage, ()) is None
    assert jvm_path(storage, "tablets/a/base.parquet") == uri + "/tablets/a/base.parquet"
    assert "jvm_schemes" in jvm_unreadable(tf.Storage("memory://w/m"), ())


def test_a_delta_mirror_names_hdfs_files_with_their_namenode():
    from tableformat.interop.delta_mirror import file_uri
    storage = tf.Storage("hdfs://namenode:8020/w/m")
    assert file_uri(storage, "tablets/r0/base 1.parquet") == "hdfs://namenode:8020/w/m/tablets/r0/base%201.parquet"


def test_a_catalog_warehouse_on_hdfs(spark, hdfs_table_root):
    """The Spark catalog's warehouse on hdfs:// (issue #37 item 3): SHOW TABLES, a query its
    WHERE prunes and VERSION AS OF read the NameNode's files through Hadoop's own HDFS client,
    and give the engine's rows."""
    from spark_jobs.connector import loaded
    from helpers import range_keyed
    why = loaded(spark)
    if why:
        pytest.skip(f"the JVM connector is unavailable: {why}")
    root, opts = hdfs_table_root
    t = range_keyed(f"{root}/wh/db/t", ranges=4, storage_options=opts)
    t.delete(pa.table({"k": pa.array([5, 250], pa.int64())}))
    spark.conf.set("spark.sql.catalog.tfhdfs", "tableformat.catalog.TableFormatCatalog")
    spark.conf.set("spark.sql.catalog.tfhdfs.warehouse", f"{root}/wh")
    assert [r.tableName for r in spark.sql("SHOW TABLES IN tfhdfs.db").collect()] == ["t"]
    q = spark.sql("SELECT k, v FROM tfhdfs.db.t WHERE k >= 200 AND k < 300")
    plan = q._jdf.queryExecution().executedPlan().toString()
    assert "(1 rowsets" in plan, plan
    want = t.scan(columns=["k"], filter=[("k", ">=", 200), ("k", "<", 300)]).to_arrow()["k"].to_pylist()
    assert sorted(q.toArrow()["k"].to_pylist()) == sorted(want) and 250 not in want
    n = spark.sql("SELECT count(*) AS n FROM tfhdfs.db.t VERSION AS OF 1").collect()[0].n
    assert n == t.scan(as_of=1).count() == 400


@pytest.mark.parametrize("name", ["with space", "br[ack]et{s}", "pct%20kept"])
def test_a_location_with_spaces_brackets_or_percent_signs_on_hdfs(spark, hdfs_table_root, name):
    """Issue #44 item 7 on hdfs://: the JVM opens a location with its characters as given (never
    decoded, parsed as a java.net.URI or globbed), through read_table, register_view and a catalog
    warehouse, and gives the engine's rows."""
    from spark_jobs.connector import loaded
    from spark_jobs.read import read_table, register_view
    from helpers import range_keyed, spark_catalog
    why = loaded(spark)
    if why:
        pytest.skip(f"the JVM connector is unavailable: {why}")
    root, opts = hdfs_table_root
    t = range_keyed(f"{root}/{name}/wh/ns/t", ranges=3, storage_options=opts)
    expect = t.scan(filter=[("k", "<", 100)]).to_arrow()
    df = read_table(spark, t.uri, storage_options=opts, filter=[("k", "<", 100)], path="native")
    assert "BatchScan tableformat_jvm" in df._jdf.queryExecution().executedPlan().toString()
    assert_same_rows(df.toArrow().cast(expect.schema), expect, ["k"])
    register_view(spark, "hdfs_paths_v", t.uri, storage_options=opts)
    assert_same_rows(spark.sql("SELECT * FROM hdfs_paths_v WHERE k < 100").toArrow().cast(expect.schema), expect, ["k"])
    c = spark_catalog(spark, f"{root}/{name}/wh")
    q = spark.sql(f"SELECT * FROM {c}.ns.t WHERE k < 100")
    assert "(1 rowsets" in q._jdf.queryExecution().executedPlan().toString()
    assert_same_rows(q.toArrow().cast(expect.schema), expect, ["k"])
