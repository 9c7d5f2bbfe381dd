"""`python -m spark_jobs.minihdfs` (issue #44): a user without a cluster starts the MiniDFSCluster the
tests use with one command, which prints the settings to export; a table round-trips through the
cluster with exactly those settings, and SIGINT (Ctrl-C) stops it cleanly, JVM included."""
import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pytest

import tableformat as tf

pytest.importorskip("pyspark")          # the Hadoop version it runs is pyspark's


def exports(proc) -> dict[str, str]:
    """The `export K=V` lines the command prints before its Spark hint, read as they come."""
    out, lines = {}, []
    while True:
        line = proc.stdout.readline()
        assert line, "the command ended before printing its settings: " + "".join(lines) + proc.stderr.read()
        lines.append(line)
        if line.startswith("export "):
            k, v = line[len("export "):].strip().split("=", 1)
            out[k] = v
        if "spark.hadoop.fs.defaultFS=hdfs://" in line:
            return out


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def java_children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=,ppid=,comm=", "-e"], capture_output=True, text=True).stdout
    return [int(p) for p, pp, comm in (ln.split(None, 2) for ln in out.splitlines()) if int(pp) == pid and "java" in comm]


def test_the_command_starts_a_cluster_a_table_round_trips_and_ctrl_c_stops_it(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "spark_jobs.minihdfs", "--dir", str(tmp_path / "dfs"),
                             "--datanodes", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        env = exports(proc)
        assert set(env) == {"HDFS_NAMENODE", "HDFS_NAMENODE_HTTP", "HADOOP_USER_NAME"}, env
        jvms = java_children(proc.pid)
        assert len(jvms) == 1
        opts = {"namenode_http_address": env["HDFS_NAMENODE_HTTP"], "user": env["HADOOP_USER_NAME"]}
        uri = f"hdfs://{env['HDFS_NAMENODE']}/warehouse/t"
        schema = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "string")], primary_key=["k"])
        t = tf.create_table(uri, schema, storage_options=opts)
        rows = pa.table({"k": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]})
        t.insert(rows)
        got = tf.open_table(uri, storage_options=opts).scan().to_arrow().sort_by("k")
        assert got.equals(rows.cast(got.schema))
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-3000:]
    assert out.strip().endswith("# stopped")
    deadline = time.time() + 30
    while not all(gone(p) for p in jvms) and time.time() < deadline:
        time.sleep(0.5)
    assert all(gone(p) for p in jvms)


def test_bad_arguments_are_refused_before_anything_starts(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "spark_jobs.minihdfs", "--datanodes", "0"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--datanodes must be 1 or more, got 0" in proc.stderr


def test_ctrl_c_while_it_starts_stops_it_and_its_own_temporary_directory_goes(tmp_path):
    """SIGINT before the cluster is up stops the command and its JVM at once (it never reports
    itself up); without --dir the data directory it made is removed, after a start-up cut short
    and after a cluster that ran."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    cmd = [sys.executable, "-m", "spark_jobs.minihdfs", "--datanodes", "1"]
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 300
    while not java_children(proc.pid) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    jvms = java_children(proc.pid)
    assert jvms and list(tmp.glob("minihdfs-*")), proc.stderr.read() if proc.poll() is not None else "no JVM"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "is up" not in out and "stopped before it was up" in err, out + err[-2000:]
    assert all(gone(p) for p in jvms) and not list(tmp.glob("minihdfs-*"))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        exports(proc)
        assert list(tmp.glob("minihdfs-*"))
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and not list(tmp.glob("minihdfs-*")), err[-2000:]
