"""The Spark catalog (`tableformat.catalog.TableFormatCatalog`, issue #35 items 2 and 3): tables
read from SQL with no plan from Python, the JVM planner (specs/format.md §9.4) planning each query,
time travel in SQL and in read options (§8.2), pruning from SQL predicates with §13's semantics,
and writes refused with the Spark job to use. Every read is compared with the engine's own scan."""
import datetime
import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tableformat as tf
from tableformat.format.metadata import WRITE_FORMAT_FLOOR

from helpers import assert_same_rows, int_keyed, range_keyed as ranged, spark_catalog as catalog, txn_behind_the_horizon

pyspark = pytest.importorskip("pyspark")

pytestmark = pytest.mark.usefixtures("jvm_connector")


def plan_text(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def same(df, expect, key=("k",)):
    got = df.toArrow()
    got = got.cast(expect.schema) if got.num_rows else expect.schema.empty_table()
    assert_same_rows(got, expect, list(key))


def test_show_namespaces_tables_and_describe(spark, tmp_path):
    t = ranged(tmp_path / "wh" / "sales" / "orders")
    ranged(tmp_path / "wh" / "sales" / "eu" / "returns", ranges=2)
    (tmp_path / "wh" / "empty").mkdir()
    c = catalog(spark, tmp_path / "wh")
    assert sorted(r[0] for r in spark.sql(f"SHOW NAMESPACES IN {c}").collect()) == ["empty", "sales"]
    assert [r[0] for r in spark.sql(f"SHOW NAMESPACES IN {c}.sales").collect()] == ["sales.eu"]
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {c}.sales").collect()] == ["orders"]
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {c}.sales.eu").collect()] == ["returns"]
    rows = {r[0]: r[1] for r in spark.sql(f"DESCRIBE TABLE EXTENDED {c}.sales.orders").collect()}
    assert rows["k"] == "bigint" and rows["v"] == "double" and rows["s"] == "string"
    props = rows["Table Properties"]
    assert "primary_key=k" in props and f"created_format_version={WRITE_FORMAT_FLOOR}" in props, props
    assert f"min_reader_format_version={WRITE_FORMAT_FLOOR}" in props, props
    assert "partitioning=range(k) with 10 ranges" in props and f"version={t.version}" in props, props
    assert rows["Provider"] == "tableformat" and rows["Location"].endswith("/wh/sales/orders")


def test_select_equals_the_engine_by_name_and_by_path(spark, tmp_path):
    t = ranged(tmp_path / "wh" / "ns" / "t")
    t.update(pa.table({"k": pa.array([5, 250], pa.int64()), "v": pa.array([None, 9.5])}))
    t.delete(pa.table({"k": pa.array([7, 333], pa.int64())}))
    c = catalog(spark, tmp_path / "wh")
    expect = t.scan().to_arrow()
    same(spark.sql(f"SELECT * FROM {c}.ns.t"), expect)
    same(spark.sql(f"SELECT * FROM {c}.`{t.uri}`"), expect)
    same(spark.sql(f"SELECT * FROM {c}.`file://{t.uri}`"), expect)
    same(spark.read.format("tableformat-jvm").load(t.uri), expect)
    assert spark.sql(f"SELECT count(*) FROM {c}.ns.t").collect()[0][0] == expect.num_rows
    assert "BatchScan" in plan_text(spark.sql(f"SELECT * FROM {c}.ns.t"))
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM {c}.ns.nope").collect()


def test_time_travel_by_version_tag_and_timestamp(spark, tmp_path):
    t = ranged(tmp_path / "wh" / "ns" / "t", ranges=3)
    v1 = t.version
    at_v1 = t.scan().to_arrow()
    t.tag("nightly")
    t.update(pa.table({"k": pa.array([1, 2], pa.int64()), "v": pa.array([100.0, 200.0])}))
    t.delete(pa.table({"k": pa.array([3], pa.int64())}))
    latest = t.scan().to_arrow()
    ts1 = {h.version: h.timestamp for h in t.history()}[v1]
    c = catalog(spark, tmp_path / "wh")
    same(spark.sql(f"SELECT * FROM {c}.ns.t"), latest)
    same(spark.sql(f"SELECT * FROM {c}.ns.t VERSION AS OF {v1}"), at_v1)
    same(spark.sql(f"SELECT * FROM {c}.ns.t VERSION AS OF 'nightly'"), at_v1)
    stamp = f"{ts1 // 1_000_000}.{ts1 % 1_000_000:06d}"          # seconds, in UTC
    same(spark.sql(f"SELECT * FROM {c}.ns.t TIMESTAMP AS OF timestamp_seconds({stamp})"), at_v1)
    def r():
        return spark.read.format("tableformat-jvm")
    same(r().option("versionAsOf", v1).load(t.uri), at_v1)
    same(r().option("versionAsOf", "nightly").load(t.uri), at_v1)
    same(r().option("as_of", f"ts:{ts1}").load(t.uri), at_v1)
    same(r().option("as_of", "tag:nightly").load(t.uri), at_v1)
    iso = datetime.datetime.fromtimestamp(ts1 / 1e6, datetime.timezone.utc)
    same(r().option("timestampAsOf", iso.isoformat()).load(t.uri), at_v1)
    same(r().load(t.uri), latest)
    with pytest.raises(Exception, match="TagNotFoundError|tag"):
        spark.sql(f"SELECT * FROM {c}.ns.t VERSION AS OF 'nosuch'").collect()
    with pytest.raises(Exception, match="at most one"):
        spark.read.format("tableformat-jvm").option("versionAsOf", 1).option("as_of", "1").load(t.uri).collect()


def test_each_query_reads_the_latest_version(spark, tmp_path):
    t = ranged(tmp_path / "wh" / "ns" / "t", ranges=2)
    c = catalog(spark, tmp_path / "wh")
    n = t.scan().to_arrow().num_rows
    q = f"SELECT count(*) FROM {c}.ns.t"
    assert spark.sql(q).collect()[0][0] == n
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW latest_t AS SELECT * FROM {c}.ns.t")
    held = spark.table(f"{c}.ns.t")
    t.delete(pa.table({"k": pa.array([0, 1, 2], pa.int64())}))
    assert spark.sql(q).collect()[0][0] == n - 3
    assert spark.sql("SELECT count(*) FROM latest_t").collect()[0][0] == n - 3
    assert held.count() == n - 3                      # a DataFrame made before the commit, counted after it
    t.update(pa.table({"k": pa.array([10], pa.int64()), "v": pa.array([42.0])}))
    assert spark.sql(f"SELECT v FROM {c}.ns.t WHERE k = 10").collect()[0][0] == 42.0
    assert spark.sql(f"SELECT v FROM {c}.ns.t VERSION AS OF 1 WHERE k = 10").collect()[0][0] != 42.0


@pytest.mark.parametrize("sql, job", [           # DELETE is taken: tests/spark/test_sql_delete.py
    ("UPDATE {t} SET v = 1.0 WHERE k = 1", "spark_jobs.merge"),
    ("MERGE INTO {t} USING (SELECT 1L AS k, 2.0 AS v, 'y' AS s) u ON {t}.k = u.k "
     "WHEN MATCHED THEN UPDATE SET v = u.v", "spark_jobs.merge"),
])
def test_writes_through_the_catalog_are_refused_naming_the_job(spark, tmp_path, sql, job):
    t = ranged(tmp_path / "wh" / "ns" / "t", ranges=2)
    c = catalog(spark, tmp_path / "wh")
    before = t.version
    with pytest.raises(Exception, match="is refused") as e:
        spark.sql(sql.format(t=f"{c}.ns.t", c=c)).collect()
    assert job in str(e.value) and "(or the" not in str(e.value)
    assert e.value.getMessage().startswith("tableformat's Spark catalog: ") and job in e.value.getMessage()
    assert tf.open_table(t.uri).version == before and os.path.isdir(t.uri)
    assert not (tmp_path / "wh" / "ns" / "new").exists()


def test_sql_predicates_prune_ranges_before_any_file_is_opened(spark, tmp_path):
    t = ranged(tmp_path / "wh" / "ns" / "t")
    c = catalog(spark, tmp_path / "wh")
    df = spark.sql(f"SELECT * FROM {c}.ns.t")
    assert "(10 rowsets" in plan_text(df)
    df = spark.sql(f"SELECT * FROM {c}.ns.t WHERE k >= 300 AND k < 400")
    assert "(1 rowsets" in plan_text(df), plan_text(df)
    same(df, t.scan(filter=[("k", ">=", 300), ("k", "<", 400)]).to_arrow())
    df = spark.sql(f"SELECT count(*), sum(v) FROM {c}.ns.t WHERE k >= 350 AND k < 620")  # ranges 3 to 6
    assert "(4 rowsets" in plan_text(df), plan_text(df)
    df = spark.sql(f"SELECT * FROM {c}.ns.t WHERE k IN (5, 905)")
    assert "(2 rowsets" in plan_text(df), plan_text(df)
    same(df, t.scan(filter=[("k", "in", [5, 905])]).to_arrow())
    df = spark.sql(f"SELECT * FROM {c}.ns.t WHERE k > 5000")
    assert "(0 rowsets" in plan_text(df) and df.count() == 0


@pytest.mark.parametrize("where, flt", [
    ("v > 0.5", [("v", ">", 0.5)]),
    ("v >= 'NaN'", [("v", ">=", float("nan"))]),
    ("v = 'NaN'", [("v", "=", float("nan"))]),
    ("v < 'NaN'", [("v", "<", float("nan"))]),
    ("v = -0.0", [("v", "=", -0.0)]),
    ("v = 0.0", [("v", "=", 0.0)]),
    ("v IS NULL", [("v", "is null")]),
    ("v IS NOT NULL AND k < 150", [("v", "is not null"), ("k", "<", 150)]),
    ("v <=> NULL", [("v", "is null")]),
    ("k < 150.5", [("k", "<", 150.5)]),
    ("k > 2.5E30", [("k", ">", 2.5e30)]),
    ("k >= -1 AND k <= 99", [("k", ">=", -1), ("k", "<=", 99)]),
    ("s = 's3' AND k >= 700", [("s", "=", "s3"), ("k", ">=", 700)]),
    ("k = 5 OR k = 905", None),
])
def test_pruned_sql_reads_equal_the_engine(spark, tmp_path, where, flt):
    t = ranged(tmp_path / "wh" / "ns" / "t")
    t.update(pa.table({"k": pa.array([120, 121], pa.int64()), "v": pa.array([float("nan"), None])}))
    c = catalog(spark, tmp_path / "wh")
    if flt is None:
        flt = [("k", "in", [5, 905])]
    same(spark.sql(f"SELECT * FROM {c}.ns.t WHERE {where}"), t.scan(filter=flt).to_arrow())


def pushed_to_parquet(df) -> list[str]:
    """The filters the scan pushes into its Parquet reads, as its description lists them."""
    text = plan_text(df)
    if "PushedToParquet: [" not in text:
        return []
    return text.split("PushedToParquet: [", 1)[1].split("]", 1)[0].split(", ")


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """A table of 100,000 rows in 16,384-row row groups (the default `row_group_rows`): every
    predicate below matches rows in row groups that `k`'s own bounds would skip."""
    wh = tmp_path_factory.mktemp("wh")
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("a", "int64"), tf.Column("b", "int64"),
                        tf.Column("s", "string"), tf.Column("x", "float64"), tf.Column("f", "float64"),
                        tf.Column("i", "int64", nullable=True)], primary_key="k")
    t = tf.create_table(str(wh / "ns" / "t"), schema)
    k = np.arange(100_000)
    t.insert(pa.table({"k": k, "a": k % 7, "b": np.full(k.size, 3), "s": np.where(k % 5 == 0, "abc", "xyz"),
                       "x": (k % 3).astype("float64"), "f": np.ones(k.size),
                       "i": pa.array(np.where(k % 4 == 1, 0, k), mask=k % 4 == 0)}))
    return t, wh


@pytest.mark.parametrize("where, expr", [
    ("a > b OR k = 1", (pc.field("a") > pc.field("b")) | (pc.field("k") == 1)),
    ("k < 5 OR b = a", (pc.field("k") < 5) | (pc.field("b") == pc.field("a"))),
    ("upper(s) = 'ABC' OR k = 3", (pc.utf8_upper(pc.field("s")) == "ABC") | (pc.field("k") == 3)),
    ("x = f OR k = 0", (pc.field("x") == pc.field("f")) | (pc.field("k") == 0)),
    ("coalesce(i, 0) = 0 OR k < 3", (pc.coalesce(pc.field("i"), 0) == 0) | (pc.field("k") < 3)),
    ("NOT (a > b OR k = 1)", ~((pc.field("a") > pc.field("b")) | (pc.field("k") == 1))),
])
def test_an_or_with_a_side_parquet_cannot_say_pushes_nothing_to_parquet(spark, wide, where, expr):
    """Issue #44 items 3/4 review: one side of an OR alone (`k = 1`) must never reach the Parquet
    pushdown, which would skip the row groups where only the other side matches."""
    t, wh = wide
    expect = t.scan().to_arrow().filter(expr)
    df = spark.sql(f"SELECT * FROM {catalog(spark, wh)}.ns.t WHERE {where}")
    assert np.unique(expect["k"].to_numpy() // 16_384).size == 7      # matches in every row group
    same(df, expect)
    assert all(f.startswith("IsNotNull(") for f in pushed_to_parquet(df))     # Spark's inferred ones


def test_conjuncts_parquet_can_say_are_still_pushed(spark, wide):
    t, wh = wide
    expect = t.scan().to_arrow().filter((pc.field("a") > pc.field("b")) & (pc.field("k") < 20_000))
    df = spark.sql(f"SELECT * FROM {catalog(spark, wh)}.ns.t WHERE a > b AND k < 20000 AND upper(s) <> 'Q'")
    assert "LessThan(k,20000)" in pushed_to_parquet(df)
    same(df, expect)


def test_the_scan_reports_the_exact_row_count_with_pending_deletes(spark, tmp_path):
    t = ranged(tmp_path / "wh" / "ns" / "t", ranges=4)
    t.delete(pa.table({"k": pa.array([1, 2, 3, 150, 399], pa.int64())}))
    t.update(pa.table({"k": pa.array([4], pa.int64()), "v": pa.array([1.0])}))
    t.insert(pa.table({"k": pa.array([2], pa.int64()), "v": pa.array([5.0]), "s": pa.array(["back"])}))  # reinsert
    c = catalog(spark, tmp_path / "wh")

    def scan_stats(df):
        leaf = df._jdf.queryExecution().optimizedPlan().collectLeaves().head().stats()
        return leaf.rowCount().get(), leaf.sizeInBytes()

    spark.conf.set("spark.sql.cbo.planStats.enabled", "true")       # Spark keeps row counts only then (or CBO)
    try:
        check_stats(spark, t, c, scan_stats)
    finally:
        spark.conf.unset("spark.sql.cbo.planStats.enabled")


def check_stats(spark, t, c, scan_stats):
    rows, size = scan_stats(spark.sql(f"SELECT * FROM {c}.ns.t"))
    assert rows == t.scan().to_arrow().num_rows == 396
    assert size > 0
    rows, _ = scan_stats(spark.sql(f"SELECT * FROM {c}.ns.t WHERE k < 200"))   # the first two ranges' rowsets
    assert rows == t.scan(filter=("k", "<", 200)).to_arrow().num_rows
    old = spark.sql(f"SELECT * FROM {c}.ns.t VERSION AS OF 1")
    assert scan_stats(old)[0] == 400
    # column statistics: range 2 has no deltas, range 3 a pending delete (min and max stay bounds)
    assert column_stats(spark.sql(f"SELECT * FROM {c}.ns.t WHERE k >= 200 AND k < 300"))["k"] == (200, 299, 0)
    assert column_stats(spark.sql(f"SELECT * FROM {c}.ns.t WHERE k >= 300"))["k"] == (300, 399, None)
    assert column_stats(spark.sql(f"SELECT * FROM {c}.ns.t"))["k"] == (0, 399, None)
    assert "v" not in column_stats(spark.sql(f"SELECT * FROM {c}.ns.t WHERE k >= 200 AND k < 300"))  # doubles: none


def test_column_statistics_leave_out_a_column_a_pending_update_changes(spark, tmp_path):
    t, rows = int_keyed(tmp_path / "wh" / "ns" / "t", composite=False, partitioned=False, props={})
    t.insert(rows(list(range(100)), [None if k % 10 == 0 else k * 2 for k in range(100)]))
    c = catalog(spark, tmp_path / "wh")
    spark.conf.set("spark.sql.cbo.planStats.enabled", "true")
    try:
        assert column_stats(spark.sql(f"SELECT * FROM {c}.ns.t")) == {"k": (0, 99, 0), "a": (2, 198, 10)}
        t.update(rows([5], [1000]))
        assert column_stats(spark.sql(f"SELECT * FROM {c}.ns.t")) == {"k": (0, 99, 0)}
    finally:
        spark.conf.unset("spark.sql.cbo.planStats.enabled")


def column_stats(df) -> dict:
    """The scan's column statistics: name -> (min, max, null count or None)."""
    stats = df._jdf.queryExecution().optimizedPlan().collectLeaves().head().stats()
    out = {}
    it = stats.attributeStats().iterator()
    while it.hasNext():
        kv = it.next()
        cs = kv._2()
        opt = [cs.min(), cs.max(), cs.nullCount()]
        mn, mx, nc = (o.get() if o.isDefined() else None for o in opt)
        out[kv._1().name()] = (mn, mx, None if nc is None else int(str(nc)))
    return out


def test_history_and_tags_metadata_tables(spark, tmp_path):
    t = ranged(tmp_path / "wh" / "ns" / "t", ranges=2)
    t.tag("nightly")
    t.delete(pa.table({"k": pa.array([1], pa.int64())}))
    c = catalog(spark, tmp_path / "wh")
    hist = spark.sql(f"SELECT version, unix_micros(timestamp) AS ts, operation FROM {c}.ns.t.history "
                     "ORDER BY version").collect()
    assert [(r.version, r.ts, r.operation) for r in hist] == [(h.version, h.timestamp, h.operation)
                                                              for h in sorted(t.history(), key=lambda h: h.version)]
    tags = spark.sql(f"SELECT name, version FROM {c}.`{t.uri}`.tags").collect()
    assert [(r.name, r.version) for r in tags] == sorted(t.tags().items())


def test_a_damaged_log_reads_in_sql_as_the_engine_reads_it(spark, tmp_path):
    """§8.3 (issue #44 item 5): checkpoints at 10 and 20, commit 15 missing, `_last_checkpoint` naming
    10: SQL and the engine both read version 25; a gap past the last checkpoint fails both alike."""
    root = tmp_path / "wh" / "ns" / "t"
    t = tf.create_table(str(root), tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double", nullable=True)],
                                             ["k"]), properties={"checkpoint_interval": 10})
    for i in range(25):
        t.insert(pa.table({"k": pa.array([i], pa.int64()), "v": [i * 0.5]}))
    (root / "_log" / f"{15:020d}.json").unlink()
    (root / "_log" / "_last_checkpoint").write_text('{"version": 10}')
    c = catalog(spark, tmp_path / "wh")
    expect = tf.open_table(str(root)).scan().to_arrow()
    assert expect.num_rows == 25
    same(spark.sql(f"SELECT * FROM {c}.ns.t"), expect)
    same(spark.read.format("tableformat-jvm").load(str(root)), expect)
    same(spark.sql(f"SELECT * FROM {c}.ns.t VERSION AS OF 12"), tf.open_table(str(root)).snapshot(12).scan().to_arrow())
    for query in (f"SELECT * FROM {c}.ns.t VERSION AS OF 17", f"SELECT * FROM {c}.`{root}` VERSION AS OF 15"):
        with pytest.raises(Exception, match=f"CorruptFileError: commit file _log/{15:020d}.json is missing"):
            spark.sql(query).collect()
    (root / "_log" / f"{22:020d}.json").unlink()
    with pytest.raises(tf.CorruptFileError, match=f"{22:020d}.json is missing"):
        tf.open_table(str(root))
    with pytest.raises(Exception, match=f"CorruptFileError: commit file _log/{22:020d}.json is missing"):
        spark.sql(f"SELECT * FROM {catalog(spark, tmp_path / 'wh')}.ns.t").collect()


def test_describe_shows_the_log_format_a_txn_raised(spark, tmp_path):
    """DESCRIBE's format versions: the table's, from its creation, and the highest its log declares
    (specs/format.md, "Format versions of commits and checkpoints"): a txn needs format 6."""
    from tableformat.format.metadata import FORMAT_VERSION
    t = ranged(tmp_path / "wh" / "ns" / "t", ranges=2)
    frag = t.snapshot().write_mutation(pa.table({"k": pa.array([1], pa.int64()), "v": [5.0], "s": ["x"]}),
                                       "upsert")
    t.commit_fragments([frag], txn=("app", 0))
    c = catalog(spark, tmp_path / "wh")
    props = {r[0]: r[1] for r in spark.sql(f"DESCRIBE TABLE EXTENDED {c}.ns.t").collect()}["Table Properties"]
    assert f"created_format_version={WRITE_FORMAT_FLOOR}" in props, props
    assert f"min_reader_format_version={FORMAT_VERSION}" in props, props


def test_an_engine_error_keeps_its_message_through_pysparks_structured_error(spark, tmp_path):
    """An engine error raised while planning (a time before the table) reaches PySpark's
    getMessage() with its text, not Spark's INTERNAL_ERROR for an unregistered condition."""
    t = ranged(tmp_path / "wh" / "ns" / "t", ranges=2)
    c = catalog(spark, tmp_path / "wh")
    with pytest.raises(Exception, match="before the table was created") as e:
        spark.sql(f"SELECT count(*) FROM {c}.ns.t TIMESTAMP AS OF '2001-01-01 00:00:00'").collect()
    err = e.value.java_exception                     # PySpark leaves it a Py4JJavaError: ask as its getMessage() does
    helper = getattr(spark.sparkContext._jvm, "org.apache.spark.SparkThrowableHelper")
    assert "before the table was created" in helper.getMessage(err.getCondition(), err.getMessageParameters())
    assert t.history()


def test_min_reader_format_version_as_of_a_version_behind_the_vacuum_horizon_equals_the_engines(spark, tmp_path):
    """Time travel behind the horizon (specs/format.md §8.3): each version's log format, in the
    catalog's table properties (loadTable(ident, version)) as in the engine's describe."""
    from tableformat.cli.describe import describe
    t = txn_behind_the_horizon(tmp_path / "wh" / "ns" / "t")
    cat = spark._jsparkSession.sessionState().catalogManager().catalog(catalog(spark, tmp_path / "wh"))
    jvm = spark.sparkContext._jvm
    ns = spark.sparkContext._gateway.new_array(jvm.java.lang.String, 1)
    ns[0] = "ns"
    ident = jvm.org.apache.spark.sql.connector.catalog.Identifier.of(ns, "t")
    for v in range(t.version + 1):
        props = cat.loadTable(ident, str(v)).properties()
        assert int(props["min_reader_format_version"]) == describe(t, t.snapshot(as_of=v))["min_reader_format_version"]


def test_storage_options_map_to_s3a_settings_as_the_spark_jobs_do(spark):
    """The catalog's `storage.<key>` options (a table's storage_options as flat_storage_options
    writes them: nested keys dotted) become the same bucket-scoped s3a settings as
    spark_jobs.session.s3a_settings makes of the engine's options; one truthiness for anon."""
    from spark_jobs.session import flat_storage_options, s3a_settings
    jvm = spark.sparkContext._jvm
    for opts in [{"endpoint_url": "http://127.0.0.1:5000", "key": "k", "secret": "s"},
                 {"endpoint_url": "https://s3.example", "key": "k", "secret": "s", "token": "t",
                  "client_kwargs": {"region_name": "eu-west-1"}},
                 {"client_kwargs": {"endpoint_url": "http://h:1", "aws_access_key_id": "k",
                                    "aws_secret_access_key": "s", "aws_session_token": "t"}},
                 {"anon": True}, {"anon": "true"}, {"anon": "1"}, {"anon": "TRUE"}, {"anon": "false"}, {"anon": "0"},
                 {"anon": False}, {"config_kwargs": {"s3": {"addressing_style": "virtual"}},
                                   "client_kwargs": {"region_name": "us-west-2"}}, {}]:
        got = dict(jvm.tableformat.catalog.StorageOptions.s3a("b", flat_storage_options(opts)))
        assert got == s3a_settings("b", opts), opts
    anonymous = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
    assert [s3a_settings("b", {"anon": a}).get("fs.s3a.bucket.b.aws.credentials.provider")
            for a in (True, "1", "false", "0", False)] == [anonymous, anonymous, None, None, None]
    assert s3a_settings("b", {"client_kwargs": {"region_name": "eu-west-1"}})["fs.s3a.bucket.b.endpoint.region"] \
        == "eu-west-1"


def test_the_access_key_id_set_as_storage_access_key_is_redacted_and_used(spark):
    """`storage.access.key` (what flat_storage_options writes for `key`) matches Spark's
    spark.redaction.regex, so SET shows neither credential; the catalog maps it as `key`."""
    from spark_jobs.session import flat_storage_options
    opts = flat_storage_options({"endpoint_url": "http://127.0.0.1:1", "key": "AKIDEXAMPLE7", "secret": "s3cr3tvalue"})
    c = catalog(spark, "s3a://b/wh")
    for k, v in opts.items():
        spark.conf.set(f"spark.sql.catalog.{c}.storage.{k}", v)
    shown = {r[0]: r[1] for r in spark.sql("SET").collect() if r[0].startswith(f"spark.sql.catalog.{c}.")}
    assert f"spark.sql.catalog.{c}.storage.access.key" in shown
    assert not any("AKIDEXAMPLE7" in v or "s3cr3tvalue" in v for v in shown.values()), shown
    got = dict(spark.sparkContext._jvm.tableformat.catalog.StorageOptions.s3a("b", opts))
    assert got["fs.s3a.bucket.b.access.key"] == "AKIDEXAMPLE7"


@pytest.mark.parametrize("key, warehouse, message", [
    ("endpiont_url", "s3a://b/wh", "spark.sql.catalog.{c}.storage.endpiont_url is not a storage option"),
    ("endpoint_url", "{tmp}/wh", "storage.* options apply to an s3a:// warehouse"),
    ("region_name", "s3a://b/wh", "storage.region_name is not a storage option"),   # s3fs: client_kwargs.region_name
    ("endpoint_url", None, "no warehouse is set: set spark.sql.catalog.{c}.warehouse to s3a://"),
])
def test_a_storage_option_the_catalog_cannot_use_is_refused_by_name(spark, tmp_path, key, warehouse, message):
    c = catalog(spark, tmp_path / "unused")
    if warehouse is None:
        spark.conf.unset(f"spark.sql.catalog.{c}.warehouse")
    else:
        spark.conf.set(f"spark.sql.catalog.{c}.warehouse", warehouse.format(tmp=tmp_path))
    spark.conf.set(f"spark.sql.catalog.{c}.storage.{key}", "http://127.0.0.1:1")
    with pytest.raises(Exception, match=re.escape(message.format(c=c))):
        spark.sql(f"SHOW TABLES IN {c}").collect()
    assert spark.conf.get("fs.s3a.bucket.b.endpoint", None) is None
