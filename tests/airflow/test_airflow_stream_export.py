"""The change export DAG with `export.format: stream` (airflow/dags/tableformat_export.py export_stream,
spark_jobs/stream_export.py): an AvailableNow change stream into Parquet, on real Airflow (`dag.test()`
in a subprocess) and real local Spark. A run killed with SIGKILL mid-run (the Airflow process and its
Spark JVM) and re-run exports every change exactly once."""
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml
from airflow_helpers import DAGS, HAS_SPARK, assert_succeeded, needs_airflow, run_airflow
from helpers import assert_same_rows, in_columns, metrics_partitioning, metrics_rows, metrics_schema

import tableformat as tf

sys.path.insert(0, str(DAGS))
import tableformat_config as config  # noqa: E402
import tableformat_export as export  # noqa: E402

from spark_jobs.stream_export import committed_files  # noqa: E402

KEYS = ["host", "metric", "time"]


def _iso(sec: float) -> str:
    return dt.datetime.fromtimestamp(sec, dt.timezone.utc).isoformat()


def _commits(t: tf.Table, n: int, salt: int) -> None:
    """n commits with data changes: updates of the first 300 rows, upserts, deletes of rows 300..399."""
    keys = metrics_rows(400).select(KEYS)
    for i in range(n):
        j = i + salt
        if j % 3 == 0:
            t.update(keys.slice((37 * j) % 280, 20).append_column("value", pa.array([float(j)] * 20)))
        elif j % 3 == 1:
            t.upsert(metrics_rows(20, seed=j, start=400 + 20 * j))
        else:
            t.delete(keys.slice(300 + 3 * j, 3))


def _exported(out: Path) -> pa.Table:
    """Every change in the files the sink's log lists, read with pyarrow (no Spark)."""
    files = committed_files(str(out))
    return pa.concat_tables([pq.read_table(f.removeprefix("file://").removeprefix("file:")) for f in files])


def test_stream_config_is_checked_and_its_output_must_lie_outside_the_table(tmp_path):
    t = tf.create_table(str(tmp_path / "metrics"), metrics_schema(), partitioning=metrics_partitioning())
    c = config.parse_config([{"uri": t.uri, "export": {"output": str(tmp_path / "out"), "format": "stream",
                                                      "max_versions_per_trigger": 2}}])[0]
    assert (c.export.format, c.export.max_versions_per_trigger) == ("stream", 2)
    for bad in ({"format": "stream", "max_versions_per_trigger": 0}, {"max_versions_per_trigger": 3},
                {"format": "stream", "mode": "apply"}):
        with pytest.raises(config.ConfigError, match="max_versions_per_trigger|export.mode"):
            config.parse_config([{"uri": t.uri, "export": {"output": str(tmp_path / "out"), **bad}}])
    inside = config.parse_config([{"uri": t.uri, "export": {"output": t.uri, "format": "stream"}}])[0]
    now = dt.datetime.now(dt.timezone.utc)
    before = sorted(os.listdir(t.uri))
    with pytest.raises(tf.PathOverlapError, match="stream export's output"):
        export.export_interval(inside, now - dt.timedelta(hours=1), now)
    assert sorted(os.listdir(t.uri)) == before                     # nothing written: the check comes first


def _stream_config(tmp_path: Path, t: tf.Table, root: Path, start: float) -> tuple[dict, str]:
    """The DAG's configuration file for a stream export of `t` into `root`, one version per micro-batch,
    from `start`: the run's environment and logical date."""
    conf = tmp_path / "tables.yaml"
    conf.write_text(yaml.safe_dump({"tables": [{"uri": t.uri, "spark_master": "local[2]", "export": {
        "output": str(root), "format": "stream", "start": _iso(start), "max_versions_per_trigger": 1}}]}))
    env = {"TABLEFORMAT_TABLES_FILE": str(conf), "TABLEFORMAT_EXPORT_SCHEDULE": "1h"}
    return env, _iso((int(time.time()) // 3600) * 3600)


def _run_and_kill(env: dict, date: str, checkpoint: Path, after: int, **extra) -> tuple[int, float]:
    """Start one `dag.test()` run in its own process group and SIGKILL the group (Airflow's process
    and the Spark JVM it started) once `after` micro-batches are committed; (batches, seconds)."""
    home = Path(env["AIRFLOW_HOME"])
    p = subprocess.Popen([sys.executable, str(home / "run_dag.py"), "tableformat_change_export",
                          json.dumps([date]), str(DAGS)], env={**env, **extra}, cwd=home,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    t0 = time.monotonic()
    done = lambda: len([n for n in os.listdir(checkpoint / "commits") if n.isdigit()]) \
        if (checkpoint / "commits").is_dir() else 0
    try:
        while done() < after:
            assert p.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() - t0 < 600, "no micro-batch committed in 10 minutes"
            time.sleep(0.05)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    return done(), time.monotonic() - t0


@needs_airflow
@pytest.mark.skipif(not HAS_SPARK, reason="needs pyspark and Java")
def test_stream_export_killed_mid_run_and_rerun_exports_each_change_once(airflow_env, tmp_path):
    t = tf.create_table(str(tmp_path / "metrics"), metrics_schema(), partitioning=metrics_partitioning())
    start = time.time()
    time.sleep(0.01)
    t.insert(metrics_rows(400))
    _commits(t, 11, salt=0)
    t.compact()                                                   # no rows: adds no change
    total = t.version
    root = tmp_path / "exports"
    env, date = _stream_config(tmp_path, t, root, start)
    out, ckpt = root / "metrics" / "changes", root / "metrics" / "_checkpoint"
    killed_at, _ = _run_and_kill(airflow_env, date, ckpt, after=3, **env)
    assert 3 <= killed_at < total, "the kill did not land mid-run"
    partial = _exported(out)
    assert partial.num_rows < t.changes(0).num_rows
    _commits(t, 2, salt=20)                                       # committed while the export was down
    rerun = run_airflow(airflow_env, "tableformat_change_export", [date], **env)[0]
    assert_succeeded(rerun)
    summary = rerun["xcom"]["export"]["0"]
    assert summary["watermark"]["version"] == t.version
    got = _exported(out)
    expect = t.changes(0)
    assert got.num_rows == expect.num_rows                        # nothing lost, nothing twice
    assert_same_rows(got.select(expect.column_names), expect, keys=["_version"] + KEYS)
    one_version = pc.max(pa.table({"v": expect["_version"]}).group_by("v").aggregate([("v", "count")])["v_count"])
    assert summary["rows"] <= expect.num_rows - partial.num_rows + one_version.as_py()   # resumed, at most
    #                                                                 one batch replayed, not restarted
    again = run_airflow(airflow_env, "tableformat_change_export", [date], **env)[0]   # nothing new: no rows
    assert_succeeded(again)
    assert again["xcom"]["export"]["0"]["rows"] == 0 and _exported(out).num_rows == expect.num_rows



@needs_airflow
@pytest.mark.skipif(not HAS_SPARK, reason="needs pyspark and Java")
def test_stream_export_reads_on_across_alters_and_exports_each_change_once(airflow_env, tmp_path):
    """Issue #44: with max_versions_per_trigger, a run after ALTERs starts with the latest columns, and
    its first batches end before the later ALTERs: each is given in those columns, none refused."""
    t = tf.create_table(str(tmp_path / "metrics"), metrics_schema(), partitioning=metrics_partitioning())
    start = time.time()
    time.sleep(0.01)
    t.insert(metrics_rows(400))
    _commits(t, 2, salt=0)
    root = tmp_path / "exports"
    env, date = _stream_config(tmp_path, t, root, start)
    assert_succeeded(run_airflow(airflow_env, "tableformat_change_export", [date], **env)[0])
    keys = metrics_rows(400).select(KEYS)
    for i, (step, column, value) in enumerate([(lambda a: a.add_column("note", "string"), "note", "n"),
                                               (lambda a: a.rename_column("tag", "label"), "label", "l"),
                                               (lambda a: a.drop_column("price"), "value", 1.5)]):
        with t.alter() as a:
            step(a)
        t.update(keys.slice(20 * i, 20).append_column(column, pa.array([value] * 20)))
    rerun = run_airflow(airflow_env, "tableformat_change_export", [date], **env)[0]
    assert_succeeded(rerun)
    assert rerun["xcom"]["export"]["0"]["watermark"]["version"] == t.version
    expect = t.changes(0)
    expect = expect.select([n for n in expect.column_names if n != "_changed_columns"])
    files = committed_files(str(root / "metrics" / "changes"))
    got = pa.concat_tables([in_columns(pq.read_table(f.removeprefix("file://").removeprefix("file:")),
                                        expect.schema, {"tag": "label"}) for f in files])
    assert got.num_rows == expect.num_rows                        # nothing lost, nothing twice
    assert_same_rows(got, expect, keys=["_version"] + KEYS)
    assert set(got.column("_version").to_pylist()) == set(range(1, t.version + 1)) - {4, 6, 8}
