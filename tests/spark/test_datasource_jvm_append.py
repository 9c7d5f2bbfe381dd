"""The data source's append (`df.write.format("tableformat").mode("append").save(uri)`) through the
JVM writer and committer (tableformat.catalog.DataSourceAppend, the session's SQL extension): one
commit equal to the engine's insert, DuplicateKeyError on a key that exists or repeats with nothing
committed, the key shown as the Python engine shows it (dates, timestamps, decimals, strings);
option writePath=python keeps the Python writer, and the JVM's log line names the path that ran."""
import datetime as dt
import decimal
import re

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import tableformat as tf  # noqa: E402
from spark_jobs.errors import typed_errors  # noqa: E402

from helpers import assert_same_rows, table_files  # noqa: E402

pytestmark = pytest.mark.usefixtures("jvm_connector")

KEYS = ("d", "ts", "dec", "s")
SCHEMA = tf.Schema([tf.Column("d", "date"), tf.Column("ts", "unixtime_micros"), tf.Column("dec", "decimal(10,2)"),
                    tf.Column("s", "string"), tf.Column("v", "double", nullable=True)], primary_key=list(KEYS))
UTC = dt.timezone.utc


@pytest.fixture
def jvm_append(spark):
    if not spark._jvm.tableformat.write.SparkInsert.available():
        pytest.skip("the connector's JVM rowset writer is not in this build")
    if "tableformat.catalog.SessionExtensions" not in (spark.conf.get("spark.sql.extensions", "") or ""):
        pytest.skip("the session was started without the connector's SQL extension")


def _rows(n, start=0):
    i = list(range(start, start + n))
    return pa.table({
        "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=x % 40) for x in i], pa.date32()),
        "ts": pa.array([dt.datetime(2024, 1, 31, 10, tzinfo=UTC) + dt.timedelta(microseconds=123 * x) for x in i],
                       pa.timestamp("us", tz="UTC")),
        "dec": pa.array([decimal.Decimal(x) / 4 for x in i], pa.decimal128(10, 2)),
        "s": pa.array([f"it's {x % 3}" for x in i]),
        "v": pa.array([x * 0.5 for x in i], pa.float64())})


def _table(uri):
    return tf.create_table(uri, SCHEMA, tf.PartitionSchema(hash=[tf.HashPartition(["s"], buckets=2)]))


def _df(spark, rows, parts=3):
    from spark_jobs.snapshots import spark_schema
    return spark.createDataFrame(rows.to_pandas(), spark_schema(SCHEMA)).repartition(parts)


def _decision(spark):
    return spark._jvm.tableformat.catalog.DataSourceAppend.lastDecision()


def _append(df, uri, **options):
    w = df.write.format("tableformat").mode("append")
    for k, v in options.items():
        w = w.option(k, v)
    with typed_errors():
        w.save(uri)


def test_the_append_runs_in_the_jvm_and_equals_the_engine(spark, tmp_path, jvm_append):
    uri, ref = str(tmp_path / "t"), str(tmp_path / "ref")
    t, r = _table(uri), _table(ref)
    first, second = _rows(300), _rows(200, start=300)
    t.insert(first)                                      # a Python commit first: the JVM appends after it
    r.insert(first)
    r.insert(second)
    _append(_df(spark, second), uri)
    assert _decision(spark).endswith(": JVM path (tableformat.write.InsertTask, tableformat.commit.Committer)")
    assert uri in _decision(spark)
    t = tf.open_table(uri)
    assert t.version == 2                                # one commit
    assert t.history()[-1].operation == "INSERT"
    assert_same_rows(t.to_arrow(), r.to_arrow(), keys=KEYS)
    assert t.check().ok
    changes = t.changes(1, 2)
    assert changes.num_rows == 200 and set(changes["_op"].to_pylist()) == {"insert"}


@pytest.mark.parametrize("where", ["table", "input"])
def test_a_duplicate_key_fails_typed_shows_the_key_as_the_engine_and_commits_nothing(spark, tmp_path, jvm_append,
                                                                                      where):
    uri = str(tmp_path / "t")
    t = _table(uri)
    t.insert(_rows(50))
    before, files = t.version, table_files(uri)
    dup = _rows(1, start=7)
    rows = pa.concat_tables([_rows(100, start=50), dup if where == "table" else _rows(1, start=60)])
    with pytest.raises(tf.DuplicateKeyError) as e:
        _append(_df(spark, rows), uri)
    assert "JVM path" in _decision(spark)
    # the engine's own message for the same key (tableformat/write/insert.py describe_keys)
    with pytest.raises(tf.DuplicateKeyError) as engine:
        t.insert(dup if where == "table" else pa.concat_tables([_rows(1, start=60)] * 2))
    shown = re.search(r"\(first: (.*)\); use", str(engine.value)).group(1)
    assert shown.startswith("('2024-") and "+00:00'" in shown                # not day numbers nor micros
    assert f"(first: {shown})" in str(e.value)
    assert e.value.count == 1
    t = tf.open_table(uri)
    assert t.version == before and table_files(uri) == files
    assert t.check().ok


def test_write_path_python_keeps_the_python_writer(spark, tmp_path, jvm_append):
    uri, ref = str(tmp_path / "t"), str(tmp_path / "ref")
    _table(uri)
    r = _table(ref)
    rows = _rows(120)
    r.insert(rows)
    _append(_df(spark, rows), uri, writePath="python")
    assert _decision(spark).endswith(": Python path (writePath=python)")
    t = tf.open_table(uri)
    assert t.version == 1 and t.check().ok
    assert_same_rows(t.to_arrow(), r.to_arrow(), keys=KEYS)
    with pytest.raises(tf.DuplicateKeyError):             # the Python writer enforces the key too
        _append(_df(spark, rows.slice(0, 5)), uri, writePath="python")
    assert tf.open_table(uri).version == 1


def test_storage_options_stay_on_python_and_write_path_is_checked(spark, tmp_path, jvm_append):
    uri = str(tmp_path / "t")
    _table(uri)
    rows = _rows(10)
    _append(_df(spark, rows, 1), uri, **{"storage.auto_mkdir": "true"})
    assert "Python path (storage options are fsspec's" in _decision(spark)
    assert tf.open_table(uri).version == 1
    with pytest.raises(tf.InvalidOptionError, match="cannot run in the JVM: storage options"):
        _append(_df(spark, _rows(5, start=10), 1), uri, writePath="jvm", **{"storage.auto_mkdir": "true"})
    with pytest.raises(tf.InvalidOptionError, match="writePath must be auto, jvm or python"):
        _append(_df(spark, _rows(5, start=10), 1), uri, writePath="gpu")
    _append(_df(spark, _rows(5, start=10), 1), uri, writePath="jvm")
    assert "JVM path" in _decision(spark)
    t = tf.open_table(uri)
    assert t.version == 2 and t.to_arrow().num_rows == 15 and t.check().ok


def test_an_input_of_other_types_stays_on_python_and_its_rules(spark, tmp_path, jvm_append):
    """A decimal for a double column: Spark's INSERT would cast it, the engine refuses it; the
    append keeps the engine's rule (as partitioned_insert does), on the Python writer."""
    uri = str(tmp_path / "t")
    _table(uri)
    df = _df(spark, _rows(4), 1)
    df = df.withColumn("v", df["v"].cast("decimal(6,1)"))
    with pytest.raises(tf.TypeMismatchError, match="column 'v' is double"):
        _append(df, uri)
    assert _decision(spark).endswith(": Python path (column 'v' is given as decimal(6,1), not as the table's type)")
    assert tf.open_table(uri).version == 0


def test_columns_missing_or_in_another_order_stay_on_python(spark, tmp_path, jvm_append):
    """The JVM writer takes every column in the table's order: a column left to its default, or
    the columns given in another order, go to the Python writer, which writes them right."""
    uri, ref = str(tmp_path / "t"), str(tmp_path / "ref")
    _table(uri)
    r = _table(ref)
    rows = _rows(30)
    r.insert(rows.slice(0, 20))
    r.insert(rows.slice(20).drop(["v"]))
    _append(_df(spark, rows.slice(0, 20)).select("v", "s", "dec", "ts", "d"), uri)
    assert _decision(spark).endswith(": Python path (the input's columns are not the table's, in its order)")
    _append(_df(spark, rows.slice(20)).drop("v"), uri)
    assert _decision(spark).endswith(": Python path (the input's columns are not exactly the table's)")
    t = tf.open_table(uri)
    assert t.version == 2 and t.check().ok
    assert_same_rows(t.to_arrow(), r.to_arrow(), keys=KEYS)


@pytest.mark.parametrize("chunk", ["0", "lots"])
def test_review1_a_bad_write_chunk_bytes_is_refused_on_both_paths(spark, tmp_path, jvm_append, chunk):
    """review1: the Python writer refuses a write_chunk_bytes that is not a positive integer
    (InvalidOptionError, nothing committed); the JVM path must not take the append silently."""
    uri = str(tmp_path / "t")
    _table(uri)
    for path in ("python", "auto"):
        with pytest.raises(tf.InvalidOptionError, match="write_chunk_bytes"):
            _append(_df(spark, _rows(5), 1), uri, writePath=path, WRITE_CHUNK_BYTES=chunk)
        assert tf.open_table(uri).version == 0, path


def test_review1_a_null_key_is_refused_typed_on_both_paths(spark, tmp_path, jvm_append):
    """review1: an input whose key column is nullable and holds a null: the same typed error on
    the JVM path as on the Python writer, and nothing committed."""
    from pyspark.sql import functions as F
    uri = str(tmp_path / "t")
    _table(uri)
    base = _df(spark, _rows(4), 1)
    df = base.withColumn("s", F.when(F.col("v") > 0.6, F.col("s")))      # nullable, one null
    errors = {}
    for path in ("python", "auto"):
        with pytest.raises(tf.TableFormatError) as e:
            _append(df, uri, writePath=path)
        errors[path] = type(e.value)
        assert tf.open_table(uri).version == 0, path
    assert errors["auto"] is errors["python"], errors
