"""The JVM connector in sessions of their own (each test runs a Python process, since a JVM's
master and jars are fixed when it starts):

- on `local-cluster[2,1,1024]`, Spark's multi-JVM master: the jar ships to two executor JVMs,
  and an insert, a merge and a read through the connector agree with the engine;
- on S3 through s3a (hadoop-aws at pyspark's Hadoop version, from Maven Central) against the
  loopback S3 server: the same rows as the engine, no rowset falls back, and one HEAD request
  per base file a read opens;
- on HDFS (the MiniDFSCluster, tests/hdfs/): hdfs:// read natively on `local-cluster`.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from helpers import ROOT, TESTS

pytest.importorskip("pyspark")

JOB = textwrap.dedent('''
    import json, logging, sys
    sys.path.insert(0, {tests!r})
    import pyarrow as pa
    import tableformat as tf
    from helpers import assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema
    from spark_jobs.session import get_spark
    from spark_jobs.insert import partitioned_insert
    from spark_jobs.merge import mutation_merge
    from spark_jobs.read import read_table

    args = json.loads(sys.argv[1])
    opts = args.get("storage_options")
    spark = get_spark("connector-job", args["master"], packages=args.get("packages", []))
    spark.sparkContext.setLogLevel("ERROR")
    logging.basicConfig(level=logging.WARNING)
    uri = args["uri"]
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning(), storage_options=opts)
    data = metrics_rows(3000)
    partitioned_insert(spark, spark.createDataFrame(data.to_pandas()), uri, storage_options=opts)
    upd = data.select(["host", "metric", "time"]).slice(0, 300).append_column("value", pa.array([7.5] * 300))
    mutation_merge(spark, spark.createDataFrame(upd.to_pandas()), uri, op="update", storage_options=opts)
    dele = data.select(["host", "metric", "time"]).slice(1000, 40)
    mutation_merge(spark, spark.createDataFrame(dele.to_pandas()), uri, op="delete", storage_options=opts)
    t = tf.open_table(uri, storage_options=opts)
    df = read_table(spark, uri, storage_options=opts, path="native")
    text = df._jdf.queryExecution().executedPlan().toString()
    assert "BatchScan tableformat_jvm" in text and "BatchScan tableformat@" not in text, text
    expect = t.scan().to_arrow()
    got = df.toArrow()
    assert_same_rows(got.cast(expect.schema), expect)
    execs = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    jars = []                     # where the JVM found the S3 client and s3a classes
    loader = spark._jvm.java.lang.Thread.currentThread().getContextClassLoader()
    for cls in ("software.amazon.awssdk.services.s3.S3Client", "org.apache.hadoop.fs.s3a.S3AFileSystem"):
        try:
            jars.append(str(loader.loadClass(cls).getProtectionDomain().getCodeSource().getLocation().toString()))
        except Exception:
            pass
    total = read_table(spark, uri, storage_options=opts).selectExpr("sum(value)").first()[0]
    heads = None                  # s3a HEAD requests of a warm read (its REDO records cached)
    if uri.startswith("s3://"):
        jvm = spark._jvm
        fs = jvm.org.apache.hadoop.fs.Path("s3a" + uri[2:]).getFileSystem(spark._jsc.hadoopConfiguration())
        # the instance's own counters: getStorageStatistics() is the JVM-wide one of the first
        # S3AFileSystem initialised, which may be one the FileSystem cache discarded
        # the DataFrame first: its log reads (the JVM planner's, at load) are not the base files'
        warm = read_table(spark, uri, storage_options=opts).selectExpr("sum(value)")
        before = fs.getIOStatistics().counters().get("action_http_head_request")
        warm.collect()
        heads = fs.getIOStatistics().counters().get("action_http_head_request") - before
    print(json.dumps({{"rows": got.num_rows, "executors": execs, "jars": jars, "sum": total, "heads": heads,
                       "base_files": sum(len(r.base) for r in t.state.rowsets.values())}}))
    spark.stop()
''')


def run_job(tmp_path, args, env=None, timeout=1200):
    script = tmp_path / "job.py"
    script.write_text(JOB.format(tests=str(TESTS)))
    e = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    p = subprocess.run([sys.executable, str(script), json.dumps(args)], capture_output=True, text=True,
                       timeout=timeout, env=e, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-6000:]
    return p, json.loads(p.stdout.strip().splitlines()[-1])


def test_insert_merge_and_read_on_a_multi_jvm_cluster(tmp_path):
    p, out = run_job(tmp_path, {"master": "local-cluster[2,1,1024]", "uri": str(tmp_path / "m")})
    assert out["rows"] == 3000 - 40 and out["executors"] == 2


def test_s3_reads_through_s3a_without_fallback(tmp_path, s3_table_root):
    from spark_jobs.session import s3a_packages
    root, opts = s3_table_root
    p, out = run_job(tmp_path, {"master": "local[2]", "uri": root + "/m", "storage_options": opts,
                                "packages": s3a_packages()})
    assert out["rows"] == 3000 - 40
    assert "Python data source" not in p.stderr                  # no rowset fell back
    assert opts["secret"] not in p.stdout + p.stderr              # the credentials never show
    aws = [j for j in out["jars"] if "awssdk" in j or "hadoop-aws" in j]
    assert any("hadoop-aws-" in j for j in aws) and any("awssdk_s3-" in j for j in aws), out["jars"]
    assert not [j for j in aws if "awssdk_bundle" in j], aws   # the S3 client's modules, not the 600 MB bundle
    # each base file is opened from the status its size check fetched: one HEAD per file, not two
    assert out["heads"] == out["base_files"] > 0, out


def test_s3_reads_a_location_with_spaces_brackets_and_percent_signs(tmp_path, s3_table_root):
    """Issue #44 item 7 on s3a: a key prefix with a space, brackets, braces and a literal %20 is
    opened as written (never decoded, parsed as a java.net.URI or globbed) and gives the engine's rows."""
    from spark_jobs.session import s3a_packages
    root, opts = s3_table_root
    p, out = run_job(tmp_path, {"master": "local[2]", "uri": root + "/with space/br[ack]et{s} %20/m",
                                "storage_options": opts, "packages": s3a_packages()})
    assert out["rows"] == 3000 - 40 and out["heads"] == out["base_files"] > 0, out
    assert "Python data source" not in p.stderr                  # no rowset fell back


class _Builder:
    """SparkSession.builder's calls, recorded: the settings a session would start with, no JVM."""
    def __init__(self):
        self.conf = {}

    def appName(self, _):
        return self

    def master(self, _):
        return self

    def config(self, k, v):
        self.conf[k] = v
        return self

    def getOrCreate(self):
        return self


@pytest.mark.parametrize("hadoop", ["3.4.1", "9.9.9"])
def test_s3a_excludes_only_what_the_sdk_modules_replace(monkeypatch, hadoop):
    """With the AWS SDK's S3 modules, the 600 MB bundle hadoop-aws declares is excluded; where
    they are not asked for (a Hadoop whose SDK version is unknown, or hadoop-aws given alone),
    the bundle is the only AWS SDK on the classpath and stays. A user's excludes are kept."""
    from pyspark.sql import SparkSession

    from spark_jobs import session
    b = _Builder()
    monkeypatch.setattr(SparkSession, "builder", b)
    monkeypatch.setattr(session, "register", lambda spark: None)
    monkeypatch.setattr(session, "hadoop_version", lambda: hadoop)
    monkeypatch.setenv("TABLEFORMAT_CONNECTOR", "0")
    monkeypatch.delenv("TABLEFORMAT_S3A", raising=False)
    session.get_spark(packages=session.s3a_packages(), conf={"spark.jars.excludes": "a:b"})
    excludes = b.conf["spark.jars.excludes"].split(",")
    assert excludes[0] == "a:b"
    assert ("software.amazon.awssdk:bundle" in excludes) == (hadoop in session.AWS_SDK_FOR_HADOOP)
    b.conf.clear()
    session.get_spark(packages=["org.apache.hadoop:hadoop-aws:3.4.1"])
    assert "software.amazon.awssdk:bundle" not in b.conf.get("spark.jars.excludes", "")
    b.conf.clear()
    session.get_spark()
    assert "spark.jars.excludes" not in b.conf                     # no s3a, no excludes


def test_hdfs_reads_natively_on_a_multi_jvm_cluster(tmp_path, hdfs):
    """Two executor JVMs insert, merge and read an hdfs:// table: Hadoop's own HDFS client, no
    jvm_schemes, no rowset through the Python data source."""
    p, out = run_job(tmp_path, {"master": "local-cluster[2,1,1024]", "uri": hdfs.uri + "/jobs/m",
                                "storage_options": hdfs.storage_options})
    assert out["rows"] == 3000 - 40 and out["executors"] == 2
    assert "Python data source" not in p.stderr
