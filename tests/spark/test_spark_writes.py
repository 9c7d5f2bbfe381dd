"""Spark writes lay rows out sorted by (tablet, encoded key) and stream them through the engine:
results equal the engine's, duplicates behave as in the engine, a tablet spans several tasks,
rowsets roll at the target size (no task holds its input), and a merge that loses to a
compaction rebases instead of running again; ordered upserts (a sequence_column) through the merge
keep each key's highest sequence."""
import os
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

import tableformat as tf  # noqa: E402

from helpers import (assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema,  # noqa: E402
                      table_files)

KV = tf.Schema([tf.Column("key", "string"), tf.Column("n", "int64"), tf.Column("val", "int64", nullable=True)],
               primary_key=["key", "n"])


def _kv_rows(n, start=0):
    i = np.arange(start, start + n)
    # keys of varied length: binary (memcmp) order is not string-length order
    return pa.table({"key": pa.array([("k" * (1 + x % 3)) + str(x % 17) for x in i]), "n": pa.array(i, pa.int64()),
                     "val": pa.array(i * 10, pa.int64())})


def _kv_table(uri, buckets=None, **props):
    part = tf.PartitionSchema(hash=[tf.HashPartition(["key"], buckets=buckets)]) if buckets else None
    return tf.create_table(uri, KV, part, properties=props or None)


def _df(spark, t: pa.Table, parts=3):
    return spark.createDataFrame(t.to_pandas()).repartition(parts)


def test_insert_equals_the_engine_with_tablets_spanning_tasks(spark, tmp_path):
    from spark_jobs.insert import partitioned_insert
    data = metrics_rows(4000, seed=5)
    a = tf.create_table(str(tmp_path / "a"), metrics_schema(), partitioning=metrics_partitioning())
    b = tf.create_table(str(tmp_path / "b"), metrics_schema(), partitioning=metrics_partitioning())
    a.insert(data)
    res = partitioned_insert(spark, spark.createDataFrame(data), b.uri, partitions=16)  # 16 tasks, 8 tablets
    assert res.inserted == 4000
    assert_same_rows(b.scan().to_arrow(), a.scan().to_arrow())
    b.refresh()
    rowsets = list(b.state.rowsets.values())
    assert len(rowsets) > len(b.snapshot().tablet_ids)          # some tablet was written by several tasks
    for tablet in b.snapshot().tablet_ids:                       # range partitioning: disjoint key ranges
        ranges = sorted((r.min_key, r.max_key) for r in rowsets if r.tablet == tablet)
        assert all(x[1] < y[0] for x, y in zip(ranges, ranges[1:]))
    assert b.check().ok


def test_rowsets_roll_at_the_target_size(spark, tmp_path):
    """A 64 KiB target and one tablet in two tasks: each task writes many small rowsets, so no task
    ever held its rows at once."""
    from spark_jobs.insert import partitioned_insert
    t = _kv_table(str(tmp_path / "t"), rowset_target_bytes=1 << 16)
    data = _kv_rows(30000)
    res = partitioned_insert(spark, _df(spark, data), t.uri, partitions=2)
    assert res.inserted == 30000
    t.refresh()
    rowsets = list(t.state.rowsets.values())
    assert len(rowsets) >= data.nbytes // (1 << 16) // 2
    assert max(r.num_rows for r in rowsets) < 30000 // 8
    assert_same_rows(t.to_arrow(), data, keys=("key", "n"))
    assert t.check().ok


def test_empty_partitions(spark, tmp_path):
    from spark_jobs.insert import partitioned_insert
    from spark_jobs.merge import mutation_merge
    t = _kv_table(str(tmp_path / "t"), buckets=2)
    data = _kv_rows(3)
    res = partitioned_insert(spark, _df(spark, data), t.uri, partitions=12)
    assert res.inserted == 3
    res = mutation_merge(spark, _df(spark, data.set_column(2, "val", pa.array([7, 8, 9]))), t.uri, op="update",
                         partitions=12)
    assert res.updated == 3
    assert sorted(tf.open_table(t.uri).to_arrow().column("val").to_pylist()) == [7, 8, 9]


@pytest.mark.parametrize("mode", ["fail", "ignore", "collect"])
def test_duplicates_in_the_input_and_in_the_table(spark, tmp_path, mode):
    """Keys 0..9 exist; the input repeats keys 20..24 (three times) and holds 5..9 again. Small Arrow
    batches put repeats on both sides of batch boundaries."""
    from spark_jobs.insert import partitioned_insert
    t = _kv_table(str(tmp_path / "t"), buckets=2)
    t.insert(_kv_rows(10))
    data = pa.concat_tables([_kv_rows(50, start=5), _kv_rows(5, start=20), _kv_rows(5, start=20)])
    before, files = t.version, table_files(t.uri)
    err = str(tmp_path / "err")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "4")
    try:
        if mode == "fail":
            with pytest.raises(tf.DuplicateKeyError,
                               match=r"15 key\(s\) already exist in table 't' or repeat in the input \(first: ") as e:
                partitioned_insert(spark, _df(spark, data), t.uri, partitions=3)
            assert e.value.count == 15
            assert tf.open_table(t.uri).version == before and table_files(t.uri) == files
            return
        res = partitioned_insert(spark, _df(spark, data), t.uri, on_duplicate=mode,
                                 error_path=err if mode == "collect" else None, partitions=3)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert (res.inserted, res.ignored) == (50 - 5, 15)
    got = tf.open_table(t.uri).to_arrow()
    assert_same_rows(got, _kv_rows(55), keys=("key", "n"))
    if mode == "collect":
        rejected = pq.read_table(err)
        assert sorted(rejected.column("n").to_pylist()) == sorted(list(range(5, 10)) + list(range(20, 25)) * 2)


def test_merge_equals_the_engine_and_keeps_each_keys_order(spark, tmp_path):
    """Each key gets insert, update, delete, insert again in input order, spread over tiny Arrow
    batches and more tasks than tablets: the result equals the engine's apply."""
    from spark_jobs.merge import mutation_merge
    a = _kv_table(str(tmp_path / "a"), buckets=2)
    b = _kv_table(str(tmp_path / "b"), buckets=2)
    for t in (a, b):
        t.insert(_kv_rows(100))
    keys = _kv_rows(40, start=80)                       # 80..99 exist, 100..119 are new
    steps = [("upsert", 1), ("update", 2), ("delete", None), ("upsert", 4), ("update", 5)]
    rows = pa.concat_tables([keys.set_column(2, "val", pa.array([v] * 40 if v is not None else [None] * 40,
                                                                pa.int64()))
                            .append_column("op", pa.array([op] * 40)) for op, v in steps])
    engine = a.apply(rows)
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "7")
    try:
        # one input partition keeps the input order the engine sees
        df = spark.createDataFrame(rows.to_pylist(), "key string, n long, val long, op string").coalesce(1)
        res = mutation_merge(spark, df, b.uri, op_column="op", partitions=5)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert_same_rows(tf.open_table(b.uri).to_arrow(), a.to_arrow(), keys=("key", "n"))
    # counts are keys (§10.3): 80..99 lose their old row and get a new one, 100..119 end with a new row
    assert (res.inserted, res.updated, res.deleted) == (engine.inserted, engine.updated, engine.deleted) == (40, 0, 20)
    assert tf.open_table(b.uri).check().ok


def _counting(marker_dir, action=None):
    """A mapInArrow function that leaves one file per input partition read (so a job's input
    reads can be counted) and runs `action` once, the first time any task reads."""
    def fn(batches):
        open(os.path.join(marker_dir, uuid.uuid4().hex), "w").close()
        for b in batches:
            if action is not None:
                try:
                    os.close(os.open(os.path.join(marker_dir, "..", "once"), os.O_CREAT | os.O_EXCL))
                    action()
                except FileExistsError:
                    pass
            yield b
    return fn


def test_a_merge_that_loses_to_a_compaction_rebases_and_runs_once(spark, tmp_path):
    """A merging compaction of every rowset commits while the merge job runs (after the driver
    picked its snapshot, before it commits). The job runs once (as many input reads as a job
    without the race) and its result equals the engine's."""
    from spark_jobs.merge import mutation_merge

    def table(name):
        t = _kv_table(str(tmp_path / name), history_max_age=3600)
        for s in range(0, 600, 200):
            t.insert(_kv_rows(200, start=s))
        return t
    model, quiet, raced = table("model"), table("quiet"), table("raced")
    upd = _kv_rows(600).set_column(2, "val", pa.array(np.arange(600) * -1, pa.int64())).filter(
        pa.array(np.arange(600) % 7 == 0))
    model.update(upd)

    def compact():
        t = tf.open_table(raced.uri)
        st = t.state
        action = tf.CompactionAction("merge", next(iter(st.rowsets.values())).tablet, tuple(st.rowsets), 1.0,
                                     "race", 0, ())
        assert t.compact_action(action) is not None

    counts = {}
    for name, t, action in (("quiet", quiet, None), ("raced", raced, compact)):
        d = tmp_path / f"reads-{name}"
        d.mkdir()
        df = spark.createDataFrame(upd.to_pandas()).coalesce(1)
        df = df.mapInArrow(_counting(str(d), action), df.schema)
        res = mutation_merge(spark, df, t.uri, op="update", partitions=3)
        assert res.updated == upd.num_rows
        counts[name] = len(os.listdir(d))
    assert counts["raced"] == counts["quiet"]                 # no second run of the job
    raced = tf.open_table(raced.uri)
    assert [h.operation for h in raced.history()][-2:] == ["COMPACT MERGE", "MERGE"]
    assert len(raced.state.rowsets) == 1                      # the merge's REDOs sit on the output
    assert_same_rows(raced.to_arrow(), model.to_arrow(), keys=("key", "n"))
    assert raced.check().ok


def test_the_layout_is_spark_native_only_when_spark_orders_keys_as_the_engine(spark, tmp_path):
    """Key columns of the table's Spark types: Spark range-partitions and sorts by them alone
    (one pass through Python). Another type (a key given as text, which Spark orders as text,
    or as a narrower int) or too many tablets: the (tablet, encoded key) layout. Both insert
    what the engine inserts."""
    from spark_jobs.insert import partitioned_insert
    from spark_jobs.writes import NATIVE_LAYOUT_MAX_TABLETS, native_key_order
    data = _kv_rows(3000)
    t = _kv_table(str(tmp_path / "t"), buckets=3)
    df = _df(spark, data)
    assert native_key_order(df, t.schema, 3) == ["key", "n"]
    as_text = df.withColumn("n", df["n"].cast("string"))
    assert native_key_order(as_text, t.schema, 3) is None
    assert native_key_order(df, t.schema, NATIVE_LAYOUT_MAX_TABLETS + 1) is None
    many = tf.Schema([tf.Column("k", "int64"), tf.Column("d", "double")], primary_key="k")
    assert native_key_order(spark.range(3).selectExpr("id as k", "1.0 as d"), many, 3) == ["k"]
    assert native_key_order(spark.range(3).selectExpr("cast(id as int) as k", "1.0 as d"), many, 3) is None

    as_int = df.withColumn("n", df["n"].cast("int"))          # not the table's type: the encoded-key layout
    assert native_key_order(as_int, t.schema, 3) is None
    res = partitioned_insert(spark, as_int, t.uri, partitions=2)
    assert res.inserted == 3000
    assert_same_rows(t.to_arrow(), data, keys=("key", "n"))
    u = _kv_table(str(tmp_path / "u"), buckets=3)
    assert partitioned_insert(spark, df, u.uri, partitions=2).inserted == 3000
    assert_same_rows(u.to_arrow(), data, keys=("key", "n"))
    assert t.check().ok and u.check().ok

    # merges too: each layout applies a key's rows in input order (the last update wins)
    from spark_jobs.merge import mutation_merge
    twice = pa.concat_tables([data.slice(0, 500).set_column(2, "val", pa.array(np.full(500, 1, np.int64))),
                              data.slice(0, 500).set_column(2, "val", pa.array(np.full(500, 2, np.int64)))])
    expect = pa.concat_tables([twice.slice(500), data.slice(500)])
    ordered = spark.createDataFrame(twice.to_pylist(), "key string, n long, val long").coalesce(1)
    for table, frame in ((t, ordered.withColumn("n", ordered["n"].cast("int"))), (u, ordered)):
        # 500 keys, each updated twice: 500 updates (counts are keys, §10.3)
        assert mutation_merge(spark, frame, table.uri, op="update", partitions=2).updated == 500
        assert_same_rows(tf.open_table(table.uri).to_arrow(), expect, keys=("key", "n"))


# --- ordered upserts (sequence_column) through the merge: the engine planner decides, per task ---

def test_spark_merge_applies_the_highest_sequence_per_key(spark, tmp_path):
    from spark_jobs.merge import mutation_merge
    s = tf.Schema([tf.Column("id", "int64"), tf.Column("value", "string", nullable=True),
                   tf.Column("lsn", "int64")], primary_key=["id"])
    uri = str(tmp_path / "cdc")
    t = tf.create_table(uri, s, tf.PartitionSchema(hash=[tf.HashPartition(["id"], buckets=4)]),
                        properties={"sequence_column": "lsn"})
    t.insert(pa.table({"id": pa.array(np.arange(100), pa.int64()), "value": ["v0"] * 100,
                       "lsn": pa.array(np.full(100, 50), pa.int64())}))
    rng = np.random.default_rng(3)
    n = 2000
    ids, lsn = rng.integers(0, 150, n), rng.integers(0, 100, n)
    events = pa.table({"id": pa.array(ids, pa.int64()), "value": [f"e{i}" for i in range(n)],
                       "lsn": pa.array(lsn, pa.int64())})
    v = t.version
    r = mutation_merge(spark, spark.createDataFrame(events.to_pandas()).repartition(3), uri, op="upsert")
    # reference: per key, the last event among those with the highest lsn (and stored lsn 50 for ids < 100)
    ref = {i: ("v0", 50) for i in range(100)}
    for i, val, s_ in zip(ids.tolist(), events.column("value").to_pylist(), lsn.tolist()):
        if i not in ref or s_ > ref[i][1]:
            ref[i] = (val, s_)
    got = {x["id"]: (x["value"], x["lsn"]) for x in tf.open_table(uri).to_arrow().to_pylist()}
    # equal sequences: the batch order inside a task decides; compare the sequence, and the value
    # wherever the winning sequence is unique for its key
    assert {k: s_ for k, (_, s_) in got.items()} == {k: s_ for k, (_, s_) in ref.items()}
    unique = {i for i in ref if ((ids == i) & (lsn == ref[i][1])).sum() == 1}
    assert all(got[i] == ref[i] for i in unique)
    stale = tf.open_table(uri).changes(v, skipped=True)
    skipped = stale.filter(pc.equal(stale.column("_op"), "skipped"))
    assert r.ignored == skipped.num_rows > 0
    assert set(skipped.column("_reason").to_pylist()) == {"stale_sequence"}
    assert tf.open_table(uri).check().ok


def test_a_small_merge_writes_one_redo_file_per_rowset_it_changes(spark, tmp_path):
    """With no task count given, adaptive execution joins a small input's key ranges into few
    tasks, so a 1% update does not write a REDO file per (task, rowset): each rowset it
    changes gets one (fewer files and footers to write, and to open on every read)."""
    from spark_jobs.merge import mutation_merge
    assert int(spark.conf.get("spark.sql.shuffle.partitions")) > 1
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(20_000, seed=3)
    t.insert(data)
    pick = np.random.default_rng(2).choice(data.num_rows, 200, replace=False)
    upd = data.select(["host", "metric", "time"]).take(pa.array(pick)).append_column(
        "value", pa.array(np.full(len(pick), 2.5)))
    res = mutation_merge(spark, spark.createDataFrame(upd.to_pandas()).repartition(4), t.uri, op="update")
    assert res.updated == 200
    redo = [p for p in table_files(t.uri) if "/redo-" in p]      # the table had none before
    per_rowset = {}
    for p in redo:
        per_rowset.setdefault(p.rsplit("/", 2)[-2], []).append(p)
    assert per_rowset and max(len(v) for v in per_rowset.values()) == 1, per_rowset
    assert tf.open_table(t.uri).lookup(upd.select(["host", "metric", "time"]))["value"].to_pylist() == [2.5] * 200
