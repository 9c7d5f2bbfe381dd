"""Compactions: merges, the plan and its budget, the policy, history retention, concurrent writers."""
import os
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tableformat as tf
from tableformat.maintenance.compaction import CompactionAction

from helpers import assert_same_rows, compact_one, seed_key_history, metrics_partitioning, metrics_rows, metrics_schema


def kv(tmp_path, **props):
    return tf.create_table(str(tmp_path / "kv"), tf.Schema([tf.Column("key", "string"),
                                                            tf.Column("val", "int64", nullable=True),
                                                            tf.Column("s", "string", nullable=True)],
                                                           primary_key="key"), properties=props or None)


def every_version(t):
    return {v: t.scan(as_of=v, ordered=True).to_arrow().to_pylist() for v in range(t.version + 1)}


@pytest.mark.parametrize("kind", ["minor_delta", "major_delta", "merge"])
def test_seed_sequence_reads_identically_before_and_after_each_compaction(tmp_path, kind):
    t = kv(tmp_path)
    seed_key_history(t)
    t.update(pa.table({"key": ["row"], "val": [4]}))
    t.update(pa.table({"key": ["row"], "s": ["x"]}))
    before = every_version(t)
    changes = t.changes(0).to_pylist()
    live = [r for r in t.state.rowsets.values() if t.state.deltas_of(r.id)]
    target = max(live, key=lambda r: len(t.state.deltas_of(r.id)))
    ids = [target.id] if kind != "merge" else list(t.state.rowsets)
    compact_one(t, kind, ids, [t.schema.column("val").id] if kind == "major_delta" else ())
    after = every_version(t)
    assert {v: after[v] for v in before} == before
    assert after[t.version] == before[t.version - 1]
    assert t.changes(0, t.version - 1).to_pylist() == changes
    assert t.changes(t.version - 1).num_rows == 0            # a compaction changes no data
    assert t.check().ok


def test_merge_produces_non_overlapping_rowsets_and_drops_deleted_rows(tmp_path):
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(2000)
    for i in range(4):
        t.insert(data.take(pa.array(np.arange(i, 2000, 4))))            # 4 interleaved (overlapping) inserts
    t.delete(data.select(["host", "metric", "time"]).slice(0, 100))
    expect = t.scan(ordered=True).to_arrow()
    plan = t.compaction_plan()
    assert plan.actions and all(a.kind == "merge" for a in plan.actions)
    assert "overlap" in str(plan)
    t.compact(plan)
    st = t.state
    for tablet in {r.tablet for r in st.rowsets.values()}:
        # the rowsets current reads and key probes use (format 4 keeps deleted rows apart, in
        # history-only rowsets that only reads of earlier versions open)
        rs = sorted((r for r in st.rowsets.values() if r.tablet == tablet and not r.history_only),
                    key=lambda r: r.min_key)
        assert all(a.max_key < b.min_key for a, b in zip(rs, rs[1:]))
    # rows deleted within the history are kept (with their REDO DELETE) so time travel can see them
    assert sum(r.num_rows for r in st.rowsets.values()) == 2000
    assert sum(d.delete_count for ds in st.deltas.values() for d in ds if d.kind == "redo") == 100
    assert_same_rows(t.scan(ordered=True).to_arrow(), expect)
    assert t.scan(as_of=4).count() == 2000 and t.check().ok
    assert not t.compaction_plan().actions                         # nothing to reclaim within the history
    with t.alter() as a:
        a.set_property("history_max_age", 0)                       # now the deletes are past it
        a.set_property("reclaim_deleted_pct", 1)
    # format 4: the deleted rows' history-only rowsets go whole, and the live rowsets' UNDO files
    # (all ancient now) go by UNDO GC; both read nothing
    acts = t.compaction_plan().actions
    assert all("deleted" in x.reason for x in acts if x.rowsets[0] in {r.id for r in st.rowsets.values()
                                                                        if r.history_only})
    assert {x.kind for x in acts} == {"undo_gc"} and any("deleted" in x.reason for x in acts)
    t.compact()
    st = t.state
    assert sum(r.num_rows for r in st.rowsets.values()) == 1900          # deleted rows are gone
    assert not any(d.kind == "redo" for ds in st.deltas.values() for d in ds)
    assert_same_rows(t.scan(ordered=True).to_arrow(), expect) and t.check().ok


def test_plan_is_readable_and_respects_the_budget(tmp_path):
    t = kv(tmp_path)
    for i in range(6):
        t.insert(pa.table({"key": [f"k{j:03d}" for j in range(i, 300, 6)], "val": [i] * 50}))
    p = t.compaction_plan()
    text = str(p)
    assert "merge" in text and "score" in text and "why:" in text
    assert t.compaction_plan(budget_bytes=1).actions == ()              # nothing fits in one byte... of MiB
    with pytest.raises(tf.InvalidOptionError, match=r"budget_bytes must be an integer in \[1, \d+\], got int 0"):
        t.compaction_plan(budget_bytes=0)
    v = t.version
    res = t.compact()
    assert [r.version for r in res] == list(range(v + 1, v + 1 + len(res)))   # one commit per action


def test_policy_picks_delta_compactions_and_deletes_only_rowsets(tmp_path):
    t = kv(tmp_path)
    t.insert(pa.table({"key": [f"k{i:04d}" for i in range(1000)], "val": list(range(1000))}))
    t.update(pa.table({"key": [f"k{i:04d}" for i in range(0, 1000, 2)], "val": [0] * 500}))
    kinds = {a.kind for a in t.compaction_plan().actions}
    assert kinds == {"major_delta"}
    t2 = kv(tmp_path / "two")
    t2.insert(pa.table({"key": [f"k{i:05d}" for i in range(20000)], "val": list(range(20000)),
                        "s": [f"some longer text {i}" for i in range(20000)]}))
    for i in range(3):
        t2.update(pa.table({"key": [f"k{i:05d}"], "val": [1]}))
    assert {a.kind for a in t2.compaction_plan().actions} == {"minor_delta"}
    t3 = kv(tmp_path / "three", reclaim_deleted_pct=10, history_max_age=0)
    t3.insert(pa.table({"key": [f"k{i:04d}" for i in range(1000)], "val": list(range(1000))}))
    t3.delete(pa.table({"key": [f"k{i:04d}" for i in range(0, 1000, 5)]}))   # deletes only
    (a,) = t3.compaction_plan().actions
    assert a.kind == "merge" and "deleted" in a.reason
    t3.compact()
    assert sum(r.num_rows for r in t3.state.rowsets.values()) == 800


@pytest.mark.parametrize("kind", ["minor_delta", "major_delta", "merge"])
def test_mutation_committed_during_a_compaction_is_kept(tmp_path, kind):
    t = kv(tmp_path)
    t.insert(pa.table({"key": [f"k{i:03d}" for i in range(100)], "val": list(range(100))}))
    t.update(pa.table({"key": ["k001", "k002"], "val": [10, 20]}))
    t.update(pa.table({"key": ["k003"], "val": [30]}))
    other = tf.open_table(str(tmp_path / "kv"))
    fired = []

    def hook(step, path):
        if step == "commit" and "_log/" in path and not fired:
            fired.append(1)
            other.update(pa.table({"key": ["k001", "k050"], "val": [111, 555]}))
            other.delete(pa.table({"key": ["k060"]}))
    t.storage.fault_hook = hook
    (rs,) = t.state.rowsets.values()
    compact_one(t, kind, [rs.id], [t.schema.column("val").id] if kind == "major_delta" else ())
    t.storage.fault_hook = None
    got = {r["key"]: r["val"] for r in t.scan().to_arrow().to_pylist()}
    assert got["k001"] == 111 and got["k002"] == 20 and got["k003"] == 30 and got["k050"] == 555
    assert "k060" not in got and len(got) == 99
    assert t.check().ok
    # the same history, read back from the compacted files alone through UNDO records
    before = every_version(t)
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert t.state.history_horizon == t.version - 1
    assert {v: r for v, r in every_version(t).items() if v in before} == before


def test_compactions_and_a_writer_thread_match_a_serial_model(tmp_path):
    t = kv(tmp_path, rowset_target_bytes=1 << 16)
    uri = str(tmp_path / "kv")
    model = {}
    versions = {}                                  # version -> the model as of that commit
    for i in range(4):
        batch = {f"k{j:04d}": j for j in range(i, 800, 4)}
        r = t.insert(pa.table({"key": list(batch), "val": list(batch.values())}))
        model.update(batch)
        versions[r.version] = dict(model)
    stop = threading.Event()
    errors = []
    rng = np.random.default_rng(0)

    def writer():
        w = tf.open_table(uri)
        try:
            for step in range(40):
                keys = sorted(rng.choice(sorted(model), 5, replace=False).tolist())
                if step % 5 == 4:
                    r = w.delete(pa.table({"key": keys}))
                    for k in keys:
                        model.pop(k)
                else:
                    r = w.update(pa.table({"key": keys, "val": [step] * 5}))
                    for k in keys:
                        model[k] = step
                versions[r.version] = dict(model)
        except Exception as e:   # pragma: no cover - reported below
            errors.append(e)
        finally:
            stop.set()

    th = threading.Thread(target=writer)
    th.start()
    c = tf.open_table(uri)
    rounds = 0
    while not stop.is_set() and rounds < 30:
        c.compact()
        rounds += 1
    th.join()
    c.compact()
    assert not errors
    got = {r["key"]: r["val"] for r in tf.open_table(uri).scan().to_arrow().to_pylist()}
    assert got == model
    assert tf.open_table(uri).check().ok
    # every writer's version, after a vacuum that leaves only the compacted files and their UNDO
    c.vacuum(retain_seconds=0, grace_seconds=0)
    assert c.state.history_horizon > max(versions)
    for v, want in versions.items():
        assert {r["key"]: r["val"] for r in c.scan(as_of=v).to_arrow().to_pylist()} == want, v


def test_history_max_age_refuses_expired_snapshots(tmp_path):
    t = kv(tmp_path, history_max_age=1)
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.insert(pa.table({"key": ["b"], "val": [2]}))
    assert t.scan(as_of=1).count() == 1
    time.sleep(1.2)
    t.insert(pa.table({"key": ["c"], "val": [3]}))
    with pytest.raises(tf.HistoryExpiredError, match="ancient history mark"):
        t.scan(as_of=1)
    with pytest.raises(tf.HistoryExpiredError, match="version 1 is earlier than the ancient history mark"):
        t.changes(1)
    assert t.scan().count() == 3                                   # the latest is always readable
    with t.alter() as a:
        a.set_property("history_max_age", 3600)
    assert t.scan(as_of=1).count() == 1


def test_compact_results_report_the_rowsets_and_bytes_each_action_wrote(tmp_path):
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(2000)
    for i in range(4):
        t.insert(data.take(pa.array(np.arange(i, 2000, 4))))
    t.update(data.slice(0, 300).select(["host", "metric", "time", "value"]))
    before = set(t.state.rowsets)
    files_before = {d.path for ds in t.state.deltas.values() for d in ds}
    results = t.compact()
    assert results
    st = t.state
    new_rowsets = [r for rid, r in st.rowsets.items() if rid not in before]
    new_deltas = [d for ds in st.deltas.values() for d in ds if d.path not in files_before]
    assert sum(r.rowsets_added for r in results) == len(new_rowsets) > 0
    on_disk = sum(os.path.getsize(os.path.join(t.uri, f.path)) for r in new_rowsets for f in r.files) + \
        sum(os.path.getsize(os.path.join(t.uri, d.path)) for d in new_deltas)
    assert sum(r.bytes_written for r in results) == on_disk > 0
    assert all(r.bytes_written > 0 for r in results)


def test_a_merge_that_rewrites_a_big_rowset_for_a_few_rows_says_so(tmp_path):
    """Kudu's height rule merges a small rowset into the big one it overlaps; the plan's reason
    then says how much is rewritten for how little (the policy says where it rewrites more
    than the new rows need)."""
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double")], primary_key=["k"])
    t = tf.create_table(str(tmp_path / "t"), schema)
    t.insert(pa.table({"k": np.arange(0, 40000, 2), "v": np.random.default_rng(0).random(20000)}))
    t.insert(pa.table({"k": np.arange(1, 40000, 400), "v": np.zeros(100)}))
    (a,) = [x for x in t.compaction_plan() if x.kind == "merge"]
    assert len(a.rowsets) == 2
    assert "average height drops" in a.reason and "rows) of one rowset to fold in" in a.reason
    assert "more than their rows need" in a.reason
    t.insert(pa.table({"k": np.arange(40001, 80000, 2), "v": np.zeros(20000)}))     # apart: no merge of it
    assert all(len(x.rowsets) == 2 for x in t.compaction_plan() if x.kind == "merge")


def test_unknown_compaction_kind_is_refused_before_writing(tmp_path):
    """A compaction action of a kind the engine does not know fails before any file is written:
    since the matrix decides, a fragment's kind is its matrix row, so an unknown kind can no longer fall through
    to a minor delta compaction (and must not leave that compaction's file behind)."""
    t = kv(tmp_path)
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    t.update(pa.table({"key": ["a"], "val": [5]}))
    t.update(pa.table({"key": ["b"], "val": [6]}))
    (rs,) = t.state.rowsets

    def files():
        return {os.path.join(r, f) for r, _, fs in os.walk(t.uri) for f in fs}
    before, v = files(), t.version
    with pytest.raises(tf.InvalidOptionError, match="action.kind must be one of 'merge'"):
        t.compact_action(CompactionAction("minor", "r0", (rs,), 1.0, "test", 0))
    assert files() == before and t.version == v


def test_a_merge_leaves_no_blocks_of_its_inputs_or_outputs_in_the_cache(tmp_path):
    """A merge's inputs, read and about to be replaced, leave the block cache (their decoded
    data would sit beside the merge's own), and its outputs are not put there (a load's are:
    they stay in memory until evicted); lookups then read the outputs' row groups."""
    from tableformat.format.cfile_set import FILE_CACHE
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(2000)
    for i in range(2):
        t.insert(data.take(pa.array(np.arange(i, 2000, 2))))           # 2 interleaved (overlapping) inserts
    t.update(data.select(["host", "metric", "time"]).slice(0, 10).append_column("value", pa.array([1.5] * 10)))
    keys = data.select(["host", "metric", "time"]).slice(0, 50)
    expect = t.lookup(keys)
    inputs = set(t.state.rowsets)

    def cached_of(ids):
        return [k for k in FILE_CACHE._items if any(i in k[1] for i in ids)]
    assert cached_of(inputs)
    t.compact()
    assert not set(t.state.rowsets) & inputs
    assert not cached_of(inputs)
    assert not [k for k in cached_of(set(t.state.rowsets)) if "#written" in k[1] or "#rg" in k[1]]
    assert_same_rows(t.lookup(keys), expect)


def test_merge_order_is_the_stable_sort_of_the_runs():
    """A merge places its small inputs into the largest by binary search: the order is exactly a
    stable sort of every key (equal keys in input order, before and after the large run), for
    runs on either side of it; None when no run holds most rows."""
    from tableformat.maintenance.compaction import merge_order
    rng = np.random.default_rng(7)
    for trial in range(60):
        big = int(rng.integers(0, 400))
        sizes = [int(rng.integers(0, 40)) for _ in range(int(rng.integers(1, 4)))]
        where = int(rng.integers(0, len(sizes) + 1))
        sizes.insert(where, big)
        runs = [np.unique(rng.integers(0, 500, s)) for s in sizes]       # each run sorted, no key twice
        keys = pa.array([int(v).to_bytes(2, "big") + bytes(int(v) % 3) for r in runs for v in r], pa.binary())
        lens = [len(r) for r in runs]
        got = merge_order(keys, lens)
        if sum(lens) - max(lens, default=0) > 0.25 * sum(lens) or len(lens) < 2:
            assert got is None
            continue
        want = pc.array_sort_indices(keys).to_numpy()
        assert got.tolist() == want.tolist(), (trial, lens)
