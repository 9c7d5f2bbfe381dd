"""Issue #45's concurrent writers across processes: a spark-sql INSERT (the JVM writer and
committer, no Python) and a Python engine writer process commit to one table at once. The engine
process starts committing once the INSERT's first file is on disk (the statement is planned and
writing). Disjoint keys: everything lands. One key in both: it lands once, and the loser gets the
typed DuplicateKeyError with nothing of it committed. check() is ok either way."""
import json
import subprocess
import sys

import pytest

import tableformat as tf

from helpers import spark_sql_command

pytest.importorskip("pyspark")

ROWS = 300_000
WRITER = """
import json, os, sys, time
import pyarrow as pa
import tableformat as tf
uri, keys = sys.argv[1], json.loads(sys.argv[2])
t = tf.open_table(uri)
deadline = time.time() + 600
while not any(f.endswith(".parquet") for _, _, fs in os.walk(os.path.join(uri, "tablets")) for f in fs):
    assert time.time() < deadline
    time.sleep(0.01)
out = []
for k in keys:                                # one commit each, while the INSERT writes and commits
    try:
        out.append(tf.open_table(uri).insert(pa.table({"k": pa.array([k], pa.int64()), "v": [0.5]})).version)
    except tf.DuplicateKeyError as e:
        out.append("DuplicateKeyError: " + str(e))
print("WRITER " + json.dumps(out))
"""


def race(connector_jar, tmp_path, writer_keys):
    uri = tmp_path / "wh" / "t"
    tf.create_table(str(uri), tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double", nullable=True)],
                                        primary_key="k"), tf.PartitionSchema(hash=[tf.HashPartition("k", 2)]))
    cmd, env = spark_sql_command(connector_jar, tmp_path, {"spark.sql.catalog.tf.warehouse": str(tmp_path / "wh")},
                                 [f"INSERT INTO tf.t SELECT id, id * 0.5 FROM range({ROWS});"],
                                 "--hiveconf", "hive.cli.errors.ignore=true")
    sql = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(uri), json.dumps(writer_keys)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = sql.communicate(timeout=600)
    wout, werr = writer.communicate(timeout=600)
    assert writer.returncode == 0, werr[-3000:]
    (line,) = [ln for ln in wout.splitlines() if ln.startswith("WRITER ")]
    t = tf.open_table(str(uri))
    assert t.check().ok
    return t, out + err, json.loads(line[len("WRITER "):])


def keys_of(t):
    return t.scan(columns=["k"]).to_arrow()["k"].to_pylist()


def test_disjoint_keys_from_spark_sql_and_an_engine_process_all_land(connector_jar, tmp_path):
    extra = [10_000_000 + i for i in range(15)]
    t, sql_out, wrote = race(connector_jar, tmp_path, extra)
    assert all(isinstance(v, int) for v in wrote), wrote
    assert sorted(keys_of(t)) == list(range(ROWS)) + extra
    ops = [h.operation for h in t.history()]
    assert ops.count("INSERT") == 16
    sql_version = next(v for v in range(1, t.version + 1) if v not in wrote)
    read_version = json.loads(t.storage.read(f"_log/{sql_version:020d}.json"))["read_version"]
    print(f"spark-sql planned on version {read_version}, committed as {sql_version}; engine commits {wrote}")


def test_one_key_in_both_lands_once_and_the_loser_is_told(connector_jar, tmp_path):
    dup = 77
    t, sql_out, wrote = race(connector_jar, tmp_path, [dup])
    keys = keys_of(t)
    assert keys.count(dup) == 1
    if isinstance(wrote[0], int):                 # the engine's insert won: the statement committed nothing
        assert "DuplicateKeyError" in sql_out or "already exist" in sql_out or "inserted concurrently" in sql_out, sql_out[-3000:]
        assert keys == [dup] and t.version == 1
        print("the engine won; spark-sql said:", [ln for ln in sql_out.splitlines() if "key(s)" in ln][:1])
    else:                                         # the statement won: the engine's insert committed nothing
        assert wrote[0].startswith("DuplicateKeyError"), wrote
        assert sorted(keys) == list(range(ROWS)) and t.version == 1
        print("spark-sql won; the engine said:", wrote[0])
