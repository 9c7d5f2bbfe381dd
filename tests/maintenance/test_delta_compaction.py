"""Delta compactions of one rowset (`maintenance/delta_compaction.py`): minor keeps the rowids, major rewrites
only the updated column and keeps its before-images as UNDO."""
import pyarrow as pa

from helpers import compact_one, kv


def test_minor_merges_redo_files_and_keeps_rowids(tmp_path):
    t = kv(tmp_path / "kv")
    t.insert(pa.table({"key": [f"k{i:03d}" for i in range(200)], "val": list(range(200))}))
    for i in range(4):
        t.update(pa.table({"key": [f"k{j:03d}" for j in range(i, 200, 7)], "val": [i] * len(range(i, 200, 7))}))
    t.delete(pa.table({"key": ["k005", "k006"]}))
    (rs,) = t.state.rowsets.values()
    expect = t.scan(ordered=True).to_arrow()
    compact_one(t, "minor_delta", [rs.id])
    (d,) = t.state.deltas_of(rs.id)
    assert d.has_ts_column and d.delete_count == 2 and t.state.rowsets[rs.id] == rs   # same rowset, same rowids
    assert t.scan(ordered=True).to_arrow().equals(expect)


def test_major_rewrites_only_the_updated_column(tmp_path):
    t = kv(tmp_path / "kv")
    t.insert(pa.table({"key": [f"k{i:04d}" for i in range(3000)], "val": list(range(3000)),
                       "s": [f"text-{i}" * 3 for i in range(3000)]}))
    t.update(pa.table({"key": [f"k{i:04d}" for i in range(0, 3000, 2)], "val": [-1] * 1500}))
    t.delete(pa.table({"key": ["k0001"]}))
    (rs,) = t.state.rowsets.values()
    expect = t.scan(ordered=True).to_arrow()
    vid = t.schema.column("val").id
    compact_one(t, "major_delta", [rs.id], [vid])
    new = t.state.rowsets[rs.id]
    assert len(new.base) == 2 and new.base[-1].column_ids == (vid,)     # a column group of just `val`
    (d,) = [x for x in t.state.deltas_of(rs.id) if x.kind == "redo"]
    assert d.delete_count == 1 and not d.update_counts                  # only the delete stays REDO
    (u,) = [x for x in t.state.deltas_of(rs.id) if x.kind == "undo"]    # the before-images of `val`
    assert u.num_records == 1500 and u.update_counts == {vid: 1500} and u.delete_count == 0
    assert t.scan(ordered=True).to_arrow().equals(expect)
    assert t.scan(filter=[("val", "=", -1)]).count() == 1500
    assert new.base[-1].size < rs.base[0].size / 2
