"""Typed errors from the Spark paths, with real local Spark: the data-source write surfaces a
DuplicateKeyError as AnalysisException [PYTHON_DATA_SOURCE_ERROR]; spark_jobs.errors gives it back."""
import re

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


@pytest.mark.parametrize("write_path", ["python", "auto"])
def test_datasource_write_of_existing_keys_raises_the_typed_error(spark, tmp_path, write_path):
    """The Python writer's error (a Python worker's text) and, with the connector's SQL extension,
    the JVM writer's (a Java exception): the same typed error, Spark's exception chained."""
    t = _table(tmp_path)
    df = spark.createDataFrame([(1, 5.0), (3, 3.0)], "id long, v double")
    ends = "nothing was written$" if write_path == "python" else "nothing was committed.*"
    with pytest.raises(tf.DuplicateKeyError, match=r"^1 key\(s\) (of the INSERT )?already exist.*" + ends) as info:
        with typed_errors():
            df.write.format("tableformat").mode("append").option("writePath", write_path).save(t.uri)
    assert info.value.count == 1
    from pyspark.errors import AnalysisException
    from py4j.protocol import Py4JJavaError
    assert isinstance(info.value.__cause__, (AnalysisException, Py4JJavaError))   # Spark's exception stays chained
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


# --- one condition, one class, through every PySpark entry point (specs/format.md §9.5) -----------
# read_table and register_view raise the engine's class themselves; what Spark raises itself (a query
# of the catalog, spark.read.format("tableformat-jvm"), a stream) gives it back through typed_error.

def _versions(tmp_path, name="ns/t", **properties):
    """A table at version 2 under the warehouse tmp_path/wh (the catalog names it ns.t)."""
    t = tf.create_table(str(tmp_path / "wh" / name), tf.Schema(
        [tf.Column("id", "int64"), tf.Column("v", "double", nullable=True)], primary_key=["id"]),
        properties=properties or None)
    t.insert(pa.table({"id": pa.array([1, 2], pa.int64()), "v": [1.0, 2.0]}))
    t.insert(pa.table({"id": pa.array([3], pa.int64()), "v": [3.0]}))
    return t


def _typed(cls, match, fn, direct=False):
    """fn's error: of exactly `cls` with a message matching `match`, raised by fn (direct) or given
    back by typed_error from Spark's exception."""
    import re
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - checked below
        got = e if direct else typed_error(e)
        assert type(got) is cls, f"{cls.__name__} expected, got {type(e).__name__}: {str(e)[:600]}"
        assert re.search(match, str(got)), str(got)
        return got
    pytest.fail(f"{cls.__name__} expected, nothing raised")


def _jvm(spark, uri, **options):
    r = spark.read.format("tableformat-jvm")
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load(uri).collect()


def _stream(spark, uri, ckpt, **options):
    """One Trigger.AvailableNow run of the change stream (the Python source) into a no-op sink."""
    from spark_jobs.datasource import NAME, register
    register(spark)
    r = spark.readStream.format(NAME).option("readChangeFeed", "true")
    for k, v in options.items():
        r = r.option(k, str(v))
    q = (r.load(uri).writeStream.format("noop").option("checkpointLocation", str(ckpt))
         .trigger(availableNow=True).start())
    q.awaitTermination()


def _each_entry_point(spark, tmp_path, t, cls, match, read_as_of=None, sql_suffix=None, jvm_options=None,
                      stream_options=None):
    """The condition through read_table, register_view, the catalog's SQL, tableformat-jvm and the stream."""
    from helpers import spark_catalog
    from spark_jobs.read import read_table, register_view
    if read_as_of is not None:
        _typed(cls, match, lambda: read_table(spark, t.uri, as_of=read_as_of), direct=True)
        _typed(cls, match, lambda: register_view(spark, "tf_errors", t.uri, as_of=read_as_of), direct=True)
    if sql_suffix is not None:
        c = spark_catalog(spark, tmp_path / "wh")
        _typed(cls, match, lambda: spark.sql(f"SELECT * FROM {c}.ns.t {sql_suffix}").collect())
    for options in jvm_options or ():
        _typed(cls, match, lambda o=options: _jvm(spark, t.uri, **o))
    if stream_options is not None:
        _typed(cls, match, lambda: _stream(spark, t.uri, tmp_path / "ckpt", **stream_options))


@pytest.mark.usefixtures("jvm_connector")
def test_a_negative_version_is_version_not_found_everywhere(spark, tmp_path):
    t = _versions(tmp_path)
    match = r"version -1 does not exist"
    _each_entry_point(spark, tmp_path, t, tf.VersionNotFoundError, match + r"; versions are 0\.\.2", read_as_of=-1,
                      sql_suffix="VERSION AS OF '-1'", jvm_options=[{"versionAsOf": -1}, {"as_of": "-1"}])
    _each_entry_point(spark, tmp_path, t, tf.VersionNotFoundError, match, read_as_of="-1",
                      stream_options={"startingVersion": -1})


@pytest.mark.usefixtures("jvm_connector")
def test_an_unknown_tag_is_tag_not_found_everywhere(spark, tmp_path):
    t = _versions(tmp_path)
    t.tag("nightly")
    for as_of in ("nosuch", "tag:nosuch"):
        _each_entry_point(spark, tmp_path, t, tf.TagNotFoundError, r"'nosuch'.*\(tags: nightly\)", read_as_of=as_of,
                          jvm_options=[{"as_of": as_of}])
    _each_entry_point(spark, tmp_path, t, tf.TagNotFoundError, r"^no tag 'nosuch' in this table \(tags: nightly\)$",
                      sql_suffix="VERSION AS OF 'nosuch'", jvm_options=[{"versionAsOf": "nosuch"}])


@pytest.mark.usefixtures("jvm_connector")
def test_a_version_past_the_latest_is_version_not_found_naming_the_range(spark, tmp_path):
    t = _versions(tmp_path)
    _each_entry_point(spark, tmp_path, t, tf.VersionNotFoundError, r"^version 99 does not exist; versions are 0\.\.2$",
                      read_as_of=99, sql_suffix="VERSION AS OF 99", jvm_options=[{"versionAsOf": 99}])
    # the stream may start at the next commit (3); 999 was "version 998 does not exist"
    _each_entry_point(spark, tmp_path, t, tf.VersionNotFoundError,
                      r"^startingVersion 999 does not exist; versions are 0\.\.2 \(a stream may also start at 3",
                      stream_options={"startingVersion": 999})


@pytest.mark.usefixtures("jvm_connector")
def test_a_timestamp_after_the_latest_commit_names_the_latest_version(spark, tmp_path):
    t = _versions(tmp_path)
    later = t.history()[-1].timestamp + 3_600_000_000
    match = rf"is after the newest commit \(version 2 at {re.escape(tf.Timestamp(t.history()[-1].timestamp).iso())}\)"
    _each_entry_point(spark, tmp_path, t, tf.TimestampAfterLatestError, match, read_as_of=tf.Timestamp(later),
                      sql_suffix=f"TIMESTAMP AS OF timestamp_micros({later})",
                      jvm_options=[{"as_of": f"ts:{later}"}], stream_options={"startingTimestamp": f"ts:{later}"})


@pytest.mark.usefixtures("jvm_connector")
def test_a_version_behind_the_retained_history_is_history_expired(spark, tmp_path):
    t = _versions(tmp_path, history_max_age=0)             # only the latest version is retained
    _each_entry_point(spark, tmp_path, t, tf.HistoryExpiredError,
                      r"^version 1 is earlier than the ancient history mark: .*history_max_age", read_as_of=1,
                      sql_suffix="VERSION AS OF 1", jvm_options=[{"versionAsOf": 1}])


def test_a_stream_behind_the_history_horizon_names_its_start_and_the_remedies(spark, tmp_path):
    """It said "the changes after version 0" for startingVersion 1 (or "version 0 is older than
    history a compaction garbage-collected", without the tag remedy)."""
    from helpers import merge_all, vacuum0
    t = _versions(tmp_path)
    t.update(pa.table({"id": pa.array([1], pa.int64()), "v": [9.0]}))
    merge_all(t)
    vacuum0(t)
    h = t.state.history_horizon
    assert h > 1
    _each_entry_point(spark, tmp_path, t, tf.HistoryExpiredError,
                      rf"^the change stream reads on from version 1, but the changes of versions 1\.\.{h} are no "
                      rf"longer kept: .* version {h}\. Start a new stream at version {h + 1} or later; .*"
                      r"history_max_age, or tag the version", stream_options={"startingVersion": 1})


@pytest.mark.usefixtures("jvm_connector")
def test_no_table_is_table_not_found_and_the_catalog_says_so_as_spark_does(spark, tmp_path):
    from spark_jobs.read import read_table, register_view
    from helpers import spark_catalog
    missing = str(tmp_path / "wh" / "ns" / "none")
    match = r"^no table at .*none.* \(no _log/ commits\)$"
    _typed(tf.TableNotFoundError, match, lambda: read_table(spark, missing), direct=True)
    _typed(tf.TableNotFoundError, match, lambda: register_view(spark, "tf_none", missing), direct=True)
    _typed(tf.TableNotFoundError, match, lambda: _jvm(spark, missing))
    _typed(tf.TableNotFoundError, match, lambda: _stream(spark, missing, tmp_path / "ckpt", startingVersion=1))
    c = spark_catalog(spark, tmp_path / "wh")             # a name the catalog lacks: Spark's own error
    with pytest.raises(Exception, match=r"\[TABLE_OR_VIEW_NOT_FOUND\]") as e:
        spark.sql(f"SELECT * FROM {c}.ns.none").collect()
    assert typed_error(e.value) is None


@pytest.mark.usefixtures("jvm_connector")
def test_a_missing_commit_zero_is_named_everywhere(spark, tmp_path):
    t = _versions(tmp_path)
    (tmp_path / "wh" / "ns" / "t" / "_log" / f"{0:020d}.json").unlink()
    _each_entry_point(spark, tmp_path, t, tf.CorruptFileError,
                      r"^commit file _log/0{20}\.json of the table at .* is missing, while _log/ holds 2 commits "
                      r"\(versions 1\.\.2\) and no usable checkpoint", read_as_of=2, sql_suffix="",
                      jvm_options=[{}], stream_options={"startingVersion": 1})


@pytest.mark.usefixtures("jvm_connector")
def test_a_damaged_commit_is_corrupt_file_everywhere(spark, tmp_path):
    t = _versions(tmp_path)
    p = tmp_path / "wh" / "ns" / "t" / "_log" / f"{2:020d}.json"
    p.write_text(p.read_text().replace('"INSERT"', '"UPSERT"'))
    _each_entry_point(spark, tmp_path, t, tf.CorruptFileError, r"_log/0{19}2\.json.*checksum", read_as_of=2,
                      sql_suffix="", jvm_options=[{}], stream_options={"startingVersion": 1})


@pytest.mark.usefixtures("jvm_connector")
def test_a_schema_changed_since_a_dataframe_or_view_is_schema_changed(spark, tmp_path):
    from spark_jobs.read import register_view
    t = _versions(tmp_path)
    register_view(spark, "tf_changed", t.uri)
    df = spark.read.format("tableformat-jvm").load(t.uri)
    with t.alter() as a:
        a.drop_column("v")
    with t.alter() as a:
        a.add_column("v", "string", nullable=True)
    match = r"^column 'v' of .* was dropped at or before version 4, after .* defined at version 2: define it again"
    _typed(tf.SchemaChangedError, match, lambda: spark.sql("SELECT * FROM tf_changed").collect())
    _typed(tf.SchemaChangedError, match, lambda: df.collect())


def test_typed_error_of_an_exception_whose_jvm_is_gone_is_none():
    """A Java exception object outlives its JVM (a stopped session, its gateway shut down): asking it
    anything raises py4j's error, or ConnectionRefusedError (an OSError) once the gateway is shut
    down, and so does a captured exception's str(); typed_error raised that in place of the error
    it was given."""
    from py4j.protocol import Py4JNetworkError

    for gone in (Py4JNetworkError("Answer from Java side is empty"), ConnectionRefusedError(111, "refused")):
        class GoneJavaObject:
            def __getattr__(self, name, gone=gone):
                raise gone

        class Captured(Exception):
            def __str__(self, gone=gone):            # pyspark's asks the JVM for the stack trace
                raise gone

        for exc in (RuntimeError("An error occurred while calling o38.sql"), Captured()):
            exc.java_exception = GoneJavaObject()
            assert typed_error(exc) is None




def test_a_python_read_of_a_table_replaced_since_the_dataframe_is_table_replaced(spark, tmp_path):
    """It read 0 rows: the plan's rowset ids were applied to the new table at the path."""
    import shutil
    from spark_jobs.read import read_table
    t = _table(tmp_path)
    read, unread = read_table(spark, t.uri, path="python"), read_table(spark, t.uri, path="python")
    assert read.count() == 2                          # its scan is planned; `unread`'s is not yet
    shutil.rmtree(tmp_path / "t")
    _table(tmp_path)                                  # another table (table_id) at the path, at the same version
    for df in (unread, read):                         # 0 rows; CorruptFileError (a file gone)
        # the reader's check when the scan is planned, or a worker's when its open handle is older
        _typed(tf.TableReplacedError, r"was replaced (after the DataFrame was defined .* read it again|during the "
                                      r"job .* run the job again)", df.collect)


@pytest.mark.usefixtures("jvm_connector")
def test_typed_error_never_takes_an_error_that_was_being_handled(spark, tmp_path):
    """An error raised while handling a tableformat error is not that error: typed_error gave back
    the TagNotFoundError in place of the handler's own AnalysisException or KeyError."""
    from helpers import spark_catalog
    _versions(tmp_path)
    c = spark_catalog(spark, tmp_path / "wh")

    def masked(handler):
        try:
            spark.sql(f"SELECT * FROM {c}.ns.t VERSION AS OF 'nope'").collect()
        except Exception:  # noqa: BLE001 - the handler's own error is the one raised
            handler()

    def missing():
        spark.sql("SELECT * FROM no_such_table").collect()

    def bug():
        raise KeyError("bug in handler")

    for handler, raised in ((missing, r"TABLE_OR_VIEW_NOT_FOUND"), (bug, r"bug in handler")):
        with pytest.raises(Exception, match=raised) as info:
            with typed_errors():
                masked(handler)
        assert not isinstance(info.value, tf.TableFormatError)
        assert typed_error(info.value) is None


@pytest.mark.usefixtures("jvm_connector")
def test_a_jvm_error_inside_a_streaming_query_is_typed(spark, tmp_path):
    """foreachBatch reading tableformat-jvm: the StreamingQueryException (and q.exception()) hold the
    JVM's error only as text, `tableformat.log.TagNotFoundError: ...`, which typed_error missed."""
    t = _versions(tmp_path)

    def batch(df, _id):
        _jvm(spark, t.uri, as_of="tag:nope")

    q = (spark.readStream.format("rate").option("rowsPerSecond", 1).load().writeStream.foreachBatch(batch)
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(once=True).start())
    match = r"^no tag 'nope' in this table"
    got = _typed(tf.TagNotFoundError, match, q.awaitTermination)
    assert str(got) == str(typed_error(q.exception()))


def test_a_starting_version_is_ascii_digits_with_typed_errors():
    """str.isdigit took '٣' as 3, and '²' or 5000 digits reached int()'s bare ValueError."""
    from spark_jobs.changes import version_option
    assert version_option(" 0042 ", "startingVersion") == 42
    for raw in ("٣", "²", "-٣", "3.0", ""):
        with pytest.raises(tf.InvalidOptionError, match=r"^option 'startingVersion' must be a version number"):
            version_option(raw, "startingVersion")
    with pytest.raises(tf.VersionNotFoundError, match=r"^option 'startingVersion': version 55555555555555555555\.\.\. "
                                                      r"\(5000 digits\) does not exist$"):
        version_option("5" * 5000, "startingVersion")
    with pytest.raises(tf.VersionNotFoundError, match=r"version -0 does not exist"):
        version_option("-0", "startingVersion")


def test_a_batch_change_read_checks_its_start_as_the_stream_does(spark, tmp_path):
    """startingVersion 7 of a table at version 3 said "version 6 does not exist"; 4 (the next commit,
    which has no changes yet) is after the last version read."""
    from spark_jobs.datasource import NAME, register
    register(spark)
    t = _versions(tmp_path)
    t.insert(pa.table({"id": pa.array([4], pa.int64()), "v": [4.0]}))

    def read(start):
        return (spark.read.format(NAME).option("readChangeFeed", "true").option("startingVersion", start)
                .load(t.uri).collect())

    _typed(tf.VersionNotFoundError, r"^startingVersion 7 does not exist; versions are 0\.\.3$", lambda: read(7))
    _typed(tf.InvalidOptionError, r"^startingVersion 4 is after the last version read, 3$", lambda: read(4))
    assert len(read(3)) == 1
