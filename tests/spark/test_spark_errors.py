"""Typed errors from the Spark paths, with real local Spark: the data-source write surfaces a
DuplicateKeyError as AnalysisException [PYTHON_DATA_SOURCE_ERROR]; spark_jobs.errors gives it back."""
import pyarrow as pa
import pytest

import tableformat as tf

pytest.importorskip("pyspark")

from spark_jobs.errors import typed_error, typed_errors  # noqa: E402


def _table(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), tf.Schema([tf.Column("id", "int64"), tf.Column("v", "double",
                                                                                             nullable=True)],
                                                        primary_key=["id"]))
    t.insert(pa.table({"id": pa.array([1, 2], pa.int64()), "v": [1.0, 2.0]}))
    return t


def test_datasource_write_of_existing_keys_raises_the_typed_error(spark, tmp_path):
    t = _table(tmp_path)
    df = spark.createDataFrame([(1, 5.0), (3, 3.0)], "id long, v double")
    with pytest.raises(tf.DuplicateKeyError, match=r"^1 key\(s\) already exist.*nothing was written$") as info:
        with typed_errors():
            df.write.format("tableformat").mode("append").save(t.uri)
    assert info.value.count == 1
    from pyspark.errors import AnalysisException
    assert isinstance(info.value.__cause__, AnalysisException)             # Spark's exception stays chained
    assert t.refresh().version == 1 and t.scan().count() == 2


def test_typed_error_leaves_other_errors_alone(spark, tmp_path):
    with pytest.raises(Exception,
                       match=r"\[TABLE_OR_VIEW_NOT_FOUND\].*`no_such_table`") as info:
        spark.sql("SELECT * FROM no_such_table").collect()
    assert typed_error(info.value) is None
    with pytest.raises(type(info.value),
                       match=r"\[TABLE_OR_VIEW_NOT_FOUND\].*`no_such_table`"):
        with typed_errors():
            spark.sql("SELECT * FROM no_such_table").collect()
    err = tf.KeyNotFoundError("x")
    assert typed_error(err) is err


def test_the_data_source_is_registered_once_per_session(spark, tmp_path, monkeypatch):
    """Each registration after the first made Spark log 'replaced a previously registered data source'."""
    from pyspark.sql.datasource import DataSourceRegistration
    from spark_jobs.datasource import register
    from spark_jobs.read import read_table
    calls = []
    real = DataSourceRegistration.register
    monkeypatch.setattr(DataSourceRegistration, "register", lambda self, ds: (calls.append(ds), real(self, ds)))
    t = _table(tmp_path)
    register(spark)
    for _ in range(3):
        assert read_table(spark, t.uri, path="python").count() == 2
    assert calls == []                 # the session fixture registered it already


def test_read_table_of_a_bitshuffle_column_falls_back_instead_of_failing(spark, tmp_path, monkeypatch):
    """README's own schema encodes `value` as bitshuffle (Parquet BYTE_STREAM_SPLIT), which Spark's
    vectorized reader cannot decode: read_table's join path failed with FAILED_READ_FILE; such
    rowsets now go through the Python data source, and path='native' says why. (The JVM
    connector decodes these pages itself, so the join path is asked for.)"""
    from spark_jobs.read import read_table, reads_byte_stream_split
    monkeypatch.setenv("TABLEFORMAT_SPARK_READ", "join")
    if reads_byte_stream_split(spark):
        pytest.skip("this Spark decodes BYTE_STREAM_SPLIT: every path is native")
    s = tf.Schema([tf.Column("id", "int64"), tf.Column("v", "double", nullable=True, encoding="bitshuffle")],
                  primary_key=["id"])
    t = tf.create_table(str(tmp_path / "b"), s)
    t.insert(pa.table({"id": pa.array(range(50), pa.int64()), "v": [i / 2 for i in range(50)]}))
    got = read_table(spark, t.uri).toPandas().sort_values("id")
    assert got["v"].tolist() == [i / 2 for i in range(50)]
    assert read_table(spark, t.uri, columns=["id"]).selectExpr("sum(id)").collect()[0][0] == sum(range(50))
    with pytest.raises(tf.NativeReadUnavailableError, match="BYTE_STREAM_SPLIT"):
        read_table(spark, t.uri, path="native").count()


def _jobs_in(spark, group, fn):
    """Run fn with Spark's jobs tagged by `group`; the ids of the jobs it started."""
    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    try:
        fn()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return list(sc.statusTracker().getJobIdsForGroup(group))


@pytest.mark.parametrize("job", ["mutation_merge", "partitioned_insert", "datasource"])
def test_a_spark_sql_decimal_literal_into_a_double_column_fails_on_the_driver(spark, tmp_path, job):
    """Spark SQL types 123.0 as decimal(4,1): the table's column is double, and the engine
    refuses the lossy conversion. The job checks the DataFrame's schema on the driver and raises
    the typed error before any task runs (issue #34), not a JVM stack trace from every executor."""
    from spark_jobs.insert import partitioned_insert
    from spark_jobs.merge import mutation_merge
    t = _table(tmp_path)
    df = spark.sql("SELECT 1L AS id, 123.0 AS v" if job == "mutation_merge" else "SELECT 7L AS id, 123.0 AS v")
    assert df.schema["v"].dataType.simpleString() == "decimal(4,1)"
    errors = []

    def run():
        try:
            if job == "mutation_merge":
                mutation_merge(spark, df, t.uri, op="update")
            elif job == "partitioned_insert":
                partitioned_insert(spark, df, t.uri)
            else:
                with typed_errors():
                    df.write.format("tableformat").mode("append").save(t.uri)
        except tf.TableFormatError as e:
            errors.append(e)
    jobs = _jobs_in(spark, f"decimal-{job}", run)
    assert len(errors) == 1 and isinstance(errors[0], tf.TypeMismatchError), errors
    assert "column 'v' is double; input has type decimal128(4, 1)" in str(errors[0])
    assert "123.0D" in str(errors[0])
    assert jobs == []                                            # no task ran
    assert t.refresh().version == 1
    if job == "mutation_merge":                                   # the same value as a double goes in
        assert mutation_merge(spark, spark.sql("SELECT 1L AS id, 123.0D AS v"), t.uri, op="update").updated == 1


@pytest.mark.parametrize("job", ["change_export", "delta_export", "backfill", "insert_errors", "merge_errors"])
def test_outputs_that_overlap_the_table_are_refused_before_spark_runs(tmp_path, job):
    """#34.1: an export or backfill output (or a write's rejected rows, `error_path`) at the
    table's directory, inside it or above it was written; a backfill's overwrite of the table's
    parent deletes the table. Refused (typed)
    before any Spark job or write, so no session is needed to see it."""
    from helpers import table_files
    from spark_jobs.backfill import time_travel_backfill
    from spark_jobs.export import change_export, delta_export
    from spark_jobs.insert import partitioned_insert
    from spark_jobs.merge import mutation_merge
    t = _table(tmp_path)
    files = table_files(tmp_path)
    run = {"change_export": lambda out: change_export(None, t.uri, out),
           "delta_export": lambda out: delta_export(None, t.uri, out, "e", "apply"),
           "backfill": lambda out: time_travel_backfill(None, t.uri, 1, out),
           "insert_errors": lambda out: partitioned_insert(None, None, t.uri, "collect", error_path=out),
           "merge_errors": lambda out: mutation_merge(None, None, t.uri, "upsert", on_error="collect",
                                                      error_path=out)}[job]
    for out in (str(tmp_path), f"file://{tmp_path}/", t.uri, f"{t.uri}/export", f"{t.uri}/x/../"):
        with pytest.raises(tf.PathOverlapError, match="outside the table's directory"):
            run(out)
    assert table_files(tmp_path) == files and t.refresh().version == 1
