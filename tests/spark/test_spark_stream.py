"""The Structured Streaming source of changes, with real local Spark (spark_jobs/stream.py): micro-batches
with Trigger.AvailableNow equal Table.changes() over the same versions, every commit exactly once across
runs and restarts from the checkpoint, rate limits that cut as asked, and a typed error, never a gap,
behind the history horizon."""
import os

import pyarrow as pa
import pytest

import tableformat as tf

pytest.importorskip("pyspark")

from helpers import merge_all, vacuum0  # noqa: E402
from spark_jobs.datasource import NAME, register  # noqa: E402
from spark_jobs.errors import typed_errors  # noqa: E402


def canon(t: pa.Table) -> list:
    """Rows as sorted reprs, timestamps as UTC microseconds (Spark returns them in its session zone)."""
    cols = {n: (c.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()) if pa.types.is_timestamp(c.type) else c)
            for n, c in zip(t.column_names, t.columns)}
    return sorted(repr(sorted(r.items())) for r in pa.table(cols).to_pylist())


def rows(ks, a):
    return pa.table({"k": pa.array(ks, pa.int64()), "a": pa.array(a, pa.int64())})


def make_table(path):
    """Keys hashed into 4 tablets, so a commit's changes are several parts."""
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("a", "int64", nullable=True)], primary_key="k")
    t = tf.create_table(str(path), sch, partitioning=tf.PartitionSchema(hash=[tf.HashPartition(["k"], 4)]))
    t.insert(rows(range(40), range(40)))                          # v1
    t.update(rows(range(0, 40, 3), [-1] * 14))                    # v2
    t.delete(pa.table({"k": pa.array(range(1, 40, 5), pa.int64())}))    # v3
    t.upsert(rows(range(35, 50), range(100, 115)))                # v4
    return t


class Collector:
    """A foreachBatch sink: each micro-batch's rows by batch id (a replayed batch must be identical)."""

    def __init__(self):
        self.batches: dict[int, pa.Table] = {}
        self.replayed: list[int] = []

    def __call__(self, df, batch_id):
        got = df.toArrow()
        if batch_id in self.batches:
            assert canon(got) == canon(self.batches[batch_id]), f"batch {batch_id} replayed with other rows"
            self.replayed.append(batch_id)
        self.batches[batch_id] = got

    def since(self, first: int) -> list[pa.Table]:
        return [self.batches[b] for b in sorted(self.batches) if b >= first]

    def all(self) -> pa.Table:
        return pa.concat_tables(self.since(0))


def run(spark, uri, ckpt, sink, **opts):
    """One Trigger.AvailableNow run of the change stream into `sink`, from checkpoint `ckpt`."""
    register(spark)
    r = spark.readStream.format(NAME).option("readChangeFeed", "true")
    for k, v in opts.items():
        r = r.option(k, str(v))
    q = (r.load(uri).writeStream.foreachBatch(sink).option("checkpointLocation", str(ckpt))
         .trigger(availableNow=True).start())
    with typed_errors():
        q.awaitTermination()


def test_available_now_runs_equal_changes_and_take_each_commit_once(spark, tmp_path):
    t = make_table(tmp_path / "t")
    ckpt, sink = tmp_path / "ckpt", Collector()
    run(spark, t.uri, ckpt, sink, startingVersion=1)
    assert canon(sink.all()) == canon(t.changes(0)) and sink.all().num_rows > 40
    v = t.version
    # commits between two runs with the same checkpoint: each exactly once, no gap, no duplicate
    n = len(sink.batches)
    t.update(rows([2, 3], [7, 7]))
    merge_all(t)                                                  # a compaction: data_change false
    t.delete(pa.table({"k": pa.array([3, 4], pa.int64())}))
    t.tag("checked")                                              # a tag: no data change either
    run(spark, t.uri, ckpt, sink, startingVersion=1)
    assert canon(pa.concat_tables(sink.since(n))) == canon(t.changes(v))
    assert canon(sink.all()) == canon(t.changes(0))
    # nothing new: no batch; a compaction alone: no row
    n = len(sink.batches)
    run(spark, t.uri, ckpt, sink, startingVersion=1)
    assert len(sink.batches) == n
    merge_all(t)
    run(spark, t.uri, ckpt, sink, startingVersion=1)
    assert sum(b.num_rows for b in sink.since(n)) == 0 and t.changes(t.version - 1).num_rows == 0
    assert not sink.replayed


def test_max_versions_per_trigger_splits_into_batches_of_versions(spark, tmp_path):
    t = make_table(tmp_path / "t")
    sink = Collector()
    run(spark, t.uri, tmp_path / "ckpt", sink, startingVersion=1, maxVersionsPerTrigger=2)
    got = [sorted(set(b.column("_version").to_pylist())) for b in sink.since(0)]
    assert got == [[1, 2], [3, 4]]
    assert canon(sink.all()) == canon(t.changes(0))


def test_num_partitions_packs_a_batch_and_keeps_its_rows(spark, tmp_path):
    t = make_table(tmp_path / "t")
    tasks = []

    def sink(df, batch_id):
        tasks.append(df.rdd.getNumPartitions())
        collect(df, batch_id)
    collect = Collector()
    run(spark, t.uri, tmp_path / "ckpt", sink, startingVersion=1, numPartitions=2)
    assert len(t.change_plan(0).parts) > 2 and tasks == [2]
    assert canon(collect.all()) == canon(t.changes(0))


def test_max_rows_per_trigger_cuts_inside_a_version_at_part_boundaries(spark, tmp_path):
    t = make_table(tmp_path / "t")
    plan = t.change_plan(0, 1)
    sizes = [p.records() for p in plan.parts]
    assert len(sizes) == 4 and sum(sizes) == 40                   # the insert: one part per tablet
    sink = Collector()
    run(spark, t.uri, tmp_path / "ckpt", sink, startingVersion=1, maxRowsPerTrigger=15)
    batches = sink.since(0)
    # the insert of version 1 (four parts of about 10 rows) lands in several batches
    assert sum(1 for b in batches if 1 in b.column("_version").to_pylist()) > 1
    assert all(b.num_rows <= max(15, max(sizes)) for b in batches)
    assert canon(sink.all()) == canon(t.changes(0))
    # net mode ends batches on whole versions
    sink = Collector()
    run(spark, t.uri, tmp_path / "ckpt-net", sink, startingVersion=1, maxRowsPerTrigger=15, mode="net")
    versions = [set(b.column("_version").to_pylist()) for b in sink.since(0)]
    assert all(not (a & b) for i, a in enumerate(versions) for b in versions[i + 1:])


def test_starting_timestamp_latest_by_default_and_delta_columns(spark, tmp_path):
    t = make_table(tmp_path / "t")
    hist = t.history()
    iso = tf.Timestamp(hist[3].timestamp).to_datetime().isoformat()
    sink = Collector()
    run(spark, t.uri, tmp_path / "c1", sink, startingTimestamp=iso)
    assert canon(sink.all()) == canon(t.changes(2))
    # no start: the changes after the version at the query's first run, none before
    sink = Collector()
    run(spark, t.uri, tmp_path / "c2", sink, changeFeedColumns="delta")
    assert sum(b.num_rows for b in sink.since(0)) == 0          # Spark's first batch runs, empty
    t.update(rows([5], [55]))
    run(spark, t.uri, tmp_path / "c2", sink, changeFeedColumns="delta")
    got = sink.all()
    assert sorted(got.column("_change_type").to_pylist()) == ["update_postimage", "update_preimage"]
    assert set(got.column("_commit_version").to_pylist()) == {t.version}


def test_restart_after_a_crash_before_the_commit_log_replays_identical_batches(spark, tmp_path):
    t = make_table(tmp_path / "t")
    ckpt, sink = tmp_path / "ckpt", Collector()
    run(spark, t.uri, ckpt, sink, startingVersion=1, maxRowsPerTrigger=25)
    last = max(sink.batches)
    assert last >= 2
    # a crash between the offset log's write and the commit log's: the batch runs again
    os.remove(ckpt / "commits" / str(last))
    crc = ckpt / "commits" / f".{last}.crc"                     # Hadoop's checksum beside it
    if crc.exists():
        os.remove(crc)
    t.update(rows([2], [66]))                                     # a commit during the outage
    run(spark, t.uri, ckpt, sink, startingVersion=1, maxRowsPerTrigger=25)
    assert sink.replayed == [last]                                # identical rows (Collector checks)
    assert canon(sink.all()) == canon(t.changes(0))               # after the replay: no gap, no duplicate


def test_a_start_behind_the_history_horizon_is_a_typed_error_never_a_gap(spark, tmp_path):
    t = make_table(tmp_path / "t")
    ckpt, sink = tmp_path / "ckpt", Collector()
    run(spark, t.uri, ckpt, sink, startingVersion=1, maxVersionsPerTrigger=1)
    v = t.version
    # a long pause: more commits, a compaction and a vacuum pass the stream's position
    t.update(rows([2], [11]))
    merge_all(t)
    vacuum0(t)
    assert t.state.history_horizon > v
    n = len(sink.batches)
    with pytest.raises(tf.HistoryExpiredError, match="history_max_age.*tag"):
        run(spark, t.uri, ckpt, sink, startingVersion=1)
    assert len(sink.batches) == n                                 # nothing skipped ahead
    with pytest.raises(tf.HistoryExpiredError, match="history_max_age.*tag"):
        run(spark, t.uri, tmp_path / "fresh", Collector(), startingVersion=1)


def test_bad_stream_options_are_typed_errors(spark, tmp_path):
    t = make_table(tmp_path / "t")
    for opts, match in [(dict(startingVersion=1, endingVersion=3), "has no end"),
                        (dict(startingVersion=1, maxVersionsPerTrigger=0), "maxVersionsPerTrigger"),
                        (dict(startingVersion=1, startingTimestamp="2024-01-01"), "at most one")]:
        with pytest.raises(tf.InvalidOptionError, match=match):
            run(spark, t.uri, tmp_path / f"c{len(match)}", Collector(), **opts)
    register(spark)
    with pytest.raises(tf.InvalidOptionError, match="readChangeFeed"):
        with typed_errors():
            q = (spark.readStream.format(NAME).load(t.uri).writeStream.foreachBatch(Collector())
                 .option("checkpointLocation", str(tmp_path / "c")).trigger(availableNow=True).start())
            q.awaitTermination()


def test_an_alter_under_a_running_stream_is_a_typed_error_and_a_restart_reads_on(spark, tmp_path):
    t = make_table(tmp_path / "t")
    ckpt, sink = tmp_path / "ckpt", Collector()
    register(spark)
    q = (spark.readStream.format(NAME).option("readChangeFeed", "true").option("startingVersion", 1).load(t.uri)
         .writeStream.foreachBatch(sink).option("checkpointLocation", str(ckpt))
         .trigger(processingTime="1 second").start())
    try:
        q.processAllAvailable()
        v = t.version
        with t.alter() as a:
            a.add_column("c", "int64", nullable=True)
        t.update(pa.table({"k": pa.array([2], pa.int64()), "c": pa.array([9], pa.int64())}))
        with pytest.raises(tf.SchemaChangedError, match="restart the query"):
            with typed_errors():
                q.processAllAvailable()
    finally:
        q.stop()
    n = len(sink.batches)
    run(spark, t.uri, ckpt, sink, startingVersion=1)          # restarted: the new columns, from where it was
    assert canon(pa.concat_tables(sink.since(n))) == canon(t.changes(v))


def test_a_starting_timestamp_before_the_table_was_created_reads_every_change(spark, tmp_path):
    """As Delta's startingTimestamp and the batch read: a start before the table existed (an Airflow
    export's origin, say) streams from its first commit, not VersionNotFoundError."""
    t = make_table(tmp_path / "t")
    sink = Collector()
    run(spark, t.uri, tmp_path / "c", sink, startingTimestamp="2020-01-01T00:00:00")
    assert canon(sink.all()) == canon(t.changes(0))
