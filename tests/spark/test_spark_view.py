"""read_table and register_view through the JVM planner (issue #35 item 6): a view reads the
version that is latest when each query runs, SQL WHERE prunes rowsets before any file is
opened, count(*) is exact with pending deletes (specs/format.md §9.4, §13)."""
import pyarrow as pa
import pytest

from helpers import assert_same_rows, range_keyed

pytest.importorskip("pyspark")


@pytest.fixture(scope="module", autouse=True)
def connector(spark):
    from spark_jobs.connector import loaded
    why = loaded(spark)
    if why:
        pytest.skip(f"the JVM connector is unavailable: {why}")


def plan_text(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def test_a_view_prunes_rowsets_from_sql_where(spark, tmp_path):
    from spark_jobs.read import register_view
    t = range_keyed(tmp_path / "t")
    register_view(spark, "tf_ranged", t.uri)
    assert "(10 rowsets" in plan_text(spark.sql("SELECT * FROM tf_ranged"))
    df = spark.sql("SELECT count(*) AS n, sum(k) AS s FROM tf_ranged WHERE k >= 300 AND k < 400")
    assert "(1 rowsets" in plan_text(df), plan_text(df)
    got = df.collect()[0]
    assert (got.n, got.s) == (100, sum(range(300, 400)))
    df = spark.sql("SELECT * FROM tf_ranged WHERE k >= 350 AND k < 620")
    assert "(4 rowsets" in plan_text(df), plan_text(df)
    assert_same_rows(df.toArrow(), t.scan(filter=[("k", ">=", 350), ("k", "<", 620)]).to_arrow(), ["k"])


def test_a_view_reads_the_latest_version_at_each_query(spark, tmp_path):
    from spark_jobs.read import read_table, register_view
    t = range_keyed(tmp_path / "t", ranges=2)
    register_view(spark, "tf_latest", t.uri)
    register_view(spark, "tf_pinned", t.uri, as_of=t.version)
    df = read_table(spark, t.uri)
    assert spark.sql("SELECT count(*) AS n FROM tf_latest").collect()[0].n == 200
    t.delete(pa.table({"k": pa.array(range(0, 200, 4), pa.int64())}))
    t.update(pa.table({"k": pa.array([1], pa.int64()), "v": pa.array([42.0])}))
    assert spark.sql("SELECT count(*) AS n FROM tf_latest").collect()[0].n == 150
    assert spark.sql("SELECT v FROM tf_latest WHERE k = 1").collect()[0].v == 42.0
    assert spark.sql("SELECT count(*) AS n FROM tf_pinned").collect()[0].n == 200
    assert df.count() == 200                     # a DataFrame of read_table keeps its version
    assert_same_rows(spark.sql("SELECT * FROM tf_latest").toArrow(), t.scan().to_arrow(), ["k"])


def test_count_with_pending_deletes_is_exact(spark, tmp_path):
    from spark_jobs.read import register_view
    t = range_keyed(tmp_path / "t", ranges=3)
    t.delete(pa.table({"k": pa.array(range(0, 300, 7), pa.int64())}))
    register_view(spark, "tf_deletes", t.uri)
    assert spark.sql("SELECT count(*) AS n FROM tf_deletes").collect()[0].n == t.scan().count() == 300 - 43
    assert spark.sql("SELECT count(*) AS n FROM tf_deletes WHERE k < 100").collect()[0].n == 100 - 15


def test_read_table_is_planned_in_the_jvm_with_the_filter_pruning(spark, tmp_path):
    from spark_jobs.read import read_table
    t = range_keyed(tmp_path / "t")
    df = read_table(spark, t.uri, filter=[("k", ">=", 300), ("k", "<", 400)])
    text = plan_text(df)
    assert "BatchScan tableformat_jvm:" in text and "(1 rowsets" in text, text
    assert_same_rows(df.toArrow(), t.scan(filter=[("k", ">=", 300), ("k", "<", 400)]).to_arrow(), ["k"])
    t.tag("nightly")
    t.delete(pa.table({"k": pa.array([0], pa.int64())}))
    assert read_table(spark, t.uri, as_of="nightly").count() == 1000
    assert read_table(spark, t.uri).count() == 999
