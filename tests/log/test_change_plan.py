"""Change reads planned as independent parts (Table.change_plan, tf.compute_changes): the parts,
pickled and computed apart as a cluster's tasks compute them, give exactly Table.changes()'s rows,
in every mode, with before-images, changed-only images and skipped rows (specs/format.md §9.2, §14)."""
import pickle
import random

import pyarrow as pa
import pytest

import tableformat as tf

from helpers import change_history


def canon(t: pa.Table) -> list:
    return sorted((repr(sorted(r.items())) for r in t.to_pylist()))


def from_parts(t, *args, **kw) -> pa.Table:
    plan = pickle.loads(pickle.dumps(t.change_plan(*args, **kw)))
    storage = tf.Storage(t.uri)
    outs = [tf.compute_changes(storage, plan, pickle.loads(pickle.dumps(p))) for p in plan.parts]
    for o in outs:
        assert o.schema == plan.arrow_schema()
    return pa.concat_tables(outs) if outs else plan.arrow_schema().empty_table()


OPTIONS = [dict(mode="all"), dict(mode="net"), dict(mode="all", before_image=True),
           dict(mode="net", before_image=True), dict(mode="all", images="changed"),
           dict(mode="all", skipped=True, before_image=True), dict(mode="net", images="changed")]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_parts_together_equal_changes_on_random_histories(tmp_path, seed):
    t, versions = change_history(tmp_path / "t", seed, steps=30)
    rng = random.Random(seed)
    pairs = [(versions[0], versions[-1])] + [tuple(sorted(rng.sample(versions, 2))) for _ in range(4)]
    for a, b in pairs:
        for kw in OPTIONS:
            want = t.changes(a, b, **kw)
            got = from_parts(t, a, b, **kw)
            assert got.schema == want.schema, (a, b, kw)
            assert canon(got) == canon(want), (seed, a, b, kw)


def test_all_mode_splits_by_rowset_and_net_mode_by_tablet(tmp_path):
    t, versions = change_history(tmp_path / "t", 5, steps=30)
    all_parts = t.change_plan(versions[0]).parts
    net_parts = t.change_plan(versions[0], mode="net").parts
    assert len(all_parts) > len(net_parts) > 1
    # a net part holds whole tablets: no tablet is in two parts
    seen = [{m.tablet for _, _, m in p.inserts} | {r[0].tablet for r in p.rowsets} for p in net_parts]
    assert all(not (a & b) for i, a in enumerate(seen) for b in seen[i + 1:])


def test_net_parts_join_tablets_a_key_moved_between(tmp_path):
    """A range partition dropped and added again: the key's rows sit in two tablets (same hash
    bucket, overlapping keys), and its net change is one insert only if they are one part."""
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "string", nullable=True)], primary_key="k")
    t = tf.create_table(str(tmp_path / "r"), sch, partitioning=tf.PartitionSchema(
        hash=[tf.HashPartition(["k"], 2)], range=tf.RangePartition(["k"], bounds=[(0, 10), (10, 20)])))
    v0 = t.version
    t.insert(pa.table({"k": pa.array([1, 15], pa.int64()), "v": ["a", "old"]}))
    with t.alter() as a:
        a.drop_range_partition(10, 20)
    with t.alter() as a:
        a.add_range_partition(10, 20)
    t.insert(pa.table({"k": pa.array([15], pa.int64()), "v": ["new"]}))
    want = t.changes(v0, mode="net")
    assert [(r["k"], r["v"]) for r in want.to_pylist() if r["k"] == 15] == [(15, "new")]
    assert canon(from_parts(t, v0, mode="net")) == canon(want)


def test_plan_checks_options_like_changes(tmp_path):
    t, versions = change_history(tmp_path / "t", 6, steps=5)
    with pytest.raises(tf.InvalidOptionError, match="before start"):
        t.change_plan(versions[-1], versions[0])
    with pytest.raises(tf.InvalidOptionError, match="mode"):
        t.change_plan(versions[0], mode="net", skipped=True)
    with pytest.raises(tf.InvalidOptionError):
        t.change_plan(versions[0], images="some")


def test_part_records_count_its_change_rows_from_the_log(tmp_path):
    """ChangePart.records (a stream's row limit): the rows a part computes in mode "all", from the log
    alone; a dropped rowset counts all its rows (an upper bound: some may be deleted already), a
    skipped-rows file counts one."""
    t, versions = change_history(tmp_path / "t", 1, steps=30)
    storage = tf.Storage(t.uri)
    plan = t.change_plan(versions[0], skipped=True)
    assert sum(1 for p in plan.parts if p.dropped) and sum(1 for p in plan.parts if p.inserts or p.rowsets) > 3
    for p in plan.parts:
        n = tf.compute_changes(storage, plan, p).num_rows
        if p.skipped:
            assert p.records() == len(p.skipped) <= n
        else:
            assert (p.records() >= n) if p.dropped else (p.records() == n), p
