"""The exactly-once sink's large insert batches through the JVM writer (spark_jobs/sink.py ->
partitioned_insert's JVM path): the log line names the path, the rows equal the batch, the
commit carries the batch's txn, a replay commits nothing, and a run of the batch planned on the
driver (Python) racing one written in the JVM lands it exactly once; an upsert batch stays on the
Spark merge job (Python), and its log line says so."""
import logging
import threading

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import tableformat as tf  # noqa: E402
from spark_jobs.sink import UpsertSink  # noqa: E402

from helpers import table_files  # noqa: E402

pytestmark = pytest.mark.usefixtures("jvm_connector")

SCHEMA = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "string", nullable=True)], primary_key="k")


@pytest.fixture
def jvm_writer(spark):
    if not spark._jvm.tableformat.write.SparkInsert.available():
        pytest.skip("the connector's JVM rowset writer is not in this build")


def _rows(lo, n):
    return pa.table({"k": pa.array(range(lo, lo + n), pa.int64()), "v": [f"v{i}" for i in range(lo, lo + n)]})


def _df(spark, rows):
    return spark.createDataFrame(rows.to_pandas(), "k long, v string").repartition(2)


def _txns(uri):
    t = tf.open_table(uri)
    return [(c.version, c.txn) for c in t.history() if getattr(c, "txn", None)]


def _batch_commits(uri, app):
    t = tf.open_table(uri)
    return t.snapshot().txn_version(app)


def test_a_large_insert_batch_runs_in_the_jvm_with_its_txn_and_a_replay_commits_nothing(spark, tmp_path, jvm_writer,
                                                                                        caplog):
    t = tf.create_table(str(tmp_path / "t"), SCHEMA, tf.PartitionSchema(hash=[tf.HashPartition(["k"], buckets=3)]))
    sink = UpsertSink(t.uri, mode="insert", app_id="app", local_rows=0)
    caplog.set_level(logging.INFO, logger="spark_jobs.insert")
    rows = _rows(0, 500)
    res = sink(_df(spark, rows), 0)
    assert res.operation == "STREAM INSERT" and res.inserted == 500
    assert any("JVM path (tableformat.write.SparkInsert)" in m for m in caplog.messages)
    t = tf.open_table(t.uri)
    assert t.snapshot().txn_version("app") == 0 and t.check().ok
    assert sorted(t.to_arrow()["k"].to_pylist()) == list(range(500))
    before, files = t.version, table_files(t.uri)
    assert sink(_df(spark, rows), 0) is None                         # the replay: nothing written
    t = tf.open_table(t.uri)
    assert t.version == before and table_files(t.uri) == files
    # a batch with a key the table holds: the typed error, nothing committed, no file left
    with pytest.raises(tf.DuplicateKeyError):
        sink(_df(spark, _rows(499, 10)), 1)
    t = tf.open_table(t.uri)
    assert t.version == before and table_files(t.uri) == files and t.snapshot().txn_version("app") == 0


def test_the_driver_and_the_jvm_racing_with_one_batch_land_it_once(spark, tmp_path, jvm_writer):
    """Two runs of each batch, one planned on the driver (Python writer and committer), one written
    by the JVM: whichever commits first, the batch lands once and the other run commits nothing."""
    t = tf.create_table(str(tmp_path / "t"), SCHEMA, tf.PartitionSchema(hash=[tf.HashPartition(["k"], buckets=2)]))
    local = UpsertSink(t.uri, mode="insert", app_id="race", local_rows=10 ** 6)
    jvm = UpsertSink(t.uri, mode="insert", app_id="race", local_rows=0)
    for b in range(4):
        rows = _rows(b * 300, 300)
        df = _df(spark, rows)
        out: dict = {}

        def run(name, sink, df=df, b=b, out=out):
            try:
                out[name] = sink(df, b)
            except Exception as e:  # noqa: BLE001 - reported by the assertion below
                out[name] = e
        first, second = [("local", local), ("jvm", jvm)][::(1 if b % 2 else -1)]
        threads = [threading.Thread(target=run, args=first), threading.Thread(target=run, args=second)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not any(isinstance(v, Exception) for v in out.values()), out
        assert sum(v is not None for v in out.values()) == 1, out     # one run committed, the other nothing
        t = tf.open_table(t.uri)
        assert t.snapshot().txn_version("race") == b
        assert sorted(t.to_arrow()["k"].to_pylist()) == list(range((b + 1) * 300))
    t = tf.open_table(t.uri)
    assert t.version == 4 and t.check().ok


def test_a_large_upsert_batch_stays_on_the_python_merge_job(spark, tmp_path, jvm_writer, caplog):
    t = tf.create_table(str(tmp_path / "t"), SCHEMA)
    caplog.set_level(logging.INFO, logger="spark_jobs.sink")
    sink = UpsertSink(t.uri, app_id="up", local_rows=0)
    sink(_df(spark, _rows(0, 50)), 0)
    assert any("Python path (the Spark merge job: STREAM UPSERT is not an insert" in m for m in caplog.messages)
    assert tf.open_table(t.uri).snapshot().txn_version("up") == 0
