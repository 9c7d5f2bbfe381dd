"""Put-if-absent on S3 through s3a's conditional create (issue #45 item 4): two JVM committer
processes (tests/s3/committer_child.py, threads each) and the Python engine race on the loopback S3
server for the same versions: exactly one wins each. The JVM writes a log file with s3a's
`fs.option.create.conditional.overwrite` (a PUT with `If-None-Match: *`, specs/format.md §8.1),
which moto_server refuses with 412 when the object exists, as S3 does."""
import json
import os
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pytest

import tableformat as tf

from helpers import TESTS, server_requests

pytest.importorskip("pyspark")
CHILD = TESTS / "s3" / "committer_child.py"


def schema():
    return tf.Schema([tf.Column("key", "int64"), tf.Column("val", "double", nullable=True)], primary_key="key")


def parts():
    return tf.PartitionSchema(hash=[tf.HashPartition(["key"], 2)])


def start_children(tmp_path, n, cfg_of, hadoop, env=None):
    """n committer processes, each ready (its session up) before any is let go. Where the s3a jars
    were never resolved here, the first resolves them alone (two Ivy downloads into one cache at
    once fail) and the others start after it."""
    from spark_jobs.session import s3a_jars
    procs = []
    go = tmp_path / "go"
    env = {**os.environ, **(env or {})}
    for i in range(n):
        cfg = {**cfg_of(i), "hadoop": hadoop, "ready": str(tmp_path / f"ready{i}"), "go": str(go)}
        procs.append(subprocess.Popen([sys.executable, str(CHILD), json.dumps(cfg)], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, env=env))
        if i == 0 and env.get("TABLEFORMAT_S3A") == "1" and not s3a_jars():
            wait_ready(tmp_path, procs, 1)
    wait_ready(tmp_path, procs, n)
    return procs, go


def wait_ready(tmp_path, procs, n):
    deadline = time.time() + 600
    while not all((tmp_path / f"ready{i}").exists() for i in range(n)):
        assert time.time() < deadline and all(p.poll() is None for p in procs), [p.communicate()[1][-3000:] for p in procs]
        time.sleep(0.1)


def results_of(procs) -> list:
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        line = [ln for ln in stdout.splitlines() if ln.startswith("RESULTS ")]
        assert p.returncode == 0 and line, stderr[-4000:]
        out += json.loads(line[0][len("RESULTS "):])
    return out


def in_threads(fns) -> list:
    results = [None] * len(fns)

    def run(i):
        try:
            results[i] = fns[i]()
        except tf.TableFormatError as e:
            results[i] = type(e).__name__

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return results


def s3a_env():
    return {"TABLEFORMAT_S3A": "1", "PYTHONPATH": os.pathsep.join([str(TESTS.parent), os.environ.get("PYTHONPATH", "")])}


def test_jvm_and_python_creates_race_for_version_0_and_one_wins(s3_table_root, tmp_path):
    from spark_jobs.session import s3a_settings
    root, opts = s3_table_root
    bucket = root[len("s3://"):]
    proto = tf.create_table(f"{root}/proto", schema(), parts(), storage_options=opts)
    meta = {k: v for k, v in proto.snapshot(0).state.to_json().items()
            if k in ("format_version", "table_id", "name", "schema", "partitioning", "properties")}
    threads = 4

    def cfg_of(i):
        return {"kind": "create", "uri": f"s3a://{bucket}/c", "threads": threads,
                "metadata": json.dumps({"metadata": {**meta, "table_id": f"{i:x}" * 32}})}
    procs, go = start_children(tmp_path, 2, cfg_of, s3a_settings(bucket, opts), s3a_env())
    go.touch()
    py = in_threads([lambda: tf.create_table(f"{root}/c", schema(), parts(), storage_options=opts).table_id] * 2)
    jvm = results_of(procs)
    won = [r for r in jvm if r == 0] + [r for r in py if r not in ("TableExistsError",)]
    assert len(won) == 1, (jvm, py)
    assert sorted(r for r in jvm + py if r == "TableExistsError") == ["TableExistsError"] * (len(jvm) + len(py) - 1)
    t = tf.open_table(f"{root}/c", storage_options=opts)
    assert t.version == 0 and t.check().ok
    if jvm.count(0):
        child = jvm.index(0) // threads
        assert t.table_id == f"{child:x}" * 32
    else:
        assert t.table_id == next(r for r in py if r != "TableExistsError")


def refused_log_puts(log) -> int:
    """PUTs of a log file that the server refused with 412 Precondition Failed (If-None-Match: *)."""
    return sum(1 for method, path, status in server_requests(log) if method == "PUT" and "/m/_log/" in path and status == 412)


def test_jvm_and_python_commits_race_for_each_version_and_lose_nothing(logged_s3_root, tmp_path):
    """8 inserts of disjoint keys, all planned on version 0: 3 threads in each of two JVM processes
    and 2 Python threads. Each version 1..8 is won once; every row lands; check() is ok. The JVM
    probes no name before its PUT (s3a's create performance mode), so every lost JVM attempt is a
    conditional PUT the server refused: at least as many 412s as the JVM's retries."""
    from spark_jobs.session import s3a_settings
    from spark_jobs.writes import commit_fragments, insert_task
    root, opts, log = logged_s3_root
    bucket = root[len("s3://"):]
    uri = f"{root}/m"
    t = tf.create_table(uri, schema(), parts(), storage_options=opts, properties={"checkpoint_interval": 4})

    def fragment(i):
        keys = list(range(i * 100, i * 100 + 20))
        data = pa.table({"key": pa.array(keys, pa.int64()), "val": [k * 0.5 for k in keys]}).to_batches()
        (batch,) = insert_task(uri, opts, 0, t.table_id, "fail", None)(iter(data))
        return batch.to_pylist()[0]["fragment"]
    frags = [fragment(i) for i in range(8)]

    def cfg_of(c):
        return {"kind": "commit", "uri": f"s3a://{bucket}/m", "threads": 3, "fragments": frags[c * 3:c * 3 + 3]}
    procs, go = start_children(tmp_path, 2, cfg_of, s3a_settings(bucket, opts), s3a_env())
    go.touch()
    py = in_threads([lambda f=f: commit_fragments(uri, opts, [json.loads(f)], "INSERT",
                                                  {"inserted": 20, "ignored": 0}).version for f in frags[6:]])
    jvm = results_of(procs)
    assert sorted([v for v, _ in jvm] + py) == list(range(1, 9)), (jvm, py)
    retries, refused = sum(a - 1 for _, a in jvm), refused_log_puts(log)
    print(f"JVM retries {retries}, log PUTs refused with 412: {refused}")
    assert refused >= retries
    t = tf.open_table(uri, storage_options=opts)
    assert t.version == 8 and t.check().ok
    got = t.scan(columns=["key"]).to_arrow()["key"].to_pylist()
    assert sorted(got) == [k for i in range(8) for k in range(i * 100, i * 100 + 20)]
    assert [h.operation for h in t.history()] == ["CREATE TABLE"] + ["INSERT"] * 8
