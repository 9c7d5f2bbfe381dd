"""A mutation that loses its commit race to a merging compaction of its rowsets rebases: its
REDO records are remapped by key onto the compaction's outputs (specs/format.md §10)."""
import numpy as np
import pyarrow as pa

import tableformat as tf


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
