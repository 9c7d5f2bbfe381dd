"""A mutation that loses its commit race to a merging compaction of its rowsets rebases: its
REDO records are remapped by key onto the compaction's outputs (specs/format.md §10); and a
compaction racing writes (a mutation, a major or minor delta, an insert of a deleted key) keeps
every version's history exact."""
import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf

from helpers import col_ids, during_next_commit, every_version, force, kv, merge_all, read, vacuum0


def _table(uri):
    schema = tf.Schema([tf.Column("key", "int64"), tf.Column("val", "int64", nullable=True)], primary_key="key")
    t = tf.create_table(uri, schema, properties={"history_max_age": 3600})
    for start in range(0, 300, 100):                     # three rowsets
        t.insert(pa.table({"key": np.arange(start, start + 100), "val": np.zeros(100, np.int64)}))
    t.update(pa.table({"key": [5, 150], "val": [-1, -1]}))
    return t


def _merge_all(t):
    st = t.state
    rs = tuple(st.rowsets)
    tablet = st.rowsets[rs[0]].tablet
    return tf.CompactionAction("merge", tablet, rs, 1.0, "test", 0, ())


MUTATION = pa.table({"key": [5, 6, 250, 999, 7], "val": [50, None, 250, 999, None],
                     "op": ["update", "delete", "upsert", "insert", "delete"]})


def test_mutation_after_a_merging_compaction_rebases_and_matches_the_model(tmp_path):
    t = _table(str(tmp_path / "t"))
    model = _table(str(tmp_path / "model"))
    frag = t.snapshot().write_mutation(MUTATION, op_column="op")
    assert t.compact_action(_merge_all(t)) is not None
    merged_version = t.version
    res = t.commit_fragments([frag])                       # no RestartRequired: a rebase
    assert res.version == merged_version + 1
    model.apply(MUTATION)
    got = t.to_arrow().sort_by("key")
    assert got.equals(model.to_arrow().sort_by("key").cast(got.schema))
    assert (res.updated, res.deleted, res.inserted) == (2, 2, 1)
    # the REDO records now sit on the compaction's outputs, none on a removed rowset
    st = t.state
    assert set(st.deltas) <= set(st.rowsets)
    assert t.check().ok
    # time travel: before the mutation, the compacted state; the change history has the mutation
    assert t.scan(as_of=merged_version).to_arrow().sort_by("key").column("val").to_pylist()[5] == -1
    ch = t.changes(merged_version + 1)
    assert sorted(zip(ch["_op"].to_pylist(), ch["key"].to_pylist())) == \
        sorted(zip(model.changes(model.version)["_op"].to_pylist(), model.changes(model.version)["key"].to_pylist()))


def test_a_row_deleted_after_the_compaction_still_restarts(tmp_path):
    t = _table(str(tmp_path / "t"))
    frag = t.snapshot().write_mutation(pa.table({"key": [5], "val": [1]}), op="update")
    assert t.compact_action(_merge_all(t)) is not None
    t.delete(pa.table({"key": [5]}))
    before = t.version
    try:
        t.commit_fragments([frag])
        raise AssertionError("the update of a row deleted concurrently must not commit")
    except tf.RestartRequired:
        pass
    assert t.version == before and t.check().ok


def test_an_insert_that_found_its_key_in_a_rewritten_rowset_restarts(tmp_path):
    """insert_ignore in a mutation read key 5 as live but wrote nothing for it: that read cannot be
    remapped, so the plan is redone."""
    t = _table(str(tmp_path / "t"))
    frag = t.snapshot().write_mutation(pa.table({"key": [5, 10_000], "val": [1, 1]}), op="insert_ignore")
    assert t.compact_action(_merge_all(t)) is not None
    try:
        t.commit_fragments([frag])
        raise AssertionError("expected a restart")
    except tf.RestartRequired:
        pass


# --- compactions racing writes: the history stays exact ---------------------------------------

def test_compactions_with_a_concurrent_mutation_each_time(tmp_path):
    """A mutation lands between every compaction's snapshot and its commit (merge rebases it onto
    the outputs; delta compactions keep rowids); then every version reads back from UNDO."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": [f"k{i}" for i in range(6)], "val": list(range(6))}))
    t.update(pa.table({"key": ["k1", "k2"], "val": [10, 20]}))
    t.delete(pa.table({"key": ["k3"]}))
    other = tf.open_table(str(tmp_path / "t"))
    writes = iter([
        lambda: other.update(pa.table({"key": ["k1", "k4"], "val": [11, 41]})),
        lambda: other.apply(pa.table({"key": ["k2", "k2", "k5"], "val": [0, 21, 0],
                                      "op": ["delete", "insert", "delete"]})),
        lambda: other.update(pa.table({"key": ["k1"], "s": ["one"]})),
        lambda: other.upsert(pa.table({"key": ["k3", "k5"], "val": [30, 50]})),
    ])
    for kind in ["merge", "major_delta", "minor_delta", "merge"]:
        st = t.state
        rs = max(st.rowsets.values(), key=lambda r: (len(st.deltas_of(r.id)), r.num_rows)).id
        if kind == "merge":
            ids = [r for r in st.rowsets]
        during_next_commit(t, next(writes))
        res = force(t, kind, ids if kind == "merge" else [rs], col_ids(t, "val") if kind == "major_delta" else ())
        t.storage.fault_hook = None
        assert len(res) == 1
    want = [{"key": "k0", "val": 0, "s": None}, {"key": "k1", "val": 11, "s": "one"},
            {"key": "k2", "val": 21, "s": None}, {"key": "k3", "val": 30, "s": None},
            {"key": "k4", "val": 41, "s": None}, {"key": "k5", "val": 50, "s": None}]
    assert read(t, t.version) == want
    before = every_version(t)
    vacuum0(t)
    assert every_version(t, before) == before
    assert t.check().ok


def test_merge_racing_a_major_delta_of_its_input_keeps_the_latest_values(tmp_path):
    """compaction.rebase_merge only gives up when a winner *removes* an input rowset; a major delta
    replaces the rowset with `add_rowset` of the same id, so it passes. Every `add_delta` the winner
    made for the input is then remapped onto the outputs as a REDO file, including the major's UNDO
    file (its before-images become REDO updates) and its leftover REDO file (records the merge already
    applied). Here key a reads 1 instead of 10 at the latest version."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.update(pa.table({"key": ["a"], "val": [10]}))
    (rs,) = t.state.rowsets
    other = tf.open_table(str(tmp_path / "t"))
    during_next_commit(t, lambda: force(other, "major_delta", [rs], col_ids(other, "val")))
    force(t, "merge", [rs], committed=False)                # it restarts or rebases
    t.storage.fault_hook = None
    assert read(t, t.version) == [{"key": "a", "val": 10, "s": None}]


def test_merge_racing_a_minor_delta_then_another_merge_keeps_old_versions(tmp_path):
    """Same cause as above (rebase_merge remaps every add_delta of the input, here the minor delta's
    merged REDO file, whose records the merge already turned into UNDO records). The outputs then
    carry each update twice: as UNDO and as a REDO at its old timestamp. The next merge inverts the
    duplicate REDO over the current base value, giving an UNDO record at t1 whose before-image is the
    *current* value, sorted ahead of the right one: version 1 reads val 100 instead of 1."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.update(pa.table({"key": ["a"], "val": [10]}))
    t.update(pa.table({"key": ["a"], "val": [100]}))
    (rs,) = t.state.rowsets
    before = every_version(t)
    other = tf.open_table(str(tmp_path / "t"))
    during_next_commit(t, lambda: force(other, "minor_delta", [rs]))
    force(t, "merge", [rs], committed=False)                # it restarts or rebases
    t.storage.fault_hook = None
    merge_all(t)
    vacuum0(t)
    assert every_version(t, before) == before


def test_insert_of_a_deleted_key_racing_a_merge_that_keeps_its_ghost(tmp_path):
    """writer.rebase_conflicts probes the rowsets the winners added without their deltas
    (`probe(storage, rowsets, b.keys)`, no `deltas_of`), so the merge's output, which now holds the
    deleted row of 'a' (a ghost, deleted by a REDO file in the same commit), looks like a concurrent
    insert of 'a'. Before ghost rows, merge outputs held only live rows. (Table._mutate's `clash`
    has the same blind spot but only restarts.)"""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    t.delete(pa.table({"key": ["a"]}))
    (rs,) = t.state.rowsets
    other = tf.open_table(str(tmp_path / "t"))
    during_next_commit(t, lambda: force(other, "merge", [rs]))
    try:
        t.insert(pa.table({"key": ["a"], "val": [3]}))
    finally:
        t.storage.fault_hook = None
    assert read(t, t.version) == [{"key": "a", "val": 3, "s": None}, {"key": "b", "val": 2, "s": None}]


def test_changes_after_a_merge_that_remapped_a_concurrent_update(tmp_path):
    """A merge rebases an update committed during it (val 1 -> 10) into a REDO file of its output,
    added in the merge's own data_change=false commit. changes.collect_changes only adds delta
    files of data_change commits to a rowset's replay history, so a later update of the same row
    replays over the output's base (val 1, the merge's snapshot) without that file: its after-image
    says val 1, although the row (and scan) says 10."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    start = t.version
    (rs,) = t.state.rowsets
    other = tf.open_table(str(tmp_path / "t"))
    during_next_commit(t, lambda: other.update(pa.table({"key": ["a"], "val": [10]})))
    force(t, "merge", [rs])
    t.storage.fault_hook = None
    t.update(pa.table({"key": ["a"], "s": ["x"]}))
    assert read(t, t.version) == [{"key": "a", "val": 10, "s": "x"}]
    ch = t.changes(start).select(["_op", "key", "val", "s"]).to_pylist()
    assert ch == [{"_op": "update", "key": "a", "val": 10, "s": None},
                  {"_op": "update", "key": "a", "val": 10, "s": "x"}]


def test_spark_insert_commit_of_a_deleted_key_racing_a_merge_that_keeps_its_ghost(tmp_path):
    """The Spark insert job's task and driver-side commit (the functions Spark runs, without a
    session): the rowsets its task wrote hold a deleted key that a merge committed meanwhile
    keeps as a ghost; that is no duplicate."""
    pytest.importorskip("pyspark")
    import json
    from spark_jobs.writes import commit_fragments, insert_task
    uri = str(tmp_path / "t")
    t = kv(uri)
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    t.delete(pa.table({"key": ["a"]}))
    planned = t.state
    (task,) = insert_task(uri, None, planned.version, planned.table_id, "fail", None)(
        iter(pa.table({"key": ["a"], "val": [3]}).to_batches()))
    frag = json.loads(task.to_pylist()[0]["fragment"])
    (rs,) = t.state.rowsets
    force(t, "merge", [rs])                                    # commits first, keeping 'a' as a ghost
    res = commit_fragments(uri, None, [frag], "INSERT", {"inserted": 1, "ignored": 0})
    assert res.version == t.version
    assert read(t, t.version) == [{"key": "a", "val": 3, "s": None}, {"key": "b", "val": 2, "s": None}]
