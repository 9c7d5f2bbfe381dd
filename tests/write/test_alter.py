"""Schema evolution by column ID, and range-partition management."""
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tableformat as tf

from helpers import merge_all, table_files


def ab_table(tmp_path):
    return tf.create_table(str(tmp_path / "x"), tf.Schema([tf.Column("col_a", "int32"),
                                                           tf.Column("col_b", "int32", nullable=True)],
                                                          primary_key="col_a"))


def i32(*v):
    return pa.array(list(v), pa.int32())


def test_schema_change_seed_example(tmp_path):
    t = ab_table(tmp_path)
    t.insert(pa.table({"col_a": i32(1), "col_b": i32(1)}))
    with t.alter() as a:
        a.drop_column("col_b")
    with t.alter() as a:
        a.add_column("col_b", "int32", nullable=False, default=999)
    assert t.scan().to_arrow().to_pylist() == [{"col_a": 1, "col_b": 999}]
    ids = [c.id for c in t.schema.columns]
    assert ids == [0, 2]                                  # the new col_b is a new column


def test_redo_deltas_of_a_dropped_column_never_come_back(tmp_path):
    t = ab_table(tmp_path)
    t.insert(pa.table({"col_a": i32(1, 2), "col_b": i32(1, 2)}))
    t.update(pa.table({"col_a": i32(1), "col_b": i32(50)}))
    with t.alter() as a:
        a.drop_column("col_b")
        a.add_column("col_b", "int32", nullable=True)
    assert t.scan(ordered=True).to_arrow().to_pylist() == [{"col_a": 1, "col_b": None}, {"col_a": 2, "col_b": None}]
    t.update(pa.table({"col_a": i32(2), "col_b": i32(7)}))     # applied on top of the read default
    assert t.scan(ordered=True).to_arrow()["col_b"].to_pylist() == [None, 7]


def test_add_columns_and_defaults(tmp_path):
    t = ab_table(tmp_path)
    t.insert(pa.table({"col_a": i32(1)}))
    with t.alter() as a:
        a.add_column("n", "string")                              # nullable: old rows read NULL
        a.add_column("d", "int64", nullable=False, default=5)    # old rows read 5
    t.insert(pa.table({"col_a": i32(2)}))
    with t.alter() as a:
        a.set_default("d", 7)                                    # only for rows written from now on
    t.insert(pa.table({"col_a": i32(3)}))
    got = {r["col_a"]: (r["n"], r["d"]) for r in t.scan().to_arrow().to_pylist()}
    assert got == {1: (None, 5), 2: (None, 5), 3: (None, 7)}
    with pytest.raises(tf.SchemaError, match="needs a default"):
        t.alter().add_column("z", "int32", nullable=False)


def test_rename_columns_including_key_and_table(tmp_path):
    t = tf.create_table(str(tmp_path / "m"), tf.Schema([
        tf.Column("host", "string"), tf.Column("time", "int64"), tf.Column("v", "double", nullable=True)],
        primary_key=["host", "time"]), partitioning=tf.PartitionSchema(hash=[tf.HashPartition(["host"], 3)]))
    t.insert(pa.table({"host": ["a", "b"], "time": [1, 2], "v": [1.0, 2.0]}))
    with t.alter() as a:
        a.rename_column("host", "hostname")
        a.rename_column("v", "value")
        a.rename_table("metrics_v2")
    assert t.name == "metrics_v2" and tf.open_table(str(tmp_path / "m")).name == "metrics_v2"
    assert t.schema.primary_key == ("hostname", "time")
    assert t.scan(filter=[("hostname", "=", "b")]).to_arrow().to_pylist() == [{"hostname": "b", "time": 2,
                                                                             "value": 2.0}]
    t.update(pa.table({"hostname": ["a"], "time": [1], "value": [10.0]}))
    assert t.scan(filter=[("value", ">", 5.0)]).count() == 1
    with pytest.raises(tf.ColumnNotFoundError,
                       match=r"scan names unknown column\(s\) \['host'\]; columns are \['hostname', 'time', 'value'\]"):
        t.scan(columns=["host"])
    with pytest.raises(tf.ColumnNotFoundError,
                       match=r"input has column\(s\) \['host', 'v'\] that table 'metrics_v2' does not have"):
        t.update(pa.table({"host": ["a"], "time": [1], "v": [1.0]}))
    assert t.scan(as_of=1).to_arrow().column_names == ["host", "time", "v"]   # old names as of then


def test_column_lookup_checks_type_and_nullability(tmp_path):
    t = ab_table(tmp_path)
    assert t.column("col_b", "int32", True).id == 1
    for args in [("nope",), ("col_b", "int64"), ("col_b", None, False)]:
        with pytest.raises(tf.ColumnNotFoundError,
                           match=("column 'nope' is not in table 'x'|column 'col_b' is int32, not int64|"
                                  "column 'col_b' is nullable")):
            t.column(*args)


def test_encoding_and_compression_apply_to_new_files(tmp_path):
    t = ab_table(tmp_path)
    t.alter().set_encoding("col_b", "bitshuffle").commit()      # the default is plain: start from another
    t.insert(pa.table({"col_a": i32(*range(100)), "col_b": i32(*range(100))}))
    with t.alter() as a:
        a.set_encoding("col_b", "plain")
        a.set_compression("col_b", "zstd")
    t.insert(pa.table({"col_a": i32(*range(100, 200)), "col_b": i32(*range(100))}))
    metas = []
    for rs in t.state.rowsets.values():
        md = pq.ParquetFile(os.path.join(str(tmp_path / "x"), rs.base[0].path)).metadata.row_group(0)
        col = next(md.column(i) for i in range(md.num_columns) if md.column(i).path_in_schema == "c1")
        metas.append((col.compression, "BYTE_STREAM_SPLIT" in col.encodings))
    assert sorted(metas) == [("LZ4", True), ("ZSTD", False)]


def range_table(tmp_path):
    t = tf.create_table(str(tmp_path / "r"), tf.Schema([tf.Column("k", "int64"), tf.Column("v", "string",
                                                                                         nullable=True)],
                                                      primary_key="k"),
                        partitioning=tf.PartitionSchema(hash=[tf.HashPartition(["k"], 2)],
                                                        range=tf.RangePartition(["k"], bounds=[(0, 100)])))
    t.insert(pa.table({"k": list(range(0, 100, 10)), "v": ["x"] * 10}))
    return t


def test_add_and_drop_range_partitions(tmp_path):
    t = range_table(tmp_path)
    with pytest.raises(tf.NoRangePartitionError,
                       match=r"1 rows fall in no range partition of \(k\) \(first: \(150,\)\); add a range partition"):
        t.insert(pa.table({"k": [150]}))
    with t.alter() as a:
        a.add_range_partition(100, 200)
    assert len(t.state.partitioning.tablet_ids()) == 4
    t.insert(pa.table({"k": [150, 160]}))
    assert t.scan().count() == 12
    v = t.version
    with t.alter() as a:
        a.drop_range_partition(0, 100)
    assert sorted(t.scan().to_arrow()["k"].to_pylist()) == [150, 160]
    with pytest.raises(tf.NoRangePartitionError, match="no range partition"):
        t.insert(pa.table({"k": [5]}))
    assert t.scan(as_of=v).count() == 12                     # time travel still sees the dropped range
    with pytest.raises(tf.PartitionSchemaError, match="overlaps"):
        t.alter().add_range_partition(150, 300).commit()
    with pytest.raises(tf.PartitionSchemaError, match="no range partition"):
        t.alter().drop_range_partition(0, 100).commit()


@pytest.mark.parametrize("change,err", [
    (lambda a: a.change_type("col_b", "int64"), tf.SchemaError),
    (lambda a: a.set_primary_key(["col_b"]), tf.SchemaError),
    (lambda a: a.set_partitioning(None), tf.PartitionSchemaError),
    (lambda a: a.drop_column("col_a"), tf.SchemaError),
    (lambda a: a.add_column("col_b", "int32"), tf.SchemaError),
    (lambda a: a.rename_column("col_b", "col_a"), tf.SchemaError),
    (lambda a: a.drop_column("nope"), tf.ColumnNotFoundError),
    (lambda a: a.add_column("x/y", "int32"), tf.InvalidIdentifierError),
    (lambda a: [a.add_column(f"c{i}", "int32") for i in range(299)], tf.SchemaError),
])
def test_rejected_changes_commit_nothing(tmp_path, change, err):
    t = ab_table(tmp_path)
    t.insert(pa.table({"col_a": i32(1), "col_b": i32(1)}))
    before = table_files(tmp_path / "x")
    with pytest.raises(err,
                       match=("cannot change|cannot be dropped|already exists|is not in the schema|"
                              "contains a path separator|at most 300 columns")):
        with t.alter() as a:
            a.add_column("fine", "int32")      # a good step first: the whole alter must still fail
            change(a)
    assert t.version == 1 and table_files(tmp_path / "x") == before
    assert t.schema.names == ["col_a", "col_b"]


def test_time_travel_and_change_history_across_schema_changes(tmp_path):
    t = ab_table(tmp_path)
    t.insert(pa.table({"col_a": i32(1, 2), "col_b": i32(1, 2)}))          # v1
    with t.alter() as a:                                                  # v2
        a.add_column("c", "string", nullable=True, default="old")
    t.update(pa.table({"col_a": i32(1), "c": ["new"]}))                   # v3
    with t.alter() as a:                                                  # v4
        a.drop_column("col_b")
    t.insert(pa.table({"col_a": i32(3), "c": ["z"]}))                     # v5
    assert t.scan(as_of=1).to_arrow().column_names == ["col_a", "col_b"]
    assert t.scan(as_of=3, ordered=True).to_arrow().to_pylist() == [
        {"col_a": 1, "col_b": 1, "c": "new"}, {"col_a": 2, "col_b": 2, "c": "old"}]
    ch = t.changes(1).to_pylist()
    assert [(c["_op"], c["_version"], c["col_a"], c["c"]) for c in ch] == [("update", 3, 1, "new"),
                                                                           ("insert", 5, 3, "z")]
    assert ch[0]["_changed_columns"] == ["c"]


def test_insert_racing_a_drop_column_revalidates(tmp_path):
    t = ab_table(tmp_path)
    other = tf.open_table(str(tmp_path / "x"))
    fired = []

    def hook(step, path):
        if step == "commit" and not fired:
            fired.append(1)
            with other.alter() as a:
                a.drop_column("col_b")
    t.storage.fault_hook = hook
    with pytest.raises(tf.UnknownColumnError,
                       match=r"input has column\(s\) \['col_b'\] that table does not have; columns are \['col_a'\]"):
        t.insert(pa.table({"col_a": i32(1), "col_b": i32(1)}))
    t.storage.fault_hook = None
    assert t.scan().count() == 0 and t.schema.names == ["col_a"]


@pytest.mark.parametrize("kind", ["minor_delta", "major_delta", "merge"])
def test_drop_then_readd_under_every_compaction(tmp_path, kind):
    from tableformat.maintenance.compaction import CompactionAction, CompactionPlan
    t = ab_table(tmp_path)
    t.insert(pa.table({"col_a": i32(*range(10)), "col_b": i32(*range(10))}))
    t.update(pa.table({"col_a": i32(1, 2), "col_b": i32(100, 200)}))
    t.update(pa.table({"col_a": i32(3), "col_b": i32(300)}))
    old = t.version
    with t.alter() as a:
        a.drop_column("col_b")
        a.add_column("col_b", "int32", nullable=False, default=999)
    t.update(pa.table({"col_a": i32(4), "col_b": i32(4444)}))
    t.update(pa.table({"col_a": i32(5), "col_b": i32(5555)}))
    (rs,) = t.state.rowsets.values()
    cols = (t.schema.column("col_b").id,) if kind == "major_delta" else ()
    t.compact(CompactionPlan((CompactionAction(kind, rs.tablet, (rs.id,), 1.0, "test", 0, cols),), 0, t.version))
    got = {r["col_a"]: r["col_b"] for r in t.scan().to_arrow().to_pylist()}
    assert got == {**{i: 999 for i in range(10)}, 4: 4444, 5: 5555}
    then = {r["col_a"]: r["col_b"] for r in t.scan(as_of=old).to_arrow().to_pylist()}
    assert then[1] == 100 and then[3] == 300 and then[7] == 7
    if kind == "merge":                       # compaction writes the current schema: one col_b, the new one
        (new,) = t.state.rowsets.values()
        assert new.base[0].column_ids == tuple(c.id for c in t.schema.columns)
    assert t.check().ok


def test_overlapping_range_partition_error_shows_typed_bounds(tmp_path):
    import datetime as dt
    s = tf.Schema([tf.Column("h", "string"), tf.Column("time", "unixtime_micros")], primary_key=["h", "time"])
    t = tf.create_table(str(tmp_path / "t"), s, partitioning=tf.PartitionSchema(
        range=tf.RangePartition(["time"], splits=[1_700_000_000_000_000])))
    utc = dt.timezone.utc
    with pytest.raises(tf.PartitionSchemaError, match=r"^range partition \[2025-01-01T00:00:00Z, "
                       r"2026-01-01T00:00:00Z\) overlaps the existing range partition \[2023-11-14T22:13:20Z, \+inf\)"):
        with t.alter() as a:
            a.add_range_partition(dt.datetime(2025, 1, 1, tzinfo=utc), dt.datetime(2026, 1, 1, tzinfo=utc))
    assert t.refresh().version == 0


def _ranged(tmp_path, n=20):
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double", nullable=True),
                     tf.Column("s", "string", nullable=True)], primary_key="k")
    part = tf.PartitionSchema(range=tf.RangePartition(["k"], bounds=[(0, 10), (10, 20)]))
    t = tf.create_table(str(tmp_path / "r"), sch, partitioning=part)
    t.insert(pa.table({"k": pa.array(range(n), pa.int64()), "v": [float(i) for i in range(n)],
                       "s": [f"s{i}" for i in range(n)]}))
    return t


def test_a_dropped_range_partition_is_in_the_change_history(tmp_path):
    """#34.3: dropping [10, 20) took 10 rows out of the table and changes(1, 2) listed none, so a
    change export (and a replica applying it) kept them. Each live row of a rowset that a commit
    removes without rewriting it is a delete at that commit (§9.2), after-image NULL, before-image
    its values just before; rows deleted or updated earlier show as they were."""
    t = _ranged(tmp_path)
    t.delete(pa.table({"k": pa.array([12, 13], pa.int64())}))                         # v2
    t.update(pa.table({"k": pa.array([14], pa.int64()), "s": ["new"]}))               # v3
    with t.alter() as a:                                                              # v4
        a.drop_range_partition(10, 20)
    assert t.scan().count() == 10
    gone = [10, 11, 14, 15, 16, 17, 18, 19]
    for mode in ("all", "net"):
        ch = t.changes(3, 4, mode=mode, before_image=True).to_pylist()
        assert [(c["_op"], c["_version"], c["k"]) for c in ch] == [("delete", 4, k) for k in gone], mode
        assert all(c["v"] is None and c["s"] is None for c in ch)
        assert [(c["_before_v"], c["_before_s"]) for c in ch] == [
            (float(k), "new" if k == 14 else f"s{k}") for k in gone]
    net = t.changes(0, 4, mode="net").to_pylist()           # inserted and dropped in range: nothing
    assert sorted(c["k"] for c in net) == list(range(10)) and {c["_op"] for c in net} == {"insert"}
    allc = t.changes(1, 4).to_pylist()
    assert [c["_op"] for c in allc].count("delete") == 10
    assert t.changes(3, 4, images="changed").num_rows == 8


def test_applying_the_change_history_replays_every_version_through_range_drops(tmp_path):
    """A replica built only from changes(v-1, v) equals the table at every version (the
    property a change export gives): with range drops, a re-added range, and history-only
    rowsets a merge left behind (their rows were deleted before: no second delete)."""
    t = _ranged(tmp_path, 15)
    t.insert(pa.table({"k": pa.array([15, 16, 17], pa.int64()), "v": [0.5] * 3, "s": ["a"] * 3}))
    t.delete(pa.table({"k": pa.array([1, 2, 11, 16], pa.int64())}))
    t.update(pa.table({"k": pa.array([12], pa.int64()), "v": [7.0]}))
    merge_all(t)
    with t.alter() as a:
        a.drop_range_partition(10, 20)
    with t.alter() as a:
        a.add_range_partition(10, 30)
    t.insert(pa.table({"k": pa.array([15, 25], pa.int64()), "v": [1.5, 2.5], "s": ["x", "y"]}))
    with t.alter() as a:
        a.drop_range_partition(0, 10)
    replica: dict = {}
    for v in range(1, t.version + 1):
        for c in t.changes(v - 1, v, mode="net").to_pylist():
            if c["_op"] == "delete":
                assert c["k"] in replica, (v, c)
                del replica[c["k"]]
            else:
                replica[c["k"]] = (c["v"], c["s"])
        want = {r["k"]: (r["v"], r["s"]) for r in t.scan(as_of=v).to_arrow().to_pylist()}
        assert replica == want, v
