"""read_table and register_view through the JVM planner (issue #35 item 6): a view reads the
version that is latest when each query runs, SQL WHERE prunes rowsets before any file is
opened, count(*) is exact with pending deletes (specs/format.md §9.4, §13)."""
import pyarrow as pa
import pytest

from helpers import assert_same_rows, range_keyed

pytest.importorskip("pyspark")


pytestmark = pytest.mark.usefixtures("jvm_connector")


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


def test_a_view_refuses_a_column_dropped_renamed_or_retyped_since(spark, tmp_path):
    """A view's plan holds the schema it was registered with; the JVM matches columns by ID (§11).
    A column dropped and re-added with another type, renamed, or names swapped since is a typed
    SchemaChangedError (before: raw JVM memory read as a string, or silently wrong values); a
    column added since is fine, and the view still sees later rows."""
    import tableformat as tf
    from spark_jobs.read import register_view
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double", nullable=True),
                        tf.Column("s", "string", nullable=True)], primary_key="k")
    rows = pa.table({"k": pa.array([1, 2, 3], pa.int64()), "v": [1.5, 2.5, 3.5], "s": ["a", "b", "c"]})

    def view(name):
        t = tf.create_table(str(tmp_path / name), schema)
        t.insert(rows)
        register_view(spark, f"tf_{name}", t.uri)
        return t

    retyped = view("retyped")
    with retyped.alter() as a:
        a.drop_column("s")
    with retyped.alter() as a:
        a.add_column("s", "int64")
    retyped.upsert(pa.table({"k": pa.array([1], pa.int64()), "v": [9.0], "s": pa.array([7], pa.int64())}))
    swapped = view("swapped")
    with swapped.alter() as a:
        a.rename_column("v", "tmp")
    with swapped.alter() as a:
        a.rename_column("s", "v")
    with swapped.alter() as a:
        a.rename_column("tmp", "s")
    for name, word in (("retyped", "column 's'"), ("swapped", "renamed to")):
        with pytest.raises(Exception, match="SchemaChangedError") as e:
            spark.sql(f"SELECT * FROM tf_{name} ORDER BY k").collect()
        assert word in str(e.value) and "define it again" in str(e.value)
    added = view("added")
    with added.alter() as a:
        a.add_column("w", "int64")
    added.insert(pa.table({"k": pa.array([4], pa.int64()), "v": [4.5], "s": ["d"], "w": pa.array([1], pa.int64())}))
    got = spark.sql("SELECT * FROM tf_added ORDER BY k").collect()
    assert [tuple(r) for r in got] == [(1, 1.5, "a"), (2, 2.5, "b"), (3, 3.5, "c"), (4, 4.5, "d")]
