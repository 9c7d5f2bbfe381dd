"""Reproducers from an adversarial review of issue 16 (each failed before its fix): a date compared
with a nanosecond timestamp, a base file swapped for another valid one, a log relabelled to an
older format, and filter values that escaped as untyped errors."""
from tableformat.txlog import canonical_json
import datetime as dt
import decimal
import glob
import json
import os
import pandas as pd
import pyarrow as pa
import pytest
import shutil
import tableformat as tf
import zlib


# --- date nanos --------------------------------------------------

def _table(tmp_path):
    s = tf.Schema([tf.Column("k", "int64"), tf.Column("d", "date")], "k")
    t = tf.create_table(str(tmp_path / "t"), s)
    t.insert(pa.table({"k": [1, 2], "d": [dt.date(2020, 1, 1), dt.date(2020, 1, 2)]}))
    return t


def keys(t, flt):
    return sorted(t.scan(columns=["k"], filter=flt).to_arrow()["k"].to_pylist())


TS = pd.Timestamp("2020-01-01 00:00:00.000000001")


def test_date_equals_nanosecond_timestamp_matches_nothing(tmp_path):
    t = _table(tmp_path)
    assert keys(t, ("d", "=", TS)) == []          # observed [1]


def test_date_in_nanosecond_timestamp_matches_nothing(tmp_path):
    t = _table(tmp_path)
    assert keys(t, ("d", "in", [TS])) == []       # observed [1]


def test_date_ge_nanosecond_timestamp_excludes_the_midnight_date(tmp_path):
    t = _table(tmp_path)
    assert keys(t, ("d", ">=", TS)) == [2]        # observed [1, 2]


def test_date_ne_nanosecond_timestamp_is_every_row(tmp_path):
    t = _table(tmp_path)
    assert keys(t, ("d", "!=", TS)) == [1, 2]     # observed [2]


def test_same_value_on_a_timestamp_column_is_consistent(tmp_path):
    s = tf.Schema([tf.Column("k", "int64"), tf.Column("ts", "unixtime_micros")], "k")
    t = tf.create_table(str(tmp_path / "u"), s)
    t.insert(pa.table({"k": [1], "ts": pa.array([dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)],
                                                  pa.timestamp("us", tz="UTC"))}))
    assert keys(t, ("ts", "=", TS.tz_localize("UTC"))) == []      # passes: the timestamp path is exact


# --- base swap ---------------------------------------------------

@pytest.fixture
def swapped(tmp_path):
    d = str(tmp_path / "t")
    s = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "int64", nullable=True)], "k")
    t = tf.create_table(d, s)
    t.insert(pa.table({"k": list(range(0, 100)), "v": list(range(100))}))
    t.insert(pa.table({"k": list(range(1000, 1100)), "v": [7] * 100}))
    a, b = [glob.glob(f"{d}/tablets/*/{rs.id}/base-*")[0] for rs in t.state.rowsets.values()]
    assert os.path.getsize(a) != os.path.getsize(b)
    shutil.copy(b, a)
    return tf.open_table(d)


def test_check_reports_it(swapped):
    assert not swapped.check(deep=False).ok                      # passes: check() notices the size


def test_whole_read_refuses(swapped):
    with pytest.raises(tf.CorruptFileError):
        swapped.scan().to_arrow()


def test_projected_scan_refuses(swapped):
    with pytest.raises(tf.CorruptFileError):                     # observed: 200 rows, no error
        swapped.scan(columns=["v"], filter=("v", "=", 7)).to_arrow()


def test_point_lookup_refuses(swapped):
    with pytest.raises(tf.CorruptFileError):                     # observed: [] (row k=5 silently missing)
        swapped.scan(filter=("k", "=", 5)).to_arrow()


# --- format relabel ----------------------------------------------

def test_all_commits_relabelled_to_format_2_are_refused(tmp_path):
    d = str(tmp_path / "t")
    s = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "int64", nullable=True)], "k")
    t = tf.create_table(d, s)
    t.insert(pa.table({"k": [1], "v": [1]}))
    t.insert(pa.table({"k": [2], "v": [2]}))
    for v in range(3):
        p = f"{d}/_log/{v:020d}.json"
        c = json.load(open(p))
        c["format_version"] = 2
        if v == 2:
            c["timestamp"] += 10**12
        c["checksum"] = zlib.crc32(canonical_json(c["actions"]))
        open(p, "w").write(json.dumps(c))
    with pytest.raises(tf.CorruptFileError):
        t2 = tf.open_table(d)                     # observed: opens; state.format_version == 3
        assert t2.state.format_version == 3
        assert t2.check().ok                      # observed: 0 violations, forged timestamp in history()


# --- untyped filter errors ---------------------------------------

@pytest.fixture
def t(tmp_path):
    s = tf.Schema([tf.Column("k", "int64"), tf.Column("d", "decimal(6,2)", nullable=True),
                   tf.Column("dd", "date", nullable=True)], "k")
    t = tf.create_table(str(tmp_path / "t"), s)
    t.insert(pa.table({"k": [1], "d": pa.array([decimal.Decimal("1.00")], pa.decimal128(6, 2)),
                       "dd": [dt.date(2020, 1, 1)]}))
    return t


@pytest.mark.parametrize("flt", [("d", "in", ["1e999999999"]), ("d", "=", decimal.Decimal("1e999999999")),
                                 ("d", "<", decimal.Decimal("-1e999999999"))])
def test_huge_decimal_exponent_is_exact_or_typed(t, flt):
    try:
        t.scan(columns=["k"], filter=flt).to_arrow()          # observed: decimal.InvalidOperation
    except tf.InvalidFilterError:
        pass


def test_nat_on_a_date_column_is_a_typed_error(t):
    with pytest.raises(tf.InvalidFilterError):                # observed: ValueError
        t.scan(columns=["k"], filter=("dd", "=", pd.NaT)).to_arrow()
