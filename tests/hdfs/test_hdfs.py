"""The engine against a real HDFS: Hadoop's MiniDFSCluster (a NameNode, two DataNodes) in its own JVM,
reached as hdfs:// URIs over WebHDFS (tableformat/storage.py)."""
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

import tableformat as tf

from helpers import ROOT, TESTS, assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema, run

KEY = ["host", "metric", "time"]


def test_table_life_cycle_on_hdfs(hdfs_table_root):
    root, opts = hdfs_table_root
    t = tf.create_table(f"{root}/metrics", metrics_schema(), partitioning=metrics_partitioning(),
                        storage_options=opts)
    data = metrics_rows(1500)
    t.insert(data)
    t.update(data.select(KEY).slice(0, 10).append_column("value", pa.array([9.0] * 10)))
    t.delete(data.select(KEY).slice(10, 5))
    again = tf.open_table(f"{root}/metrics", storage_options=opts)
    assert again.storage.is_hdfs and again.storage.protocol == "hdfs"
    assert again.scan().count() == 1495
    assert again.scan(filter=[("value", "=", 9.0)]).count() == 10
    assert_same_rows(again.scan(as_of=1).to_arrow(), data)          # time travel
    assert len(again.changes(1)) == 15
    with pytest.raises(tf.DuplicateKeyError, match=r"1 key\(s\) already exist in table 'metrics'"):
        again.insert(data.slice(100, 1))


def test_alter_compaction_vacuum_and_check_on_hdfs(hdfs_table_root):
    root, opts = hdfs_table_root
    t = tf.create_table(f"{root}/m", metrics_schema(), partitioning=metrics_partitioning(), storage_options=opts)
    data = metrics_rows(900)
    for i in range(3):
        t.insert(data.take(pa.array(list(range(i, 900, 3)))))
    t.update(data.select(KEY).slice(0, 20).append_column("value", pa.array([3.0] * 20)))
    with t.alter() as a:
        a.add_column("note", "string", nullable=True, default="n/a")
    expect = t.scan().to_arrow()
    assert t.compact()
    assert_same_rows(t.scan().to_arrow(), expect)
    assert t.scan(as_of=3).count() == 900
    stray = t.storage.path("tablets/r0-h0/stray.parquet")
    t.storage.fs.pipe_file(stray, b"orphan")
    assert t.vacuum(grace_seconds=0).files == ["tablets/r0-h0/stray.parquet"]
    assert t.check().ok
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert_same_rows(tf.open_table(f"{root}/m", storage_options=opts).scan().to_arrow(), expect)


def test_a_lost_commit_leaves_no_file(hdfs_table_root):
    """The loser's temporary file is removed; the winner's commit is whole (§8.1)."""
    root, opts = hdfs_table_root
    t = tf.create_table(f"{root}/t", tf.Schema([tf.Column("k", "int64")], primary_key="k"), storage_options=opts)
    st = t.state
    assert t.log.try_commit(st, "A", [], {}, 0) is not None
    assert t.log.try_commit(st, "B", [], {}, 0) is None
    assert sorted(t.storage.list("_log")) == ["00000000000000000000.json", "00000000000000000001.json"]
    assert [h.operation for h in tf.open_table(f"{root}/t", storage_options=opts).history()][-1] == "A"
    with pytest.raises(tf.TableExistsError, match="a table already exists at"):
        tf.create_table(f"{root}/t", tf.Schema([tf.Column("k", "int64")], primary_key="k"), storage_options=opts)


ROUNDS = 3


def _race(uri, opts, wid, barrier, out):
    for rnd in range(ROUNDS):
        st = tf.open_table(uri, storage_options=opts).state
        barrier.wait()                  # all eight hold the same version, then go at once
        won = tf.open_table(uri, storage_options=opts).log.try_commit(st, f"W{wid}", [], {}, st.version)
        out.put((rnd, st.version + 1, wid, won is not None))
        barrier.wait()                  # the round is over before anyone reads the next state


def test_eight_writers_race_for_one_version(hdfs_table_root):
    """Eight processes try to create the same version at the same moment, three times: the NameNode
    lets exactly one rename win each time, and the version holds that writer's commit, whole."""
    root, opts = hdfs_table_root
    uri = f"{root}/race"
    t = tf.create_table(uri, tf.Schema([tf.Column("k", "int64")], primary_key="k"), storage_options=opts)
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(8), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(uri, opts, w, barrier, out)) for w in range(8)]
    for p in procs:
        p.start()
    results = [out.get(timeout=180) for _ in range(8 * ROUNDS)]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    fresh = tf.open_table(uri, storage_options=opts)
    assert fresh.version == ROUNDS
    ops = {h.version: h.operation for h in fresh.history()}
    for rnd in range(ROUNDS):
        this = [r for r in results if r[0] == rnd]
        assert {v for _, v, _, _ in this} == {rnd + 1}, this          # all raced for the same version
        winners = [w for _, _, w, won in this if won]
        assert len(winners) == 1, this
        assert ops[rnd + 1] == f"W{winners[0]}"
    assert [n for n in fresh.storage.list("_log") if n.startswith(".tmp-")] == []
    assert t.check().ok


@pytest.mark.parametrize("options,error", [
    ({"namenode_http_address": "127.0.0.1:1", "color": "red"}, r"unknown storage_options \['color'\]"),
])
def test_bad_hdfs_options_are_typed_errors(hdfs, options, error):
    with pytest.raises(tf.InvalidURIError, match=error):
        tf.open_table(f"{hdfs.uri}/nothing", storage_options=options)
    with pytest.raises(tf.InvalidURIError, match="names its NameNode"):
        tf.open_table("hdfs:///no/host")


def test_missing_table_on_hdfs(hdfs):
    with pytest.raises(tf.TableNotFoundError, match=r"no table at 'hdfs://127.0.0.1:\d+/missing'"):
        tf.open_table(f"{hdfs.uri}/missing", storage_options=hdfs.storage_options)


# A writer process stops at a step of its write (storage's fault points) and is killed there with
# SIGKILL, as tests/log/test_crash.py does on local disk: a rowset written and the next begun, a temporary commit file
# written but not renamed, or the commit renamed but the writer gone.
KILLS = [("insert", "write", 4), ("insert", "commit-link", 1), ("insert", "after-commit", 1),
         ("compact", "write", 4), ("compact", "commit-link", 1)]


@pytest.mark.parametrize("op,step,nth", KILLS)
def test_kill_9_during_a_write_on_hdfs(hdfs_table_root, op, step, nth):
    root, opts = hdfs_table_root
    uri = f"{root}/k"
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning(), storage_options=opts,
                        properties={"rowset_target_bytes": 1 << 16})
    data = metrics_rows(1200)
    for i in range(3):      # overlapping rowsets, so compaction has work
        t.insert(data.take(pa.array(list(range(i, 1200, 3)))))
    before_version, before = t.version, t.scan().to_arrow()
    every = {v: t.scan(as_of=v).to_arrow() for v in range(t.version + 1)}
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(TESTS)!r})
        import tableformat as tf
        from helpers import metrics_rows
        t = tf.open_table({uri!r}, storage_options={opts!r})
        seen = []
        def stop(step, rel):
            if step == {step!r}:
                seen.append(rel)
                if len(seen) == {nth}:
                    print("at", step, rel, flush=True)
                    time.sleep(600)
        t.storage.fault_hook = stop
        t.insert(metrics_rows(3000, start=5000)) if {op!r} == "insert" else t.compact()
        print("done", flush=True)
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=str(ROOT))
    line = p.stdout.readline()
    assert line.startswith(f"at {step} "), line
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    fresh = tf.open_table(uri, storage_options=opts)
    if step == "after-commit":
        assert fresh.version == before_version + 1 and fresh.scan().count() == before.num_rows + 3000
    else:
        assert fresh.version == before_version
        assert_same_rows(fresh.scan().to_arrow(), before)
    assert fresh.check().ok, fresh.check()
    for v, want in every.items():                               # time travel to every version
        assert_same_rows(fresh.scan(as_of=v).to_arrow(), want)
    left = fresh.vacuum(grace_seconds=0).files
    if step != "after-commit":
        assert left and all(f.startswith("tablets/") or f.startswith("_log/.tmp-") for f in left), left
    if step == "commit-link":
        assert any(f.startswith("_log/.tmp-") for f in left)    # the unrenamed commit was collected
    assert fresh.vacuum(grace_seconds=0, dry_run=True).files == []
    assert fresh.check().ok
    fresh.insert(metrics_rows(5, start=20000))                  # the table still takes writes
    assert tf.open_table(uri, storage_options=opts).version == fresh.version


def test_the_checkpoint_hint_moves_on_hdfs(hdfs_table_root):
    """_last_checkpoint is written again at each checkpoint (a plain overwrite, as a PUT on S3)."""
    root, opts = hdfs_table_root
    t = tf.create_table(f"{root}/c", tf.Schema([tf.Column("k", "int64")], primary_key="k"), storage_options=opts,
                        properties={"checkpoint_interval": 2})
    for i in range(5):
        t.insert(pa.table({"k": [i]}))
    checkpoints = sorted(n for n in t.storage.list("_log") if n.endswith(".checkpoint.json"))
    assert len(checkpoints) >= 2
    assert json.loads(t.storage.read("_log/_last_checkpoint"))["version"] == int(checkpoints[-1].split(".")[0])


def test_the_command_line_on_hdfs(hdfs_table_root):
    """The `tableformat` command, as a real process, on an hdfs:// table with --storage-option."""
    root, opts = hdfs_table_root
    uri = f"{root}/cli"
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning(), storage_options=opts)
    t.insert(metrics_rows(300))
    t.delete(metrics_rows(300).select(KEY).slice(0, 5))
    flags = [f"--storage-option=namenode_http_address={opts['namenode_http_address']}",
             f"--storage-option=user={opts['user']}"]
    assert run(*flags, "scan", uri, "--count").stdout.strip() == "295"
    assert run(*flags, "scan", uri, "--as-of", "1", "--count").stdout.strip() == "300"
    assert "0 violation(s)" in run(*flags, "check", uri).stdout
    run(*flags, "vacuum", uri, "--grace-seconds", "0")
    assert tf.open_table(uri, storage_options=opts).scan().count() == 295


def test_the_cluster_ends_with_the_process_that_started_it(tmp_path):
    """A test run that dies (its pipe to the launcher closes) leaves no NameNode running."""
    pytest.importorskip("pyspark")
    from spark_jobs.minihdfs import MiniHdfs
    cluster = MiniHdfs(tmp_path / "own", datanodes=1)
    try:
        cluster.proc.stdin.close()
        assert cluster.proc.wait(60) == 0
    finally:
        cluster.stop()
