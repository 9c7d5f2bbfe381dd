"""Mutations as REDO deltas: semantics, errors and MVCC time travel."""
import math
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tableformat as tf
from tableformat.format import deltafile

from helpers import kv_schema, metrics_partitioning, metrics_rows, metrics_schema, table_files


@pytest.fixture
def kv(tmp_path):
    return tf.create_table(str(tmp_path / "kv"), kv_schema())


def rows(t, **kw):
    return {r["key"]: (r["val"], r["s"]) for r in t.scan(**kw).to_arrow().to_pylist()}


def test_the_tablet_seed_sequence_reads_back_as_of_every_commit(kv):
    r = [kv.insert(pa.table({"key": ["row"], "val": [1]})),
         kv.update(pa.table({"key": ["row"], "val": [2]})),
         kv.delete(pa.table({"key": ["row"]})),
         kv.insert(pa.table({"key": ["row"], "val": [3]}))]
    expect = [{"row": (1, "d")}, {"row": (2, "d")}, {}, {"row": (3, "d")}]
    for res, exp in zip(r, expect):
        assert rows(kv, as_of=res.version) == exp
        assert rows(kv, as_of=res.timestamp) == exp
    assert [x.operation for x in r] == ["INSERT", "UPDATE", "DELETE", "INSERT"]


def test_update_writes_only_the_changed_cells(kv, tmp_path):
    kv.insert(pa.table({"key": [f"k{i:02d}" for i in range(100)], "val": list(range(100)), "s": ["x"] * 100}))
    res = kv.update(pa.table({"key": ["k05", "k07"], "val": [50, None]}))
    assert (res.updated, res.inserted, res.deleted, res.rowsets_added) == (2, 0, 0, 0)
    st = kv.state
    (rs,) = st.rowsets.values()
    (d,) = st.deltas_of(rs.id)
    assert d.update_counts == {st.schema.column("val").id: 2} and d.delete_count == 0
    f = pq.read_table(os.path.join(str(tmp_path / "kv"), d.path))
    vid = st.schema.column("val").id
    assert set(f.column_names) == {"rowid", "op", f"c{st.schema.column('key').id}", f"u{vid}", f"c{vid}"}
    assert f.column("rowid").to_pylist() == [5, 7]          # rowids: ordinals in the sorted rowset
    got = rows(kv)
    assert got["k05"] == (50, "x") and got["k07"] == (None, "x") and got["k06"] == (6, "x")
    assert res.bytes_written < 4000


def test_set_to_null_is_not_unchanged(kv):
    kv.insert(pa.table({"key": ["a", "b"], "val": [1, 2], "s": ["x", "y"]}))
    kv.update(pa.table({"key": ["a"], "s": pa.array([None], pa.string())}))
    kv.update(pa.table({"key": ["b"], "val": [20]}))
    assert rows(kv) == {"a": (1, None), "b": (20, "y")}


def test_missing_keys(kv, tmp_path):
    kv.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    before = table_files(tmp_path / "kv")
    for fn in (kv.update, kv.delete):
        with pytest.raises(tf.KeyNotFoundError, match=r"2 key\(s\) not found.*'x'") as e:
            fn(pa.table({"key": ["a", "x", "y"], "val": [5, 5, 5]}))
        assert e.value.count == 2
    assert kv.version == 1 and table_files(tmp_path / "kv") == before
    r = kv.update_ignore(pa.table({"key": ["a", "x"], "val": [5, 6]}))
    assert (r.updated, r.ignored) == (1, 1)
    r = kv.delete_ignore(pa.table({"key": ["b", "y", "z"]}))
    assert (r.deleted, r.ignored) == (1, 2)
    r = kv.delete_ignore(pa.table({"key": ["b"]}))
    assert (r.deleted, r.ignored, r.version) == (0, 1, 3)     # nothing to do: no commit
    assert rows(kv) == {"a": (5, "d")}


def test_key_columns_cannot_be_updated(kv):
    kv.insert(pa.table({"key": ["a"], "val": [1]}))
    with pytest.raises(tf.KeyColumnUpdateError, match="cannot be updated"):
        kv.update(pa.table({"key": ["a"], "val": [2]}), columns=["key", "val"])
    assert kv.version == 1


def test_update_of_chosen_columns_only(kv):
    kv.insert(pa.table({"key": ["a"], "val": [1], "s": ["x"]}))
    kv.update(pa.table({"key": ["a"], "val": [2], "s": ["ignored"]}), columns=["val"])
    assert rows(kv) == {"a": (2, "x")}


def test_deleted_key_is_reinserted_into_a_new_rowset(kv):
    kv.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    kv.delete(pa.table({"key": ["a"]}))
    with pytest.raises(tf.KeyNotFoundError,
                       match=r"1 key\(s\) not found in table 'kv' \(first: 'a'\); use the _ignore variant or upsert"):
        kv.update(pa.table({"key": ["a"], "val": [9]}))
    res = kv.insert(pa.table({"key": ["a"], "val": [3]}))
    assert res.rowsets_added == 1
    st = kv.state
    assert len(st.rowsets) == 2
    old = next(r for r in st.rowsets.values() if r.num_rows == 2)
    assert st.deltas_of(old.id)[0].delete_count == 1       # the old row stays deleted
    kv.update(pa.table({"key": ["a"], "val": [4]}))         # updates go to the live copy
    assert rows(kv) == {"a": (4, "d"), "b": (2, "d")}
    with pytest.raises(tf.DuplicateKeyError,
                       match=r"1 key\(s\) already exist in table 'kv' \(first: 'a'\); use insert_ignore or upsert"):
        kv.insert(pa.table({"key": ["a"], "val": [5]}))


def test_upsert(kv):
    kv.insert(pa.table({"key": ["a", "b"], "val": [1, 2], "s": ["x", "y"]}))
    res = kv.upsert(pa.table({"key": ["a", "c"], "val": [10, 30]}))
    assert (res.inserted, res.updated) == (1, 1)
    assert rows(kv) == {"a": (10, "x"), "b": (2, "y"), "c": (30, "d")}   # c takes s's default


# counts are keys, as changes(mode="all") shows the commit (§10.3): a new row's updates fold
# into its insert, a row updated twice is one update, a row inserted and deleted is nothing
@pytest.mark.parametrize("ops,expect,counts", [
    ([("insert", "n", 1), ("update", "n", 2)], {"a": 1, "n": 2}, (1, 0, 0, 0)),
    ([("insert", "n", 1), ("delete", "n", None)], {"a": 1}, (0, 0, 0, 0)),
    ([("insert", "n", 1), ("delete", "n", None), ("insert", "n", 3)], {"a": 1, "n": 3}, (1, 0, 0, 0)),
    ([("update", "a", 5), ("update", "a", 6)], {"a": 6}, (0, 1, 0, 0)),
    ([("delete", "a", None), ("insert", "a", 7)], {"a": 7}, (1, 0, 1, 0)),
    ([("delete", "a", None), ("update_ignore", "a", 7)], {}, (0, 0, 1, 1)),
    ([("upsert", "a", 8), ("delete", "a", None), ("upsert", "a", 9)], {"a": 9}, (1, 0, 1, 0)),
    ([("insert_ignore", "a", 8), ("update", "a", 2)], {"a": 2}, (0, 1, 0, 1)),
    ([("delete_ignore", "zz", None), ("insert", "zz", 1), ("insert_ignore", "zz", 2)], {"a": 1, "zz": 1},
     (1, 0, 0, 2)),
])
def test_operations_on_one_key_apply_in_batch_order(kv, ops, expect, counts):
    kv.insert(pa.table({"key": ["a"], "val": [1]}))
    res = kv.apply(pa.table({"op": [o[0] for o in ops], "key": [o[1] for o in ops],
                             "val": pa.array([o[2] for o in ops], pa.int64())}))
    assert (res.inserted, res.updated, res.deleted, res.ignored) == counts
    got = {k: v[0] for k, v in rows(kv).items()}
    assert got == expect


@pytest.mark.parametrize("ops", [[("update", "x", 1)], [("insert", "a", 1)], [("insert", "n", 1), ("insert", "n", 2)],
                                 [("delete", "a", None), ("delete", "a", None)]])
def test_strict_batch_errors_commit_nothing(kv, ops):
    kv.insert(pa.table({"key": ["a"], "val": [1]}))
    with pytest.raises((tf.KeyNotFoundError, tf.DuplicateKeyError),
                       match=r"1 key\(s\) (not found|already exist) in table 'kv' \(first: '\w'\)"):
        kv.apply(pa.table({"op": [o[0] for o in ops], "key": [o[1] for o in ops],
                           "val": pa.array([o[2] for o in ops], pa.int64())}))
    assert kv.version == 1 and rows(kv) == {"a": (1, "d")}


@pytest.mark.parametrize("make,err", [
    (lambda: pa.table({"op": ["explode"], "key": ["a"]}), tf.InvalidDataError),
    (lambda: pa.table({"key": ["a"]}), tf.MissingColumnError),
    (lambda: pa.table({"op": [None], "key": ["a"]}, schema=pa.schema([("op", pa.string()), ("key", pa.string())])),
     tf.InvalidDataError),
])
def test_bad_apply_batches(kv, make, err):
    with pytest.raises(err,
                       match=r"unknown op\(s\) \['explode'\]|apply needs an op column 'op'|the op column has NULLs"):
        kv.apply(make())


@pytest.mark.parametrize("fn,data,err", [
    ("update", lambda: pa.table({"key": pa.array([None], pa.string()), "val": [1]}), tf.NullValueError),
    ("update", lambda: pa.table({"key": ["a"], "val": ["x"]}), tf.TypeMismatchError),
    ("update", lambda: pa.table({"key": ["a"], "nope": [1]}), tf.UnknownColumnError),
    ("update", lambda: pa.table({"val": [1]}), tf.MissingColumnError),
    ("upsert", lambda: pa.table({"key": ["a"], "val": pa.array([2**64 - 1], pa.uint64())}), tf.TypeMismatchError),
])
def test_bad_mutation_input_changes_nothing(kv, tmp_path, fn, data, err):
    kv.insert(pa.table({"key": ["a"], "val": [1]}))
    before = table_files(tmp_path / "kv")
    with pytest.raises(err,
                       match=(r"primary key column 'key' has 1 NULL|column 'val' is int64; input has type string|"
                              r"input has column\(s\) \['nope'\]|input lacks primary key column\(s\) \['key'\]|"
                              r"cannot convert uint64 without loss")):
        getattr(kv, fn)(data())
    assert kv.version == 1 and table_files(tmp_path / "kv") == before


def test_null_into_non_null_column(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), tf.Schema([tf.Column("k", "int32"), tf.Column("v", "int32")],
                                                       primary_key="k"))
    t.insert(pa.table({"k": pa.array([1], pa.int32()), "v": pa.array([1], pa.int32())}))
    with pytest.raises(tf.NullValueError, match="not nullable"):
        t.update(pa.table({"k": pa.array([1], pa.int32()), "v": pa.array([None], pa.int32())}))
    t.delete(pa.table({"k": pa.array([1], pa.int32()), "v": pa.array([None], pa.int32())}))  # delete ignores v
    assert t.scan().count() == 0


def test_filters_stay_exact_when_deltas_change_the_filtered_column(tmp_path):
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(600)
    t.insert(data)
    upd = data.select(["host", "metric", "time"]).slice(0, 50).append_column("value", pa.array([1e9] * 50))
    t.update(upd)
    hot_flt = [("value", ">", 1e8), ("value", "<", math.inf)]       # < inf: not the NaN rows (NaN > every number)
    hot = t.scan(filter=hot_flt).to_arrow()
    assert hot.num_rows == 50                                # stats said max < 1e8: must not prune
    t.delete(upd.slice(0, 10).select(["host", "metric", "time"]))
    assert t.scan(filter=hot_flt).count() == 40
    assert t.scan().count() == 590
    assert t.scan(filter=hot_flt, as_of=2).count() == 50
    assert t.scan(filter=hot_flt, as_of=1).count() == 0


def test_deltas_on_unread_columns_cost_nothing(kv, monkeypatch):
    kv.insert(pa.table({"key": [f"k{i}" for i in range(10)], "val": list(range(10))}))
    kv.update(pa.table({"key": ["k1"], "val": [100]}))
    calls = []
    real = deltafile.read_delta
    monkeypatch.setattr(deltafile, "read_delta", lambda *a, **k: calls.append(a) or real(*a, **k))
    assert kv.scan(columns=["s"]).count() == 10
    assert calls == []
    assert kv.scan(columns=["val"], filter=[("val", "=", 100)]).count() == 1
    assert len(calls) == 1


