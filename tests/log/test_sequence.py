"""Ordered upserts: the sequence_column property (specs/format.md §14)."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tableformat as tf
import tableformat.snapshot as table_module   # Snapshot.write_mutation plans every row operation


def schema(seq_type="int64", seq_nullable=False):
    return tf.Schema([tf.Column("id", "int64"), tf.Column("value", "string", nullable=True),
                      tf.Column("lsn", seq_type, nullable=seq_nullable, default=None if seq_nullable else 0),
                      tf.Column("score", "double", nullable=True)], primary_key=["id"])


def parts():
    return tf.PartitionSchema(hash=[tf.HashPartition(["id"], buckets=2)])


@pytest.fixture
def t(tmp_path):
    t = tf.create_table(str(tmp_path / "cdc"), schema(), parts(), properties={"sequence_column": "lsn"})
    t.insert(pa.table({"id": [1, 2, 3], "value": ["a", "b", "c"], "lsn": [10, 10, 10], "score": [1.0, 2.0, 3.0]}))
    return t


def rows(t):
    return {r["id"]: (r["value"], r["lsn"]) for r in t.to_arrow().to_pylist()}


def batch(ids, values, lsns):
    return pa.table({"id": pa.array(ids, pa.int64()), "value": values, "lsn": pa.array(lsns, pa.int64())})


# --- the property ---------------------------------------------------------------------------

@pytest.mark.parametrize("props,match", [
    ({"sequence_column": "nope"}, "not a column"),
    ({"sequence_column": "id"}, "primary key"),
    ({"sequence_column": "score"}, "double"),
    ({"sequence_column": "value"}, "string"),
])
def test_create_refuses_a_bad_sequence_column(tmp_path, props, match):
    uri = str(tmp_path / "x")
    with pytest.raises(tf.SequenceColumnError, match=match):
        tf.create_table(uri, schema(), parts(), properties=props)
    with pytest.raises(tf.TableNotFoundError, match=r"no table at '.*' \(no _log/ commits\)"):
        tf.open_table(uri)


def test_create_refuses_a_nullable_sequence_column(tmp_path):
    with pytest.raises(tf.SequenceColumnError, match="nullable"):
        tf.create_table(str(tmp_path / "x"), schema(seq_nullable=True), parts(), properties={"sequence_column": "lsn"})


@pytest.mark.parametrize("value", [5, "", ["lsn"]])
def test_property_value_must_be_a_name(tmp_path, value):
    with pytest.raises(tf.InvalidOptionError, match="column name"):
        tf.create_table(str(tmp_path / "x"), schema(), parts(), properties={"sequence_column": value})


@pytest.mark.parametrize("kind", ["int32", "unixtime_micros", "date", "decimal(20,0)"])
def test_orderable_types(tmp_path, kind):
    d = {"unixtime_micros": pa.timestamp("us", tz="UTC"), "date": pa.date32(), "int32": pa.int32(),
         "decimal(20,0)": pa.decimal128(20, 0)}[kind]
    s = tf.Schema([tf.Column("id", "int64"), tf.Column("value", "string", nullable=True),
                   tf.Column("seq", kind)], primary_key=["id"])
    t = tf.create_table(str(tmp_path / "x"), s, properties={"sequence_column": "seq"})

    def b(v, seq):
        return pa.table({"id": pa.array([1], pa.int64()), "value": [v], "seq": pa.array([seq], pa.int32() if kind == "date" else pa.int64()).cast(d)})
    t.upsert(b("new", 100))
    assert t.upsert(b("late", 50)).ignored == 1
    assert t.upsert(b("newer", 200)).updated == 1
    assert t.to_arrow().column("value").to_pylist() == ["newer"]


def test_alter_sets_validates_renames_and_unsets(tmp_path):
    t = tf.create_table(str(tmp_path / "x"), schema(), parts())
    t.insert(batch([1], ["a"], [10]))
    with pytest.raises(tf.SequenceColumnError, match="primary key"):
        with t.alter() as a:
            a.set_property("sequence_column", "id")
    assert "sequence_column" not in t.refresh().properties
    with t.alter() as a:
        a.set_property("sequence_column", "lsn")
    assert t.upsert(batch([1], ["late"], [5])).ignored == 1
    with pytest.raises(tf.SequenceColumnError, match="unset it first"):
        with t.alter() as a:
            a.drop_column("lsn")
    v = t.version
    with t.alter() as a:
        a.rename_column("lsn", "pos")
    assert t.refresh().properties["sequence_column"] == "pos" and t.version == v + 1
    late = pa.table({"id": pa.array([1], pa.int64()), "value": ["late"], "pos": pa.array([5], pa.int64())})
    assert t.upsert(late).ignored == 1
    with t.alter() as a:
        a.set_property("sequence_column", None)
        a.drop_column("pos")
    assert "sequence_column" not in t.refresh().properties
    assert t.upsert(pa.table({"id": pa.array([1], pa.int64()), "value": ["free"]})).updated == 1


def test_sequence_column_tables_are_format_4_or_later(t):
    from tableformat.format.metadata import WRITE_FORMAT_FLOOR
    assert WRITE_FORMAT_FLOOR >= 4 and t.refresh().format_version == WRITE_FORMAT_FLOOR


# --- ordering -----------------------------------------------------------------------------------

def test_lower_sequence_is_skipped_equal_and_higher_win(t):
    r = t.upsert(batch([1, 2, 3, 4], ["late", "same", "newer", "new"], [9, 10, 11, 1]))
    assert (r.inserted, r.updated, r.ignored) == (1, 2, 1)
    assert rows(t) == {1: ("a", 10), 2: ("same", 10), 3: ("newer", 11), 4: ("new", 1)}
    assert t.history()[-1].counts["stale"] == 1


def test_update_with_a_lower_sequence_is_skipped_not_an_error(t):
    r = t.update(batch([1, 2], ["late", "ok"], [3, 12]))
    assert (r.updated, r.ignored) == (1, 1)
    assert rows(t)[1] == ("a", 10) and rows(t)[2] == ("ok", 12)
    with pytest.raises(tf.KeyNotFoundError,  # a missing key is still an error for update
                       match=r"1 key\(s\) not found in table 'cdc' \(first: 99\); use the _ignore variant or upsert"):
        t.update(batch([99], ["x"], [100]))


def test_update_of_other_columns_still_orders_and_carries_the_sequence(t):
    b = pa.table({"id": pa.array([1, 2], pa.int64()), "value": ["late", "new"], "lsn": pa.array([1, 20], pa.int64()),
                  "score": [9.0, 9.0]})
    r = t.update(b, columns=["score"])
    assert (r.updated, r.ignored) == (1, 1)
    got = {x["id"]: x for x in t.to_arrow().to_pylist()}
    assert (got[1]["score"], got[1]["lsn"]) == (1.0, 10)
    assert (got[2]["score"], got[2]["lsn"], got[2]["value"]) == (9.0, 20, "b")


def test_input_without_the_sequence_is_refused_and_table_unchanged(t):
    v = t.version
    with pytest.raises(tf.MissingColumnError, match="sequence_column 'lsn'"):
        t.upsert(pa.table({"id": pa.array([1], pa.int64()), "value": ["x"]}))
    assert t.version == v
    # deletes need only the key; inserts use the column's default
    assert t.delete(pa.table({"id": pa.array([3], pa.int64())})).deleted == 1
    assert t.insert(pa.table({"id": pa.array([7], pa.int64()), "value": ["d"]})).inserted == 1


def test_null_sequence_in_an_update_is_refused(t):
    with pytest.raises(tf.NullValueError, match=r"column 'lsn' is not nullable but 1 row\(s\) set it to NULL"):
        t.upsert(pa.table({"id": pa.array([1], pa.int64()), "value": ["x"], "lsn": pa.array([None], pa.int64())}))


def test_highest_sequence_per_key_wins_within_a_batch(t):
    # key 1: 12, 15, 11 -> 15 wins; key 5 (new): 3, 1, 4 -> 4 wins; key 2: 9 only -> skipped; ties: later wins
    b = batch([1, 5, 1, 5, 2, 1, 5, 3, 3], ["x12", "n3", "x15", "n1", "late", "x11", "n4", "t1", "t2"],
              [12, 3, 15, 1, 9, 11, 4, 20, 20])
    r = t.upsert(b)
    got = rows(t)
    assert got[1] == ("x15", 15) and got[5] == ("n4", 4) and got[2] == ("b", 10) and got[3] == ("t2", 20)
    # skipped: n1 (1 < 3), late (9 < 10), x11 (11 < 15); x12, n3 and t1 applied and were overwritten
    assert r.ignored == 3 and r.inserted == 1
    ch = t.changes(t.version - 1, skipped=True)
    assert sorted(ch.filter(pc.equal(ch.column("_op"), "skipped")).column("value").to_pylist()) == \
        ["late", "n1", "x11"]


def test_random_batches_match_a_reference(tmp_path):
    """Many keys, shuffled sequences: the table equals the max-sequence row per key."""
    t = tf.create_table(str(tmp_path / "r"), schema(), parts(), properties={"sequence_column": "lsn"})
    rng = np.random.default_rng(7)
    ref: dict[int, tuple[int, str]] = {}
    for round_ in range(4):
        n = 3000
        ids = rng.integers(0, 500, n)
        lsn = rng.integers(0, 50, n)
        vals = [f"r{round_}-{i}" for i in range(n)]
        t.upsert(batch(ids.tolist(), vals, lsn.tolist()))
        for i, s, v in zip(ids.tolist(), lsn.tolist(), vals):     # reference, row by row (test only)
            if i not in ref or s >= ref[i][0]:
                ref[i] = (s, v)
    assert rows(t) == {i: (v, s) for i, (s, v) in ref.items()}


def test_apply_orders_upserts_and_updates_not_deletes(t):
    b = pa.table({"id": pa.array([1, 1, 2], pa.int64()), "value": ["gone", "back", "late"],
                  "lsn": pa.array([1, 2, 5], pa.int64()), "op": ["delete", "upsert", "update"]})
    r = t.apply(b)
    assert (r.deleted, r.inserted, r.ignored) == (1, 1, 1)
    assert rows(t)[1] == ("back", 2) and rows(t)[2] == ("b", 10)


# --- skipped rows in the change history -----------------------------------------------------

def test_changes_report_skipped_rows_with_a_reason(t):
    v = t.version
    t.upsert(batch([1, 2], ["late", "new"], [1, 11]))
    plain = t.changes(v)
    assert plain.column("_op").to_pylist() == ["update"] and "_reason" not in plain.column_names
    ch = t.changes(v, skipped=True)
    got = {(r["_op"], r["id"], r["_reason"], r["value"], r["lsn"]) for r in ch.to_pylist()}
    assert got == {("update", 2, None, "new", 11), ("skipped", 1, "stale_sequence", "late", 1)}
    assert set(ch.column("_version").to_pylist()) == {v + 1}
    with pytest.raises(tf.InvalidOptionError, match="mode"):
        t.changes(v, mode="net", skipped=True)


def test_all_stale_still_commits_the_record(t):
    v = t.version
    r = t.upsert(batch([1], ["late"], [1]))
    assert r.ignored == 1 and r.version == v + 1
    assert rows(t)[1] == ("a", 10)
    assert t.changes(v, skipped=True).column("_op").to_pylist() == ["skipped"]
    assert t.check().ok


def test_skipped_file_is_kept_within_history_and_checked(t):
    v = t.version
    t.upsert(batch([1], ["late"], [1]))
    t.vacuum(retain_seconds=3600, grace_seconds=0)
    assert t.changes(v, skipped=True).num_rows == 1


def test_skipped_rows_match_columns_by_id_after_a_drop_and_re_add(t):
    """A column dropped and added again under the same name is a new column (a new ID):
    the skipped row's old string value is not the new int64 column's (it was cast by name)."""
    v = t.version
    t.upsert(batch([1], ["late"], [1]))                 # skipped: the stored lsn is 10
    with t.alter() as a:
        a.drop_column("value")
    with t.alter() as a:
        a.add_column("value", "int64")
    t.upsert(pa.table({"id": [2], "value": [7], "lsn": [12]}))
    ch = t.changes(v, skipped=True)
    got = [(r["_op"], r["id"], r["value"], r["lsn"], r["_reason"]) for r in ch.to_pylist()]
    assert got == [("skipped", 1, None, 1, "stale_sequence"), ("update", 2, 7, 12, None)]
    assert ch.schema.field("value").type == pa.int64()


def test_skipped_rows_keep_a_renamed_column(t):
    """Matched by ID: a column renamed since the skip still carries the skipped value."""
    v = t.version
    t.upsert(batch([1], ["late"], [1]))
    with t.alter() as a:
        a.rename_column("value", "label")
    ch = t.changes(v, skipped=True)
    assert [(r["_op"], r["id"], r["label"]) for r in ch.to_pylist()] == [("skipped", 1, "late")]


# --- concurrency --------------------------------------------------------------------------------

def test_fragment_restarts_when_a_concurrent_update_changed_the_sequence(t):
    frag = t.snapshot().write_mutation(batch([1], ["mine"], [15]), op="upsert")
    t.upsert(batch([1], ["theirs"], [20]))              # wins the race with a higher sequence
    v = t.version
    with pytest.raises(tf.RestartRequired,
                       match="MERGE: the sequence of a row it compared was updated concurrently; planning"):
        t.commit_fragments([frag])
    assert t.version == v and rows(t)[1] == ("theirs", 20)
    assert t.upsert(batch([1], ["mine"], [15])).ignored == 1    # planned again: now stale


def test_fragment_restarts_when_a_merge_moved_the_rows_and_the_sequence_changed(t):
    """A merging compaction rewrote the rowset whose sequences the upsert compared, then a newer
    sequence landed on its output: not visible by rowid, so the fragment plans again."""
    more = list(range(4, 20))
    t.insert(pa.table({"id": more, "value": ["d"] * len(more), "lsn": [10] * len(more),
                       "score": [4.0] * len(more)}))
    frag = t.snapshot().write_mutation(batch([1], ["mine"], [15]), op="upsert")
    for tablet in {r.tablet for r in t.state.rowsets.values()}:
        ids = tuple(r.id for r in t.state.rowsets.values() if r.tablet == tablet)
        assert len(ids) == 2
        t.compact_action(tf.CompactionAction("merge", tablet, ids, 1.0, "test", 0))
    t.upsert(batch([1], ["theirs"], [20]))
    v = t.version
    with pytest.raises(tf.RestartRequired,
                       match="MERGE: a rowset whose sequences it compared was rewritten concurrently"):
        t.commit_fragments([frag])
    assert t.version == v and rows(t)[1] == ("theirs", 20)


def test_fragment_rebases_over_an_update_of_another_row(t):
    frag = t.snapshot().write_mutation(batch([1], ["mine"], [15]), op="upsert")
    t.update(batch([2], ["z"], [30]))                   # another row of the same rowsets
    t.commit_fragments([frag])
    assert rows(t)[1] == ("mine", 15) and rows(t)[2] == ("z", 30)


def test_fragment_requirement_round_trips_through_json(t):
    frag = t.snapshot().write_mutation(batch([1], ["mine"], [15]), op="upsert")
    payload = frag.to_json()
    assert any(r["kind"] == "sequences_current" for r in payload["requirements"])
    t.upsert(batch([1], ["theirs"], [20]))
    with pytest.raises(tf.RestartRequired,
                       match="MERGE: the sequence of a row it compared was updated concurrently; planning"):
        t.commit_fragments([payload])


def test_engine_upsert_replans_over_a_concurrent_higher_sequence(t, monkeypatch):
    """t.upsert plans, a second handle commits a newer event for the key, the first commit loses
    the race, restarts by itself and finds its event stale."""
    other = tf.open_table(t.uri)
    real = table_module.write_mutation
    calls = []

    def racing(*a, **kw):
        frag = real(*a, **kw)
        calls.append(frag)
        if len(calls) == 1:
            monkeypatch.setattr(table_module, "write_mutation", real)   # the other writer plans plainly
            other.upsert(batch([1], ["theirs"], [20]))
            monkeypatch.setattr(table_module, "write_mutation", racing)
        return frag
    monkeypatch.setattr(table_module, "write_mutation", racing)
    r = t.upsert(batch([1], ["mine"], [15]))
    assert len(calls) == 2 and calls[0].counts["updated"] == 1
    assert r.ignored == 1 and r.updated == 0
    assert rows(t)[1] == ("theirs", 20)


def test_sparse_hits_in_a_large_rowset_read_their_blocks(tmp_path):
    """Few keys far apart in one rowset: the stored sequences come from the blocks holding them,
    with the rowset's deltas applied."""
    t = tf.create_table(str(tmp_path / "big"), schema(), properties={"sequence_column": "lsn",
                                                                      "row_group_rows": 128})
    n = 5000
    t.insert(batch(list(range(n)), [f"v{i}" for i in range(n)], [10] * n))
    t.update(batch([17, 4000], ["u", "u"], [30, 30]))            # REDO deltas on two of the rows
    assert len(t.state.rowsets) == 1
    r = t.upsert(batch([17, 2500, 4000, 4999], ["late", "new", "late", "new"], [20, 11, 29, 10]))
    assert (r.updated, r.ignored) == (2, 2)
    got = rows(t)
    assert got[17] == ("u", 30) and got[4000] == ("u", 30)
    assert got[2500] == ("new", 11) and got[4999] == ("new", 10)


def test_ordered_upsert_against_a_concurrent_compaction(t):
    """A compaction between planning and commit: delta compactions keep rowids (rebase), a merge
    rewrites the rowset (restart); either way the late event stays skipped and the newer one wins."""
    for i in range(4):
        t.update(batch([1, 2, 3], [f"u{i}"] * 3, [20 + i] * 3))
    frag = t.snapshot().write_mutation(batch([1, 2], ["late", "newer"], [5, 99]), op="upsert")
    assert frag.counts["ignored"] == 1
    assert t.compact(budget_bytes=1 << 30)
    try:
        t.commit_fragments([frag])
    except tf.RestartRequired:
        t.upsert(batch([1, 2], ["late", "newer"], [5, 99]))
    got = rows(t)
    assert got[1] == ("u3", 23) and got[2] == ("newer", 99) and got[3] == ("u3", 23)
    assert t.check().ok
