"""History inside rowsets: UNDO records written by compactions, read as of earlier versions once
vacuum has deleted the files those versions referenced, and garbage-collected past the history."""
import random
import time

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf

from helpers import assert_same_rows, every_version, force, kv, merge_all, metrics_partitioning, metrics_rows, metrics_schema


def seed(t):
    t.insert(pa.table({"key": ["row"], "val": [1]}))
    t.update(pa.table({"key": ["row"], "val": [2]}))
    t.delete(pa.table({"key": ["row"]}))
    t.insert(pa.table({"key": ["row"], "val": [3]}))


@pytest.mark.parametrize("kind", ["major_delta", "merge"])
def test_seed_sequence_reads_back_from_undo_after_vacuum(tmp_path, kind):
    """The tablet seed's example: every version reads identically from the compacted files alone."""
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
    merge_all(t)
    st = t.state
    assert sum(r.num_rows for r in st.rowsets.values()) == 9          # 4 ghost rows kept for history
    assert len(st.rowsets) == 3                                        # the newest rows, then two ghost layers
    assert t.check().ok                                                # each rowset's keys strictly sorted
    assert all(r.created_ts == 0 for r in st.rowsets.values())
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
    force(t, "merge", [rs])                                    # within the history: all is kept
    st = t.state
    assert sum(r.num_rows for r in st.rowsets.values()) == 10
    undo = [d for ds in st.deltas.values() for d in ds if d.kind == "undo"]
    assert sum(d.num_records for d in undo) == 10 + 1         # an UNDO DELETE per insert, the update's before-image
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
    with pytest.raises(tf.HistoryExpiredError):
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
