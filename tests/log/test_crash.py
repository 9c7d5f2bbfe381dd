"""Crashes at every step of every write path, a real kill -9, and corrupted files.

After each failure the table opens, reads exactly as before the write (or as
after it, once the commit exists), passes check(), and vacuum removes the
files the failed writer left behind.
"""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest

import tableformat as tf

from helpers import ROOT, TESTS, assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema

KEY = ["host", "metric", "time"]


class Crash(Exception):
    pass


def crash_at(step_name, nth=1):
    seen = []

    def hook(step, path):
        if step == step_name:
            seen.append(path)
            if len(seen) == nth:
                raise Crash(f"crash at {step} #{nth}: {path}")
    return hook


WRITES = {
    "insert": lambda t, d: t.insert(metrics_rows(300, start=9000)),
    "update": lambda t, d: t.update(d.select(KEY).slice(0, 50).append_column("value", pa.array([7.0] * 50))),
    "delete": lambda t, d: t.delete(d.select(KEY).slice(50, 50)),
    "upsert": lambda t, d: t.upsert(pa.concat_tables([d.slice(0, 20), metrics_rows(20, start=9500)])),
    "alter": lambda t, d: t.alter().add_column("extra", "int32").commit(),
    "compact": lambda t, d: t.compact(),
}
STEPS = [("write", 1), ("write", 2), ("commit", 1), ("commit-link", 1), ("after-commit", 1)]


def prepared(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), metrics_schema(), partitioning=metrics_partitioning(),
                        properties={"checkpoint_interval": 3})
    data = metrics_rows(1200)
    for i in range(3):     # overlapping rowsets, so compaction has work
        t.insert(data.take(pa.array(list(range(i, 1200, 3)))))
    t.update(data.select(KEY).slice(100, 30).append_column("value", pa.array([1.0] * 30)))
    return t, data


@pytest.mark.parametrize("op", list(WRITES))
@pytest.mark.parametrize("step,nth", STEPS)
def test_crash_leaves_the_table_as_before_or_after(tmp_path, op, step, nth):
    t, data = prepared(tmp_path)
    uri = str(tmp_path / "t")
    before_version = t.version
    before = t.scan().to_arrow()
    t.storage.fault_hook = crash_at(step, nth)
    committed = False
    try:
        WRITES[op](t, data)
        committed = True          # the step never came (e.g. no second file): the write just succeeded
    except Crash:
        pass
    t.storage.fault_hook = None
    fresh = tf.open_table(uri)
    if fresh.version == before_version:
        assert_same_rows(fresh.scan().to_arrow(), before)
    else:
        assert fresh.version == before_version + 1 or op == "compact"
        committed = True
    assert fresh.check().ok, fresh.check()
    assert fresh.scan(as_of=before_version).count() == before.num_rows
    res = fresh.vacuum(grace_seconds=0)
    if not committed and step != "after-commit":
        assert all(f.startswith("tablets/") or f.startswith("_log/.tmp-") for f in res.files)
    assert fresh.vacuum(grace_seconds=0, dry_run=True).files == []
    assert fresh.check().ok
    # the table still takes writes
    fresh.insert(metrics_rows(5, start=20000))


@pytest.mark.parametrize("step,nth", [("commit", 1), ("commit-link", 1), ("after-commit", 1), ("delete", 1),
                                      ("delete", 7)])
def test_crash_during_a_vacuum_loses_no_history(tmp_path, step, nth):
    """Vacuum records its history horizon, then deletes: a crash anywhere leaves every version readable."""
    t, data = prepared(tmp_path)
    t.compact()
    every = {v: t.scan(as_of=v).to_arrow() for v in range(t.version + 1)}
    t.storage.fault_hook = crash_at(step, nth)
    with pytest.raises(Crash, match=r"crash at (commit|commit-link|after-commit|delete) #\d+: "):
        t.vacuum(retain_seconds=0, grace_seconds=0)
    t.storage.fault_hook = None
    fresh = tf.open_table(str(tmp_path / "t"))
    for _ in range(2):                     # after the crash, and after a vacuum that completes
        for v, want in every.items():
            assert_same_rows(fresh.scan(as_of=v).to_arrow(), want)
        assert fresh.check().ok
        fresh.vacuum(retain_seconds=0, grace_seconds=0)
    assert fresh.state.history_horizon == max(every)      # a vacuum after a vacuum commits nothing
    assert fresh.history()[-1].operation == "VACUUM" and fresh.history()[-2].operation != "VACUUM"


def test_kill_9_during_a_large_insert(tmp_path):
    uri = str(tmp_path / "t")
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning(),
                        properties={"rowset_target_bytes": 1 << 16})
    t.insert(metrics_rows(100))
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(TESTS)!r})
        import tableformat as tf
        from helpers import metrics_rows
        t = tf.open_table({uri!r})
        real = t.storage.write
        def slow(rel, data):
            time.sleep(0.02)
            return real(rel, data)
        t.storage.write = slow
        print("ready", flush=True)
        t.insert(metrics_rows(15000, start=1000))
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                         cwd=str(ROOT))
    assert p.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    fresh = tf.open_table(uri)
    assert fresh.version in (1, 2)
    assert fresh.scan().count() in (100, 15100)
    assert fresh.check().ok
    orphans = fresh.vacuum(grace_seconds=0)
    if fresh.version == 1:
        assert orphans.files                      # the killed writer's files were left and are now gone
    assert fresh.check().ok


def test_truncated_or_corrupted_data_files_are_detected(tmp_path):
    t, data = prepared(tmp_path)
    rs = next(iter(t.state.rowsets.values()))
    path = tmp_path / "t" / rs.base[0].path
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    from tableformat.format.diskrowset import FILE_CACHE
    FILE_CACHE.clear()
    with pytest.raises(tf.CorruptFileError, match=rs.base[0].path.split("/")[-1]):
        tf.open_table(str(tmp_path / "t")).scan().to_arrow()
    path.write_bytes(raw[:100] + bytes([raw[100] ^ 0xFF]) + raw[101:])   # a flipped bit in a data page
    FILE_CACHE.clear()
    with pytest.raises(tf.CorruptFileError, match=r"base file tablets/.*\.parquet fails its checksum"):
        tf.open_table(str(tmp_path / "t")).scan().to_arrow()
    assert not tf.open_table(str(tmp_path / "t")).check().ok
