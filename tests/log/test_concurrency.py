"""Optimistic concurrency: losing commits rebase; the primary key holds across processes."""
import multiprocessing as mp
import threading

import pyarrow as pa
import pytest

import tableformat as tf

from helpers import metrics_rows, metrics_schema


def small_schema():
    return tf.Schema([tf.Column("k", "int64"), tf.Column("who", "string")], primary_key="k")


def test_concurrent_disjoint_inserts_all_commit(tmp_path):
    uri = str(tmp_path / "t")
    tf.create_table(uri, small_schema())
    errors, results = [], []

    def writer(w):
        t = tf.open_table(uri)          # each writer has its own handle, as separate jobs would
        try:
            for b in range(15):
                keys = [w * 1000 + b * 10 + i for i in range(10)]
                results.append(t.insert(pa.table({"k": keys, "who": [f"w{w}"] * 10})))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    t = tf.open_table(uri)
    assert t.version == 60
    assert sorted(r.version for r in results) == list(range(1, 61))
    got = t.scan().to_arrow()
    assert got.num_rows == 600 and len(set(got["k"].to_pylist())) == 600
    assert all(h.read_version is not None for h in t.history()[1:])


def _race(uri, key, barrier, out, ignore):
    t = tf.open_table(uri)
    data = pa.table({"k": [key, key + 1_000_000 + mp.current_process().pid], "who": [mp.current_process().name] * 2})
    barrier.wait()
    try:
        r = (t.insert_ignore if ignore else t.insert)(data)
        out.put(("ok", r.inserted, r.ignored))
    except tf.DuplicateKeyError as e:
        out.put(("dup", e.count, str(e)))


@pytest.mark.parametrize("ignore", [False, True])
def test_two_processes_insert_the_same_key(tmp_path, ignore):
    uri = str(tmp_path / "t")
    tf.create_table(uri, small_schema())
    ctx = mp.get_context("spawn")
    for round_ in range(3):
        barrier, out = ctx.Barrier(2), ctx.Queue()
        procs = [ctx.Process(target=_race, args=(uri, round_, barrier, out, ignore)) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        res = sorted([out.get(timeout=5) for _ in procs])
        if ignore:
            assert [r[0] for r in res] == ["ok", "ok"]
            assert sum(r[1] for r in res) == 3 and sum(r[2] for r in res) == 1
        else:
            assert [r[0] for r in res] == ["dup", "ok"], res
            assert res[0][1] == 1
            assert "inserted concurrently" in res[0][2] or "already exist" in res[0][2]
    t = tf.open_table(uri)
    got = t.scan().to_arrow()["k"].to_pylist()
    assert len(got) == len(set(got))
    assert sorted(k for k in got if k < 1_000_000) == [0, 1, 2]


def test_rebase_checks_only_what_changed(tmp_path):
    """A writer whose snapshot is stale still commits when the winners touched other keys."""
    uri = str(tmp_path / "t")
    a = tf.create_table(uri, metrics_schema())
    b = tf.open_table(uri)
    data = metrics_rows(400)
    b.insert(data.slice(0, 200))            # b moves the table on; a has not looked
    res = a.insert(data.slice(200, 200))    # a plans on version 0... refresh makes it version 1
    assert res.version == 2
    with pytest.raises(tf.DuplicateKeyError, match=r"key\(s\) were inserted concurrently in table 't'"):
        b.insert(data.slice(250, 10))
    assert tf.open_table(uri).scan().count() == 400


@pytest.mark.parametrize("ignore", [False, True])
def test_commit_race_rebases_onto_the_winner(tmp_path, ignore):
    """Deterministic race: another writer commits the same key between our plan and our commit."""
    uri = str(tmp_path / "t")
    a = tf.create_table(uri, small_schema())
    b = tf.open_table(uri)
    fired = []

    def hook(step, path):
        if step == "commit" and path.endswith("00000000000000000001.json") and not fired:
            fired.append(1)
            b.insert(pa.table({"k": [1, 2], "who": ["b", "b"]}))
    a.storage.fault_hook = hook
    data = pa.table({"k": [2, 3], "who": ["a", "a"]})
    if ignore:
        res = a.insert_ignore(data)
        assert (res.inserted, res.ignored, res.version) == (1, 1, 2)
    else:
        with pytest.raises(tf.DuplicateKeyError, match="1 key.*inserted concurrently"):
            a.insert(data)
    got = {r["k"]: r["who"] for r in tf.open_table(uri).scan().to_arrow().to_pylist()}
    assert got == ({1: "b", 2: "b", 3: "a"} if ignore else {1: "b", 2: "b"})
    # the loser's files were removed: only b's rowset (and a's retry, under ignore) exist
    import os
    tablets = os.path.join(uri, "tablets")
    rowset_dirs = [d for t in os.listdir(tablets) for d in os.listdir(os.path.join(tablets, t))
                   if os.listdir(os.path.join(tablets, t, d))]
    assert len(rowset_dirs) == (2 if ignore else 1)
