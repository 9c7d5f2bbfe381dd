"""MVCC reads: one parser of as_of, and a read as of a timestamp that never changes its answer."""
import datetime as dt
import re
import threading
import time

import pyarrow as pa
import pytest

import tableformat as tf


def kv(path):
    s = tf.Schema([tf.Column("key", "int64"), tf.Column("val", "int64", nullable=True)], primary_key="key")
    return tf.create_table(str(path), s)


@pytest.mark.parametrize("value,expect", [
    (None, None), ("", None), (3, 3), ("3", 3), (" 12 ", 12), (tf.Timestamp(5), tf.Timestamp(5)),
    ("ts:1700000000000000", tf.Timestamp(1_700_000_000_000_000)),
    ("2024-05-01T12:00:00Z", tf.Timestamp(1_714_564_800_000_000)),
    ("2024-05-01T12:00:00", tf.Timestamp(1_714_564_800_000_000)),          # naive is UTC
    (dt.datetime(2024, 5, 1, 12, 0, 0, 7, tzinfo=dt.timezone.utc), tf.Timestamp(1_714_564_800_000_007)),
])
def test_one_parser_for_as_of(value, expect):
    got = tf.parse_as_of(value)
    assert got == expect and type(got) is type(expect)


@pytest.mark.parametrize("value", [True, "yesterday", "ts:x", 1.5, [1], "2024-13-01"])
def test_as_of_nonsense_is_a_typed_error(value):
    with pytest.raises(tf.InvalidOptionError,
                       match="as_of must be a version|as_of '(yesterday|ts:x|2024-13-01)' is not a version number"):
        tf.parse_as_of(value)


NOON = 1_714_564_800_000_000      # 2024-05-01T12:00:00Z


@pytest.mark.parametrize("value,expect", [
    ("2024-05-01", NOON - 12 * 3600 * 10**6), ("2024-05-01 12:00", NOON), ("2024-05-01t12:00:00z", NOON),
    ("2024-05-01T12:00:00.5", NOON + 500_000), ("2024-05-01T12:00:00.123456789", NOON + 123_456),   # cut, not rounded
    ("2024-05-01T14:00:00+02:00", NOON), ("2024-05-01T14:00:00+0200", NOON), ("2024-05-01T10:30-01:30", NOON),
    ("2024-05-01T12:00:00.000001-00:00", NOON + 1), ("0001-01-01", -62_135_596_800_000_000),
])
def test_as_of_reads_one_iso_grammar(value, expect):
    """specs/format.md §9.1 pins the grammar (the JVM reader's too), not a Python version's fromisoformat."""
    assert tf.parse_as_of(value) == tf.Timestamp(expect)


@pytest.mark.parametrize("value", ["20240501T120000", "2024-05-01T120000", "2024-05-01_12:00:00", "2024-W18-3",
                                   "2024-05-01+02:00", "2024-05-01T12", "2024-05-01T12:00:00.1234567890",
                                   "2024-02-30", "2024-05-01T24:00", "2024-05-01T12:00:60", "0000-01-01",
                                   "2024-05-01T12:00+18:01", "2024-05-01T12:00+02:60", "\u0663", "ts:\u0663"])
def test_as_of_outside_the_grammar_is_invalid(value):
    with pytest.raises(tf.InvalidOptionError):
        tf.parse_as_of(value)


@pytest.mark.parametrize("micros, shown", [
    (10**18, "+33658-09-27T01:46:40Z"), (-2**63, "-290308-12-21T19:59:05.224192Z"),
    (-46_388_678_400_000_000, "0500-01-01T00:00:00Z"), (-1, "1969-12-31T23:59:59.999999Z")])
def test_a_time_outside_datetimes_years_is_refused_with_the_typed_error_and_shown_as_java_does(tmp_path, micros,
                                                                                                shown):
    """Timestamp.iso formats any int64 (no OverflowError in an error message), years as java.time's
    `uuuu` (AsOf.iso): 4 digits, `+` above 9999; a year below 1000 reads back through as_of."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": [1], "val": [1]}))
    assert tf.Timestamp(micros).iso() == shown
    err = tf.TimestampAfterLatestError if micros > 0 else tf.VersionNotFoundError
    with pytest.raises(err, match=re.escape(f"timestamp {shown} is ")):
        t.scan(as_of=tf.Timestamp(micros)).count()
    if shown.startswith("0500"):
        assert tf.parse_as_of(shown) == tf.Timestamp(micros)


def test_a_timestamp_after_the_newest_commit_is_refused_with_its_timestamp(tmp_path):
    t = kv(tmp_path / "t")
    r = t.insert(pa.table({"key": [1], "val": [1]}))
    assert t.scan(as_of=r.timestamp).to_arrow().num_rows == 1                 # at the newest commit: fine
    newest = tf.Timestamp(r.timestamp).iso()                                   # ISO-8601, not microseconds
    with pytest.raises(tf.TimestampAfterLatestError, match=re.escape(f"at {newest})")) as e:
        t.scan(as_of=tf.Timestamp(r.timestamp + 1))
    assert str(int(r.timestamp)) not in str(e.value)
    assert t.scan(as_of=newest).count() == 1                                    # the time shown reads back
    iso = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z"
    with pytest.raises(tf.VersionNotFoundError,  # the class users already catch
                       match=rf"timestamp {iso} is after the newest commit \(version 1 at {iso}\)"):
        t.snapshot(dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1))
    with pytest.raises(tf.TimestampAfterLatestError,
                       match=rf"timestamp {iso} is after the newest commit \(version 1 at {iso}\)"):
        t.changes(0, tf.Timestamp(r.timestamp + 1))
    with pytest.raises(tf.VersionNotFoundError, match=rf"timestamp 1990-01-01T00:00:00Z is before the table was "
                                                      rf"created \({iso}\)"):
        t.scan(as_of=dt.datetime(1990, 1, 1))
    assert t.scan(as_of=None).to_arrow().num_rows == 1                        # "latest" is still latest


def test_a_read_as_of_a_time_gives_the_same_answer_forever(tmp_path):
    """A writer commits in a loop while a reader asks for times just before and just after the
    newest commit. Every answer given must be the answer asked again after the writer stops."""
    uri = str(tmp_path / "t")
    kv(uri)
    stop = threading.Event()

    def writer():
        w = tf.open_table(uri)
        # a slow object store: the commit's timestamp is picked, its PUT lands 5 ms later
        w.storage.fault_hook = lambda step, path: time.sleep(0.005) if step == "commit" else None
        i = 0
        while not stop.is_set():
            w.insert(pa.table({"key": [i], "val": [i]}))
            i += 1
    th = threading.Thread(target=writer)
    th.start()
    r = tf.open_table(uri)
    answers, refused = {}, 0
    try:
        deadline = time.time() + 2.0
        while time.time() < deadline or r.version < 20:
            newest = r.history()[-1].timestamp
            for ts in (newest - 1, newest, newest + 1, time.time_ns() // 1000):
                try:
                    answers[ts] = r.snapshot(tf.Timestamp(ts)).version
                except tf.TimestampAfterLatestError:
                    refused += 1
                except tf.VersionNotFoundError:
                    pass                                   # before the table was created
    finally:
        stop.set()
        th.join()
    again = tf.open_table(uri)
    changed = {ts: (v, again.snapshot(tf.Timestamp(ts)).version) for ts, v in answers.items()
               if again.snapshot(tf.Timestamp(ts)).version != v}
    assert changed == {}
    assert refused > 0


def test_a_version_beyond_any_integer_python_reads_is_a_typed_error():
    """Python refuses int() of more than 4300 digits with a bare ValueError: the version is refused as
    not found (no table has it), as any large version is."""
    from tableformat.log.mvcc import parse_as_of
    with pytest.raises(tf.VersionNotFoundError):
        parse_as_of("9" * 5000)
    with pytest.raises(tf.TimestampAfterLatestError):
        parse_as_of("ts:" + "9" * 5000)
    assert parse_as_of("0" * 5000 + "7") == 7          # leading zeros are no digits of the number
