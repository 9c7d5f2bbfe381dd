"""Table.restore: one commit of ordinary row operations making the rows those of an earlier version."""
import random

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf

from helpers import during_next_commit, kv, merge_all, metrics_partitioning, metrics_rows, metrics_schema, norm_value

KEY = ["host", "metric", "time"]


def rows(t, as_of=None, keys=("key",)):
    got = t.scan(as_of=as_of).to_arrow()
    got = got.sort_by([(k, "ascending") for k in keys]) if got.num_rows else got
    return [{k: norm_value(v) for k, v in r.items()} for r in got.to_pylist()]


def random_history(t, rnd, steps, keys, live):
    for _ in range(steps):
        op = rnd.choice(["insert", "update", "delete"])
        if op == "insert":
            new = [k for k in rnd.sample(keys, 8) if k not in live]
            if new:
                t.insert(pa.table({"key": new, "val": [rnd.randint(0, 99) for _ in new],
                                   "s": [rnd.choice(["x", None]) for _ in new]}))
                live.update(dict.fromkeys(new))
        elif op == "update" and live:
            ks = rnd.sample(sorted(live), min(5, len(live)))
            t.update(pa.table({"key": ks, "val": [rnd.randint(0, 99) for _ in ks]}))
        elif op == "delete" and live:
            ks = rnd.sample(sorted(live), min(3, len(live)))
            t.delete(pa.table({"key": ks}))
            for k in ks:
                del live[k]


@pytest.mark.parametrize("seed", range(3))
def test_restore_makes_rows_those_of_the_version_and_keeps_history(tmp_path, seed):
    rnd = random.Random(seed)
    t = kv(tmp_path / "t", rowset_target_bytes=1 << 16)
    keys = [f"k{i:02d}" for i in range(40)]
    live = {}
    random_history(t, rnd, 12, keys, live)
    target = t.version
    want = rows(t)
    random_history(t, rnd, 12, keys, live)
    before = {v: rows(t, v) for v in range(t.version + 1)}
    pre = t.version
    res = t.restore(target)
    assert res.operation == "RESTORE" and res.version == pre + 1
    assert rows(t) == want
    assert {v: rows(t, v) for v in range(pre + 1)} == before          # history stays
    ch = t.changes(pre, res.version)
    ops = ch.column("_op").to_pylist()
    assert set(ops) <= {"delete", "insert", "update"} and len(ops) == res.inserted + res.updated + res.deleted
    assert (ops.count("insert"), ops.count("update"), ops.count("delete")) == (res.inserted, res.updated,
                                                                                res.deleted)
    assert res.inserted + res.updated + res.deleted > 0
    assert t.check().ok


def test_restore_writes_only_the_cells_that_differ(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b", "c"], "val": [1, 2, 3], "s": ["x", "y", "z"]}))
    t.tag("start")
    t.update(pa.table({"key": ["a"], "val": [10]}))
    t.update(pa.table({"key": ["b"], "val": [20], "s": ["yy"]}))
    t.update(pa.table({"key": ["b"], "val": [2]}))                  # b's val is back: only s differs
    t.update(pa.table({"key": ["c"], "s": ["zz"]}))
    t.update(pa.table({"key": ["c"], "s": ["z"]}))                  # c is as it was: untouched
    t.delete(pa.table({"key": ["a"]}))
    t.insert(pa.table({"key": ["d"], "val": [4]}))
    pre = t.version
    res = t.restore("start")
    assert (res.inserted, res.updated, res.deleted) == (1, 1, 1)
    ch = t.changes(pre, res.version).sort_by("key")
    assert ch.column("_op").to_pylist() == ["insert", "update", "delete"]
    assert ch.column("key").to_pylist() == ["a", "b", "d"]
    assert ch.column("_changed_columns").to_pylist()[1] == ["s"]
    assert rows(t) == rows(t, "start")


def test_restore_to_a_timestamp_and_behind_the_history_horizon(tmp_path):
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(600)
    t.insert(data.slice(0, 400))
    target_ts = tf.Timestamp(t.history()[-1].timestamp)
    want = rows(t, keys=KEY)
    t.update(data.slice(0, 100).select(KEY).append_column("value", pa.array(np.full(100, -1.0))))
    t.delete(data.slice(100, 50).select(KEY))
    t.insert(data.slice(400, 200))
    t.compact(t.compaction_plan())
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert t.state.history_horizon > 1                      # changes() no longer reaches version 1
    res = t.restore(target_ts)
    assert (res.inserted, res.updated, res.deleted) == (50, 100, 200)
    assert rows(t, keys=KEY) == want


def test_restore_refuses_a_schema_change_and_bad_arguments(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    with t.alter() as a:
        a.add_column("extra", "int64", nullable=True)
    t.update(pa.table({"key": ["a"], "val": [2]}))
    v = t.version
    with pytest.raises(tf.RestoreError, match="schema"):
        t.restore(1)
    with pytest.raises(tf.InvalidOptionError,
                       match=r"restore needs as_of: a version, a tf\.Timestamp, a datetime, an ISO string or a"):
        t.restore(None)
    with pytest.raises(tf.VersionNotFoundError, match=r"version 42 does not exist; versions are 0\.\.3"):
        t.restore(42)
    with pytest.raises(tf.TagNotFoundError, match=r"no tag 'nope' in this table \(tags: none\)"):
        t.restore("tag:nope")
    assert t.version == v
    # a property change is no schema change
    with t.alter() as a:
        a.set_property("checkpoint_interval", 5)
    t.update(pa.table({"key": ["a"], "val": [3]}))
    t.restore(v)
    assert t.scan(columns=["val"]).to_arrow().column("val").to_pylist() == [2]


def test_restore_to_latest_commits_nothing(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    res = t.restore(t.version)
    assert res.version == 1 and t.version == 1 and res.inserted == res.updated == res.deleted == 0


def test_restore_of_expired_history_is_refused(tmp_path):
    import time
    t = kv(tmp_path / "t", history_max_age=1)
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.update(pa.table({"key": ["a"], "val": [2]}))
    time.sleep(1.2)
    with pytest.raises(tf.HistoryExpiredError,
                       match="version 1 is earlier than the ancient history mark: history older than"):
        t.restore(1)
    assert t.version == 2


@pytest.mark.parametrize("concurrent", ["merge", "update"])
def test_restore_against_a_concurrent_write(tmp_path, concurrent):
    """A merging compaction (rowids change) or a data write lands first: restore plans again."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": [f"k{i}" for i in range(20)], "val": list(range(20))}))
    t.insert(pa.table({"key": [f"j{i}" for i in range(10)], "val": list(range(10))}))
    target = t.version
    want = rows(t)
    t.update(pa.table({"key": ["k1", "j2"], "val": [100, 200]}))
    t.delete(pa.table({"key": ["k3", "j4"]}))
    t.insert(pa.table({"key": ["new"], "val": [1]}))
    other = tf.open_table(t.uri)
    if concurrent == "merge":
        fired = during_next_commit(t, lambda: merge_all(other))
    else:
        fired = during_next_commit(t, lambda: other.update(pa.table({"key": ["k5"], "val": [555]})))
    v0 = t.version
    res = t.restore(target)
    t.storage.fault_hook = None
    assert fired
    assert rows(t) == want
    assert [h.operation for h in t.history()[v0 + 1:]][-1] == "RESTORE"
    assert sum(1 for h in t.history() if h.operation == "RESTORE") == 1
    assert res.updated == (3 if concurrent == "update" else 2)
    assert t.check().ok
