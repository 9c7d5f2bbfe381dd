"""Edge cases of the commit protocol an adversarial review reproduced (each failed before its fix):
a major delta compaction is no concurrent insert; a stale handle or fragment never lands in a table
re-created at the same path; combined fragments keep every key and row they rely on; a commit whose
acknowledgement was lost is reported as landed."""
import shutil

import pyarrow as pa
import pytest

import tableformat as tf


# --- major keysabsent --------------------------------------------

def kv(path):
    return tf.create_table(str(path), tf.Schema([tf.Column("key", "string"), tf.Column("val", "int64", nullable=True)],
                                                primary_key="key"))


def rows(t):
    return t.scan(ordered=True).to_arrow().to_pylist()


def _major_planned_on_two_rows(tmp_path):
    """Rows a and b; a major delta compaction of their rowset planned (not committed)."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    t.update(pa.table({"key": ["b"], "val": [20]}))
    (rs,) = t.state.rowsets
    val = t.schema.column("val").id
    return t, t.snapshot().write_compaction(tf.CompactionAction("major_delta", t.state.rowsets[rs].tablet, (rs,), 1.0,
                                                                "t", 0, (val,)))


@pytest.mark.parametrize("distributed", [False, True])
def test_insert_of_deleted_key_vs_major_delta_planned_before_the_delete(tmp_path, distributed):
    t, major = _major_planned_on_two_rows(tmp_path)
    t.delete(pa.table({"key": ["a"]}))                        # lands after the major's snapshot
    ins = t.snapshot().write_insert(pa.table({"key": ["a"], "val": [3]}), distributed=distributed)
    t.commit_fragments([major])                               # rebases over the delete (rowids kept)
    t.commit_fragments([ins])                                 # 'a' is absent: must land
    assert rows(t) == [{"key": "a", "val": 3}, {"key": "b", "val": 20}]
    assert t.check().ok


def test_engine_insert_fails_the_same_way(tmp_path):
    """The engine path (Table.insert with run()): the same race through a hook."""
    t, major = _major_planned_on_two_rows(tmp_path)
    t.delete(pa.table({"key": ["a"]}))
    other = tf.open_table(str(tmp_path / "t"))
    fired = []

    def hook(step, path):
        if step == "commit" and "_log/" in path and not fired:
            fired.append(1)
            other.commit_fragments([major])
    t._storage.fault_hook = hook
    try:
        t.insert(pa.table({"key": ["a"], "val": [3]}))
    finally:
        t._storage.fault_hook = None
    assert fired
    assert rows(t) == [{"key": "a", "val": 3}, {"key": "b", "val": 20}]


def test_control_same_race_with_a_merge_lands(tmp_path):
    """Control: with a merge instead of a major delta the concurrent delete is remapped into the
    merge's own commit, so KeysAbsent sees it and the insert lands."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    (rs,) = t.state.rowsets
    merge = t.snapshot().write_compaction(tf.CompactionAction("merge", t.state.rowsets[rs].tablet, (rs,), 1.0, "t", 0))
    t.delete(pa.table({"key": ["a"]}))
    ins = t.snapshot().write_insert(pa.table({"key": ["a"], "val": [3]}))
    t.commit_fragments([merge])
    t.commit_fragments([ins])
    assert rows(t) == [{"key": "a", "val": 3}, {"key": "b", "val": 2}]


# --- replaced shorter --------------------------------------------

def test_stale_handle_lands_in_shorter_recreated_table(tmp_path):
    uri = str(tmp_path / "t")
    s_old = tf.Schema([tf.Column("key", "int64"), tf.Column("name", "string", nullable=True)], primary_key="key")
    old = tf.create_table(uri, s_old)
    old.insert(pa.table({"key": [1], "name": ["one"]}))
    old.insert(pa.table({"key": [2], "name": ["two"]}))          # old handle at version 2
    shutil.rmtree(uri)
    s_new = tf.Schema([tf.Column("id", "int64"), tf.Column("price", "double", nullable=True)], primary_key="id")
    new = tf.create_table(uri, s_new)                             # new table at version 0
    landed = None
    try:
        landed = old.insert(pa.table({"key": [3], "name": ["three"]}))   # must raise TableReplacedError
    except tf.TableReplacedError:
        pass
    import os
    log = sorted(os.listdir(os.path.join(uri, "_log")))
    assert landed is None, f"old handle committed version {landed.version} into the new table; log={log}"
    # (and then the new table's writers break:) new.insert at that version raises TableReplacedError
    new.insert(pa.table({"id": [100], "price": [1.0]}))
    new.insert(pa.table({"id": [101], "price": [2.0]}))
    new.insert(pa.table({"id": [102], "price": [3.0]}))


# --- spark cache -------------------------------------------------

def test_version_read_after_recreation_returns_the_old_table(tmp_path):
    pytest.importorskip("pyspark")
    from spark_jobs.snapshots import open_snapshot
    uri = str(tmp_path / "t")
    old = tf.create_table(uri, tf.Schema([tf.Column("key", "int64")], primary_key="key"))
    old.insert(pa.table({"key": [1]}))
    old.insert(pa.table({"key": [2]}))
    open_snapshot(uri, None, 2, old.table_id)          # a job of the old table cached a handle here
    shutil.rmtree(uri)
    new = tf.create_table(uri, tf.Schema([tf.Column("id", "int64")], primary_key="id"))
    new.insert(pa.table({"id": [100]}))
    new.insert(pa.table({"id": [101]}))                # same length as the old log (version 2)
    snap = open_snapshot(uri, None, 2)                 # spark.read...option("as_of", "2").load(uri)
    assert snap.state.table_id == new.table_id, (snap.schema.names, "old table's state returned")


# --- fragment other table ----------------------------------------

def test_fragment_of_old_table_committed_by_fresh_handle(tmp_path):
    uri = str(tmp_path / "t")
    s_old = tf.Schema([tf.Column("key", "int64"), tf.Column("name", "string", nullable=True)], primary_key="key")
    old = tf.create_table(uri, s_old)
    old.insert(pa.table({"key": [1], "name": ["one"]}))
    frag = old.snapshot().write_insert(pa.table({"key": [3], "name": ["three"]}), distributed=True).to_json()
    # the executors' files are written; now the table is dropped and re-created
    shutil.rmtree(uri)
    s_new = tf.Schema([tf.Column("id", "int64"), tf.Column("price", "double", nullable=True)], primary_key="id")
    new = tf.create_table(uri, s_new)
    new.insert(pa.table({"id": [100], "price": [1.0]}))
    new.insert(pa.table({"id": [101], "price": [2.0]}))
    # the files of the old fragment were deleted with the directory? re-create them is not needed:
    # the commit does not look at them (own_rowsets precheck probes only when two rowsets overlap)
    landed = None
    try:
        landed = tf.open_table(uri).commit_fragments([frag], "INSERT")     # the Spark driver's path
    except tf.TableFormatError as e:
        print("refused:", type(e).__name__, e)
        return
    t = tf.open_table(uri)
    rep = t.check()
    assert landed is None, (f"fragment of table {old.table_id} landed in table {t.table_id} as version "
                            f"{landed.version}; check ok={rep.ok}")


def test_new_table_unreadable_after_foreign_fragment(tmp_path):
    uri = str(tmp_path / "t")
    old = tf.create_table(uri, tf.Schema([tf.Column("key", "int64")], primary_key="key"))
    frag = old.snapshot().write_insert(pa.table({"key": [3]}), distributed=True).to_json()
    shutil.rmtree(uri)
    new = tf.create_table(uri, tf.Schema([tf.Column("id", "int64")], primary_key="id"))
    new.insert(pa.table({"id": [100]}))
    try:
        tf.open_table(uri).commit_fragments([frag], "INSERT")
    except tf.TableFormatError:
        return
    tf.open_table(uri).to_arrow()       # the new table now fails to scan


# --- combine -----------------------------------------------------

def test_rowslive_of_two_fragments_on_one_rowset_keeps_both(tmp_path):
    """Two fragments update rows of the same rowset; _merged does rows.update(r.rows), so the
    second fragment's rowids replace the first's and a concurrent delete of the first
    fragment's row is not seen: the update lands on a deleted row (lost) instead of restarting."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    s = t.snapshot()
    f1 = s.write_mutation(pa.table({"key": ["a"], "val": [10]}), op="upsert")
    f2 = s.write_mutation(pa.table({"key": ["b"], "val": [20]}), op="upsert")
    tf.open_table(str(tmp_path / "t")).delete(pa.table({"key": ["a"]}))
    try:
        res = t.commit_fragments([f1, f2])
    except tf.RestartRequired:
        return                                   # right: the plan of 'a' is stale
    # serially, upsert(a=10) after delete(a) gives a=10
    assert rows(t) == [{"key": "a", "val": 10}, {"key": "b", "val": 20}], (res, rows(t))


def test_requirement_merge_unit(tmp_path):
    import numpy as np
    from tableformat.conflicts import RowsLive
    from tableformat.fragment import _merged
    m = _merged([RowsLive({"rs1": np.array([0])}), RowsLive({"rs1": np.array([1])})])
    (r,) = m
    assert sorted(r.rows["rs1"].tolist()) == [0, 1]


def test_two_upsert_fragments_inserting_one_new_key(tmp_path):
    """Two mutation fragments of one commit both insert key 'z' (absent in the snapshot):
    nothing checks the fragments against each other (the precheck exists only for
    own_rowsets inserts), so the table gets two live rows with one primary key."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    s = t.snapshot()
    f1 = s.write_mutation(pa.table({"key": ["z"], "val": [1]}), op="upsert")
    f2 = s.write_mutation(pa.table({"key": ["z"], "val": [2]}), op="upsert")
    try:
        t.commit_fragments([f1, f2])
    except tf.TableFormatError:
        return
    got = rows(t)
    assert [r["key"] for r in got].count("z") == 1, got
    assert t.check().ok


# --- lost ack ----------------------------------------------------

def test_own_commit_reported_as_not_done(tmp_path):
    uri = str(tmp_path / "t")
    t = tf.create_table(uri, tf.Schema([tf.Column("key", "string"), tf.Column("val", "int64", nullable=True)],
                                       primary_key="key"))
    st = t._storage
    real = st.put_if_absent
    state = {"n": 0}

    def flaky(rel, data):
        ok = real(rel, data)
        if "_log/" in rel and not rel.endswith("checkpoint.json") and state["n"] == 0:
            state["n"] += 1
            return False          # the write happened; the acknowledgement was lost and the retry saw 412
        return ok
    st.put_if_absent = flaky
    err = None
    try:
        t.insert(pa.table({"key": ["a"], "val": [1]}))
    except tf.TableFormatError as e:
        err = e
    st.put_if_absent = real
    landed = tf.open_table(uri).to_arrow().to_pylist()
    assert landed == [{"key": "a", "val": 1}]
    assert err is None, f"insert raised {type(err).__name__}: {err} although its commit landed"
