"""Issue #45 on HDFS (the MiniDFSCluster): pyspark's own `bin/spark-sql`, no Python reachable,
creates, fills and alters a table through the catalog over hdfs:// (the JVM writer's files and the
JVM committer's put-if-absent: a temporary file renamed with Rename.NONE), and the engine, through
WebHDFS, reads every version as `VERSION AS OF` does. One INSERT's NameNode calls are counted
from the NameNode's own metrics."""
import time

import tableformat as tf

from helpers import cli_rows, engine_rows, run_spark_sql, same, spark_sql, sql_user_history

CLIENT_RPCS = ("GetBlockLocations", "Create", "AddBlock", "Complete", "Rename", "Rename2", "Delete", "GetListing",
               "GetFileInfo", "Mkdirs", "RenewLease", "Fsync", "GetServerDefaults", "GetAdditionalDatanode",
               "UpdateBlockForPipeline", "UpdatePipeline", "Append", "AbandonBlock")


def rpcs(hdfs) -> dict:
    time.sleep(1.1)     # the metrics' period (tests/hdfs/hadoop-metrics2.properties)
    bean = hdfs.jmx(f"Hadoop:service=NameNode,name=RpcDetailedActivityForPort{hdfs.rpc_port}")
    return {m: bean.get(f"{m}NumOps", 0) for m in CLIENT_RPCS}


def test_spark_sql_creates_inserts_alters_and_travels_on_hdfs(connector_jar, hdfs, hdfs_table_root, tmp_path):
    root, opts = hdfs_table_root
    conf = {"spark.sql.catalog.tf.warehouse": f"{root}/wh", "spark.sql.session.timeZone": "UTC"}
    env = {"HADOOP_USER_NAME": hdfs.user}
    t = sql_user_history(connector_jar, tmp_path, conf, lambda: tf.open_table(f"{root}/wh/ns/t", storage_options=opts),
                         env=env)
    # the engine writes next, and spark-sql reads it: one table to both
    t.insert(__import__("pyarrow").table({"k": [2000], "v": [0.5], "s": ["py"], "n": [1]}))
    (rows,) = spark_sql(connector_jar, tmp_path, conf, ["SELECT k, v, s FROM tf.ns.t ORDER BY k"], env=env)
    same(cli_rows(rows), engine_rows(tf.open_table(t.uri, storage_options=opts)))

    # one INSERT's NameNode calls, in a spark-sql of its own (the catalog's table load included)
    before = rpcs(hdfs)
    proc = run_spark_sql(connector_jar, tmp_path, conf, ["INSERT INTO tf.ns.t SELECT id + 3000, id * 0.5, 'x', 1 "
                                                         "FROM range(3000);"], env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = rpcs(hdfs)
    calls = {m: after[m] - before[m] for m in CLIENT_RPCS if after[m] != before[m]}
    print("one INSERT's NameNode RPCs:", calls, "total", sum(calls.values()))
    t = tf.open_table(t.uri, storage_options=opts)
    assert t.scan().count() == 4002 and t.check().ok
    assert calls.get("Create", 0) == 3 * 3 + 1                      # base, PK index, bloom per tablet; the log's temporary file
    assert calls.get("Rename2", 0) == 1                              # the commit: one rename that never replaces
    assert "Delete" not in calls and sum(calls.values()) <= 50, calls  # no delete of the renamed temporary file (Complete may retry)
