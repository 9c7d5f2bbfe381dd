"""History-only rowsets (format 4, specs/format.md §12): after compact(), a current scan reads only
live rows, with no delete mask and no UNDO, however much history is kept; reads as of earlier
versions still see the deleted rows, exactly; tags keep the layers they see; writes racing the merge
that writes them land or restart."""
import os
import time

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf
from tableformat.maintenance.compaction_policy import DELETE_MASK_COST, CompactionAction, CompactionPlan
from tableformat.format.metadata import RowSetMeta

from helpers import (during_next_commit as _during_next_commit, every_version, kt, kv, merge_all,
                     metrics_partitioning, metrics_rows, metrics_schema, model_rows, vacuum0)


def history_only(t):
    return [r for r in t.state.rowsets.values() if r.history_only]


def assert_current_scan_is_clean(t, columns=None):
    """By the scan plan's metadata: no history-only rowset, no delta file (no delete mask, no UNDO)."""
    tasks = t.scan(columns=columns).plan()
    assert tasks
    assert not any(x.rowset.history_only for x in tasks)
    assert all(x.deltas == () for x in tasks)
    assert sum(x.stop - x.start for x in tasks) == t.scan().count()   # only live rows are read


def test_compact_moves_deleted_rows_to_history_only_rowsets(tmp_path):
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(3000)
    data = data.set_column(3, "value", pa.array(np.nan_to_num(data.column("value").to_numpy())))  # rows compare
    for i in range(3):
        t.insert(data.take(pa.array(np.arange(i, 3000, 3))))
    keys = data.select(["host", "metric", "time"])
    t.update(keys.slice(0, 300).append_column("value", pa.array(np.arange(300, dtype=np.float64))))
    t.delete(keys.slice(1000, 60))
    t.delete(keys.slice(2000, 5))
    last_delete = t.history()[t.version].timestamp
    before = every_version(t)
    t.compact()
    assert_current_scan_is_clean(t)
    assert_current_scan_is_clean(t, columns=["value"])
    ghosts = history_only(t)
    assert sum(r.num_rows for r in ghosts) == 65                 # the deleted rows, kept for history
    assert max(r.live_until for r in ghosts) == last_delete
    assert t.scan(ordered=True).to_arrow().to_pylist() == before[max(before)]
    assert every_version(t, before) == before                   # as of every earlier version: exact
    assert not t.compaction_plan().actions                       # nothing left that slows the present
    assert t.check().ok
    # reads through UNDO from the compacted files alone (the horizon moves to the head)
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert t.state.history_horizon > max(before)
    assert every_version(t, before) == before
    assert_current_scan_is_clean(t)
    old = t.scan(as_of=max(before) - 1).plan()                   # before the last delete
    assert any(x.rowset.history_only for x in old)              # ... which the history-only rows are in


def test_snapshot_at_or_after_live_until_skips_the_rowset(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": [f"k{i}" for i in range(10)], "val": list(range(10))}))
    t.delete(pa.table({"key": ["k3"]}))
    v_del = t.version
    t.update(pa.table({"key": ["k4"], "val": [40]}))
    t.compact()
    (h,) = history_only(t)
    assert h.num_rows == 1 and h.live_until == t.history()[v_del].timestamp
    t.vacuum(retain_seconds=0, grace_seconds=0)                  # old versions now read the new files
    assert not any(x.rowset.history_only for x in t.scan(as_of=v_del).plan())
    assert any(x.rowset.history_only for x in t.scan(as_of=v_del - 1).plan())
    assert len(t.scan(as_of=v_del - 1).to_arrow()) == 10 and len(t.scan(as_of=v_del).to_arrow()) == 9
    mid = tf.Timestamp((t.history()[v_del - 1].timestamp + h.live_until) // 2)
    assert "k3" in t.scan(as_of=mid).to_arrow().column("key").to_pylist()


def test_reinsert_of_a_key_deleted_into_a_history_only_rowset(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b", "c"], "val": [1, 2, 3]}))
    t.delete(pa.table({"key": ["a", "b"]}))
    t.compact()
    assert {r.num_rows for r in history_only(t)} == {2}
    with pytest.raises(tf.KeyNotFoundError,
                       match=r"1 key\(s\) not found in table 't' \(first: 'a'\); use the _ignore variant or upsert"):
        t.update(pa.table({"key": ["a"], "val": [9]}))           # deleted: absent, not found
    with pytest.raises(tf.KeyNotFoundError,
                       match=r"1 key\(s\) not found in table 't' \(first: 'b'\); use the _ignore variant or upsert"):
        t.delete(pa.table({"key": ["b"]}))
    t.insert(pa.table({"key": ["a"], "val": [10]}))              # absent: the insert is allowed
    t.upsert(pa.table({"key": ["b"], "val": [20]}))              # upsert of an absent key inserts
    with pytest.raises(tf.DuplicateKeyError,
                       match=r"1 key\(s\) already exist in table 't' \(first: 'a'\); use insert_ignore or upsert"):
        t.insert(pa.table({"key": ["a"], "val": [11]}))          # the new row is live
    before = every_version(t)
    assert before[t.version] == [{"key": "a", "val": 10, "s": None}, {"key": "b", "val": 20, "s": None},
                                 {"key": "c", "val": 3, "s": None}]
    assert t.check().ok
    t.delete(pa.table({"key": ["a"]}))                           # the deleted key deleted again...
    t.insert(pa.table({"key": ["a"], "val": [12]}))              # ...and inserted a third time
    before = every_version(t)
    t.compact()
    assert_current_scan_is_clean(t)
    assert len(history_only(t)) >= 2                             # one layer per deletion of 'a'
    for r in history_only(t):                                    # no rowset holds a key twice
        assert r.min_key <= r.max_key
    assert every_version(t, before) == before and t.check().ok


def test_policy_picks_rowsets_whose_deletes_slow_current_scans(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": [f"k{i:04d}" for i in range(1000)], "val": list(range(1000))}))
    assert not t.compaction_plan().actions
    t.delete(pa.table({"key": ["k0007"]}))                       # one row in a thousand, within the history
    (a,) = t.compaction_plan().actions
    assert a.kind == "merge" and "delete mask" in a.reason
    assert a.score == pytest.approx(1 / 1000 + DELETE_MASK_COST)
    t.compact()
    assert_current_scan_is_clean(t)
    assert not t.compaction_plan().actions
    # a rowset all of whose rows are deleted (a format-3 ghost layer looks the same) is picked too
    t.insert(pa.table({"key": ["x1", "x2"], "val": [1, 2]}))
    t.delete(pa.table({"key": ["x1", "x2"]}))
    acts = t.compaction_plan().actions
    assert [x.kind for x in acts] == ["merge"] and acts[0].score == pytest.approx(1.0)
    t.compact()
    assert_current_scan_is_clean(t) and t.check().ok


def test_aged_out_history_only_rowsets_go_by_undo_gc_and_vacuum(tmp_path):
    t = kv(tmp_path / "t", history_max_age=1)
    t.insert(pa.table({"key": [f"k{i}" for i in range(10)], "val": list(range(10))}))
    t.delete(pa.table({"key": ["k1", "k2"]}))
    t.compact()
    (h,) = history_only(t)
    files = [os.path.join(str(tmp_path / "t"), f.path) for f in h.files] + \
        [os.path.join(str(tmp_path / "t"), d.path) for d in t.state.deltas_of(h.id)]
    assert all(os.path.exists(f) for f in files)
    time.sleep(1.2)                                              # the deletes are now ancient history
    plan = t.compaction_plan()
    gc = [a for a in plan.actions if a.rowsets == (h.id,)]
    assert [a.kind for a in gc] == ["undo_gc"] and gc[0].bytes_read == 0
    t.compact(plan)
    assert not history_only(t) and t.state.history_gc_ts >= h.live_until
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert not any(os.path.exists(f) for f in files)             # its files are deleted
    assert t.scan(ordered=True).to_arrow().column("key").to_pylist() == [f"k{i}" for i in range(10) if i not in (1, 2)]
    with pytest.raises(tf.HistoryExpiredError,
                       match="version 1 is earlier than the ancient history mark: history older than"):
        t.scan(as_of=1)
    assert t.check().ok


def test_undo_gc_removing_a_history_only_rowset_is_no_change(tmp_path):
    """#34.3's rule (§9.2): a commit that removes rowsets and adds none deletes their live rows.
    UNDO GC removes a history-only rowset that way, but its rows were deleted (and listed)
    long before (that history has aged out here): the GC commit lists nothing."""
    t = kv(tmp_path / "t", history_max_age=1)
    t.insert(pa.table({"key": [f"k{i}" for i in range(10)], "val": list(range(10))}))
    t.delete(pa.table({"key": ["k1", "k2"]}))
    t.compact()
    (h,) = history_only(t)
    time.sleep(1.2)
    t.compact(t.compaction_plan())
    assert not history_only(t) and h.id not in t.state.rowsets
    assert t.changes(t.version - 1, t.version).num_rows == 0


def test_check_reports_a_history_only_rowset_with_live_rows(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    st = t.state
    (rs,) = st.rowsets.values()
    from dataclasses import replace
    from types import MappingProxyType
    bad = replace(st, rowsets=MappingProxyType({rs.id: replace(rs, live_until=st.timestamp)}))
    from tableformat.maintenance.check import check
    rep = check(t.storage, t.log, bad)
    assert any("history-only" in v and "2 row(s)" in v for v in rep.violations)


def test_rowset_meta_without_live_until_reads_as_format_3():
    d = {"id": "0" * 32, "tablet": "r0", "num_rows": 1, "min_key": "61", "max_key": "61",
         "base": [{"path": "b", "size": 1, "column_ids": [0]}], "pk_index": {"path": "p", "size": 1},
         "bloom": {"path": "f", "size": 1}, "stats": {}, "created_ts": 0}
    m = RowSetMeta.from_json(d)
    assert m.live_until is None and not m.history_only and m.visible_at(None)
    assert "live_until" not in m.to_json()
    h = RowSetMeta.from_json({**d, "live_until": 100})
    assert h.history_only and h.to_json()["live_until"] == 100
    assert not h.visible_at(None) and not h.visible_at(100) and h.visible_at(99)


def test_mutation_racing_the_merge_that_writes_history_only_rowsets(tmp_path):
    """The merge loses to a delete and an update committed meanwhile: it remaps them onto its live
    output (by key), and the current scan and every version stay exact."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": [f"k{i}" for i in range(20)], "val": list(range(20))}))
    t.delete(pa.table({"key": ["k1", "k2"]}))
    other = tf.open_table(str(tmp_path / "t"))
    _during_next_commit(t, lambda: (other.delete(pa.table({"key": ["k5"]})),
                                    other.update(pa.table({"key": ["k6"], "val": [60]}))))
    (a,) = t.compaction_plan().actions
    t.compact(CompactionPlan((a,), 0, t.version))
    t.storage.fault_hook = None
    assert [h.num_rows for h in history_only(t)] == [2]
    got = t.scan(ordered=True).to_arrow()
    assert got.column("key").to_pylist() == [f"k{i}" for i in sorted(range(20), key=str) if i not in (1, 2, 5)]
    assert dict(zip(got.column("key").to_pylist(), got.column("val").to_pylist()))["k6"] == 60
    assert t.check().ok
    before = every_version(t)
    t.compact()                                                  # the remapped delete: history-only too
    assert_current_scan_is_clean(t)
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert every_version(t, before) == before


def test_mutation_that_loses_to_the_merge_restarts_on_its_outputs(tmp_path):
    """A mutation planned before the merge commits after it: its rowids are gone, so it plans
    again on the live outputs (the deleted keys, now history-only, stay absent)."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": [f"k{i}" for i in range(20)], "val": list(range(20))}))
    t.delete(pa.table({"key": ["k1", "k2"]}))
    other = tf.open_table(str(tmp_path / "t"))
    _during_next_commit(t, lambda: other.compact())
    t.upsert(pa.table({"key": ["k2", "k3"], "val": [200, 300]}))  # k2 deleted: inserted again
    t.storage.fault_hook = None
    assert history_only(t)
    got = dict(zip(*[t.scan().to_arrow().column(c).to_pylist() for c in ("key", "val")]))
    assert got["k2"] == 200 and got["k3"] == 300 and "k1" not in got and len(got) == 19
    assert t.check().ok
    with pytest.raises(tf.DuplicateKeyError,
                       match=r"1 key\(s\) already exist in table 't' \(first: 'k2'\); use insert_ignore or upsert"):
        t.insert(pa.table({"key": ["k2"], "val": [0]}))


def test_history_only_rowset_in_the_policy_is_never_merged_again(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": [f"k{i:03d}" for i in range(0, 100, 2)], "val": list(range(50))}))
    t.insert(pa.table({"key": [f"k{i:03d}" for i in range(1, 100, 2)], "val": list(range(50))}))
    t.delete(pa.table({"key": ["k010", "k011"]}))
    t.compact()
    (h,) = history_only(t)
    assert not any(h.id in a.rowsets for a in t.compaction_plan().actions)
    forced = CompactionPlan((CompactionAction("merge", h.tablet, (h.id,), 1.0, "test", 0),), 0, t.version)
    before = every_version(t)
    t.compact(forced)                                            # merging it anyway keeps it history-only
    assert len(history_only(t)) == 1 and every_version(t, before) == before and t.check().ok


def test_spark_reads_history_only_rowsets_as_of_earlier_versions(spark, tmp_path):
    """The data source runs the engine's scan plan: a current read skips history-only rowsets,
    a read as of a version before the deletes reads them (through UNDO, after a vacuum)."""
    uri = str(tmp_path / "t")
    t = kv(uri)
    t.insert(pa.table({"key": [f"k{i:02d}" for i in range(30)], "val": list(range(30))}))
    before_delete = t.version
    t.delete(pa.table({"key": ["k03", "k04", "k17"]}))
    t.update(pa.table({"key": ["k05"], "val": [500]}))
    t.compact()
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert history_only(t) and t.state.history_horizon > before_delete

    def spark_rows(as_of=None):
        r = spark.read.format("tableformat")
        if as_of is not None:
            r = r.option("as_of", str(as_of))
        return sorted((x["key"], x["val"]) for x in r.load(uri).collect())

    assert spark_rows(before_delete) == [(f"k{i:02d}", i) for i in range(30)]
    now = [(r["key"], r["val"]) for r in t.scan(ordered=True).to_arrow().to_pylist()]
    assert spark_rows() == now and len(now) == 27 and ("k05", 500) in now


def test_changes_across_the_compaction_that_writes_history_only_rowsets(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b", "c"], "val": [1, 2, 3]}))
    start = t.version
    t.delete(pa.table({"key": ["b"]}))
    t.compact()
    assert history_only(t)
    t.update(pa.table({"key": ["c"], "val": [30]}))
    t.insert(pa.table({"key": ["b"], "val": [20]}))
    ch = t.changes(start, t.version).select(["key", "_op", "val"]).to_pylist()
    assert ch == [{"key": "b", "_op": "delete", "val": None}, {"key": "c", "_op": "update", "val": 30},
                  {"key": "b", "_op": "insert", "val": 20}]


def test_a_task_built_without_its_delta_list_applies_every_delta(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    t.delete(pa.table({"key": ["a"]}))
    s = t.scan()
    (rs,) = t.state.rowsets.values()
    assert s.read_task(tf.ScanTask(rs, 0, 2)).column("key").to_pylist() == ["b"]
    (planned,) = s.plan()
    assert [d.kind for d in planned.deltas] == ["redo"]           # the delete mask, no UNDO


def test_a_format_3_table_reads_and_upgrades_at_its_compaction(tmp_path, monkeypatch):
    import json
    import tableformat.format.metadata as md
    import tableformat.log.txlog as tl
    for mod in (md, tl):
        monkeypatch.setattr(mod, "FORMAT_VERSION", 3)
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": [f"k{i}" for i in range(8)], "val": list(range(8))}))
    t.delete(pa.table({"key": ["k2"]}))
    t.update(pa.table({"key": ["k3"], "val": [30]}))
    v3_head = t.version
    for mod in (md, tl):
        monkeypatch.setattr(mod, "FORMAT_VERSION", 4)
    t = tf.open_table(str(tmp_path / "t"))
    before = every_version(t)
    assert len(before[v3_head]) == 7
    t.compact()
    assert history_only(t) and every_version(t, before) == before
    assert_current_scan_is_clean(t)
    log = tmp_path / "t" / "_log"
    fvs = [json.loads((log / f"{v:020d}.json").read_text())["format_version"] for v in range(t.version + 1)]
    assert fvs[:v3_head + 1] == [3] * (v3_head + 1) and set(fvs[v3_head + 1:]) == {4}
    assert t.check().ok


# --- tags over history-only layers, and writes racing the merge that writes them --------------

def test_tags_keep_exactly_the_layers_of_history_only_rows_they_see(tmp_path):
    """A key deleted and inserted again twice: its two deleted copies live in history-only
    layers as long as a tag sees them; untagging lets UNDO GC drop exactly the unseen ones."""
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("a", "int64", nullable=True)], primary_key="k")
    t = tf.create_table(str(tmp_path / "t"), sch, properties={"history_max_age": 1})

    def rd(**kw):
        return t.scan(ordered=True, **kw).to_arrow().to_pylist()
    want = {}
    t.insert(kt([1, 2], [10, 20]))
    t.tag("A")
    want["A"] = rd()
    t.delete(kt([1]))
    t.tag("Adel")
    want["Adel"] = rd()
    t.insert(kt([1], [11]))
    t.update(kt([1], [12]))
    t.tag("B")
    want["B"] = rd()
    t.delete(kt([1]))
    t.insert(kt([1], [13]))
    t.delete(kt([2]))
    t.tag("C")
    want["C"] = rd()
    t.insert(kt([2], [21]))
    t.update(kt([2], [22]))
    final = rd()

    def verify():
        for n, w in want.items():
            assert rd(as_of=n) == w and t.lookup(kt([1, 2]), as_of=n).to_pylist() == w, n
        assert rd() == final and t.lookup(kt([1, 2])).to_pylist() == final
        assert t.check().ok
        with pytest.raises(tf.DuplicateKeyError,
                           match=r"1 key\(s\) already exist in table 't' \(first: 1\); use insert_ignore or upsert"):
            t.insert(kt([1], [0]))

    def ghosts():
        return sorted(r.num_rows for r in t.state.rowsets.values() if r.history_only)
    time.sleep(1.2)                       # everything is older than history_max_age now
    merge_all(t)
    vacuum0(t)
    verify()
    assert ghosts() == [1, 2]             # 1 (10) and 2 (20) seen by A/Adel/B; 1 (12) by B
    t.compact(t.compaction_plan())
    verify()
    t.untag("A")
    want.pop("A")
    time.sleep(1.2)
    merge_all(t)
    t.compact(t.compaction_plan())
    vacuum0(t)
    verify()
    assert ghosts() == [2]                # 1 (10) was seen only by A
    t.untag("B")
    want.pop("B")
    merge_all(t)                          # a merge drops the rows of a history-only rowset no tag sees
    t.compact(t.compaction_plan())
    vacuum0(t)
    verify()
    assert ghosts() == [1]                # 2 (20), seen by Adel


@pytest.mark.parametrize("case", range(6))
def test_writes_racing_a_merge_that_writes_history_only_rowsets(tmp_path, case):
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("a", "int64", nullable=True)], primary_key="k")
    t = tf.create_table(str(tmp_path / "t"), sch)
    t.insert(kt([1, 2, 3], [10, 20, 30]))
    t.delete(kt([2]))
    other = tf.open_table(str(tmp_path / "t"))
    if case == 0:      # insert of the deleted key; the merge moving its old row to history commits first
        _during_next_commit(t, lambda: merge_all(other))
        t.insert(kt([2], [21]))
        want = {1: 10, 2: 21, 3: 30}
    elif case == 1:    # insert of a live key: still a duplicate after the merge
        _during_next_commit(t, lambda: merge_all(other))
        with pytest.raises(tf.DuplicateKeyError,
                           match=r"1 key\(s\) already exist in table 't' \(first: 3\); use insert_ignore or upsert"):
            t.insert(kt([3], [31]))
        want = {1: 10, 3: 30}
    elif case == 2:    # the insert of the deleted key commits first
        _during_next_commit(other, lambda: t.insert(kt([2], [22])))
        merge_all(other)
        want = {1: 10, 2: 22, 3: 30}
    elif case == 3:    # a delete and re-insert of a live key commit first
        _during_next_commit(other, lambda: (t.delete(kt([3])), t.insert(kt([3], [33]))))
        merge_all(other)
        want = {1: 10, 3: 33}
    elif case == 4:    # an upsert of the deleted key and an update commit first
        _during_next_commit(other, lambda: (t.upsert(kt([2], [23])), t.update(kt([1], [11]))))
        merge_all(other)
        want = {1: 11, 2: 23, 3: 30}
    else:              # insert_ignore of a deleted and a live key; the merge commits first
        _during_next_commit(t, lambda: merge_all(other))
        t.insert_ignore(kt([2, 3], [24, 34]))
        want = {1: 10, 2: 24, 3: 30}
    t = tf.open_table(str(tmp_path / "t"))
    for _ in range(2):
        assert t.scan(ordered=True).to_arrow().to_pylist() == model_rows(want)
        assert t.lookup(kt([1, 2, 3])).to_pylist() == model_rows(want)
        for k in want:
            with pytest.raises(tf.DuplicateKeyError, match=r"1 key\(s\) already exist in table 't' \(first: [123]\)"):
                t.insert(kt([k], [0]))
        assert t.check().ok
        t.compact()
        vacuum0(t)
