"""Every cell of the conflict matrix in specs/format.md ("Conflict matrix").

Writer A plans against a snapshot; writer B commits between A's plan and A's
commit (B runs inside A's commit hook); A then rebases or restarts. A major delta compaction
is no concurrent insert: an insert of a key deleted after the compaction's plan lands.
"""
import pyarrow as pa
import pytest

import tableformat as tf


def schema():
    return tf.Schema([tf.Column("k", "string"), tf.Column("a", "int64", nullable=True),
                      tf.Column("b", "int64", nullable=True)], primary_key="k")


def run(t, op, row):
    data = pa.table({"k": [row["k"]], **{c: pa.array([row[c]], pa.int64()) for c in ("a", "b") if c in row}})
    if op.startswith("delete"):
        data = data.select(["k"])
    return getattr(t, op)(data)


# (K exists before?, A's op and row, B's op and row, expected: error class or final row of K, or None = absent)
CASES = [
    (False, ("insert", {"k": "K", "a": 1}), ("insert", {"k": "K", "a": 2}), tf.DuplicateKeyError),
    (False, ("insert_ignore", {"k": "K", "a": 1}), ("insert", {"k": "K", "a": 2}), {"a": 2, "b": None}),
    (False, ("insert", {"k": "K", "a": 1}), ("upsert", {"k": "K", "a": 2}), tf.DuplicateKeyError),
    (False, ("upsert", {"k": "K", "a": 1}), ("insert", {"k": "K", "a": 2, "b": 7}), {"a": 1, "b": 7}),
    (False, ("upsert", {"k": "K", "a": 1}), ("upsert", {"k": "K", "a": 2, "b": 7}), {"a": 1, "b": 7}),
    (True, ("update", {"k": "K", "a": 1}), ("update", {"k": "K", "b": 9}), {"a": 1, "b": 9}),
    (True, ("update", {"k": "K", "a": 1}), ("update", {"k": "K", "a": 5}), {"a": 1, "b": 0}),
    (True, ("update", {"k": "K", "a": 1}), ("delete", {"k": "K"}), tf.KeyNotFoundError),
    (True, ("update_ignore", {"k": "K", "a": 1}), ("delete", {"k": "K"}), None),
    (True, ("update", {"k": "K", "a": 1}), ("upsert", {"k": "K", "b": 3}), {"a": 1, "b": 3}),
    (True, ("update", {"k": "K", "a": 1}), ("insert", {"k": "K", "a": 5}), {"a": 1, "b": 0}),   # B fails
    (True, ("delete", {"k": "K"}), ("update", {"k": "K", "a": 5}), None),
    (True, ("delete", {"k": "K"}), ("delete", {"k": "K"}), tf.KeyNotFoundError),
    (True, ("delete_ignore", {"k": "K"}), ("delete", {"k": "K"}), None),
    (True, ("delete", {"k": "K"}), ("upsert", {"k": "K", "a": 5}), None),
    (True, ("upsert", {"k": "K", "a": 1}), ("update", {"k": "K", "b": 4}), {"a": 1, "b": 4}),
    (True, ("upsert", {"k": "K", "a": 1}), ("delete", {"k": "K"}), {"a": 1, "b": None}),   # becomes an insert
    (True, ("upsert", {"k": "K", "a": 1}), ("upsert", {"k": "K", "a": 2, "b": 2}), {"a": 1, "b": 2}),
    (True, ("insert", {"k": "K", "a": 1}), ("delete", {"k": "K"}), tf.DuplicateKeyError),  # fails at plan
]


@pytest.mark.parametrize("pre,a,b,expect", CASES, ids=[f"{'K' if c[0] else '-'}:{c[1][0]}-vs-{c[2][0]}" for c in CASES])
def test_conflict_matrix_cell(tmp_path, pre, a, b, expect):
    uri = str(tmp_path / "t")
    ta = tf.create_table(uri, schema())
    tb = tf.open_table(uri)
    if pre:
        ta.insert(pa.table({"k": ["K", "other"], "a": [0, 0], "b": [0, 0]}))
    else:
        ta.insert(pa.table({"k": ["other"], "a": [0], "b": [0]}))
    fired = []

    def hook(step, path):
        if step == "commit" and "_log/0" in path and not fired:
            fired.append(1)
            try:
                run(tb, *b)
            except (tf.DuplicateKeyError, tf.KeyNotFoundError):
                fired.append("b failed")
    ta.storage.fault_hook = hook
    if isinstance(expect, type) and issubclass(expect, Exception):
        with pytest.raises(expect,
                           match=(r"1 key\(s\) (were inserted concurrently|not found|"
                                  r"already exist) in table 't' \(first: 'K'\)")):
            run(ta, *a)
    else:
        run(ta, *a)
    ta.storage.fault_hook = None
    got = {r["k"]: {"a": r["a"], "b": r["b"]} for r in tf.open_table(uri).scan().to_arrow().to_pylist()}
    assert got.pop("other") == {"a": 0, "b": 0}
    if not (isinstance(expect, type) and issubclass(expect, Exception)):
        assert got.get("K") == expect


@pytest.mark.parametrize("a_op", ["insert", "update", "delete", "upsert"])
@pytest.mark.parametrize("b_op", ["insert", "update", "delete", "upsert"])
def test_disjoint_keys_always_rebase(tmp_path, a_op, b_op):
    uri = str(tmp_path / "t")
    ta = tf.create_table(uri, schema())
    tb = tf.open_table(uri)
    ta.insert(pa.table({"k": ["A", "B"], "a": [0, 0], "b": [0, 0]}))
    rows = {"insert": ({"k": "A2", "a": 1}, {"k": "B2", "a": 1}), "update": ({"k": "A", "a": 1}, {"k": "B", "a": 1}),
            "delete": ({"k": "A"}, {"k": "B"}), "upsert": ({"k": "A", "a": 1}, {"k": "B", "a": 1})}
    fired = []

    def hook(step, path):
        if step == "commit" and not fired:
            fired.append(1)
            run(tb, b_op, rows[b_op][1])
    ta.storage.fault_hook = hook
    res = run(ta, a_op, rows[a_op][0])
    assert res.version == 3            # B took version 2, A rebased onto it
    assert fired


# --- a major delta compaction is no concurrent insert: an insert of a key deleted after its plan lands ---

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
    t.storage.fault_hook = hook
    try:
        t.insert(pa.table({"key": ["a"], "val": [3]}))
    finally:
        t.storage.fault_hook = None
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


# --- a distributed (fragment-per-worker) insert: a key inserted concurrently fails it ---

def test_distributed_insert_fails_on_a_concurrent_key(tmp_path):
    """write_insert(distributed=True) with on_duplicate="fail" is an insert, not a Spark task's
    rowset writer: a key another writer inserted meanwhile fails the commit (DuplicateKeyError),
    it does not ask for the plan to run again."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["x"], "val": [0]}))
    frag = t.snapshot().write_insert(pa.table({"key": ["a", "b"], "val": [1, 2]}), distributed=True)
    tf.open_table(str(tmp_path / "t")).insert(pa.table({"key": ["a"], "val": [9]}))
    with pytest.raises(tf.DuplicateKeyError, match=r"1 key\(s\) were inserted concurrently"):
        t.commit_fragments([frag])
    assert rows(t) == [{"key": "a", "val": 9}, {"key": "x", "val": 0}]


def test_concurrent_key_counted_once_when_a_merge_rewrote_it(tmp_path):
    """A key inserted concurrently and then merged by a later winner is one key: the error names
    and counts it once."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["x"], "val": [0]}))
    frag = t.snapshot().write_insert(pa.table({"key": ["a"], "val": [1]}))
    other = tf.open_table(str(tmp_path / "t"))
    other.insert(pa.table({"key": ["a"], "val": [9]}))
    st = other.state
    ids = tuple(sorted(st.rowsets))
    assert other.compact_action(tf.CompactionAction("merge", st.rowsets[ids[0]].tablet, ids, 1.0, "t", 0))
    with pytest.raises(tf.DuplicateKeyError, match=r"^1 key\(s\) were inserted concurrently .*\(first: 'a'\);") as e:
        t.commit_fragments([frag])
    assert e.value.count == 1
