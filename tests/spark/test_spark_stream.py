"""The Structured Streaming source of changes, with real local Spark (spark_jobs/stream.py): micro-batches
with Trigger.AvailableNow equal Table.changes() over the same versions, every commit exactly once across
runs and restarts from the checkpoint, rate limits that cut as asked, and a typed error, never a gap,
behind the history horizon."""
import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tableformat as tf

pytest.importorskip("pyspark")

from helpers import in_columns, merge_all, vacuum0  # noqa: E402
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


def ints(**cols) -> pa.Table:
    return pa.table({n: pa.array(list(v), pa.int64()) for n, v in cols.items()})


def three_columns(path) -> tf.Table:
    """Columns (k, a, b), keys in 2 tablets; versions 1-3 change 4 rows each (maxRowsPerTrigger=4 takes one)."""
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("a", "int64", nullable=True),
                     tf.Column("b", "int64", nullable=True)], primary_key="k")
    t = tf.create_table(str(path), sch, partitioning=tf.PartitionSchema(hash=[tf.HashPartition(["k"], 2)]))
    t.insert(ints(k=range(4), a=range(4), b=range(10, 14)))                  # v1
    t.update(ints(k=range(4), a=[-1] * 4, b=[-2] * 4))                       # v2
    t.insert(ints(k=range(4, 8), a=range(4, 8), b=range(14, 18)))           # v3
    return t


ALTERS = {"add": lambda a: a.add_column("c", "int64", nullable=True),
          "rename": lambda a: a.rename_column("a", "a2"),
          "drop": lambda a: a.drop_column("b")}


def alter_and_write(t: tf.Table, step: str, i: int) -> None:
    """One ALTER, then two 4-row commits in the columns it leaves: an update of keys 0-3 setting every
    non-key column, an insert of 4 new keys."""
    with t.alter() as a:
        ALTERS[step](a)
    names = [c.name for c in t.schema.columns if c.name != "k"]
    t.update(ints(k=range(4), **{n: [100 * (i + 1) + j for j in range(4)] for n in names}))
    new = range(8 + 4 * i, 12 + 4 * i)
    t.insert(ints(k=new, **{n: new for n in names}))


class CrashOn(Collector):
    """A Collector that fails once on the batch holding version `v`, before keeping it: the batch is
    in the offset log, not in the commit log, so a restart replays it."""

    def __init__(self, v: int):
        super().__init__()
        self.v, self.crashed = v, False

    def __call__(self, df, batch_id):
        if not self.crashed and self.v in df.toArrow().column("_version").to_pylist():
            self.crashed = True
            raise RuntimeError(f"crash on the batch of version {self.v}")
        super().__call__(df, batch_id)


@pytest.mark.parametrize("limit", [{"maxVersionsPerTrigger": 1}, {"maxRowsPerTrigger": 4}], ids=["versions", "rows"])
@pytest.mark.parametrize("steps", [["add"], ["rename"], ["drop"], ["add", "rename", "drop"]], ids="-".join)
def test_a_rate_limited_stream_stopped_right_before_an_alter_reads_on_after_it(spark, tmp_path, steps, limit):
    """Issue #44: a batch planned before the ALTER and replayed after it (the query stopped there)
    failed on every restart for its columns; the restart now reads on, every change once."""
    t = three_columns(tmp_path / "t")
    ckpt, before = tmp_path / "ckpt", CrashOn(3)
    with pytest.raises(Exception, match="crash on the batch of version 3"):
        run(spark, t.uri, ckpt, before, startingVersion=1, **limit)
    assert [set(b.column("_version").to_pylist()) for b in before.since(0)] == [{1}, {2}]
    for i, step in enumerate(steps):
        alter_and_write(t, step, i)
    after = Collector()
    run(spark, t.uri, ckpt, after, startingVersion=1, **limit)         # the restart: the latest columns
    batches = after.since(0)
    assert set(batches[0].column("_version").to_pylist()) == {3}         # the batch right before the ALTER
    whole = t.changes(0)
    # each batch is Table.changes() over its versions in its query's columns: the first query's
    # (k, a, b), and the restarted one's, the latest
    assert canon(before.all()) == canon(t.changes(0, 2))
    assert canon(after.all()) == canon(whole.filter(pc.field("_version") >= 3))
    assert after.all().column_names == whole.column_names
    # over the whole run, every change once: the first query's batches in the latest names
    cols = [n for n in whole.column_names if n != "_changed_columns"]
    renames = {"a": "a2"} if "rename" in steps else {}
    got = [in_columns(b, whole.select(cols).schema, renames) for b in before.since(0) + batches]
    assert canon(pa.concat_tables(got)) == canon(whole.select(cols))
    assert whole.num_rows == sum(b.num_rows for b in before.since(0) + batches) > 16


def test_a_running_stream_keeps_its_columns_across_alters_and_a_restart_takes_the_new(spark, tmp_path):
    """A query's columns are fixed when it is defined: a renamed column keeps the stream's name (by ID),
    a dropped one is NULL, an added one waits; started again from the same DataFrame it keeps them, and
    a query defined again reads on in the latest columns."""
    t = three_columns(tmp_path / "t")
    ckpt, sink = tmp_path / "ckpt", Collector()
    register(spark)
    df = (spark.readStream.format(NAME).option("readChangeFeed", "true").option("startingVersion", 1)
          .option("before_image", "true").load(t.uri))
    q = (df.writeStream.foreachBatch(sink).option("checkpointLocation", str(ckpt))
         .trigger(processingTime="1 second").start())
    try:
        q.processAllAvailable()
        v = t.version
        with t.alter() as a:
            a.add_column("c", "int64", nullable=True).rename_column("a", "a2").drop_column("b")
        t.update(ints(k=[2], a2=[7], c=[9]))
        with typed_errors():
            q.processAllAvailable()
    finally:
        q.stop()
    t.update(ints(k=[3], a2=[8], c=[10]))
    with typed_errors():                                            # the same DataFrame: its columns
        df.writeStream.foreachBatch(sink).option("checkpointLocation", str(ckpt)) \
            .trigger(availableNow=True).start().awaitTermination()
    got = pa.concat_tables(sink.since(0)).filter(pc.field("_version") > v)
    assert got.column_names == ["_op", "_version", "_timestamp", "k", "a", "b", "_changed_columns",
                                "_commit_order", "_before_k", "_before_a", "_before_b"]
    assert got.select(["_op", "k", "a", "b", "_before_a", "_before_b"]).to_pylist() == [
        {"_op": "update", "k": 2, "a": 7, "b": None, "_before_a": -1, "_before_b": None},
        {"_op": "update", "k": 3, "a": 8, "b": None, "_before_a": -1, "_before_b": None}]
    assert got.column("_changed_columns").to_pylist() == [["a"], ["a"]]     # c is not in the stream
    n = len(sink.batches)
    t.update(ints(k=[1], a2=[5], c=[11]))
    run(spark, t.uri, ckpt, sink, startingVersion=1, before_image="true")  # defined again: the new columns
    assert canon(pa.concat_tables(sink.since(n))) == canon(t.changes(t.version - 1, before_image=True))
    assert "c" in sink.batches[max(sink.batches)].column_names


def test_a_starting_timestamp_before_the_table_was_created_reads_every_change(spark, tmp_path):
    """As Delta's startingTimestamp and the batch read: a start before the table existed (an Airflow
    export's origin, say) streams from its first commit, not VersionNotFoundError."""
    t = make_table(tmp_path / "t")
    sink = Collector()
    run(spark, t.uri, tmp_path / "c", sink, startingTimestamp="2020-01-01T00:00:00")
    assert canon(sink.all()) == canon(t.changes(0))


def reader(uri, **opts):
    """A stream reader on the driver alone (the query's schema: change_schema, as load() gives it)."""
    from spark_jobs.changes import change_schema
    from spark_jobs.stream import ChangeStreamReader
    o = {"path": uri, "readChangeFeed": "true", **{k: str(v) for k, v in opts.items()}}
    return ChangeStreamReader(o, change_schema(o))


def drain(r, start, limit=None) -> tuple[list, dict]:
    """Every micro-batch from `start` as Spark would plan them (latestOffset, partitions, read): the
    rows of each batch and the last offset."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    batches = []
    while (end := r.latestOffset(start, limit or ReadAllAvailable())) != start:
        got = [b for p in r.partitions(start, end) for b in r.read(p)]
        batches.append(pa.Table.from_batches(got).to_pylist() if got else [])
        start = end
    return batches, start


def test_a_running_stream_matches_a_batch_by_column_id_even_when_its_names_and_types_are_the_streams():
    """Review of #44: a batch whose columns had the stream's names and types (drop a, rename b to a,
    add b) was taken as is, by name: id 2's update went to `a`; by ID it is the stream's `b`."""
    import tempfile
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("a", "int64", nullable=True),
                     tf.Column("b", "int64", nullable=True)], primary_key="k")
    t = tf.create_table(tempfile.mkdtemp() + "/t", sch)
    t.insert(ints(k=[1], a=[10], b=[20]))
    r = reader(t.uri, startingVersion=1)
    _, off = drain(r, r.initialOffset())
    with t.alter() as a:
        a.drop_column("a")
    with t.alter() as a:
        a.rename_column("b", "a")
    with t.alter() as a:
        a.add_column("b", "int64", nullable=True)
    t.update(ints(k=[1], a=[21]), columns=["a"])                 # id 2: the stream's b
    (got,), _ = drain(r, off)
    assert [(x["a"], x["b"], x["_changed_columns"]) for x in got] == [(None, 21, ["b"])]


def test_a_column_dropped_and_added_again_with_its_name_and_type_is_null_in_a_running_stream():
    """The re-added column is another column (another ID): NULL in the stream, as a dropped one."""
    import tempfile
    t = tf.create_table(tempfile.mkdtemp() + "/t", tf.Schema(
        [tf.Column("k", "int64"), tf.Column("a", "int64", nullable=True)], primary_key="k"))
    t.insert(ints(k=[1], a=[10]))
    r = reader(t.uri, startingVersion=1)
    _, off = drain(r, r.initialOffset())
    with t.alter() as a:
        a.drop_column("a")
    with t.alter() as a:
        a.add_column("a", "int64", nullable=True)
    t.insert(ints(k=[2], a=[22]))
    (got,), _ = drain(r, off)
    assert [(x["k"], x["a"]) for x in got] == [(2, None)]


def test_a_query_defined_before_a_column_came_back_with_another_type_reads_on_in_its_types():
    """Review of #44: the lookback matched the query by names alone, so `a` dropped and added again as
    a string kept the latest (string) schema under a bigint query: Spark's untyped
    DATA_SOURCE_RETURN_SCHEMA_MISMATCH. The query's own schema (version 1's) is found by names and
    types; its `a` is another column ID, NULL."""
    import tempfile
    from spark_jobs.changes import change_schema
    from spark_jobs.stream import ChangeStreamReader
    t = tf.create_table(tempfile.mkdtemp() + "/t", tf.Schema(
        [tf.Column("k", "int64"), tf.Column("a", "int64", nullable=True)], primary_key="k"))
    t.insert(ints(k=[1], a=[10]))
    o = {"path": t.uri, "readChangeFeed": "true", "startingVersion": "1"}
    query = change_schema(o)                               # defined now: a bigint
    with t.alter() as a:
        a.drop_column("a")
    with t.alter() as a:
        a.add_column("a", "string", nullable=True)
    t.insert(pa.table({"k": pa.array([2], pa.int64()), "a": ["x"]}))
    r = ChangeStreamReader(o, query)
    assert r.stream_columns.target.field("a").type == pa.int64()
    from pyspark.sql.streaming.datasource import ReadMaxFiles
    batches, _ = drain(r, r.initialOffset(), ReadMaxFiles(1))       # one version a batch
    assert [(x["k"], x["a"]) for b in batches for x in b] == [(1, 10), (2, None)]


def test_the_lookback_finds_an_alter_by_its_schema_whatever_its_commits_operation_label():
    """Review of #44: a rename committed as "SCHEMA MIGRATION" (commit_fragments names its operation)
    was not taken for an ALTER: a false SchemaChangedError for a query defined before it."""
    import tempfile
    from spark_jobs.changes import change_schema
    from spark_jobs.stream import ChangeStreamReader
    t = tf.create_table(tempfile.mkdtemp() + "/t", tf.Schema(
        [tf.Column("k", "int64"), tf.Column("a", "int64", nullable=True)], primary_key="k"))
    t.insert(ints(k=[1], a=[10]))
    o = {"path": t.uri, "readChangeFeed": "true", "startingVersion": "1"}
    query = change_schema(o)
    alter = t.alter()
    alter.rename_column("a", "b")
    t.commit_fragments([t.snapshot().write_alter(alter)], "SCHEMA MIGRATION")
    t.update(ints(k=[1], b=[11]))
    batches, _ = drain(ChangeStreamReader(o, query), {"version": 0, "index": 0})
    assert sorted((x["_version"], x["k"], x["a"]) for b in batches for x in b) == [(1, 1, 10), (3, 1, 11)]


def test_a_mid_version_offset_of_the_older_part_order_is_refused_and_new_ones_resume_exactly(tmp_path):
    """Review of #44: a version's parts are now ordered found rows' changes first, so an offset an
    older release cut inside a version ("first i parts", no order marker) would resume into another
    list: one change lost, one repeated. It is refused; whole-version offsets and new ones read on."""
    from pyspark.sql.streaming.datasource import ReadMaxRows
    t = tf.create_table(str(tmp_path / "t"), tf.Schema(
        [tf.Column("k", "int64"), tf.Column("v", "int64", nullable=True)], primary_key="k"))
    t.insert(ints(k=[1, 2], v=[1, 2]))
    t.apply(pa.table({"k": pa.array([1, 3], pa.int64()), "v": pa.array([None, 3], pa.int64()),
                      "op": ["delete", "insert"]}), op_column="op")      # v2: a found row's part, an insert's
    r = reader(t.uri, startingVersion=2, maxRowsPerTrigger=1)
    with pytest.raises(tf.UnsupportedFormatVersionError, match="startingVersion 2"):
        r.latestOffset({"version": 1, "index": 1}, ReadMaxRows(1))
    with pytest.raises(tf.UnsupportedFormatVersionError, match="inside version 2"):
        r.partitions({"version": 1, "index": 0}, {"version": 1, "index": 1})
    batches, end = drain(r, {"version": 1, "index": 0}, ReadMaxRows(1))   # a whole-version offset
    assert [[(x["_op"], x["k"]) for x in b] for b in batches] == [[("delete", 1)], [("insert", 3)]]
    assert end == {"version": 2, "index": 0}
    mid = r.latestOffset({"version": 1, "index": 0}, ReadMaxRows(1))
    assert mid == {"version": 1, "index": 1, "order": 2}
    rest, _ = drain(r, mid)                                               # resumed from it
    assert [(x["_op"], x["k"]) for b in rest for x in b] == [("insert", 3)]
