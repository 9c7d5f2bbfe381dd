"""No Python needed (issue #35 item 5): pyspark's own `bin/spark-sql`, with the connector jar on
`--jars`, the catalog configured by `--conf` and no Python interpreter reachable
(`PYSPARK_PYTHON` and `PYSPARK_DRIVER_PYTHON` point at nothing, `SPARK_HOME` is given so the
launcher never asks Python for it), reads tables exactly as the engine does, time travel included,
on local disk and on the loopback S3 server through s3a."""
import os
import subprocess

import pyarrow as pa
import pytest

import tableformat as tf

from helpers import (CATALOG, SPARK_HOME, cli_rows, engine_rows, range_keyed, run_spark_sql, same, spark_sql,
                     sql_user_history)

pytest.importorskip("pyspark")


def history(t):
    """Tag v1 'nightly', then update, delete and insert: the latest and v1's rows differ."""
    v1 = t.version
    t.tag("nightly")
    t.update(pa.table({"k": pa.array([1, 2], pa.int64()), "v": pa.array([100.0, None])}))
    t.delete(pa.table({"k": pa.array([3, 150], pa.int64())}))
    return v1


QUERIES = ["SELECT k, v, s FROM tf.ns.t ORDER BY k",
           "SELECT k, v, s FROM tf.ns.t VERSION AS OF {v1} ORDER BY k",
           "SELECT k, v, s FROM tf.ns.t VERSION AS OF 'nightly' ORDER BY k",
           "SELECT k, v, s FROM tf.ns.t WHERE k >= 100 AND k < 160 AND v > 0 ORDER BY k",
           "SHOW TABLES IN tf.ns"]


def check(t, out, v1):
    same(cli_rows(out[0]), engine_rows(t))
    same(cli_rows(out[1]), engine_rows(t, as_of=v1))
    same(cli_rows(out[2]), engine_rows(t, as_of=v1))
    same(cli_rows(out[3]), engine_rows(t, filter=[("k", ">=", 100), ("k", "<", 160), ("v", ">", 0)]))
    assert out[4] and all("t" in r for r in out[4])


def test_spark_sql_reads_the_engines_rows_without_python(connector_jar, tmp_path):
    t = range_keyed(tmp_path / "wh" / "ns" / "t", ranges=3)
    v1 = history(t)
    out = spark_sql(connector_jar, tmp_path, {"spark.sql.catalog.tf.warehouse": str(tmp_path / "wh")},
                    [q.format(v1=v1) for q in QUERIES])
    check(t, out, v1)


def test_spark_sql_reads_from_s3_through_s3a_without_python(connector_jar, s3_table_root, tmp_path):
    """The catalog takes the table's own storage options (`storage.<key>`), as the engine does: no
    fs.s3a.* setting by hand."""
    from spark_jobs.session import S3A_EXCLUDES, flat_storage_options, s3a_packages
    root, opts = s3_table_root
    t = range_keyed(f"{root}/wh/ns/t", ranges=3, storage_options=opts)
    v1 = history(t)
    bucket = root[len("s3://"):]
    conf = {f"spark.sql.catalog.tf.storage.{k}": v for k, v in flat_storage_options(opts).items()}
    conf["spark.sql.catalog.tf.warehouse"] = f"s3a://{bucket}/wh"
    conf["spark.jars.packages"] = ",".join(s3a_packages())
    conf["spark.jars.excludes"] = ",".join(S3A_EXCLUDES)
    out = spark_sql(connector_jar, tmp_path, conf, [q.format(v1=v1) for q in QUERIES])
    check(t, out, v1)


REFUSED = {"MERGE INTO tf.ns.t AS x USING (SELECT 1L AS k, 2.0 AS v, 'y' AS s) u ON x.k = u.k "
           "WHEN MATCHED THEN UPDATE SET v = u.v": "MERGE is refused. Change rows with the Spark job "
                                                   "spark_jobs.merge.mutation_merge",
           "UPDATE tf.ns.t SET v = 1.0 WHERE k = 1": "UPDATE is refused. Change rows with the Spark job "
                                                     "spark_jobs.merge.mutation_merge"}


@pytest.mark.parametrize("message_format", ["PRETTY", "STANDARD"])
def test_spark_sql_prints_each_refusal_once_without_a_stack_trace(connector_jar, tmp_path, message_format):
    """A refused statement, and an engine error (a time before the table), is one short message,
    printed once: no ERROR log line and no Java stack trace; the table is unchanged. In Spark's
    JSON error format too (spark.sql.error.messageFormat), the text is there."""
    t = range_keyed(tmp_path / "wh" / "ns" / "t", ranges=2)
    before = t.version
    early = "SELECT count(*) FROM tf.ns.t TIMESTAMP AS OF '2001-01-01 00:00:00'"
    proc = run_spark_sql(connector_jar, tmp_path, {"spark.sql.catalog.tf.warehouse": str(tmp_path / "wh"),
                                         "spark.sql.session.timeZone": "UTC",
                                         "spark.sql.error.messageFormat": message_format},
                         [s + ";" for s in [*REFUSED, early]], "--hiveconf", "hive.cli.errors.ignore=true")
    out = proc.stdout + proc.stderr
    for statement, message in REFUSED.items():
        full = "tableformat's Spark catalog: " + message
        assert out.count(full) == 1, (statement, out[-3000:])
    created = tf.Timestamp(t.history()[0].timestamp).iso()
    assert out.count(f"timestamp 2001-01-01T00:00:00Z is before the table was created ({created})") == 1, out[-3000:]
    assert "INTERNAL_ERROR" not in out and "ERROR SparkSQLDriver" not in out and not [ln for ln in out.splitlines() if ln.startswith("\tat ")]
    assert tf.open_table(t.uri).version == before


def test_spark_sql_creates_inserts_alters_and_travels_without_python(connector_jar, tmp_path):
    """Issue #45's SQL user: CREATE with a key, INSERT, a duplicate INSERT refused (typed, nothing
    committed), ALTER, another INSERT, then every version read back by VERSION AS OF and compared
    with the engine's rows at that version."""
    conf = {"spark.sql.catalog.tf.warehouse": str(tmp_path / "wh"), "spark.sql.session.timeZone": "UTC"}
    sql_user_history(connector_jar, tmp_path, conf, lambda: tf.open_table(str(tmp_path / "wh" / "ns" / "t")))


def test_readmes_spark_submit_asks_for_the_s3a_jars_these_tests_read_through():
    """README's spark-submit example names exactly s3a_packages() and S3A_EXCLUDES: the S3 modules
    the s3a test above reads through, and not the 600 MB bundle."""
    import re

    from spark_jobs.session import S3A_EXCLUDES, s3a_packages
    from helpers import ROOT
    text = (ROOT / "README.md").read_text()
    block = text[text.index("spark-submit --master yarn --jars tableformat-connector.jar"):]
    block = block[:block.index("```")]
    packages = re.search(r"--packages (\S+)", block).group(1).split(",")
    excludes = re.search(r"--exclude-packages '([^']+)'", block).group(1).split(",")
    assert packages == s3a_packages() and excludes == list(S3A_EXCLUDES)


@pytest.mark.parametrize("after_commits, delay", [(1, 0.0), (2, 0.7)])
def test_kill_9_of_a_sql_insert_leaves_each_statement_all_or_nothing(connector_jar, tmp_path, after_commits, delay):
    """kill -9 of spark-sql while it runs INSERT after INSERT (mid-task or mid-commit, wherever
    the kill lands): every statement's rows are all in the table or none are, check() is ok, and
    vacuum removes the killed statement's files, leaving the rows as they were."""
    import signal
    import time
    uri = tmp_path / "wh" / "t"
    t = tf.create_table(str(uri), tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double", nullable=True)],
                                            primary_key="k"), tf.PartitionSchema(hash=[tf.HashPartition("k", 2)]))
    n = 20
    lines = [f"INSERT INTO tf.t SELECT id + {i * 1_000_000}, id * 0.5 FROM range(200000);" for i in range(n)]
    script = tmp_path / "queries.sql"
    script.write_text("\n".join(lines) + "\n")
    cmd = [str(SPARK_HOME / "bin" / "spark-sql"), "--master", "local[2]", "--jars", connector_jar, "--conf", "spark.ui.enabled=false",
           "--conf", f"spark.sql.catalog.tf={CATALOG}", "--conf", f"spark.sql.catalog.tf.warehouse={tmp_path / 'wh'}",
           "-S", "-f", str(script)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "PYTHON", "VIRTUAL_ENV"))}
    env.update(SPARK_HOME=str(SPARK_HOME), PYSPARK_PYTHON="/nonexistent/python", SPARK_LOCAL_IP="127.0.0.1")
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.time() + 300
        while tf.open_table(str(uri)).version < after_commits and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(delay)
        assert proc.poll() is None, "spark-sql finished before its kill"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    t = tf.open_table(str(uri))
    assert 1 <= t.version < n and t.check().ok
    keys = t.scan(columns=["k"]).to_arrow()["k"].to_numpy()
    landed = sorted(set((keys // 1_000_000).tolist()))
    assert landed == list(range(t.version))                       # statements in order, none partial
    assert len(keys) == 200000 * len(landed)
    before = sorted(keys.tolist())
    t.vacuum(grace_seconds=0)
    t = tf.open_table(str(uri))
    assert t.check().ok and sorted(t.scan(columns=["k"]).to_arrow()["k"].to_pylist()) == before
    live = {f for r in t.snapshot().state.rowsets.values() for f in [*(b.path for b in r.base), r.pk_index.path, r.bloom.path]}
    on_disk = {os.path.relpath(os.path.join(d, f), uri) for d, _, fs in os.walk(uri / "tablets") for f in fs}
    assert on_disk == live                                         # the killed statement's files are gone
