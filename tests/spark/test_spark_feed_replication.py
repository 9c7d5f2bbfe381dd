"""A change feed streamed into the op-column sink replicates the table exactly (README, "Changes in
Spark"): table A's change stream (spark_jobs/stream.py), each change an op (`delete`, or `upsert` for
an insert or an after-image), into table B through each of the sink's entry points (spark_jobs/sink.py,
sink_format.py), in modes all and net, with and without rate limits. A micro-batch gathers its parts
(one per rowset) in no particular order, so one key's changes arrive out of version order (a re-insert
before its delete); the sink applies them in (version, `_commit_order`) order (specs/format.md §9.2).
The kill -9 run of the same pattern is in test_spark_sink_e2e.py."""
import pyarrow as pa
import pytest

import tableformat as tf

pytest.importorskip("pyspark")

from helpers import STREAM_STEPS, change_history  # noqa: E402
from spark_jobs.sink import UpsertSink, upsert_stream  # noqa: E402
from spark_jobs.sink_commit import BatchCommitter  # noqa: E402

LIMITS = {"none": {}, "versions": {"maxVersionsPerTrigger": "4"}, "rows": {"maxRowsPerTrigger": "9"}}


@pytest.fixture(scope="module")
def table_a(tmp_path_factory):
    """Inserts, updates, deletes, upserts, keys deleted and inserted again (in one commit, and in
    later ones), compactions moving keys between rowsets, a range partition dropped and added again."""
    t, _ = change_history(tmp_path_factory.mktemp("feed") / "a", seed=44, steps=20, kinds=STREAM_STEPS)
    return t


def feed_ops(spark, uri: str, mode: str, columns: str, limit: dict):
    """README's pattern: A's change stream from its first commit, each change an op."""
    from pyspark.sql import functions as F
    r = (spark.readStream.format("tableformat").option("readChangeFeed", "true").option("startingVersion", 1)
         .option("mode", mode).option("changeFeedColumns", columns).option("numPartitions", 3))
    for k, v in limit.items():
        r = r.option(k, v)
    df = r.load(uri)
    if columns == "delta":      # keeps _commit_version and _commit_order: they order a key's changes
        kind, meta = F.col("_change_type"), ["_change_type", "_commit_timestamp"]
        df = df.where(kind != "update_preimage")
    else:                       # keeps _version and _commit_order
        kind, meta = F.col("_op"), ["_op", "_timestamp", "_changed_columns"]
    return df.withColumn("op", F.when(kind == "delete", "delete").otherwise("upsert")).drop(*meta)


def replicate(df, uri: str, ck: str, entry: str) -> None:
    """One AvailableNow run of the stream into B through one of the sink's entry points."""
    if entry == "upsert_stream":
        q = upsert_stream(df, uri, ck, trigger={"availableNow": True}, op_column="op")
    elif entry == "UpsertSink":         # local_rows=0: every batch through the Spark merge job
        q = (df.writeStream.foreachBatch(UpsertSink(uri, op_column="op", local_rows=0))
             .option("checkpointLocation", ck).trigger(availableNow=True).start())
    else:
        q = (df.writeStream.format("tableformat").option("txnAppId", "replica").option("opColumn", "op")
             .option("checkpointLocation", ck).trigger(availableNow=True).start(uri))
    q.awaitTermination()


def assert_replica(a: tf.Table, b: tf.Table) -> None:
    """B holds A's rows, row for row, with A's columns."""
    want, got = a.to_arrow().sort_by("k"), tf.open_table(b.uri).to_arrow().sort_by("k")
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()


@pytest.mark.parametrize("entry,columns", [("upsert_stream", "delta"), ("UpsertSink", "tableformat"),
                                           ("format", "delta")])
@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("mode", ["all", "net"])
def test_a_change_feed_into_the_op_sink_replicates_the_table(spark, tmp_path, table_a, mode, limit, entry, columns):
    b = tf.create_table(str(tmp_path / "b"), table_a.schema)
    replicate(feed_ops(spark, table_a.uri, mode, columns, LIMITS[limit]), b.uri, str(tmp_path / "ck"), entry)
    assert_replica(table_a, b)


def test_a_sequenced_replica_follows_the_feed_too(spark, tmp_path, table_a):
    """B with A's sequence column: the feed's order and the sequence agree."""
    b = tf.create_table(str(tmp_path / "b"), table_a.schema, properties={"sequence_column": "lsn"})
    replicate(feed_ops(spark, table_a.uri, "all", "delta", LIMITS["rows"]), b.uri, str(tmp_path / "ck"),
              "upsert_stream")
    assert_replica(table_a, b)


def reinsert_batch(version_column: str) -> pa.Table:
    """Key 1 deleted at version 3 and inserted again at 4; key 2 deleted and inserted again in
    version 5 (delete first: _commit_order 0, then 1); given in the reverse order."""
    rows = [(1, "old", 3, 0, "delete"), (1, "new", 4, 1, "upsert"), (2, None, 5, 0, "delete"),
            (2, "back", 5, 1, "upsert")][::-1]
    k, v, ver, order, op = zip(*rows)
    return pa.table({"k": pa.array(k, pa.int64()), "v": list(v), version_column: pa.array(ver, pa.int64()),
                     "_commit_order": pa.array(order, pa.int64()), "op": list(op)})


@pytest.mark.parametrize("version_column", ["_commit_version", "_version"])
def test_the_sink_applies_a_feed_batch_in_version_and_commit_order(tmp_path, version_column):
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "string", nullable=True)], primary_key="k")
    b = tf.create_table(str(tmp_path / "b"), schema)
    b.insert(pa.table({"k": pa.array([1, 2], pa.int64()), "v": ["old", "two"]}))
    BatchCommitter(b.uri, op_column="op", app_id="feed").write_arrow(reinsert_batch(version_column), 0)
    assert tf.open_table(b.uri).to_arrow().sort_by("k").to_pylist() == [{"k": 1, "v": "new"}, {"k": 2, "v": "back"}]


def test_a_commit_order_without_its_version_is_a_typed_error(tmp_path):
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "string", nullable=True)], primary_key="k")
    b = tf.create_table(str(tmp_path / "b"), schema)
    sink = BatchCommitter(b.uri, op_column="op", app_id="feed")
    with pytest.raises(tf.MissingColumnError, match="_commit_version or _version"):
        sink.write_arrow(reinsert_batch("_commit_version").drop(["_commit_version"]), 0)
    assert tf.open_table(b.uri).version == 0


def test_a_target_with_its_own_feed_columns_takes_them_as_data_or_names_the_clash(tmp_path):
    """Review of #44: a target with a `_commit_order` column takes the batch's as data (no feed
    sort); one with a `_version` column leaves a tableformat-columns feed without its version: the
    error says the target took it and how to read the feed instead."""
    cols = [tf.Column("k", "int64"), tf.Column("v", "string", nullable=True)]
    mine = tf.create_table(str(tmp_path / "o"), tf.Schema(cols + [tf.Column("_commit_order", "int64", nullable=True)],
                                                          primary_key="k"))
    BatchCommitter(mine.uri, op_column="op", app_id="feed").write_arrow(
        reinsert_batch("_commit_version").drop(["_commit_version"]).slice(0, 1), 0)
    assert tf.open_table(mine.uri).to_arrow().column("_commit_order").to_pylist() == \
        reinsert_batch("_commit_version").column("_commit_order").to_pylist()[:1]
    versioned = tf.create_table(str(tmp_path / "v"), tf.Schema(cols + [tf.Column("_version", "int64", nullable=True)],
                                                               primary_key="k"))
    with pytest.raises(tf.MissingColumnError, match="table's own column.*_version.*changeFeedColumns"):
        BatchCommitter(versioned.uri, op_column="op", app_id="feed").write_arrow(reinsert_batch("_version"), 0)
    assert tf.open_table(versioned.uri).version == 0


def test_a_null_commit_order_sorts_last_in_the_local_and_the_spark_path_alike(spark, tmp_path):
    """Review of #44: a skipped row's NULL `_commit_order` sorted last in the local (pyarrow) path
    but first in the Spark path (orderBy asc): the same batch ended in another row."""
    batch = pa.table({"k": pa.array([1, 1], pa.int64()), "v": ["null order", "order 0"],
                      "_version": pa.array([5, 5], pa.int64()), "_commit_order": pa.array([None, 0], pa.int64()),
                      "op": ["upsert", "upsert"]})
    got = []
    for name, local_rows in (("local", 100), ("spark", 0)):
        t = tf.create_table(str(tmp_path / name), tf.Schema(
            [tf.Column("k", "int64"), tf.Column("v", "string", nullable=True)], primary_key="k"))
        UpsertSink(t.uri, op_column="op", app_id=name, local_rows=local_rows)(
            spark.createDataFrame(batch.to_pandas()), 0)
        got.append(tf.open_table(t.uri).to_arrow().to_pylist())
    assert got == [[{"k": 1, "v": "null order"}]] * 2
