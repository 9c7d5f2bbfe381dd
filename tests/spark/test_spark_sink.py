"""The exactly-once streaming sink (spark_jobs/sink.py), with real Spark: each micro-batch lands as
one commit recording (query id, batch id); a replayed batch commits nothing; and a driver killed
with kill -9 before a batch's commit, between its commit and Spark's checkpoint, or in the middle
of a batch written by the Spark merge job, restarts from its checkpoint to a table equal to the
model, with every batch committed once (tests/spark/sink_child.py is the killed driver)."""
import json
import os
import random
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tableformat as tf
from tableformat.log.actions import SetTransaction
from tableformat.log.txlog import TransactionLog

pytest.importorskip("pyspark")

from helpers import ROOT, TESTS  # noqa: E402
from spark_jobs.sink import UpsertSink, upsert_stream  # noqa: E402

CHILD = TESTS / "spark" / "sink_child.py"


def schema():
    return tf.Schema([tf.Column("k", "int64"), tf.Column("v", "string", nullable=True), tf.Column("seq", "int64")],
                     primary_key="k")


def sequenced_table(path):
    return tf.create_table(str(path), schema(), properties={"sequence_column": "seq", "checkpoint_interval": 3})


def ops_batch(rng, batch: int, n: int = 40, keys: int = 60) -> pa.Table:
    """Upserts and deletes of random keys; sequences mostly rise with the batch, some are stale."""
    k = [rng.randrange(keys) for _ in range(n)]
    seq = [batch * 10 + rng.randrange(10) - (15 if rng.random() < 0.15 else 0) for _ in range(n)]
    op = ["delete_ignore" if rng.random() < 0.2 else "upsert" for _ in range(n)]
    return pa.table({"k": pa.array(k, pa.int64()), "v": [f"b{batch}-{i}" for i in range(n)],
                     "seq": pa.array(seq, pa.int64()), "op": op})


def apply_model(model: dict, batch: pa.Table) -> None:
    """§14 in a dict: rows in batch order; an upsert of a live key with a lower sequence is skipped."""
    for r in batch.to_pylist():
        if r["op"] == "delete_ignore":
            model.pop(r["k"], None)
        elif r["k"] not in model or r["seq"] >= model[r["k"]][1]:
            model[r["k"]] = (r["v"], r["seq"])


def table_rows(uri) -> dict:
    return {r["k"]: (r["v"], r["seq"]) for r in tf.open_table(uri).to_arrow().to_pylist()}


def txn_commits(uri) -> list[tuple[int, str, int]]:
    """(version, app id, batch id) of every commit recording a txn."""
    log = TransactionLog(tf.Storage(uri))
    out = []
    for v in range(tf.open_table(uri).version + 1):
        out += [(v, a.app_id, a.version) for a in log.read_commit(v).of(SetTransaction)]
    return out


# --- in one session: the sink called as foreachBatch calls it ---------------------------------------

def test_each_batch_is_one_commit_and_a_replay_commits_nothing(spark, tmp_path):
    t = sequenced_table(tmp_path / "t")
    sink = UpsertSink(t.uri, op_column="op", app_id="app")
    rng, model = random.Random(3), {}
    batches = [ops_batch(rng, b) for b in range(3)]
    for b, data in enumerate(batches):
        res = sink(spark.createDataFrame(data.to_pandas()), b)
        assert res is not None and res.operation == "STREAM APPLY"
        apply_model(model, data)
    assert table_rows(t.uri) == model
    assert [(a, b) for _, a, b in txn_commits(t.uri)] == [("app", 0), ("app", 1), ("app", 2)]
    before = tf.open_table(t.uri).version
    for b in (2, 1):                                    # replayed after a crash: nothing lands
        assert sink(spark.createDataFrame(batches[b].to_pandas()), b) is None
    assert tf.open_table(t.uri).version == before and table_rows(t.uri) == model
    assert sink(spark.createDataFrame(batches[0].slice(0, 0).to_pandas(), "k long, v string, seq long, op string"),
                3) is None                              # an empty batch commits nothing
    assert tf.open_table(t.uri).version == before


def test_a_large_batch_goes_through_the_spark_merge_job_with_its_txn(spark, tmp_path):
    t = sequenced_table(tmp_path / "t")
    rng, model = random.Random(5), {}
    data = [ops_batch(rng, b, n=300, keys=200) for b in range(2)]
    big = UpsertSink(t.uri, op_column="op", app_id="big", local_rows=10)
    for b, d in enumerate(data):
        res = big(spark.createDataFrame(d.to_pandas()), b)
        assert res.operation == "STREAM APPLY"
        apply_model(model, d)
    assert table_rows(t.uri) == model
    assert [(a, b) for _, a, b in txn_commits(t.uri)] == [("big", 0), ("big", 1)]
    assert big(spark.createDataFrame(data[1].to_pandas()), 1) is None
    assert len(txn_commits(t.uri)) == 2
    # inserts through the Spark insert job
    u = tf.create_table(str(tmp_path / "u"), schema())
    ins = UpsertSink(u.uri, mode="insert", app_id="ins", local_rows=0)
    rows = pa.table({"k": pa.array(range(50), pa.int64()), "v": ["x"] * 50, "seq": pa.array([0] * 50, pa.int64())})
    assert ins(spark.createDataFrame(rows.to_pandas()), 0).operation == "STREAM INSERT"
    assert ins(spark.createDataFrame(rows.to_pandas()), 0) is None
    assert [(a, b) for _, a, b in txn_commits(u.uri)] == [("ins", 0)] and len(table_rows(u.uri)) == 50


def test_insert_and_upsert_modes(spark, tmp_path):
    t = tf.create_table(str(tmp_path / "t"), schema())
    rows = pa.table({"k": pa.array([1, 2], pa.int64()), "v": ["a", "b"], "seq": pa.array([1, 1], pa.int64())})
    ins = UpsertSink(t.uri, mode="insert", app_id="i")
    assert ins(spark.createDataFrame(rows.to_pandas()), 0).inserted == 2
    assert ins(spark.createDataFrame(rows.to_pandas()), 0) is None        # a replay is no DuplicateKeyError
    with pytest.raises(tf.DuplicateKeyError):
        ins(spark.createDataFrame(rows.to_pandas()), 1)                   # a new batch with an existing key
    up = UpsertSink(t.uri, app_id="u", columns=["v"])
    res = up(spark.createDataFrame(pa.table({"k": pa.array([2, 3], pa.int64()), "v": ["B", "C"],
                                             "seq": pa.array([9, 9], pa.int64())}).to_pandas()), 0)
    assert (res.inserted, res.updated) == (1, 1)
    assert table_rows(t.uri) == {1: ("a", 1), 2: ("B", 1), 3: ("C", 9)}
    assert tf.open_table(t.uri).snapshot().txn_version("i") == 0
    assert tf.open_table(t.uri).snapshot().txn_version("u") == 0


def test_a_batch_has_the_same_history_name_on_the_driver_and_through_the_spark_jobs(spark, tmp_path):
    """One micro-batch, planned on the driver (local_rows above its size) or written by the Spark
    insert or merge job (local_rows 0), is the same stream operation in the history."""
    rows = pa.table({"k": pa.array(range(30), pa.int64()), "v": ["x"] * 30, "seq": pa.array([1] * 30, pa.int64()),
                     "op": ["upsert"] * 30})
    for kw, name in [(dict(mode="insert"), "STREAM INSERT"), ({}, "STREAM UPSERT"),
                     (dict(op_column="op"), "STREAM APPLY")]:
        for path, local_rows in [("driver", 1000), ("spark", 0)]:
            t = tf.create_table(str(tmp_path / f"{name.split()[1]}-{path}"), schema())
            sink = UpsertSink(t.uri, app_id="q", local_rows=local_rows, **kw)
            data = rows if "op_column" in kw else rows.drop(["op"])
            res = sink(spark.createDataFrame(data.to_pandas()), 0)
            assert (path, res.operation, tf.open_table(t.uri).history()[-1].operation) == (path, name, name)
            assert len(table_rows(t.uri)) == 30


@pytest.mark.parametrize("operation", ["", 5])
def test_a_bad_operation_name_for_the_spark_jobs_is_typed(tmp_path, operation):
    from spark_jobs.insert import partitioned_insert
    from spark_jobs.merge import mutation_merge
    t = tf.create_table(str(tmp_path / "t"), schema())
    with pytest.raises(tf.InvalidOptionError, match="operation"):
        partitioned_insert(None, None, t.uri, operation=operation)
    with pytest.raises(tf.InvalidOptionError, match="operation"):
        mutation_merge(None, None, t.uri, op="upsert", operation=operation)
    assert tf.open_table(t.uri).version == 0


@pytest.mark.parametrize("kw", [dict(mode="merge"), dict(mode="insert", op_column="op"), dict(op_column=""),
                                dict(app_id=""), dict(local_rows=-1), dict(mode="insert", columns=["v"])])
def test_bad_sink_options_are_typed_errors(tmp_path, kw):
    t = tf.create_table(str(tmp_path / "t"), schema())
    with pytest.raises(tf.InvalidOptionError):
        UpsertSink(t.uri, **kw)
    with pytest.raises(tf.TableNotFoundError):
        UpsertSink(str(tmp_path / "none"))


def test_upsert_stream_uses_the_query_id_as_app_id(spark, tmp_path):
    t, src, model = stream_input(tmp_path, seed=9, batches=2)
    df = file_stream(spark, src)
    q = upsert_stream(df, t.uri, str(tmp_path / "ck"), trigger={"availableNow": True}, op_column="op")
    q.awaitTermination()
    assert table_rows(t.uri) == model
    assert [(a, b) for _, a, b in txn_commits(t.uri)] == [(q.id, 0), (q.id, 1)]


def stream_input(tmp_path, seed: int, batches: int) -> tuple[tf.Table, object, dict]:
    """A sequenced table, and `batches` micro-batches of random operations (ops_batch) written to
    `tmp_path/in` in the file source's order: the table, the input folder, the rows it must reach."""
    t = sequenced_table(tmp_path / "t")
    src = tmp_path / "in"
    src.mkdir()
    rng, model = random.Random(seed), {}
    for b in range(batches):
        d = ops_batch(rng, b)
        write_input(src, b, d)
        apply_model(model, d)
    return t, src, model


def file_stream(spark, src):
    """The input folder as a stream of one file (one micro-batch) a trigger."""
    return spark.readStream.schema("k long, v string, seq long, op string").option("maxFilesPerTrigger", 1) \
        .parquet(str(src))


# --- kill -9 of a driver running the query (tests/spark/sink_child.py) ------------------------------

def write_input(src, b: int, data: pa.Table) -> None:
    """One Parquet file per micro-batch, modification times in batch order (the file source's order)."""
    p = os.path.join(src, f"batch-{b:03d}.parquet")
    pq.write_table(data, p)
    os.utime(p, (1_000_000 + b, 1_000_000 + b))


class Driver:
    """sink_child.py as a process group of its own (Python and its JVM): started, awaited, killed."""

    def __init__(self, tmp_path, cfg: dict):
        self.cfg = {"signal": str(tmp_path / "signal"), **cfg}
        for p in (self.cfg["signal"], self.cfg["signal"] + ".done"):
            if os.path.exists(p):
                os.remove(p)
        env = dict(os.environ, PYTHONPATH=f"{ROOT}:{TESTS}")
        self.log = open(tmp_path / "driver.log", "a")
        self.proc = subprocess.Popen([sys.executable, str(CHILD), json.dumps(self.cfg)], env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_signal(self, timeout=600) -> str:
        end = time.time() + timeout
        while not os.path.exists(self.cfg["signal"]):
            assert self.proc.poll() is None, f"the driver exited ({self.proc.returncode}) before its pause"
            assert time.time() < end, "no signal from the driver"
            time.sleep(0.05)
        return open(self.cfg["signal"]).read()

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)        # kill -9 of the driver and its JVM
        self.proc.wait()
        self.log.close()

    def finish(self, timeout=900) -> str:
        rc = self.proc.wait(timeout=timeout)
        self.log.close()
        assert rc == 0, open(self.log.name).read()[-4000:]
        return open(self.cfg["signal"] + ".done").read()


def checkpoint_commits(ck) -> set[int]:
    d = os.path.join(ck, "commits")
    return {int(n) for n in os.listdir(d) if n.isdigit()} if os.path.isdir(d) else set()


def test_kill_9_before_the_commit_after_it_and_mid_batch_lands_each_batch_once(tmp_path):
    t = sequenced_table(tmp_path / "t")
    src, ck = tmp_path / "in", str(tmp_path / "ck")
    src.mkdir()
    rng, batches = random.Random(11), []
    for b in range(6):
        batches.append(ops_batch(rng, b, n=40 if b != 3 else 400, keys=300))
        write_input(src, b, batches[-1])
    cfg = {"table": t.uri, "input": str(src), "checkpoint": ck, "source": "files"}

    # 1. killed after batch 1's files are written, before its commit
    d = Driver(tmp_path, {**cfg, "pause": {"point": "before-commit", "batch": 1}})
    assert d.wait_signal().startswith("before-commit 1")
    d.kill()
    assert [b for _, _, b in txn_commits(t.uri)] == [0]

    # 2. killed after batch 2's commit, before Spark's checkpoint records it
    d = Driver(tmp_path, {**cfg, "pause": {"point": "after-commit", "batch": 2}})
    d.wait_signal()
    d.kill()
    assert [b for _, _, b in txn_commits(t.uri)] == [0, 1, 2] and 2 not in checkpoint_commits(ck)

    # 3. killed while the Spark merge job writes batch 3 (a large batch), as soon as a task wrote a file
    d = Driver(tmp_path, {**cfg, "local_rows": 100, "pause": {"point": "mid-batch", "batch": 3}})
    d.wait_signal()
    before = set(file_list(t.uri))
    end = time.time() + 300
    while not (set(file_list(t.uri)) - before) and time.time() < end:
        time.sleep(0.02)
    d.kill()
    assert [b for _, _, b in txn_commits(t.uri)] == [0, 1, 2]

    # 4. the checkpoint loses its record of batch 2 (and batch 3's offsets): batch 2 replays, commits nothing
    assert 2 in checkpoint_commits(ck)
    lose(ck, "commits", 2)
    lose(ck, "offsets", 3)
    qid = Driver(tmp_path, cfg).finish()
    model: dict = {}
    for b in batches:
        apply_model(model, b)
    assert table_rows(t.uri) == model
    got = txn_commits(t.uri)
    # each batch committed once, none skipped (with batch 3's offsets gone, Spark may plan the remaining
    # files into other batches: the batches are Spark's, the rows all landed once, as the model says)
    assert [b for _, _, b in got] == list(range(len(got))) and len(got) >= 5 and {a for _, a, _ in got} == {qid}


def lose(ck, log: str, batch: int) -> None:
    """Remove a checkpoint log's entry for a batch, and its checksum file (or Spark's next write of the
    entry fails as if another query were writing it)."""
    for name in (str(batch), f".{batch}.crc"):
        p = os.path.join(ck, log, name)
        if os.path.exists(p):
            os.remove(p)


def file_list(uri) -> list[str]:
    out = []
    for root, _, files in os.walk(os.path.join(uri, "tablets")):
        out += [os.path.join(root, f) for f in files]
    return out


# --- the sink as a format: df.writeStream.format("tableformat") (spark_jobs/sink_format.py) ----------

def format_stream(spark, src, uri, ck, app_id="orders"):
    w = file_stream(spark, src).writeStream.format("tableformat").option("opColumn", "op").option("checkpointLocation", ck)
    q = (w.option("txnAppId", app_id) if app_id else w).trigger(availableNow=True).start(uri)
    q.awaitTermination()
    return q


def test_the_format_commits_each_batch_once_under_its_txn_app_id(spark, tmp_path):
    t, src, model = stream_input(tmp_path, seed=17, batches=3)
    format_stream(spark, src, t.uri, str(tmp_path / "ck"))
    assert table_rows(t.uri) == model
    assert [(a, b) for _, a, b in txn_commits(t.uri)] == [("orders", 0), ("orders", 1), ("orders", 2)]
    assert not os.path.exists(os.path.join(t.uri, "tablets", "_staging")) or \
        not any(files for _, _, files in os.walk(os.path.join(t.uri, "tablets", "_staging")))
    version = tf.open_table(t.uri).version
    format_stream(spark, src, t.uri, str(tmp_path / "ck2"))     # a new checkpoint replays batches 0-2
    assert tf.open_table(t.uri).version == version and table_rows(t.uri) == model


def test_the_format_needs_a_txn_app_id(spark, tmp_path):
    from spark_jobs.errors import typed_errors
    t = sequenced_table(tmp_path / "t")
    (tmp_path / "in").mkdir()
    write_input(tmp_path / "in", 0, ops_batch(random.Random(1), 0))
    with pytest.raises(tf.InvalidOptionError, match="txnAppId"):
        with typed_errors():
            format_stream(spark, tmp_path / "in", t.uri, str(tmp_path / "ck"), app_id=None)
    assert tf.open_table(t.uri).version == 0


def test_a_replayed_batch_through_the_spark_jobs_is_already_committed_not_a_key_error(spark, tmp_path):
    """A replay that reaches the Spark insert or merge job after its first run landed (the race the
    sink's early check cannot close) gets TxnAlreadyCommittedError, not the duplicate or missing
    keys its rows now meet, and writes nothing."""
    from spark_jobs.insert import partitioned_insert
    from spark_jobs.merge import mutation_merge
    u = tf.create_table(str(tmp_path / "u"), schema())
    rows = pa.table({"k": pa.array(range(20), pa.int64()), "v": ["x"] * 20, "seq": pa.array([0] * 20, pa.int64())})
    partitioned_insert(spark, spark.createDataFrame(rows.to_pandas()), u.uri, txn=("ins", 0))
    before = tf.open_table(u.uri).version
    with pytest.raises(tf.TxnAlreadyCommittedError):
        partitioned_insert(spark, spark.createDataFrame(rows.to_pandas()), u.uri, txn=("ins", 0))
    mutation_merge(spark, spark.createDataFrame(rows.select(["k"]).to_pandas()), u.uri, op="delete", txn=("del", 0))
    with pytest.raises(tf.TxnAlreadyCommittedError):
        mutation_merge(spark, spark.createDataFrame(rows.select(["k"]).to_pandas()), u.uri, op="delete",
                       txn=("del", 0))
    assert tf.open_table(u.uri).version == before + 1 and table_rows(u.uri) == {}


def test_an_app_id_reused_by_a_new_checkpoint_is_warned_about(spark, tmp_path, caplog):
    """A query from a new checkpoint numbers batches from 0 again: with a reused app id its batches
    are skipped as done (Delta's txnAppId rule), and the sink says so."""
    t = tf.create_table(str(tmp_path / "t"), schema())
    sink = UpsertSink(t.uri, app_id="orders")
    for b in range(3):
        sink(spark.createDataFrame(pa.table({"k": pa.array([b], pa.int64()), "v": ["x"],
                                             "seq": pa.array([0], pa.int64())}).to_pandas()), b)
    with caplog.at_level("WARNING", logger="spark_jobs.sink_commit"):
        assert sink(spark.createDataFrame(pa.table({"k": pa.array([100], pa.int64()), "v": ["y"],
                                                    "seq": pa.array([0], pa.int64())}).to_pandas()), 0) is None
    assert "give it a new app id" in caplog.text
