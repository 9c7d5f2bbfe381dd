"""End to end, exactly once: table A's change stream (spark_jobs/stream.py) -> a projection -> upserts and
deletes into table B (spark_jobs/sink.py). The driver (tests/spark/sink_child.py) is killed with kill -9
at a random point in three runs (each after a random number of B's commits plus a random delay), on
local[2] and on local-cluster[2,1,1024] (executor JVMs of their own), while A keeps changing between
runs; each restart resumes from the same checkpoint. At the end B equals the projection of A, and B's
log records every micro-batch exactly once. The same for README's change feed pattern (each change a
strict delete or an upsert, ordered by the feed's `_commit_version` and `_commit_order`): B is then
A row for row."""
import random
import time

import pyarrow as pa
import pytest

import tableformat as tf

pytest.importorskip("pyspark")

from helpers import STREAM_STEPS, change_history  # noqa: E402
from test_spark_sink import Driver, txn_commits  # noqa: E402

MASTERS = ("local[2]", "local-cluster[2,1,1024]", "local[2]", "local-cluster[2,1,1024]")


def schema():
    return tf.Schema([tf.Column("k", "int64"), tf.Column("v", "string", nullable=True), tf.Column("seq", "int64")],
                     primary_key="k")


def change_a(a: tf.Table, rng: random.Random, commits: int) -> None:
    """Upserts (sequence = the commit's number, so B's sequence column never skips one) and deletes."""
    for _ in range(commits):
        seq = a.version + 1
        ks = sorted(rng.sample(range(80), 12))
        a.upsert(pa.table({"k": pa.array(ks, pa.int64()), "v": [f"{k}@{seq}" for k in ks],
                           "seq": pa.array([seq] * len(ks), pa.int64())}))
        live = a.to_arrow().column("k").to_pylist()
        if live:
            a.delete(pa.table({"k": pa.array(rng.sample(live, min(3, len(live))), pa.int64())}))


def projection(a: tf.Table) -> dict:
    return {r["k"]: ("b:" + r["v"], r["seq"]) for r in a.to_arrow().to_pylist()}


def kill_after(d: Driver, uri: str, start: int, k: int, delay: float) -> None:
    """kill -9 of the driver once the table at `uri` is k commits past version `start` (or the
    driver ended), plus `delay` seconds: inside a batch, between a commit and Spark's checkpoint,
    or between batches."""
    end = time.time() + 600
    while tf.open_table(uri).version < start + k and d.proc.poll() is None and time.time() < end:
        time.sleep(0.05)
    time.sleep(delay)
    assert d.proc.poll() is None, "the driver finished before its kill"
    d.kill()


def test_a_change_stream_into_upserts_survives_kill_9_at_random_points(tmp_path):
    rng = random.Random(36)
    a = tf.create_table(str(tmp_path / "a"), schema())
    b = tf.create_table(str(tmp_path / "b"), schema(), properties={"sequence_column": "seq",
                                                                   "checkpoint_interval": 4})
    cfg = {"table": b.uri, "input": a.uri, "checkpoint": str(tmp_path / "ck"), "source": "changes"}
    killed_after = []
    for run, master in enumerate(MASTERS):
        change_a(a, rng, 3)
        last = run == len(MASTERS) - 1
        d = Driver(tmp_path, {**cfg, "master": master, **({} if last else {"pause": {"point": "mid-batch",
                                                                                     "batch": "any"}})})
        if last:
            qid = d.finish()
            break
        d.wait_signal()
        # a random point: after k more of B's commits (k short of A's backlog), then a random delay,
        # so a kill lands inside a batch, between a commit and Spark's checkpoint, or between batches
        start = tf.open_table(b.uri).version
        k = rng.randint(1, max(1, min(4, a.version - start - 1)))
        delay = rng.uniform(0, 2.5)
        kill_after(d, b.uri, start, k, delay)
        killed_after.append((master, k, round(delay, 1), len(txn_commits(b.uri))))
    assert len(killed_after) == 3
    print("killed (master, after k of B's commits, + seconds, B's batches by then):", killed_after)
    b = tf.open_table(b.uri)
    assert {r["k"]: (r["v"], r["seq"]) for r in b.to_arrow().to_pylist()} == projection(a)
    got = txn_commits(b.uri)
    batches = [n for _, _, n in got]
    assert batches == list(range(len(batches))), (batches, killed_after)      # each batch once, in order
    assert {app for _, app, _ in got} == {qid}
    assert len(batches) == a.version, killed_after      # one micro-batch per commit of A after its creation


def test_a_change_feed_replica_survives_kill_9_mid_run_and_stays_exact(tmp_path):
    rng = random.Random(44)
    a, _ = change_history(tmp_path / "a", seed=46, steps=40, kinds=STREAM_STEPS)
    b = tf.create_table(str(tmp_path / "b"), a.schema)       # no sequence column: the feed's order alone
    cfg = {"table": b.uri, "input": a.uri, "checkpoint": str(tmp_path / "ck"), "source": "feed",
           "limit": {"maxRowsPerTrigger": "4"}}         # about 25 batches, cut inside versions too
    killed_after = []
    for _ in range(3):
        d = Driver(tmp_path, {**cfg, "pause": {"point": "mid-batch", "batch": "any"}})
        d.wait_signal()
        k, delay = rng.randint(1, 3), rng.uniform(0, 2.0)
        kill_after(d, b.uri, tf.open_table(b.uri).version, k, delay)
        killed_after.append((k, round(delay, 1), len(txn_commits(b.uri))))
    qid = Driver(tmp_path, cfg).finish()
    print("killed (after k of B's commits, + seconds, B's batches by then):", killed_after)
    want, got = a.to_arrow().sort_by("k"), tf.open_table(b.uri).to_arrow().sort_by("k")
    assert got.schema == want.schema and got.to_pylist() == want.to_pylist(), killed_after
    batches = [n for _, _, n in txn_commits(b.uri)]
    assert batches == sorted(set(batches)), (batches, killed_after)          # each batch once, in order
    assert {app for _, app, _ in txn_commits(b.uri)} == {qid}
