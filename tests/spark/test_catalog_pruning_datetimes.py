"""Date and timestamp predicates of SQL prune in the catalog's JVM planner (specs/format.md §9.4
rule 1, §13) as the engine prunes for the same instants and days: range partitions and rowset
statistics, literals as strings, DATE/TIMESTAMP/TIMESTAMP_NTZ, in any session time zone (DST
edges included), with Spark's proleptic Gregorian day numbers (1582-10-05 to 1582-10-14, year 1,
year 9999). Each read runs after the base files the engine's plan leaves out are deleted: a read
that opened one would fail, and its rows must still equal the engine's."""
import datetime as dt
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

import tableformat as tf

from helpers import assert_same_rows, delete_unplanned_base_files, spark_catalog as catalog

pytest.importorskip("pyspark")

pytestmark = pytest.mark.usefixtures("jvm_connector")

UTC = dt.timezone.utc
LA = "America/Los_Angeles"


def at(tz: str, *fields) -> dt.datetime:
    """The instant a session in `tz` means by a local date-time (Spark and zoneinfo alike take the
    earlier offset in an overlap and shift a gap's time forward by the gap)."""
    return dt.datetime(*fields, tzinfo=ZoneInfo(tz)).astimezone(UTC)


def check_pruned(spark, t, c, where, flt, tz="UTC", conf=None):
    """`SELECT * ... WHERE where` in session time zone `tz`: plans the engine's rowsets for `flt`
    and returns its rows, with every other base file deleted."""
    expect = t.scan(filter=flt).to_arrow()
    planned = delete_unplanned_base_files(t, flt)
    settings = {"spark.sql.session.timeZone": tz, **(conf or {})}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        df = spark.sql(f"SELECT * FROM {c}.ns.t WHERE {where}")
        plan = df._jdf.queryExecution().executedPlan().toString()
        assert f"({planned} rowsets" in plan, plan
        got = df.toArrow()
    finally:
        for k in settings:
            spark.conf.unset(k)
    assert expect.num_rows > 0
    assert_same_rows(got.cast(expect.schema), expect, [t.schema.primary_key[0]])
    return planned


def weekly(path) -> tf.Table:
    """A year of hourly readings keyed by timestamp `ts`, one range partition (and rowset) a week."""
    schema = tf.Schema([tf.Column("ts", "timestamp"), tf.Column("v", "int64")], primary_key="ts")
    start = dt.datetime(2024, 1, 1, tzinfo=UTC)
    splits = [start + dt.timedelta(weeks=i) for i in range(1, 52)]
    part = tf.PartitionSchema(range=tf.RangePartition(["ts"], bounds=[(start, dt.datetime(2025, 1, 1, tzinfo=UTC))],
                                                      splits=splits))
    t = tf.create_table(str(path), schema, partitioning=part)
    ts = [start + dt.timedelta(hours=h) for h in range(366 * 24)]
    t.insert(pa.table({"ts": pa.array(ts, pa.timestamp("us", tz="UTC")), "v": pa.array(range(len(ts)), pa.int64())}))
    return t


@pytest.mark.parametrize("tz, where, lo, hi", [
    ("UTC", "ts >= '2024-03-01' AND ts < '2024-04-01'", (2024, 3, 1), (2024, 4, 1)),
    (LA, "ts >= '2024-03-01' AND ts < '2024-04-01'", (2024, 3, 1), (2024, 4, 1)),
    (LA, "ts >= TIMESTAMP'2024-03-01 00:00:00' AND ts < TIMESTAMP'2024-04-01 00:00:00'", (2024, 3, 1), (2024, 4, 1)),
    (LA, "ts >= TIMESTAMP_NTZ'2024-11-02 18:00:00' AND ts < TIMESTAMP_NTZ'2024-11-20 06:30:00'",
     (2024, 11, 2, 18), (2024, 11, 20, 6, 30)),
    ("Asia/Kolkata", "ts > '2024-12-24 05:30:00'", (2024, 12, 24, 5, 30), None),
])
def test_timestamp_range_keys_prune_partitions_in_the_session_time_zone(spark, tmp_path, tz, where, lo, hi):
    t = weekly(tmp_path / "wh" / "ns" / "t")
    flt = [("ts", ">=" if ">=" in where else ">", at(tz, *lo))] + ([("ts", "<", at(tz, *hi))] if hi else [])
    assert check_pruned(spark, t, catalog(spark, tmp_path / "wh"), where, flt, tz) <= 6


def test_timestamp_equality_and_in_prune_to_their_partitions(spark, tmp_path):
    t = weekly(tmp_path / "wh" / "ns" / "t")
    where = "ts IN (TIMESTAMP'2024-06-01 05:00:00', '2024-12-30 23:00:00', TIMESTAMP_NTZ'2024-07-04 12:00:00')"
    flt = [("ts", "in", [at(LA, 2024, 6, 1, 5), at(LA, 2024, 12, 30, 23), at(LA, 2024, 7, 4, 12)])]
    assert check_pruned(spark, t, catalog(spark, tmp_path / "wh"), where, flt, LA) == 3


def hourly_edges(path) -> tf.Table:
    """Readings every 15 minutes around 2024's two Los Angeles DST changes, and at year 1, 1850
    and year 9999, in hourly range partitions around the changes."""
    schema = tf.Schema([tf.Column("ts", "timestamp"), tf.Column("v", "int64")], primary_key="ts")
    days = [dt.datetime(2024, 3, 10, 6, tzinfo=UTC), dt.datetime(2024, 11, 3, 6, tzinfo=UTC)]
    ts = [d + dt.timedelta(minutes=15 * i) for d in days for i in range(32)]
    ts += [dt.datetime(1, 1, 1, tzinfo=UTC), dt.datetime(1, 1, 1, 12, tzinfo=UTC), dt.datetime(1850, 6, 1, tzinfo=UTC),
           dt.datetime(9999, 12, 31, 23, tzinfo=UTC), dt.datetime(9999, 12, 30, tzinfo=UTC)]
    splits = [dt.datetime(1, 1, 2, tzinfo=UTC), dt.datetime(1900, 1, 1, tzinfo=UTC)]
    splits += [d + dt.timedelta(hours=h) for d in days for h in range(1, 8)] + [dt.datetime(9999, 12, 31, tzinfo=UTC)]
    t = tf.create_table(str(path), schema, partitioning=tf.PartitionSchema(range=tf.RangePartition(["ts"], splits=splits)))
    t.insert(pa.table({"ts": pa.array(ts, pa.timestamp("us", tz="UTC")), "v": pa.array(range(len(ts)), pa.int64())}))
    return t


@pytest.mark.parametrize("tz, where, flt", [
    (LA, "ts >= '2024-03-10 02:30:00' AND ts < '2024-03-10 04:00:00'",       # 02:30 does not exist: 03:30 PDT
     [("ts", ">=", at(LA, 2024, 3, 10, 2, 30)), ("ts", "<", at(LA, 2024, 3, 10, 4))]),
    (LA, "ts >= '2024-11-03 01:30:00' AND ts < TIMESTAMP'2024-11-03 02:00:00'",   # 01:30 twice: the PDT one
     [("ts", ">=", at(LA, 2024, 11, 3, 1, 30)), ("ts", "<", at(LA, 2024, 11, 3, 2))]),
    ("UTC", "ts < TIMESTAMP'0001-01-01 12:00:00'", [("ts", "<", at("UTC", 1, 1, 1, 12))]),
    (LA, "ts <= '0001-01-01 04:00:00'", [("ts", "<=", at(LA, 1, 1, 1, 4))]),
    (LA, "ts >= '1850-01-01' AND ts < TIMESTAMP_NTZ'1900-01-01 00:00:00'",
     [("ts", ">=", at(LA, 1850, 1, 1)), ("ts", "<", at(LA, 1900, 1, 1))]),
    ("UTC", "ts >= TIMESTAMP'9999-12-31 00:00:00'", [("ts", ">=", at("UTC", 9999, 12, 31))]),
])
def test_dst_edges_and_far_timestamps_prune_as_the_engine(spark, tmp_path, tz, where, flt):
    t = hourly_edges(tmp_path / "wh" / "ns" / "t")
    assert check_pruned(spark, t, catalog(spark, tmp_path / "wh"), where, flt, tz) <= 2


def dated(path) -> tf.Table:
    """Keyed by date `d` in range partitions around the Gregorian change (1582-10-05 to 10-14 are
    days of the proleptic calendar the format stores), with year 1, 1850 and year 9999."""
    schema = tf.Schema([tf.Column("d", "date"), tf.Column("v", "int64")], primary_key="d")
    days = [dt.date(1582, 9, 25) + dt.timedelta(days=i) for i in range(31)]
    days += [dt.date(1, 1, 1), dt.date(1, 1, 2), dt.date(1850, 6, 15), dt.date(1899, 12, 31), dt.date(9999, 12, 31)]
    splits = [dt.date(1, 1, 2), dt.date(1000, 1, 1), dt.date(1582, 10, 5), dt.date(1582, 10, 10),
              dt.date(1582, 10, 15), dt.date(1583, 1, 1), dt.date(1900, 1, 1), dt.date(9999, 12, 31)]
    t = tf.create_table(str(path), schema, partitioning=tf.PartitionSchema(range=tf.RangePartition(["d"], splits=splits)))
    t.insert(pa.table({"d": pa.array(days, pa.date32()), "v": pa.array(range(len(days)), pa.int64())}))
    return t


D = dt.date
DATE_CASES = [
    ("d = DATE'1582-10-10'", [("d", "=", D(1582, 10, 10))]),
    ("d = '1582-10-12'", [("d", "=", D(1582, 10, 12))]),
    ("d IN (DATE'1582-10-05', DATE'1582-10-14')", [("d", "in", [D(1582, 10, 5), D(1582, 10, 14)])]),
    ("d >= DATE'1582-10-05' AND d <= DATE'1582-10-09'", [("d", ">=", D(1582, 10, 5)), ("d", "<=", D(1582, 10, 9))]),
    ("d < DATE'0001-01-02'", [("d", "<", D(1, 1, 2))]),
    ("d >= DATE'1850-01-01' AND d < '1900-01-01'", [("d", ">=", D(1850, 1, 1)), ("d", "<", D(1900, 1, 1))]),
    ("d > DATE'9999-12-30'", [("d", ">", D(9999, 12, 30))]),
]


@pytest.mark.parametrize("java8", ["false", "true"])
@pytest.mark.parametrize("where, flt", DATE_CASES)
def test_date_keys_prune_by_proleptic_day_numbers(spark, tmp_path, where, flt, java8):
    t = dated(tmp_path / "wh" / "ns" / "t")
    check_pruned(spark, t, catalog(spark, tmp_path / "wh"), where, flt, LA,
                 {"spark.sql.datetime.java8API.enabled": java8})


def batches(path) -> tf.Table:
    """Unpartitioned, one rowset an insert: the non-key date `e` and timestamp `ts` prune only by
    the rowsets' statistics (§8.2)."""
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("e", "date", nullable=True),
                        tf.Column("ts", "timestamp", nullable=True)], primary_key="k")
    t = tf.create_table(str(path), schema)
    groups = [[D(1, 1, 1), D(1000, 5, 5)], [D(1582, 10, 5) + dt.timedelta(days=i) for i in range(10)],
              [D(1582, 10, 15), D(1582, 10, 20)], [D(2024, 3, 10), D(9999, 12, 31)]]
    k = 0
    for days in groups:
        ts = [dt.datetime(d.year, d.month, d.day, 10, tzinfo=UTC) for d in days]
        t.insert(pa.table({"k": pa.array(range(k, k + len(days)), pa.int64()), "e": pa.array(days, pa.date32()),
                           "ts": pa.array(ts, pa.timestamp("us", tz="UTC"))}))
        k += len(days)
    return t


@pytest.mark.parametrize("java8", ["false", "true"])
@pytest.mark.parametrize("where, flt", [
    ("e = DATE'1582-10-10'", [("e", "=", D(1582, 10, 10))]),
    ("e IN ('1582-10-06', DATE'1582-10-13')", [("e", "in", [D(1582, 10, 6), D(1582, 10, 13)])]),
    ("e > DATE'1582-10-04' AND e < DATE'1582-10-15'", [("e", ">", D(1582, 10, 4)), ("e", "<", D(1582, 10, 15))]),
    ("ts >= TIMESTAMP'1582-10-07 00:00:00' AND ts < '1582-10-09'",
     [("ts", ">=", at(LA, 1582, 10, 7)), ("ts", "<", at(LA, 1582, 10, 9))]),
    ("ts > '9999-01-01'", [("ts", ">", at(LA, 9999, 1, 1))]),
])
def test_non_key_dates_and_timestamps_prune_rowsets_by_statistics(spark, tmp_path, where, flt, java8):
    t = batches(tmp_path / "wh" / "ns" / "t")
    assert check_pruned(spark, t, catalog(spark, tmp_path / "wh"), where, flt, LA,
                        {"spark.sql.datetime.java8API.enabled": java8}) == 1
