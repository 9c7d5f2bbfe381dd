"""History inside rowsets: UNDO records written by compactions, read as of earlier versions once
vacuum has deleted the files those versions referenced, and garbage-collected past the history:
ghost rows, NULLs set and cleared, alters, the vacuum horizon, composite keys, tables from format
version 1."""
import random
import time

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf

from helpers import (assert_same_rows, col_ids, every_version, force, kv, merge_all, metrics_partitioning,
                     metrics_rows, metrics_schema, read, vacuum0)


def seed(t):
    t.insert(pa.table({"key": ["row"], "val": [1]}))
    t.update(pa.table({"key": ["row"], "val": [2]}))
    t.delete(pa.table({"key": ["row"]}))
    t.insert(pa.table({"key": ["row"], "val": [3]}))


@pytest.mark.parametrize("kind", ["major_delta", "merge"])
def test_seed_sequence_reads_back_from_undo_after_vacuum(tmp_path, kind):
    """specs/design/compaction.md's example: every version reads identically from the compacted files alone."""
    t = kv(tmp_path / "t")
    seed(t)
    t.update(pa.table({"key": ["row"], "val": [4]}))
    before = every_version(t)
    live = max(t.state.rowsets.values(), key=lambda r: len(t.state.deltas_of(r.id)))
    if kind == "merge":
        merge_all(t)
    else:
        force(t, kind, [live.id], [t.schema.column("val").id])
    assert any(d.kind == "undo" for ds in t.state.deltas.values() for d in ds)
    res = t.vacuum(retain_seconds=0, grace_seconds=0)
    assert res.files and t.state.history_horizon == t.version - 1
    after = every_version(t, before)
    assert after == before
    assert t.check().ok


def test_merge_keeps_deleted_and_reinserted_keys_apart(tmp_path):
    """A key deleted and inserted again is several rows; a merge keeps each rowset key-unique."""
    t = kv(tmp_path / "t")
    for i in range(3):
        t.insert(pa.table({"key": ["a", "b", f"c{i}"], "val": [i, 10 + i, 20 + i]}))
        if i < 2:
            t.delete(pa.table({"key": ["a", "b"]}))
    before = every_version(t)
    oldest = min(r.created_ts for r in t.state.rowsets.values())
    assert oldest > 0
    merge_all(t)
    st = t.state
    assert sum(r.num_rows for r in st.rowsets.values()) == 9          # 4 ghost rows kept for history
    assert len(st.rowsets) == 3                                        # the newest rows, then two ghost layers
    assert t.check().ok                                                # each rowset's keys strictly sorted
    assert all(r.created_ts == oldest for r in st.rowsets.values())   # the oldest input's (specs §8.2)
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert every_version(t, before) == before
    assert not t.compaction_plan().actions                             # ghost layers are not merged again
    t.upsert(pa.table({"key": ["a", "z"], "val": [100, 101]}))
    t.delete(pa.table({"key": ["b"]}))
    assert t.scan(ordered=True).to_arrow().to_pylist() == [
        {"key": "a", "val": 100, "s": None}, {"key": "c0", "val": 20, "s": None},
        {"key": "c1", "val": 21, "s": None}, {"key": "c2", "val": 22, "s": None},
        {"key": "z", "val": 101, "s": None}]


def _random_history(t, rng, steps, keys, compact_every, vacuum_every):
    """Random mutations with compactions and vacuums in between; the expected rows of each version."""
    model: dict[str, dict] = {}
    expected = {t.version: []}
    for step in range(steps):
        op = rng.choice(["insert", "update", "delete", "upsert", "update_s"])
        ks = sorted(rng.sample(keys, rng.randint(1, 8)))
        if op == "insert":
            ks = [k for k in ks if k not in model]
            if not ks:
                continue
            vals = [rng.randint(0, 999) for _ in ks]
            t.insert(pa.table({"key": ks, "val": vals}))
            model.update({k: {"key": k, "val": v, "s": None} for k, v in zip(ks, vals)})
        elif op in ("update", "update_s"):
            ks = [k for k in ks if k in model]
            if not ks:
                continue
            if op == "update":
                vals = [rng.choice([None, rng.randint(0, 999)]) for _ in ks]
                t.update(pa.table({"key": ks, "val": pa.array(vals, pa.int64())}))
                for k, v in zip(ks, vals):
                    model[k] = {**model[k], "val": v}
            else:
                vals = [f"s{step}-{k}" for k in ks]
                t.update(pa.table({"key": ks, "s": vals}))
                for k, v in zip(ks, vals):
                    model[k] = {**model[k], "s": v}
        elif op == "delete":
            ks = [k for k in ks if k in model]
            if not ks:
                continue
            t.delete(pa.table({"key": ks}))
            for k in ks:
                del model[k]
        else:
            vals = [rng.randint(0, 999) for _ in ks]
            t.upsert(pa.table({"key": ks, "val": vals}))
            for k, v in zip(ks, vals):
                model[k] = {"key": k, "val": v, "s": model.get(k, {}).get("s")}
        expected[t.version] = sorted(model.values(), key=lambda r: r["key"])
        if step % compact_every == compact_every - 1:
            choice = rng.choice(["policy", "merge", "major", "minor"])
            if choice == "policy":
                t.compact(t.compaction_plan())
            elif choice == "merge":
                merge_all(t)
            else:
                with_deltas = [r for r in t.state.rowsets.values() if t.state.deltas_of(r.id)]
                if with_deltas:
                    rs = rng.choice(with_deltas)
                    if choice == "major":
                        cols = rng.choice([["val"], ["s"], ["val", "s"]])
                        force(t, "major_delta", [rs.id], [t.schema.column(c).id for c in cols])
                    else:
                        force(t, "minor_delta", [rs.id])
            expected[t.version] = sorted(model.values(), key=lambda r: r["key"])
        if step % vacuum_every == vacuum_every - 1:
            t.vacuum(retain_seconds=0, grace_seconds=0)
            expected[t.version] = sorted(model.values(), key=lambda r: r["key"])
    return expected


@pytest.mark.parametrize("seed_", range(4))
def test_random_history_reads_exactly_after_every_file_is_vacuumed(tmp_path, seed_):
    """Model check: compactions of every kind, vacuum with no retention, every version exact."""
    rng = random.Random(seed_)
    t = kv(tmp_path / "t", rowset_target_bytes=1 << 16)
    keys = [f"k{i:02d}" for i in range(40)]
    expected = _random_history(t, rng, 70, keys, compact_every=5, vacuum_every=9)
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert t.state.history_horizon > 0
    got = every_version(t, expected)
    for v in expected:
        assert got[v] == expected[v], f"version {v}"
    assert t.check().ok
    # a timestamp between commits reads the version valid then
    h = t.history()
    mid = tf.Timestamp((h[5].timestamp + h[6].timestamp) // 2)
    assert t.scan(as_of=mid, ordered=True).to_arrow().to_pylist() == expected[5]
    # projections and filters as of an old version, through UNDO
    v = max(x for x in expected if x < t.state.history_horizon)
    rows = [r for r in expected[v] if r["val"] is not None and r["val"] >= 500]
    got = t.scan(as_of=v, columns=["key", "val"], filter=[("val", ">=", 500)], ordered=True).to_arrow()
    assert got.to_pylist() == [{"key": r["key"], "val": r["val"]} for r in rows]


def test_partitioned_table_history_after_merges_and_vacuum(tmp_path):
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(2000)
    key = ["host", "metric", "time"]
    for i in range(4):
        t.insert(data.take(pa.array(np.arange(i, 2000, 4))))
    t.update(data.slice(0, 300).select(key).append_column("value", pa.array(np.full(300, -1.0))))
    t.delete(data.slice(100, 50).select(key))
    before = {v: t.scan(as_of=v).to_arrow() for v in range(t.version + 1)}
    t.compact(t.compaction_plan())
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert t.state.history_horizon == t.version - 1
    for v, want in before.items():
        assert_same_rows(t.scan(as_of=v).to_arrow(), want)
    assert t.check().ok


def test_history_max_age_garbage_collects_undo_and_deleted_rows(tmp_path):
    """UNDO records and deleted rows older than history_max_age go at the next compaction; reads
    from before it are refused, never answered wrongly."""
    t = kv(tmp_path / "t", history_max_age=1, reclaim_deleted_pct=1)
    t.insert(pa.table({"key": [f"k{i}" for i in range(10)], "val": list(range(10))}))
    t.update(pa.table({"key": ["k1"], "val": [100]}))
    t.delete(pa.table({"key": ["k2"]}))
    old = t.version
    (rs,) = t.state.rowsets
    rs_created = t.state.rowsets[rs].created_ts
    force(t, "merge", [rs])                                    # within the history: all is kept
    st = t.state
    assert sum(r.num_rows for r in st.rowsets.values()) == 10
    undo = [d for ds in st.deltas.values() for d in ds if d.kind == "undo"]
    assert sum(d.num_records for d in undo) == 1              # the update's before-image; the insert's time is
    assert {r.created_ts for r in st.rowsets.values()} == {rs_created}     # the outputs' created_ts, not a record a row
    redo = [d for ds in st.deltas.values() for d in ds if d.kind == "redo"]
    assert sum(d.delete_count for d in redo) == 1              # the deleted row stays, deleted by a REDO
    assert t.scan(as_of=old - 2, ordered=True).to_arrow().column("val").to_pylist()[1] == 1
    time.sleep(1.3)                                            # everything above is now ancient history
    plan = t.compaction_plan()
    # format 4: the deleted row sits in a history-only rowset, dropped whole, as the live rowset's
    # ancient UNDO file is, reading nothing (format 3 rewrote the rowset: a "merge" here)
    assert sorted(a.kind for a in plan.actions) == ["undo_gc", "undo_gc"]
    assert any("deleted" in a.reason for a in plan.actions)
    t.compact(plan)
    st = t.state
    assert sum(r.num_rows for r in st.rowsets.values()) == 9  # the deleted row is reclaimed
    assert not [d for ds in st.deltas.values() for d in ds]   # no UNDO left: it was all older than the mark
    assert st.history_gc_ts > 0
    t.vacuum(retain_seconds=0, grace_seconds=0)
    with pytest.raises(tf.HistoryExpiredError,
                       match="version 3 is earlier than the ancient history mark: history older than"):
        t.scan(as_of=old)
    assert t.scan(ordered=True).to_arrow().column("val").to_pylist() == [0, 100, 3, 4, 5, 6, 7, 8, 9]


def test_horizon_never_passes_an_alter_within_the_history(tmp_path):
    """Files written after a column drop lack it: versions before the drop keep their own files."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2], "s": ["x", "y"]}))
    t.update(pa.table({"key": ["a"], "s": ["x2"]}))
    with t.alter() as a:
        a.drop_column("s")
    t.update(pa.table({"key": ["b"], "val": [20]}))
    before = every_version(t)
    merge_all(t)
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert t.state.history_horizon == 2                        # the version before the ALTER
    assert every_version(t, before) == before
    assert before[2] == [{"key": "a", "val": 1, "s": "x2"}, {"key": "b", "val": 2, "s": "y"}]


def test_format_version_and_undo_file_layout(tmp_path):
    t = kv(tmp_path / "t")
    seed(t)
    merge_all(t)
    assert tf.FORMAT_VERSION >= 2                                # UNDO files came with version 2
    undo = [d for ds in t.state.deltas.values() for d in ds if d.kind == "undo"]
    assert undo and all(d.has_ts_column and d.path.split("/")[-1].startswith("undo-") for d in undo)
    import pyarrow.parquet as pq
    f = pq.read_table(str(tmp_path / "t" / undo[0].path))
    assert {"rowid", "op", "ts"} <= set(f.column_names)


def test_ancient_undo_files_are_deleted_without_rewriting_data(tmp_path):
    """Kudu's UNDO GC op: files holding only history older than history_max_age just go."""
    t = kv(tmp_path / "t", history_max_age=1)
    t.insert(pa.table({"key": [f"k{i:03d}" for i in range(200)], "val": list(range(200))}))
    t.update(pa.table({"key": [f"k{i:03d}" for i in range(0, 200, 2)], "val": [0] * 100}))
    (rs,) = t.state.rowsets
    force(t, "major_delta", [rs], [t.schema.column("val").id])
    assert [d.kind for d in t.state.deltas_of(rs)] == ["undo"]
    time.sleep(1.3)
    plan = t.compaction_plan()
    assert [a.kind for a in plan.actions] == ["undo_gc"] and "older than history_max_age" in str(plan)
    base_files = {f.path for f in t.state.rowsets[rs].files}
    t.compact(plan)
    assert not t.state.deltas_of(rs) and {f.path for f in t.state.rowsets[rs].files} == base_files
    assert t.history()[-1].operation == "COMPACT UNDO_GC" and not t.compaction_plan().actions
    assert t.scan().count() == 200 and t.check().ok


# --- every version after compactions and vacuums: ghost rows, NULLs, alters, the horizon, composite keys ---

def test_null_and_back_across_major_merge_major(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b", "c"], "val": [1, 2, 3], "s": ["x", None, "z"]}))
    t.update(pa.table({"key": ["a", "b"], "val": pa.array([None, None], pa.int64())}))
    t.update(pa.table({"key": ["a"], "val": [10], "s": pa.array([None], pa.string())}))
    (rs,) = t.state.rowsets
    force(t, "major_delta", [rs], col_ids(t, "val"))
    t.update(pa.table({"key": ["a", "b"], "val": pa.array([None, 20], pa.int64()), "s": ["x2", "y2"]}))
    t.update(pa.table({"key": ["b"], "s": pa.array([None], pa.string())}))
    force(t, "major_delta", [rs], col_ids(t, "s"))
    t.update(pa.table({"key": ["a"], "val": [11]}))
    merge_all(t)
    t.update(pa.table({"key": ["c"], "val": pa.array([None], pa.int64())}))
    (rs,) = t.state.rowsets
    force(t, "major_delta", [rs], col_ids(t, "val", "s"))
    before = every_version(t)
    vacuum0(t)
    assert t.state.history_horizon == t.version - 1
    assert every_version(t, before) == before
    assert read(t, 2, filter=[("val", "is_null")], columns=["key"]) == [{"key": "a"}, {"key": "b"}]
    assert t.check().ok


def test_reinsert_cycles_make_ghost_layers_then_updates_and_merges(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["k", "m"], "val": [0, 100]}))
    for i in range(1, 5):
        t.delete(pa.table({"key": ["k"]}))
        if i % 2:
            t.upsert(pa.table({"key": ["k"], "val": [i]}))           # upsert of a deleted key inserts
        else:
            t.insert(pa.table({"key": ["k"], "val": [i]}))
        merge_all(t)
    assert len(t.state.rowsets) == 5                                   # live rows, then four ghost layers
    t.update(pa.table({"key": ["k"], "val": [40]}))
    t.update(pa.table({"key": ["k", "m"], "s": ["s", "t"]}))
    merge_all(t)
    (main,) = [r for r in t.state.rowsets.values() if r.num_rows == 2]
    force(t, "major_delta", [main.id], col_ids(t, "s"))
    t.delete(pa.table({"key": ["k"]}))
    merge_all(t)
    before = every_version(t)
    vacuum0(t)
    assert every_version(t, before) == before
    assert t.check().ok
    hist = t.history()
    for v in range(1, len(hist) - 1):                                  # a timestamp between every two commits
        mid = tf.Timestamp((hist[v].timestamp + hist[v + 1].timestamp) // 2)
        assert t.scan(as_of=mid, ordered=True).to_arrow().to_pylist() == before[v]
    assert t.changes(t.state.history_horizon).num_rows == 0
    t.insert(pa.table({"key": ["k"], "val": [7]}))
    assert read(t, t.version) == [{"key": "k", "val": 7, "s": None}, {"key": "m", "val": 100, "s": "t"}]


def test_merge_of_rowsets_whose_rows_are_all_deleted(tmp_path):
    """Within the history the deleted rows stay as ghosts; once ancient the rowset vanishes."""
    t = kv(tmp_path / "t", history_max_age=2)
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    t.insert(pa.table({"key": ["c"], "val": [3]}))
    t.delete(pa.table({"key": ["a", "b"]}))
    first = [r for r in t.state.rowsets.values() if r.num_rows == 2][0].id
    force(t, "merge", [first])
    (ghosts,) = [r for r in t.state.rowsets.values() if r.num_rows == 2]
    before = every_version(t)
    vacuum0(t)
    assert every_version(t, before) == before
    assert [a.rowsets for a in t.compaction_plan().actions] == []    # a ghost layer is not merged again
    time.sleep(2.1)
    force(t, "merge", [ghosts.id, [r for r in t.state.rowsets if r != ghosts.id][0]])
    assert [r.num_rows for r in t.state.rowsets.values()] == [1]
    (rest,) = t.state.rowsets
    t.delete(pa.table({"key": ["c"]}))
    time.sleep(2.1)
    force(t, "merge", [rest])                                          # everything deleted and ancient
    assert not t.state.rowsets and t.scan().count() == 0
    vacuum0(t)
    assert t.check().ok and read(t, t.version) == []


def test_empty_table_history(tmp_path):
    t = kv(tmp_path / "t")
    assert not t.compaction_plan().actions
    vacuum0(t)
    assert read(t, 0) == [] and t.check().ok
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.delete(pa.table({"key": ["a"]}))
    merge_all(t)
    vacuum0(t)
    assert every_version(t, range(4)) == {0: [], 1: [{"key": "a", "val": 1, "s": None}], 2: [], 3: []}
    assert t.check().ok


def test_old_versions_through_undo_with_key_ranges_row_groups_and_stats(tmp_path):
    """Many row groups, key-range seeks (start > 0) and stats pruning on updated columns, as of
    versions before the horizon."""
    t = kv(tmp_path / "t", row_group_rows=128, pk_index_block_rows=16)
    keys = [f"k{i:05d}" for i in range(3000)]
    t.insert(pa.table({"key": keys, "val": np.arange(3000), "s": [f"s{i % 7}" for i in range(3000)]}))
    rng = np.random.default_rng(1)
    for step in range(4):
        idx = np.sort(rng.choice(3000, 200, replace=False))
        t.update_ignore(pa.table({"key": [keys[i] for i in idx], "val": np.full(200, 10_000 + step)}))
        t.delete_ignore(pa.table({"key": [keys[i] for i in idx[:5]]}))
        t.insert_ignore(pa.table({"key": [keys[i] for i in idx[:3]], "val": [-1, -2, -3]}))
    big = max(t.state.rowsets.values(), key=lambda r: r.num_rows)
    force(t, "major_delta", [big.id], col_ids(t, "val"))
    vals = {v: read(t, v, columns=["key", "val"]) for v in range(t.version + 1)}
    merge_all(t)
    force(t, "major_delta", [max(t.state.rowsets.values(), key=lambda r: r.num_rows).id], col_ids(t, "val"))
    vacuum0(t)
    assert t.state.history_horizon == t.version - 1
    for v, want in vals.items():
        assert read(t, v, columns=["key", "val"]) == want, v
        lo, hi = "k01000", "k01500"
        got = read(t, v, columns=["key", "val"], filter=[("key", ">=", lo), ("key", "<", hi)])
        assert got == [r for r in want if lo <= r["key"] < hi], v
        got = read(t, v, columns=["key", "val"], filter=[("val", "<", 50)])
        assert got == [r for r in want if r["val"] < 50], v
        got = read(t, v, columns=["key", "val"], filter=[("val", ">=", 10_000)])
        assert got == [r for r in want if r["val"] >= 10_000], v
    assert t.check().ok


def test_aged_out_alters_let_the_horizon_pass_and_later_versions_read_exactly(tmp_path):
    """Range drop / re-add and a column add with a read default: while they are within the history
    the horizon waits; once older than history_max_age it passes them, and the versions after
    them, read through UNDO with their own schema and partitioning, are exact."""
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "int64", nullable=True)], primary_key="k")
    part = tf.PartitionSchema(hash=[tf.HashPartition(["k"], buckets=2)],
                              range=tf.RangePartition(["k"], bounds=[(0, 100), (100, 200)]))
    t = tf.create_table(str(tmp_path / "t"), sch, partitioning=part, properties={"history_max_age": 2})
    t.insert(pa.table({"k": [1, 2, 101, 102], "v": [1, 2, 101, 102]}))
    t.update(pa.table({"k": [1, 101], "v": [10, 1010]}))
    with t.alter() as a:
        a.drop_range_partition(100, 200)
        a.add_column("w", "int32", nullable=False, default=9)
    before_alter = every_version(t)
    merge_all(t)
    vacuum0(t)
    assert t.state.history_horizon == 2                                # waits before the ALTER
    assert every_version(t, before_alter) == before_alter
    with t.alter() as a:
        a.add_range_partition(100, 300)
    time.sleep(2.1)                                                    # both ALTERs are now ancient
    t.insert(pa.table({"k": [150, 3], "v": [150, 3]}))
    t.update(pa.table({"k": [1, 150], "w": [90, 1500]}))
    t.delete(pa.table({"k": [2]}))
    first = t.version - 2
    recent = every_version(t, range(first, t.version + 1))
    merge_all(t)
    vacuum0(t)
    assert t.state.history_horizon >= t.version - 1
    assert every_version(t, recent) == recent
    assert recent[first + 1] == [{"k": 1, "v": 10, "w": 90}, {"k": 2, "v": 2, "w": 9},
                                 {"k": 3, "v": 3, "w": 9}, {"k": 150, "v": 150, "w": 1500}]
    with pytest.raises(tf.HistoryExpiredError,
                       match="version 1 is earlier than the ancient history mark: history older than"):
        t.scan(as_of=1)
    assert t.check().ok


def test_drop_and_re_add_a_column_of_the_same_name_then_compactions(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2], "s": ["x", "y"]}))
    t.update(pa.table({"key": ["a"], "s": ["x2"]}))
    with t.alter() as a:
        a.drop_column("s")
    with t.alter() as a:
        a.add_column("s", "string", nullable=True)
        a.rename_column("val", "v")
    t.update(pa.table({"key": ["b"], "s": ["new"], "v": [20]}))
    before = every_version(t)
    (rs,) = t.state.rowsets
    force(t, "major_delta", [rs], col_ids(t, "s", "v"))
    merge_all(t)
    vacuum0(t)
    assert t.state.history_horizon == 2
    assert every_version(t, before) == before
    assert read(t, 2, filter=[("s", "==", "x2")], columns=["key"]) == [{"key": "a"}]
    assert read(t, t.version, filter=[("s", "==", "x2")]) == []
    assert t.check().ok


def test_raising_history_max_age_after_the_horizon_passed_a_range_drop(tmp_path):
    """With history_max_age = 1 a range drop ages out, so vacuum moves the horizon past it and deletes
    the dropped rowsets' files. Raising history_max_age afterwards (an ALTER) moves the ancient history
    mark back: Table._check_history lets version 1 through, and Table._state_at reads it from the
    horizon's files (no gc_ts guards it: no compaction ran), silently without the rows of the
    dropped range. Expected: the old rows, or HistoryExpiredError; not a wrong answer."""
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "int64", nullable=True)], primary_key="k")
    part = tf.PartitionSchema(range=tf.RangePartition(["k"], bounds=[(0, 10), (10, 20)]))
    t = tf.create_table(str(tmp_path / "t"), sch, partitioning=part, properties={"history_max_age": 1})
    t.insert(pa.table({"k": [1, 11], "v": [1, 11]}))
    with t.alter() as a:
        a.drop_range_partition(10, 20)
    time.sleep(1.2)
    vacuum0(t)
    with t.alter() as a:
        a.set_property("history_max_age", 3600)
    try:
        got = read(t, 1)
    except tf.HistoryExpiredError:
        return
    assert got == [{"k": 1, "v": 1}, {"k": 11, "v": 11}]


def test_version_within_history_max_age_stays_readable_after_vacuum(tmp_path):
    """history_max_age = 2: the table idles past it, then a major delta compaction records
    gc_before_ts = now - 2 s, later than version 2's timestamp although version 2 was the latest
    version until that compaction. After vacuum(retain 0) moves the horizon past it,
    Table._state_at refuses it because `st.timestamp < history_gc_ts`, even when asked by a
    Timestamp 0.5 s old (the spec promises HistoryExpiredError only below the ancient history mark).
    The data is there: nothing changed between version 2 and the compaction, so reading the
    horizon's files as of max(timestamp, history_gc_ts) would be exact."""
    t = kv(tmp_path / "t", history_max_age=2)
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.update(pa.table({"key": ["a"], "val": [2]}))
    time.sleep(2.1)
    (rs,) = t.state.rowsets
    force(t, "major_delta", [rs], col_ids(t, "val"))
    recent = tf.Timestamp(t.history()[-1].timestamp - 1)             # just before the compaction: version 2
    assert t.scan(as_of=recent).to_arrow().to_pylist() == [{"key": "a", "val": 2, "s": None}]
    vacuum0(t)
    assert t.scan(as_of=recent).to_arrow().to_pylist() == [{"key": "a", "val": 2, "s": None}]


def test_composite_keys_hash_and_range_partitions_decimal_nan_varchar(tmp_path):
    """The metrics table (3-column key, hash + range partitions, double with NaN, decimal, varchar
    with a default): updates to NULL and back, deletes and re-inserts, merges and majors per tablet,
    key-only projections; every version reads back after vacuum."""
    from helpers import assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning(),
                        properties={"rowset_target_bytes": 1 << 16})
    data = metrics_rows(1200)
    key = ["host", "metric", "time"]
    for i in range(3):
        t.insert(data.take(pa.array(np.arange(i, 1200, 3))))
    rng = np.random.default_rng(7)
    for step in range(4):
        idx = np.sort(rng.choice(1200, 150, replace=False))
        upd = data.take(pa.array(idx)).select(key)
        vals = np.where(rng.random(150) < 0.3, np.nan, rng.normal(size=150))
        upd = upd.append_column("value", pa.array(vals)).append_column(
            "price", pa.array([None] * 150, pa.decimal128(18, 2)) if step % 2 else
            pa.array([None if j % 3 else j for j in range(150)], pa.decimal128(18, 2)))
        t.update_ignore(upd)
        t.update_ignore(data.take(pa.array(idx[:40])).select(key).append_column("tag", pa.array(
            [None if j % 2 else f"t{step}" for j in range(40)], pa.string())))
        gone = data.take(pa.array(idx[40:60])).select(key)
        t.delete_ignore(gone)
        if step % 2:
            t.insert_ignore(data.take(pa.array(idx[40:50])))                  # some deleted keys come back
    before = {v: t.scan(as_of=v).to_arrow() for v in range(t.version + 1)}
    keys_before = {v: t.scan(as_of=v, columns=key).to_arrow() for v in range(t.version + 1)}
    st = t.state
    for i, rs in enumerate(sorted(st.rowsets.values(), key=lambda r: r.id)):
        if i % 2 and st.deltas_of(rs.id):
            force(t, "major_delta", [rs.id], col_ids(t, *(["value"] if i % 4 == 1 else ["price", "tag"])))
    merge_all(t)
    st = t.state
    for rs in st.rowsets.values():
        if rs.num_rows > 50:
            force(t, "major_delta", [rs.id], col_ids(t, "value", "price", "tag"))
    vacuum0(t)
    assert t.state.history_horizon == t.version - 1
    for v, want in before.items():
        assert_same_rows(t.scan(as_of=v).to_arrow(), want)
        assert_same_rows(t.scan(as_of=v, columns=key).to_arrow(), keys_before[v])
        assert t.scan(as_of=v).count() == want.num_rows
    assert t.check().ok


# --- tables from format version 1 -------------------------------------------------------------

def _rewrite_as_format_version_1(root):
    """Rewrite a table's log as a version-1 writer would have written it: format_version 1, no
    `created_ts` in add_rowset, no UNDO files and no `history` action (all new in version 2)."""
    import json
    import os
    import zlib
    log = os.path.join(root, "_log")
    for name in os.listdir(log):
        p = os.path.join(log, name)
        if name.endswith(".checkpoint.json"):
            d = json.load(open(p))
            st = d["state"]
            for r in st["rowsets"]:
                r.pop("created_ts", None)
            st.pop("history_horizon", None)
            st.pop("history_gc_ts", None)
            st["format_version"] = d["format_version"] = 1
            d["checksum"] = zlib.crc32(json.dumps(st, sort_keys=True, separators=(",", ":")).encode())
        elif name.endswith(".json"):
            d = json.load(open(p))
            d["actions"] = [a for a in d["actions"] if "history" not in a and
                            not ("add_delta" in a and a["add_delta"]["kind"] == "undo")]
            for a in d["actions"]:
                a.get("add_rowset", {}).pop("created_ts", None)
                if "metadata" in a:
                    a["metadata"]["format_version"] = 1          # the table was created by a v1 writer
            d["format_version"] = 1
            d["checksum"] = zlib.crc32(json.dumps(d["actions"], sort_keys=True, separators=(",", ":")).encode())
        else:
            continue
        with open(p, "w") as f:
            json.dump(d, f)


def test_table_written_by_format_version_1_reads_old_versions_after_vacuum(tmp_path):
    """The spec says version-2 readers read version-1 tables unchanged. A v1 checkpoint has no
    `created_ts`, so RowSetMeta.from_json gives None; Scanner.plan treats None as 0 ("existed
    from the start", scan.py `(rs.created_ts or 0) > state.read_ts`) and so does a merge
    (compaction._load_input writes no UNDO DELETE when `created_ts` is falsy). Once a v2 writer's
    vacuum moves the horizon (here no compaction is even needed), version 1 shows all ten rows.
    (The log is written by this version and rewritten as a v1 writer would have written it.)"""
    root = str(tmp_path / "t")
    t = kv(root)
    for i in range(10):                                              # checkpoint_interval 10: a checkpoint at 10
        t.insert(pa.table({"key": [f"k{i}"], "val": [i]}))
    before = every_version(t)
    _rewrite_as_format_version_1(root)
    t = tf.open_table(root)
    t.insert(pa.table({"key": ["z"], "val": [99]}))                  # the first version-2 commit
    vacuum0(t)
    assert every_version(t, before) == before


def test_table_compacted_by_format_version_1_reads_old_versions_after_vacuum(tmp_path):
    """A version-1 major delta compaction wrote no UNDO file, and its `add_rowset` (same rowset id) has no
    `created_ts`, so metadata.apply_commit stamps the rowset with the *compaction's* timestamp. Version-1
    history is therefore unreadable from later files, but Table._history_horizon only stops at ALTERs:
    a v2 vacuum moves the horizon past it and versions 1 and 2 read an empty table (the rowset looks
    created after them). Expected: their rows, or HistoryExpiredError (e.g. never put the horizon
    past a version-1 commit)."""
    root = str(tmp_path / "t")
    t = kv(root)
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.update(pa.table({"key": ["a"], "val": [2]}))
    before = every_version(t)
    (rs,) = t.state.rowsets
    force(t, "major_delta", [rs], col_ids(t, "val"))
    _rewrite_as_format_version_1(root)
    t = tf.open_table(root)
    assert every_version(t, before) == before                        # read unchanged, as the spec says
    t.insert(pa.table({"key": ["z"], "val": [9]}))
    vacuum0(t)
    for v, want in before.items():
        try:
            got = read(t, v)
        except tf.HistoryExpiredError:
            continue
        assert got == want, v


def test_a_merge_keeps_the_oldest_inputs_insert_time_as_its_created_ts(tmp_path):
    """A merge's outputs carry the oldest input's created_ts, so only rows of inputs inserted
    later get an UNDO DELETE each (before, an upsert's few rows merged into a load's many
    wrote an UNDO DELETE, with its key, for every row). Every version reads as before, the one
    between the two inserts included, before and after vacuum; merging that output with a newer
    insert keeps it again and adds the new row's DELETE alone."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": [f"k{i:03d}" for i in range(200)], "val": list(range(200))}))
    first = next(iter(t.state.rowsets.values())).created_ts
    t.update(pa.table({"key": ["k005"], "val": [-5]}))
    t.insert(pa.table({"key": ["k0055", "k150x", "zz"], "val": [1, 2, 3]}))    # keys across the first's range
    t.update(pa.table({"key": ["k0055"], "val": [-1]}))
    before = every_version(t)
    assert len(before[2]) == 200 and len(before[3]) == 203                       # between and after the inserts
    merge_all(t)
    (out,) = t.state.rowsets.values()
    assert out.created_ts == first
    undo = [d for d in t.state.deltas_of(out.id) if d.kind == "undo"]
    assert sum(d.delete_count for d in undo) == 3                                # the later insert's rows only
    assert sum(d.num_records for d in undo) == 3 + 2                             # and the two before-images
    assert every_version(t, before) == before
    vacuum0(t)
    assert every_version(t, before) == before
    t.insert(pa.table({"key": ["k0999"], "val": [9]}))
    created = {r.id: r.created_ts for r in t.state.rowsets.values()}
    assert sorted(created.values()) == [first, max(created.values())]
    merge_all(t)
    (out2,) = t.state.rowsets.values()
    assert out2.created_ts == first                       # the oldest again: only the new row's DELETE added
    undo = [d for d in t.state.deltas_of(out2.id) if d.kind == "undo"]
    assert sum(d.delete_count for d in undo) == 3 + 1
    after = every_version(t)
    assert {v: after[v] for v in before} == before and len(after[t.version]) == 204
