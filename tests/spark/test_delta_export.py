"""Change exports into Delta Lake, exactly once (spark_jobs/export.py: delta_export).

The watermark is the latest txnVersion Delta records for the export's appId,
so these tests check the Delta table's rows against the engine: no change
twice, none missing, after a kill -9 and under a race.
"""
import json
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import helpers
from helpers import norm_table, small_rows, small_schema
import tableformat as tf
from spark_jobs.export import delta_export, delta_watermark
from spark_jobs.session import delta_available

pytestmark = pytest.mark.skipif(not delta_available(), reason="delta-spark is not installed")
ROOT = str(helpers.ROOT)
T0 = 1_700_000_000_000_000


def make_history(uri):
    """Versions 1..6: insert, update, delete, upsert (half new), compaction, insert."""
    t = tf.create_table(uri, small_schema())
    t.insert(small_rows(range(0, 200)))
    t.update(small_rows(range(0, 200, 7), salt=1).select(["k", "v"]))
    t.delete(small_rows(range(3, 200, 11)).select(["k"]))
    t.upsert(small_rows(list(range(150, 250, 2)), salt=2))
    t.compact()
    t.insert(small_rows(range(1000, 1010)))
    return t


def delta_rows(spark, path, version=None):
    r = spark.read.format("delta")
    if version is not None:
        r = r.option("versionAsOf", version)
    return r.load(path).toArrow()


CHANGE_COLS = ["_op", "_version", "k", "s", "v", "d", "ts"]
COLS = ["k", "s", "v", "d", "ts"]


def test_append_exports_every_change_once_and_reruns_write_nothing(spark, tmp_path):
    t = make_history(str(tmp_path / "t"))
    out = str(tmp_path / "delta_append")
    r1 = delta_export(spark, t.uri, out, "exp", "append", end=3)
    assert r1["commits"] == [1, 2, 3] and delta_watermark(out, "exp") == 3
    r2 = delta_export(spark, t.uri, out, "exp", "append")
    assert r2["commits"] == [4, 6] and delta_watermark(out, "exp") == 6   # 5 is a compaction: no rows
    assert delta_export(spark, t.uri, out, "exp", "append")["commits"] == []
    got = delta_rows(spark, out)
    assert norm_table(got, CHANGE_COLS).equals(norm_table(t.changes(0), CHANGE_COLS))
    assert set(got.column_names) >= {"_op", "_version", "_timestamp", "_changed_columns"}
    t.update(small_rows([1], salt=9).select(["k", "s"]))     # a later version arrives in the next run only
    assert delta_export(spark, t.uri, out, "exp", "append")["commits"] == [7]
    assert norm_table(delta_rows(spark, out), CHANGE_COLS).equals(norm_table(t.changes(0), CHANGE_COLS))


def test_apply_replica_equals_scan_at_every_exported_version(spark, tmp_path):
    t = make_history(str(tmp_path / "t"))
    out = str(tmp_path / "delta_apply")
    delta_versions = {}
    for v in range(1, t.version + 1):
        res = delta_export(spark, t.uri, out, "replica", "apply", end=v)
        assert delta_watermark(out, "replica") == v
        from delta.tables import DeltaTable
        delta_versions[v] = DeltaTable.forPath(spark, out).history(1).collect()[0]["version"]
        assert norm_table(delta_rows(spark, out), COLS).equals(norm_table(t.scan(as_of=v).to_arrow(), COLS)), (v, res)
    for v, dv in delta_versions.items():       # Delta's time travel agrees with ours, version by version
        assert norm_table(delta_rows(spark, out, dv), COLS).equals(norm_table(t.scan(as_of=v).to_arrow(), COLS))
    # a second replica bootstrapped at a later version, then caught up
    out2 = str(tmp_path / "delta_apply2")
    assert delta_export(spark, t.uri, out2, "replica", "apply", end=4)["commits"] == [4]
    assert delta_export(spark, t.uri, out2, "replica", "apply")["commits"] == [6]
    assert norm_table(delta_rows(spark, out2), COLS).equals(norm_table(t.scan().to_arrow(), COLS))


KILL_SCRIPT = """
import os, signal, sys
sys.path.insert(0, {root!r})
from spark_jobs.session import get_spark
from spark_jobs.export import delta_export
spark = get_spark("kill", "local[2]", delta=True)
def on_commit(v):
    print("committed", v, flush=True)
    if v == {kill_at}:
        os.kill(os.getpid(), signal.SIGKILL)    # kill -9 between two Delta commits of one run
delta_export(spark, {uri!r}, {out!r}, "exp", {mode!r}, on_commit=on_commit)
print("finished", flush=True)
"""


def exported_versions(spark, path):
    """Our version held by each Delta commit (its userMetadata), in Delta's commit order; the
    replica's schema changes (ALTERs, without userMetadata) hold none of ours."""
    from delta.tables import DeltaTable
    hist = DeltaTable.forPath(spark, path).history().select("version", "userMetadata").collect()
    return [(h["version"], json.loads(h["userMetadata"])["tableformat"]["version"])
            for h in sorted(hist, key=lambda h: h["version"]) if h["userMetadata"]]


def kill_export_at(t, out, mode, kill_at):
    """Run an export in a child process and kill -9 it right after its Delta commit of version `kill_at`."""
    script = KILL_SCRIPT.format(root=ROOT, uri=t.uri, out=out, kill_at=kill_at, mode=mode)
    env = {**os.environ, "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=900)
    assert p.returncode == -signal.SIGKILL, p.stdout + p.stderr[-3000:]
    assert f"committed {kill_at}" in p.stdout and "finished" not in p.stdout


def test_kill_9_mid_append_export_then_rerun_no_duplicate_no_gap(spark, tmp_path):
    t = make_history(str(tmp_path / "t"))
    out = str(tmp_path / "delta_append")
    kill_export_at(t, out, "append", 2)
    assert delta_watermark(out, "exp") == 2
    assert norm_table(delta_rows(spark, out), CHANGE_COLS).equals(norm_table(t.changes(0, 2), CHANGE_COLS))
    res = delta_export(spark, t.uri, out, "exp", "append")
    assert res["commits"] == [3, 4, 6] and delta_watermark(out, "exp") == t.version
    assert norm_table(delta_rows(spark, out), CHANGE_COLS).equals(norm_table(t.changes(0), CHANGE_COLS))
    assert [v for _, v in exported_versions(spark, out)] == [1, 2, 3, 4, 6]


def test_kill_9_mid_apply_export_then_rerun_replica_equals_scan(spark, tmp_path):
    """A MERGE applied twice would leave the same rows, so the Delta log itself must show each
    version committed once, in order, and each Delta version must equal scan() at ours."""
    t = make_history(str(tmp_path / "t"))
    out = str(tmp_path / "delta_apply")
    delta_export(spark, t.uri, out, "exp", "apply", end=1)       # the replica exists: the kill falls among merges
    kill_export_at(t, out, "apply", 3)
    assert delta_watermark(out, "exp") == 3
    assert norm_table(delta_rows(spark, out), COLS).equals(norm_table(t.scan(as_of=3).to_arrow(), COLS))
    res = delta_export(spark, t.uri, out, "exp", "apply")
    assert res["commits"] == [4, 6] and delta_watermark(out, "exp") == t.version   # 5 (a compaction) rides with 6
    assert norm_table(delta_rows(spark, out), COLS).equals(norm_table(t.scan().to_arrow(), COLS))
    commits = exported_versions(spark, out)
    assert [v for _, v in commits] == [1, 2, 3, 4, 6]
    for dv, v in commits:
        assert norm_table(delta_rows(spark, out, dv), COLS).equals(norm_table(t.scan(as_of=v).to_arrow(), COLS)), v


@pytest.mark.parametrize("mode", ["append", "apply"])
def test_two_exports_racing_write_each_version_once(spark, tmp_path, mode):
    t = make_history(str(tmp_path / "t"))
    out = str(tmp_path / f"race_{mode}")
    results, errors = [], []

    def run():
        try:
            results.append(delta_export(spark, t.uri, out, "exp", mode))
        except Exception as e:   # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert delta_watermark(out, "exp") == t.version
    if mode == "append":
        got = delta_rows(spark, out)
        assert norm_table(got, CHANGE_COLS).equals(norm_table(t.changes(0), CHANGE_COLS))
    else:
        assert norm_table(delta_rows(spark, out), COLS).equals(norm_table(t.scan().to_arrow(), COLS))


def test_bad_mode_and_missing_name_are_typed_errors(spark, tmp_path):
    t = make_history(str(tmp_path / "t"))
    with pytest.raises(tf.InvalidOptionError, match="mode must be one of"):
        delta_export(spark, t.uri, str(tmp_path / "o"), "exp", "overwrite")
    with pytest.raises(tf.InvalidOptionError, match="needs a name"):
        delta_export(spark, t.uri, str(tmp_path / "o"), "", "append")
    with pytest.raises(tf.VersionNotFoundError, match="after the table's latest"):
        delta_export(spark, t.uri, str(tmp_path / "o"), "exp", "append", end=99)
    assert not os.path.exists(tmp_path / "o")


# --- the export DAG's Delta sink (airflow/dags/tableformat_export.py), called as its task does ----------
def _dag_modules():
    return helpers.dag_helper_modules()       # never `import airflow` here: it configures logging


def test_the_dag_helpers_load_without_airflow_or_its_logging():
    """Loading the DAG helpers must not import Airflow, which sets the root logger to INFO with a
    handler on pytest's captured stdout: py4j's connections log into that closed stream at exit
    ("--- Logging error ---" after the run, issue #34)."""
    script = ("import logging, sys; sys.path.insert(0, sys.argv[1]); import helpers; "
              "root = logging.getLogger(); before = (root.level, list(root.handlers)); "
              "helpers.dag_helper_modules(); "
              "print('airflow' in sys.modules, (root.level, list(root.handlers)) == before)")
    p = subprocess.run([sys.executable, "-c", script, os.path.join(ROOT, "tests")], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PYTHONPATH": ROOT})
    if "Skipped" in p.stderr:
        pytest.skip("Airflow is not installed")
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split() == ["False", "True"]


def test_export_dag_delta_sink_config_and_intervals(spark, tmp_path):
    import datetime as dt
    config, export = _dag_modules()
    t = make_history(str(tmp_path / "t"))
    out = str(tmp_path / "exports")
    (cfg,) = config.parse_config({"tables": [{"uri": t.uri, "name": "metrics", "export": {
        "output": out, "format": "delta", "mode": "apply", "settle_seconds": 0}}]})
    ts = [h.timestamp for h in t.history()]
    mid = export.from_micros(ts[3] + 1)                     # an interval ending after version 3
    r1 = export.export_interval(cfg, mid - dt.timedelta(hours=1), mid, sleep=lambda s: None)
    assert r1["watermark"]["version"] == 3 and delta_watermark(out + "/metrics", "metrics") == 3
    assert norm_table(delta_rows(spark, out + "/metrics"), COLS).equals(norm_table(t.scan(as_of=3).to_arrow(), COLS))
    late = export.from_micros(ts[-1] + 1)
    export.export_interval(cfg, late - dt.timedelta(hours=1), late, sleep=lambda s: None)
    again = export.export_interval(cfg, mid - dt.timedelta(hours=1), mid, sleep=lambda s: None)  # a rerun
    assert again["files"] == 0 and delta_watermark(out + "/metrics", "metrics") == t.version
    assert norm_table(delta_rows(spark, out + "/metrics"), COLS).equals(norm_table(t.scan().to_arrow(), COLS))


def test_export_dag_delta_config_errors():
    config, _ = _dag_modules()
    for bad, msg in [({"format": "csv"}, "export.format"), ({"format": "delta", "mode": "merge"}, "export.mode"),
                     ({"mode": "apply"}, "only with format 'delta'"),
                     ({"format": "parquet", "delta_options": {}}, "delta_options")]:
        with pytest.raises(config.ConfigError, match=msg):
            config.parse_config({"tables": [{"uri": "/x/t", "export": {"output": "/o", **bad}}]})


E2E = '''
import sys
import pytest

@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession
    s = SparkSession.builder.master("local[1]").getOrCreate()
    yield s
    s.stop()

def test_a(spark):
    assert spark.range(3).count() == 3
    import helpers
    helpers.dag_helper_modules()
'''


def test_a_run_with_spark_and_the_dag_helpers_ends_without_a_logging_error(tmp_path):
    """The run the issue saw: a pytest session with a Spark session that loads the DAG helpers
    ends with no py4j "--- Logging error ---" (its connections log as they close at exit)."""
    (tmp_path / "test_e2e.py").write_text(E2E)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.path.join(ROOT, "tests")]),
           "AIRFLOW_HOME": str(tmp_path / "airflow"), "PYSPARK_PYTHON": sys.executable}
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_e2e.py")],
                       capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]
    assert "Logging error" not in p.stdout + p.stderr, p.stdout[-3000:] + p.stderr[-3000:]


# --- schema changes: the replica follows ours, the change log says how to go on ------------------------------
def make_schema_history(uri):
    """Versions 1..9 with every schema change between writes: add (with and without a default),
    rename, drop, and a drop + re-add under the same name with another type."""
    t = tf.create_table(uri, small_schema())
    t.insert(small_rows(range(0, 60)))                                                    # 1
    t.alter().add_column("x", "int32").commit()                                            # 2
    t.insert(small_rows(range(100, 110)).append_column("x", pa.array(np.arange(10, dtype=np.int32))))   # 3
    t.alter().add_column("flag", "int64", nullable=False, default=7).rename_column("s", "name").commit()  # 4
    t.update(small_rows(range(0, 60, 5), salt=3).select(["k", "v"]))                       # 5
    t.alter().drop_column("d").commit()                                                    # 6
    t.delete(small_rows(range(1, 60, 9)).select(["k"]))                                    # 7
    t.alter().drop_column("x").add_column("x", "string").commit()                          # 8
    t.upsert(pa.table({"k": np.arange(100, 120, dtype=np.int64), "name": pa.array([f"n{i}" for i in range(20)]),
                       "v": np.linspace(0, 1, 20), "ts": pa.array(np.arange(20) + T0, pa.timestamp("us", tz="UTC")),
                       "flag": np.arange(20, dtype=np.int64), "x": pa.array([f"x{i}" for i in range(20)])}))  # 9
    return t


def replica_equals_scan(spark, out, t, v, delta_version=None):
    got = delta_rows(spark, out, delta_version)
    cols = [c.name for c in t.snapshot(v).schema.columns]
    assert sorted(got.column_names) == sorted(cols), (v, got.column_names, cols)
    assert norm_table(got, cols).equals(norm_table(t.scan(as_of=v).to_arrow(), cols)), v


def test_apply_replica_follows_added_renamed_and_dropped_columns(spark, tmp_path):
    t = make_schema_history(str(tmp_path / "t"))
    out = str(tmp_path / "step")                     # one run per version: each schema change on its own
    for v in range(1, t.version + 1):
        delta_export(spark, t.uri, out, "replica", "apply", end=v)
        replica_equals_scan(spark, out, t, v)
    for dv, v in exported_versions(spark, out):     # Delta's time travel: each commit is a version of ours
        replica_equals_scan(spark, out, t, v, dv)
    out2 = str(tmp_path / "catchup")                 # seeded before the changes, then one run through all
    delta_export(spark, t.uri, out2, "replica", "apply", end=1)
    assert delta_export(spark, t.uri, out2, "replica", "apply")["commits"] == [3, 5, 7, 9]
    replica_equals_scan(spark, out2, t, t.version)


def test_append_change_log_follows_added_and_renamed_columns(spark, tmp_path):
    t = make_schema_history(str(tmp_path / "t"))
    out = str(tmp_path / "log")
    assert delta_export(spark, t.uri, out, "exp", "append", end=7)["commits"] == [1, 3, 5, 7]
    got = delta_rows(spark, out)
    assert {"x", "flag", "name", "s", "d"} <= set(got.column_names)    # a change log keeps every column it had
    for v in (1, 3, 5, 7):
        ch = t.changes(v - 1, v)
        mine = got.filter(pc.equal(got.column("_version"), v))
        cols = ["_op", "_version"] + [c.name for c in t.snapshot(v).schema.columns]
        assert norm_table(mine, cols).equals(norm_table(ch, cols)), v


def test_append_refuses_a_column_readded_with_another_type_and_says_how_to_go_on(spark, tmp_path):
    t = make_schema_history(str(tmp_path / "t"))
    out = str(tmp_path / "log")
    delta_export(spark, t.uri, out, "exp", "append", end=7)
    for _ in range(2):                               # every rerun: the same typed error, nothing written
        with pytest.raises(tf.ExportSchemaError, match=r"column 'x'.*version 8.*start=8") as e:
            delta_export(spark, t.uri, out, "exp", "append")
        assert "int32" in str(e.value) and "string" in str(e.value)
        assert delta_watermark(out, "exp") == 7
    # the way forward the error names: the changes from then on, into a Delta table of their own
    out2 = str(tmp_path / "log2")
    assert delta_export(spark, t.uri, out2, "exp", "append", start=8)["commits"] == [9]
    got = delta_rows(spark, out2)
    assert got.schema.field("x").type == pa.string() and got.num_rows == t.changes(8, 9).num_rows


def test_apply_resumes_a_schema_change_a_dead_run_left_half_done(spark, tmp_path):
    """The ALTERs that carry a schema change are Delta commits of their own, before the version's
    MERGE: a run that died between them leaves the replica half changed, and the rerun finishes
    the change by column ID instead of renaming or adding twice."""
    t = make_schema_history(str(tmp_path / "t"))
    out = str(tmp_path / "replica")
    delta_export(spark, t.uri, out, "replica", "apply", end=3)
    sid = t.snapshot(3).schema.column("s").id
    spark.sql(f"ALTER TABLE delta.`{out}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
              "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')")
    spark.sql(f"ALTER TABLE delta.`{out}` RENAME COLUMN s TO __tableformat_{sid}")   # the first of two renames
    assert delta_watermark(out, "replica") == 3
    assert delta_export(spark, t.uri, out, "replica", "apply", end=5)["commits"] == [5]
    replica_equals_scan(spark, out, t, 5)
