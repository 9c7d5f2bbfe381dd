"""Snapshot.read_plan: the per-rowset recipe a foreign reader follows (specs/format.md §9.4)."""
import pyarrow as pa

import tableformat as tf

from helpers import metrics_partitioning, metrics_rows, metrics_schema

KEY = ["host", "metric", "time"]


def keys(t, rows):
    return t.select(KEY).take(pa.array(rows))


def by_id(plan):
    return {r.id: r for r in plan.rowsets}


def test_fresh_table_is_clean_base_files(metrics_table):
    metrics_table.insert(metrics_rows(800))
    plan = metrics_table.snapshot().read_plan()
    assert plan.version == metrics_table.version and plan.read_ts is None
    assert len(plan.rowsets) == len(metrics_table.state.rowsets)
    ids = [c.id for c in metrics_table.schema.columns]
    for r in plan.rowsets:
        assert r.clean and r.native and r.reason is None and not r.missing
        (b,) = r.base
        assert b.columns == tuple((i, f"c{i}") for i in ids)
        assert b.path == metrics_table.state.rowsets[r.id].base[0].path


def test_deltas_are_ranked_and_filtered_by_the_columns_read(metrics_table):
    t = metrics_table
    data = metrics_rows(800)
    t.insert(data)
    t.update(keys(data, range(0, 800, 2)).append_column("value", pa.array([1.0] * 400)))
    t.update(keys(data, range(0, 800, 4)).append_column("tag", pa.array(["x"] * 200)))
    t.delete(keys(data, [1]))
    value, tag = t.schema.column("value").id, t.schema.column("tag").id
    plan = t.snapshot().read_plan()
    for r in plan.rowsets:
        assert [d.order for d in r.redo] == sorted(d.order for d in r.redo)
        assert [d.updates for d in r.redo if not d.deletes] == [(value,), (tag,)]
        assert all(d.kind == "redo" for d in r.redo)
    assert sum(d.deletes for r in plan.rowsets for d in r.redo) == 1
    # reading only the key: updates are irrelevant, only the rowset with a delete needs its deltas
    only_host = t.snapshot().read_plan(["host"])
    assert only_host.columns == ("host",)
    assert sum(not r.clean for r in only_host.rowsets) == 1
    # a filter prunes tablets as the engine's scan does
    pruned = t.snapshot().read_plan(filter=[("host", "=", "h001"), ("metric", "=", "cpu")])
    assert 0 < len(pruned.rowsets) < len(plan.rowsets)


def test_added_columns_are_missing_and_column_groups_provide_their_columns(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(600)
    t.insert(data)
    t.update(keys(data, range(0, 600, 2)).append_column("value", pa.array([2.0] * 300)))
    rs = max(t.state.rowsets.values(), key=lambda r: r.num_rows)
    value = t.schema.column("value").id
    t.compact(tf.CompactionPlan((tf.CompactionAction("major_delta", rs.tablet, (rs.id,), 1.0, "test", 0,
                                                     (value,)),), 0, t.version))
    with t.alter() as a:
        a.add_column("n", "int32", default=3)
    n = t.schema.column("n").id
    r = by_id(t.snapshot().read_plan())[rs.id]
    assert r.missing == (n,) and len(r.base) == 2
    assert dict(r.base[1].columns) == {value: f"c{value}"} and value not in dict(r.base[0].columns)
    assert r.clean                              # its REDO updates went into the new column group
    only_value = by_id(t.snapshot().read_plan(["value"]))[rs.id]
    assert [b.path for b in only_value.base] == [r.base[1].path]


def test_behind_the_horizon_needs_undo_and_cuts_redo(tmp_path):
    t = tf.create_table(str(tmp_path / "h"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(600)
    t.insert(data)
    old = t.version
    t.update(keys(data, range(0, 600, 3)).append_column("value", pa.array([3.0] * 200)))
    rs = max(t.state.rowsets.values(), key=lambda r: r.num_rows)
    t.compact(tf.CompactionPlan((tf.CompactionAction("major_delta", rs.tablet, (rs.id,), 1.0, "test", 0,
                                                     (t.schema.column("value").id,)),), 0, t.version))
    t.update(keys(data, range(1, 600, 3)).append_column("value", pa.array([4.0] * 200)))
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert t.state.history_horizon > old
    plan = t.snapshot(old).read_plan()
    assert plan.read_ts == t.history()[old].timestamp
    rows = by_id(plan)
    assert not rows[rs.id].native and "UNDO" in rows[rs.id].reason
    others = [r for r in plan.rowsets if r.id != rs.id]
    assert others and all(r.native and r.clean for r in others)   # later REDO files are cut away
    assert all(r.native for r in t.snapshot().read_plan().rowsets)


def test_base_files_carry_the_size_the_log_records(metrics_table):
    """A foreign reader may name a base file by its size, checking it (§9.4 rule 8)."""
    import os
    metrics_table.insert(metrics_rows(300))
    for r in metrics_table.snapshot().read_plan(["value"]).rowsets:
        for b in r.base:
            assert b.size == os.path.getsize(os.path.join(metrics_table.uri, b.path)) > 0
