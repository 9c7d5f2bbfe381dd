"""Mutations as REDO deltas: semantics, errors, MVCC time travel and change history."""
import math
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tableformat as tf
from tableformat.format import deltafile

from helpers import metrics_partitioning, metrics_rows, metrics_schema, table_files


def kv_schema():
    return tf.Schema([tf.Column("key", "string"), tf.Column("val", "int64", nullable=True),
                      tf.Column("s", "string", nullable=True, default="d")], primary_key="key")


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


def test_changes_every_and_net(kv):
    v1 = kv.insert(pa.table({"key": ["a", "b", "c"], "val": [1, 2, 3]})).version
    kv.update(pa.table({"key": ["a"], "val": [10]}))
    kv.update(pa.table({"key": ["a"], "s": ["z"]}))
    kv.delete(pa.table({"key": ["b"]}))
    kv.insert(pa.table({"key": ["d"], "val": [4]}))
    kv.delete(pa.table({"key": ["d"]}))
    kv.insert(pa.table({"key": ["b"], "val": [22]}))
    every = kv.changes(v1).to_pylist()
    assert [(c["_op"], c["key"], c["_version"]) for c in every] == [
        ("update", "a", 2), ("update", "a", 3), ("delete", "b", 4), ("insert", "d", 5), ("delete", "d", 6),
        ("insert", "b", 7)]
    assert every[0]["_changed_columns"] == ["val"] and every[1]["_changed_columns"] == ["s"]
    assert (every[1]["val"], every[1]["s"]) == (10, "z")       # full after-image
    assert every[2]["val"] is None and every[2]["key"] == "b"
    net = {c["key"]: c for c in kv.changes(v1, mode="net").to_pylist()}
    assert set(net) == {"a", "b"}                               # d: insert then delete vanishes
    assert net["a"]["_op"] == "update" and sorted(net["a"]["_changed_columns"]) == ["s", "val"]
    assert net["b"]["_op"] == "update" and net["b"]["val"] == 22    # delete then insert: an update
    before = kv.changes(v1, 3, before_image=True).to_pylist()
    assert [(c["_before_val"], c["val"]) for c in before] == [(1, 10), (10, 10)]
    assert kv.changes(0, v1).column("_op").to_pylist() == ["insert"] * 3
    ts = kv.history()[4].timestamp
    assert kv.changes(tf.Timestamp(ts)).num_rows == 3               # after the delete of b
    cheap = kv.changes(v1, 3, images="changed").to_pylist()
    assert [(c["val"], c["s"]) for c in cheap] == [(10, None), (None, "z")]
    with pytest.raises(tf.InvalidOptionError, match="end version 1 is before start version 3"):
        kv.changes(3, 1)


def test_change_history_reads_only_deltas_and_new_rowsets(tmp_path, monkeypatch):
    from tableformat.log import changes as ch
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(3000)
    v = t.insert(data).version
    t.update(data.select(["host", "metric", "time"]).slice(0, 30).append_column("value", pa.array([5.0] * 30)))
    read_rows = []
    real = ch.read_base_columns
    monkeypatch.setattr(ch, "read_base_columns",
                        lambda s, rs, cols, start=0, stop=None: read_rows.append(
                            (stop if stop is not None else rs.num_rows) - start) or real(s, rs, cols, start, stop))
    c = t.changes(v, images="changed")
    assert c.num_rows == 30 and read_rows == []                 # only the delta files
    c = t.changes(v)
    assert c.num_rows == 30 and sum(read_rows) < 3000          # only row groups holding touched rows


def test_changes_within_a_commit_come_in_key_order_whatever_the_rowset_order(tmp_path):
    """Rowsets are gathered in parallel and from sets: the result must not depend on that."""
    import subprocess
    import sys
    uri = str(tmp_path / "p")
    parts = tf.PartitionSchema(hash=[tf.HashPartition(["key"], buckets=8)])
    t = tf.create_table(uri, tf.Schema([tf.Column("key", "string"), tf.Column("val", "int64", nullable=True)],
                                       primary_key="key"), partitioning=parts)
    keys = [f"k{i:03d}" for i in range(200)]
    t.insert(pa.table({"key": keys, "val": list(range(200))}))
    t.update(pa.table({"key": keys[::3], "val": [0] * len(keys[::3])}))
    t.delete(pa.table({"key": keys[1::7]}))
    code = ("import sys, json, tableformat as tf; t = tf.open_table(sys.argv[1]); "
            "print(json.dumps([t.changes(0)['key'].to_pylist(), t.changes(0, mode='net')['key'].to_pylist()]))")
    outs = {subprocess.run([sys.executable, "-c", code, uri], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2, 3)}
    assert len(outs) == 1
    ch = t.changes(0)
    for v in (1, 2, 3):
        ks = ch.filter(pa.compute.equal(ch["_version"], v))["key"].to_pylist()
        assert ks == sorted(ks)


def test_changed_columns_lists_only_cells_whose_value_changed(tmp_path):
    """An upsert or apply that changes only `val` lists only `val`, though it wrote every column (Kudu's
    RowChangeList keeps what the client set; change history compares before and after, §9.2)."""
    schema = tf.Schema([tf.Column("key", "string"), tf.Column("val", "int64", nullable=True),
                        tf.Column("s", "string", nullable=True), tf.Column("x", "double", nullable=True)],
                       primary_key="key")
    t = tf.create_table(str(tmp_path / "t"), schema)
    v1 = t.insert(pa.table({"key": ["a", "b", "c"], "val": [1, 2, 3], "s": ["p", None, "r"],
                            "x": [1.5, float("nan"), None]})).version
    t.upsert(pa.table({"key": ["a", "b", "c"], "val": [10, 2, 3], "s": ["p", None, "r"],
                       "x": [1.5, float("nan"), None]}))
    t.apply(pa.table({"key": ["b", "c"], "val": [2, 3], "s": [None, "R"], "x": [float("nan"), None],
                      "op": ["update", "upsert"]}))
    every = [(c["_version"], c["key"], c["_changed_columns"]) for c in t.changes(v1).to_pylist()]
    assert every == [(2, "a", ["val"]), (2, "b", []), (2, "c", []), (3, "b", []), (3, "c", ["s"])]
    net = {c["key"]: c["_changed_columns"] for c in t.changes(v1, mode="net").to_pylist()}
    assert net == {"a": ["val"], "b": [], "c": ["s"]}
    cheap = {(c["_version"], c["key"]): c["_changed_columns"] for c in t.changes(v1, images="changed").to_pylist()}
    assert cheap[(2, "a")] == ["val", "s", "x"]                # no base read: the columns written


def test_counts_are_keys_as_changes_shows_them(tmp_path):
    """history() counts a key once per commit, by what changes(mode="all") shows of it (§10.3):
    an upsert of one key twice in a batch is one update, not two (issue #34)."""
    import random
    rng = random.Random(34)
    s = tf.Schema([tf.Column("key", "string"), tf.Column("val", "int64", nullable=True)], primary_key="key")
    t = tf.create_table(str(tmp_path / "t"), s)
    t.insert(pa.table({"key": ["a", "b", "c"], "val": [1, 2, 3]}))
    res = t.upsert(pa.table({"key": ["a", "a", "z", "z"], "val": [5, 6, 1, 2]}))
    assert (res.inserted, res.updated) == (1, 1)
    assert {k: t.history()[-1].counts[k] for k in ("inserted", "updated")} == {"inserted": 1, "updated": 1}
    ops = ["upsert", "delete_ignore", "update_ignore", "insert_ignore"]
    for _ in range(40):
        n = rng.randint(1, 8)
        keys = [rng.choice("abcdz") for _ in range(n)]
        v = t.version
        res = t.apply(pa.table({"key": keys, "val": list(range(n)), "op": [rng.choice(ops) for _ in range(n)]}))
        got = {"inserted": res.inserted, "updated": res.updated, "deleted": res.deleted}
        shown = {"inserted": 0, "updated": 0, "deleted": 0}
        if t.version > v:
            for r in t.changes(v, t.version, mode="all").to_pylist():
                shown[{"insert": "inserted", "update": "updated", "delete": "deleted"}[r["_op"]]] += 1
            assert {k: t.history()[-1].counts[k] for k in got} == got
        assert got == shown, (keys, got, shown)
