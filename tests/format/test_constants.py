"""tableformat.format: the names and codes another reader needs, and the engine's own files use them."""
import pyarrow.parquet as pq

import tableformat as tf
from tableformat.format import DeltaOp, field_name, flag_name, rowset_of


def test_codes_and_names():
    assert (int(DeltaOp.UPDATE), int(DeltaOp.DELETE), int(DeltaOp.REINSERT)) == (1, 2, 3)
    assert tf.DeltaOp is DeltaOp and tf.format.field_name(7) == "c7" and flag_name(7) == "u7"
    assert rowset_of("tablets/r0-h1/abc123/base-000.parquet") == "abc123"


def test_engine_files_follow_them(tmp_path):
    import pyarrow as pa
    schema = tf.Schema([tf.Column("k", "int64", nullable=False), tf.Column("v", "double")], ["k"])
    t = tf.create_table(str(tmp_path / "t"), schema)
    t.insert(pa.table({"k": [1, 2, 3], "v": [1.0, 2.0, 3.0]}))
    t.update(pa.table({"k": [2], "v": [9.0]}))
    t.delete(pa.table({"k": [3]}))
    plan = t.snapshot().read_plan(["k", "v"])
    [rs] = plan.rowsets
    vid = schema.column("v").id
    base = pq.read_schema(str(tmp_path / "t" / rs.base[0].path))
    assert field_name(vid) in base.names
    assert rowset_of(rs.base[0].path) == rs.id and tf.format.rowset_dir(rs.tablet, rs.id) in rs.base[0].path
    ops = set()
    for d in rs.redo:
        tab = pq.read_table(str(tmp_path / "t" / d.path))
        ops |= set(tab.column("op").to_pylist())
        assert rowset_of(d.path) == rs.id
        if vid in d.updates:
            assert flag_name(vid) in tab.column_names
    assert ops == {DeltaOp.UPDATE, DeltaOp.DELETE}
