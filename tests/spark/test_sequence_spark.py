"""Ordered upserts through the Spark merge job: the engine's planner decides, per task."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import tableformat as tf


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
