"""The compaction policy's choices on constructed layouts: what pays is rewritten, and
`CompactionPlan.explain()` says what the plan gives up (specs/format.md §12)."""
import numpy as np
import pyarrow as pa

import tableformat as tf

from helpers import assert_same_rows

SCHEMA = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double")], primary_key=["k"])


def big_and_small(tmp_path, small_every=400):
    """A big rowset of even keys and a small one of odd keys spread over all of it (an upsert's
    new keys interleaving with every existing key)."""
    t = tf.create_table(str(tmp_path / "t"), SCHEMA, properties={"rowset_target_bytes": 1 << 20})
    t.insert(pa.table({"k": np.arange(0, 40000, 2), "v": np.random.default_rng(0).random(20000)}))
    t.insert(pa.table({"k": np.arange(1, 40000, small_every), "v": np.zeros(len(range(1, 40000, small_every)))}))
    return t


def merges(plan):
    return [a for a in plan if a.kind == "merge"]


def test_a_small_rowset_over_a_big_one_is_kept_and_explained(tmp_path):
    t = big_and_small(tmp_path)
    expect = t.scan(ordered=True).to_arrow()
    plan = t.compaction_plan()
    assert merges(plan) == []
    text = plan.explain()
    assert "Given up:" in text and "not rewritten for 1 smaller overlapping rowset(s)" in text
    assert "probe up to 2 rowsets" in text and "folded in once they hold 10%" in text
    before = set(t.state.rowsets)
    t.compact()
    assert set(t.state.rowsets) == before                      # nothing rewritten
    assert_same_rows(t.scan(ordered=True).to_arrow(), expect, ("k",))
    assert t.lookup(pa.table({"k": [1, 2, 401]})).num_rows == 3


def test_small_rowsets_are_folded_in_once_they_hold_a_tenth_of_the_big_ones_bytes(tmp_path):
    t = big_and_small(tmp_path, small_every=4)                # 5,000 rows: a quarter of the big one's
    expect = t.scan(ordered=True).to_arrow()
    (a,) = merges(t.compaction_plan())
    assert len(a.rowsets) == 2 and "overlap" in a.reason
    t.compact()
    live = [r for r in t.state.rowsets.values() if not r.history_only]
    assert len(live) == 1
    assert_same_rows(t.scan(ordered=True).to_arrow(), expect, ("k",))


def test_a_big_rowset_rewritten_for_its_deleted_rows_takes_the_small_ones_with_it(tmp_path):
    t = big_and_small(tmp_path)
    t.delete(pa.table({"k": np.arange(0, 4000, 2)}))          # a tenth of its rows: a rewrite pays
    expect = t.scan(ordered=True).to_arrow()
    plan = t.compaction_plan()
    (a,) = merges(plan)
    assert len(a.rowsets) == 2 and "rewritten anyway for its deleted rows" in a.reason
    assert "not rewritten" not in plan.explain()
    t.compact()
    assert len([r for r in t.state.rowsets.values() if not r.history_only]) == 1
    assert_same_rows(t.scan(ordered=True).to_arrow(), expect, ("k",))
    assert t.scan(as_of=2).count() == 20000 + 100


def test_small_rowsets_overlapping_each_other_merge_among_themselves(tmp_path):
    t = big_and_small(tmp_path)
    t.insert(pa.table({"k": np.arange(3, 40000, 400), "v": np.ones(100)}))   # a second small layer
    expect = t.scan(ordered=True).to_arrow()
    big = max(t.state.rowsets.values(), key=lambda r: r.num_rows).id
    plan = t.compaction_plan()
    (a,) = merges(plan)
    assert big not in a.rowsets and len(a.rowsets) == 2
    assert "not rewritten for 2 smaller overlapping rowset(s)" in plan.explain()
    t.compact()
    assert big in t.state.rowsets and len(t.state.rowsets) == 2
    assert_same_rows(t.scan(ordered=True).to_arrow(), expect, ("k",))


def test_a_cheap_big_rowset_is_rewritten_as_kudu_would(tmp_path):
    """Under 1/32 of rowset_target_bytes a rewrite always pays: Kudu's height rule as before."""
    t = tf.create_table(str(tmp_path / "t"), SCHEMA)          # the default target: 128 MiB
    t.insert(pa.table({"k": np.arange(0, 40000, 2), "v": np.zeros(20000)}))
    t.insert(pa.table({"k": np.arange(1, 40000, 400), "v": np.zeros(100)}))
    (a,) = merges(t.compaction_plan())
    assert len(a.rowsets) == 2


def test_explain_names_what_the_budget_left_out(tmp_path):
    t = big_and_small(tmp_path, small_every=4)
    plan = t.compaction_plan(budget_bytes=1)
    assert plan.actions == ()
    assert "over the budget: merge of tablet" in plan.explain() and "waits for a later run" in plan.explain()
    full = t.compaction_plan(budget_bytes=1 << 30)
    assert full.given_up == () and "Given up:\n  nothing: every candidate" in full.explain()


def test_small_rowsets_apart_from_each_other_over_a_big_one_merge_by_the_small_rowset_rule(tmp_path):
    """Small rowsets over disjoint parts of the big one's range do not overlap each other, but
    each costs a scan its own files: Kudu's small-rowset bonus merges them, the big one stays."""
    t = tf.create_table(str(tmp_path / "t"), SCHEMA, properties={"rowset_target_bytes": 1 << 20})
    t.insert(pa.table({"k": np.arange(0, 40000, 2), "v": np.random.default_rng(0).random(20000)}))
    t.insert(pa.table({"k": np.arange(1, 20000, 400), "v": np.zeros(50)}))         # the first half
    t.insert(pa.table({"k": np.arange(20001, 40000, 400), "v": np.ones(50)}))      # the second half
    big = max(t.state.rowsets.values(), key=lambda r: r.num_rows).id
    expect = t.scan(ordered=True).to_arrow()
    plan = t.compaction_plan()
    (a,) = merges(plan)
    assert big not in a.rowsets and len(a.rowsets) == 2 and "small rowsets" in a.reason
    assert "not rewritten for 2 smaller overlapping rowset(s)" in plan.explain()
    t.compact()
    assert big in t.state.rowsets and len(t.state.rowsets) == 2
    assert_same_rows(t.scan(ordered=True).to_arrow(), expect, ("k",))


def test_a_big_rowset_keeps_a_few_deleted_rows_as_a_delete_mask_until_they_are_a_tenth(tmp_path):
    """Rewriting 20,000 rows for 3 deleted ones writes ~7,000x what it removes: they stay REDO
    DELETE records (the scan drops them), explained; at a tenth of the rows the rewrite pays."""
    t = big_and_small(tmp_path)
    big = max(t.state.rowsets.values(), key=lambda r: r.num_rows).id
    t.delete(pa.table({"k": [0, 2, 4]}))
    expect = t.scan(ordered=True).to_arrow()
    plan = t.compaction_plan()
    assert merges(plan) == []
    text = plan.explain()
    assert f"rowset {big[:8]}" in text and "keeps 3 deleted row(s) (0.01% of its 20000) as a delete mask" in text
    assert "rewritten once they reach 10% of its rows" in text
    t.compact()
    assert big in t.state.rowsets and not [r for r in t.state.rowsets.values() if r.history_only]
    assert_same_rows(t.scan(ordered=True).to_arrow(), expect, ("k",))
    assert t.scan(as_of=2).count() == 20000 + 100                 # before the delete: every row
    t.delete(pa.table({"k": np.arange(6, 4000, 2)}))              # 2,000 of 20,000 deleted now
    (a,) = merges(t.compaction_plan())
    assert big in a.rowsets and "rewritten anyway for its deleted rows" in a.reason


def test_a_rowset_cheap_to_rewrite_is_rewritten_for_one_deleted_row(tmp_path):
    """Under 1/32 of rowset_target_bytes a rewrite costs little: one deleted row is worth it."""
    t = tf.create_table(str(tmp_path / "t"), SCHEMA)              # the default target: 128 MiB
    t.insert(pa.table({"k": np.arange(0, 40000, 2), "v": np.zeros(20000)}))
    t.delete(pa.table({"k": [0]}))
    (a,) = merges(t.compaction_plan())
    assert "1 of 20000 rows are deleted" in a.reason


def test_the_peer_workload_folds_redo_files_and_keeps_the_rest_in_place(tmp_path):
    """bench_peers' changes in small: updates, a few deletes and an upsert (half new keys over
    the whole range). The plan folds the big rowset's REDO files into one (minor delta), merges
    the small rowsets among themselves and rewrites nothing else; explain() says what stays and
    what it costs reads."""
    t = big_and_small(tmp_path)
    big = max(t.state.rowsets.values(), key=lambda r: r.num_rows).id
    t.update(pa.table({"k": np.arange(0, 40000, 200), "v": np.ones(200)}))
    t.delete(pa.table({"k": np.arange(100, 40000, 2000)}))
    t.upsert(pa.table({"k": np.r_[np.arange(50, 40000, 400), np.arange(3, 40000, 400)], "v": np.full(200, 2.0)}))
    expect = t.scan(ordered=True).to_arrow()
    plan = t.compaction_plan()
    small = tuple(sorted(r for r in t.state.rowsets if r != big))
    assert sorted((a.kind, tuple(sorted(a.rowsets))) for a in plan) == [("merge", small), ("minor_delta", (big,))]
    text = plan.explain()
    assert "keeps 20 deleted row(s)" in text and "not rewritten for 2 smaller overlapping rowset(s)" in text
    assert "updated cell(s) of 1 column(s) as REDO records" in text and "major delta compaction once" in text
    written = sum(r.bytes_written for r in t.compact())
    assert written < t.state.rowsets[big].size_bytes / 10         # what changed, not the table
    assert [d.kind for d in t.state.deltas_of(big)] == ["redo"]   # one delta file for a scan to read
    (task,) = [x for x in t.scan().plan() if x.rowset.id == big]
    assert len(task.deltas) == 1
    assert_same_rows(t.scan(ordered=True).to_arrow(), expect, ("k",))
    assert t.scan(as_of=2).count() == 20000 + 100 and t.check().ok
    assert not t.compaction_plan().actions                         # nothing left that pays


def test_reclaim_deleted_pct_under_a_tenth_still_rewrites_for_space(tmp_path):
    """Rows deleted before the history retention reclaim their space at reclaim_deleted_pct,
    below the tenth a rewrite takes for the present."""
    t = big_and_small(tmp_path)
    big = max(t.state.rowsets.values(), key=lambda r: r.num_rows).id
    with t.alter() as a:
        a.set_property("history_max_age", 0)
        a.set_property("reclaim_deleted_pct", 5)
    t.delete(pa.table({"k": np.arange(0, 40000, 40)}))            # 1,000 of 20,000: 5%
    (a,) = merges(t.compaction_plan())
    assert big in a.rowsets and "rewritten anyway" in a.reason
    t.compact()
    assert sum(r.num_rows for r in t.state.rowsets.values()) == 20000 + 100 - 1000


def test_updates_of_a_string_column_are_applied_to_base_data_under_the_ratio(tmp_path):
    """A scan places a string column's updates by a take of every value, whatever their number:
    a major delta of that column alone (cheap to rewrite) applies them; the double column's few
    updates stay REDO records, explained."""
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double"), tf.Column("s", "string")],
                       primary_key=["k"])
    t = tf.create_table(str(tmp_path / "t"), schema)
    t.insert(pa.table({"k": np.arange(20000), "v": np.zeros(20000), "s": ["a", "b"] * 10000}))
    rid = next(iter(t.state.rowsets))
    t.update(pa.table({"k": np.arange(0, 20000, 100), "s": ["c"] * 200}))
    t.update(pa.table({"k": np.arange(1, 20000, 100), "v": np.ones(200)}))
    before = t.scan(ordered=True).to_arrow()
    (a,) = t.compaction_plan().actions
    assert a.kind == "major_delta" and a.columns == (schema.column("s").id,) and "variable-width" in a.reason
    assert "keeps 200 updated cell(s) of 1 column(s) as REDO records" in t.compaction_plan().explain()
    t.compact()
    (redo,) = [d for d in t.state.deltas_of(rid) if d.kind == "redo"]     # one file, with v's updates only
    assert not redo.updates(schema.column("s").id) and redo.updates(schema.column("v").id)
    assert_same_rows(t.scan(ordered=True).to_arrow(), before, ("k",))
    assert t.scan(as_of=1, columns=["s"]).to_arrow().column("s").to_pylist() == ["a", "b"] * 10000
    assert not t.compaction_plan().actions and t.check().ok


def test_repeated_major_deltas_of_a_string_column_keep_one_file_of_it(tmp_path):
    """Each run applies a few string updates by a column-only major delta (the policy's rule for
    variable-width columns): the new column group supersedes the previous one, which leaves the
    rowset's base (spec §12: superseded files go at the next vacuum), so the rowset's files do
    not grow by a whole column per run, and every version still reads its own values."""
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double"), tf.Column("s", "string")],
                       primary_key=["k"])
    t = tf.create_table(str(tmp_path / "t"), schema)
    t.insert(pa.table({"k": np.arange(20000), "v": np.zeros(20000), "s": [f"s{i}" for i in range(20000)]}))
    (rid,) = t.state.rowsets
    first, size = t.state.rowsets[rid].base[0], t.state.rowsets[rid].size_bytes
    seen = {}
    for i in range(4):
        t.update(pa.table({"k": [10 + i], "s": [f"u{i}"]}))
        seen[t.state.version] = t.scan(ordered=True, columns=["k", "s"]).to_arrow()
        (a,) = t.compaction_plan().actions
        assert a.kind == "major_delta" and a.columns == (schema.column("s").id,)
        t.compact()
        rs = t.state.rowsets[rid]
        assert len(rs.base) == 2 and rs.base[0] == first, [b.path for b in rs.base]
        assert rs.size_bytes < size * 1.5
    for v, want in seen.items():
        assert t.scan(as_of=v, ordered=True, columns=["k", "s"]).to_arrow() == want
    assert t.scan(as_of=1, columns=["s"]).to_arrow().column("s").to_pylist()[10:14] == ["s10", "s11", "s12", "s13"]
    assert t.lookup({"k": [10, 13]}).column("s").to_pylist() == ["u0", "u3"] and t.check().ok
