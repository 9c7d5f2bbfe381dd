"""Change history (`log/changes.py`, `log/change_rows.py`, specs/format.md §9.2): every change and the net
collapse, the files it reads, its order, `_changed_columns` and the counts history() shows."""
import os

import pyarrow as pa
import pytest

import tableformat as tf

from helpers import kv_schema, metrics_partitioning, metrics_rows, metrics_schema


@pytest.fixture
def kv(tmp_path):
    return tf.create_table(str(tmp_path / "kv"), kv_schema())


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


def test_commit_order_orders_a_keys_delete_before_its_reinsert_in_one_commit(kv):
    kv.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    v = kv.apply(pa.table({"key": ["a", "a", "b"], "val": [1, 5, 3], "op": ["delete", "insert", "update"]})).version
    kv.delete(pa.table({"key": ["a"]}))
    kv.insert(pa.table({"key": ["a"], "val": [7]}))
    rows = [(c["_op"], c["key"], c["_version"], c["_commit_order"]) for c in kv.changes(v - 1).to_pylist()]
    assert rows == [("delete", "a", v, 0), ("update", "b", v, 0), ("insert", "a", v, 1),
                    ("delete", "a", v + 1, 0), ("insert", "a", v + 2, 1)]
    net = kv.changes(v - 1, mode="net").to_pylist()
    assert [(c["_op"], c["key"], c["_commit_order"]) for c in net] == [("update", "b", 0), ("update", "a", 1)]


def test_a_commits_parts_hold_its_changes_to_found_rows_before_its_inserts(kv):
    """A stream that cuts a version between parts (maxRowsPerTrigger) hands them over in this order."""
    kv.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    v = kv.apply(pa.table({"key": ["a", "a"], "val": [1, 5], "op": ["delete", "insert"]})).version
    plan = kv.change_plan(v - 1, v)
    got = [tf.compute_changes(tf.Storage(kv.uri), plan, p).to_pylist() for p in plan.parts]
    assert [[(c["_op"], c["key"], c["_commit_order"]) for c in rows] for rows in got] == \
        [[("delete", "a", 0)], [("insert", "a", 1)]]


@pytest.mark.parametrize("name, before_image", [("_commit_order", False), ("_op", False), ("_version", False),
                                                ("_before_k", True)])
def test_a_data_column_named_as_a_change_feed_field_is_a_typed_error_naming_it(tmp_path, name, before_image):
    """Review of #44: a `_commit_order` data column gave two fields of one name (and a sink that
    could not order the feed); the change read is refused with the clash named, a rename the remedy."""
    t = tf.create_table(str(tmp_path / "t"), tf.Schema([tf.Column("k", "int64"),
                                                        tf.Column(name, "int64", nullable=True)], primary_key="k"))
    t.insert(pa.table({"k": pa.array([1], pa.int64()), name: pa.array([42], pa.int64())}))
    for read in (t.changes, t.change_plan):
        with pytest.raises(tf.SchemaError, match=f"{name}.*rename_column"):
            read(0, before_image=before_image)
    with t.alter() as a:
        a.rename_column(name, "x")
    assert t.changes(0, before_image=before_image).column("x").to_pylist() == [42]
