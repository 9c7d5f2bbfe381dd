"""The Airflow DAGs in airflow/dags, on real Airflow: SQLite under a temporary AIRFLOW_HOME, `dag.test()`.

Airflow reads its configuration when first imported, so every Airflow step runs
in a subprocess with its own environment; this process only builds and checks
tables. The helper modules (airflow/dags/tableformat_config.py, _maintenance.py,
_export.py) are also tested directly where a scheduler adds nothing
(overlapping compactions, late commits).
"""
import datetime as dt
import importlib.metadata
import importlib.util
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from airflow_helpers import DAGS, HAS_SPARK, assert_succeeded, needs_airflow, run_airflow
from helpers import (
    ROOT,
    assert_same_rows,
    metrics_partitioning,
    metrics_rows,
    metrics_schema,
)

import tableformat as tf

sys.path.insert(0, str(DAGS))
import tableformat_config as config  # noqa: E402
import tableformat_export as export  # noqa: E402
import tableformat_maintenance as maintenance  # noqa: E402


# --- DAG folder ------------------------------------------------------------------------------------
@needs_airflow
def test_dag_folder_imports_without_errors(airflow_env):
    res = run_airflow(airflow_env, "-", [])
    assert res["errors"] == {}
    assert set(res["dags"]) == {"tableformat_compaction", "tableformat_change_export"}
    for d in res["dags"].values():
        assert d["max_active_runs"] == 1
        assert d["timetable"].endswith("DataIntervalTimetable")   # the export needs real intervals


# --- compaction ------------------------------------------------------------------------------------
KEYS = ["host", "metric", "time"]


def _fragmented_table(uri: str, batches: int = 5) -> tf.Table:
    """Overlapping rowsets from several inserts, plus REDO files from several updates and a delete."""
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    for i in range(batches):
        t.insert(metrics_rows(120, seed=i, start=i * 120))
    rows = metrics_rows(120 * batches)
    for j in range(3):
        upd = rows.slice(j * 40, 80).select(KEYS + ["value"])
        t.update(upd.set_column(3, "value", pa.array([float(j)] * upd.num_rows)))
    t.delete(rows.slice(300, 25).select(KEYS))
    return t


@pytest.fixture(scope="module")
def compaction_runs(airflow_env, tmp_path_factory):
    """Two runs of the compaction DAG (the second a rerun of the first) over an in-process and,
    when Spark is available, a Spark table; configured through the JSON Variable."""
    root = tmp_path_factory.mktemp("compaction")
    tables = {"metrics": _fragmented_table(str(root / "metrics"))}
    cfg = [{"uri": str(root / "metrics"), "budget_mb": 64, "schedule": "@daily"}]
    if HAS_SPARK:
        tables["metrics_spark"] = _fragmented_table(str(root / "metrics_spark"), batches=3)
        cfg.append({"uri": str(root / "metrics_spark"), "engine": "spark", "spark_master": "local[2]"})
    before = {n: {"rows": t.to_arrow(), "rowsets": len(t.state.rowsets), "plan": len(t.compaction_plan(64 << 20)),
                  "version": t.version} for n, t in tables.items()}
    conf = {"defaults": {"vacuum": {"retain_seconds": 0, "grace_seconds": 0}}, "tables": cfg}
    t0 = time.time()
    runs = run_airflow(airflow_env, "tableformat_compaction", ["2026-11-20T00:00:00+00:00"] * 2,
                       AIRFLOW_VAR_TABLEFORMAT_TABLES=json.dumps(conf))
    return {"tables": tables, "before": before, "runs": runs, "seconds": time.time() - t0}


@needs_airflow
def test_compaction_dag_compacts_vacuums_and_keeps_every_row(compaction_runs):
    first = compaction_runs["runs"][0]
    assert_succeeded(first)
    summary = first["xcom"]["summarize"]["-1"]
    assert sorted(summary["tables"]) == sorted(compaction_runs["tables"])
    for name, t in compaction_runs["tables"].items():
        before = compaction_runs["before"][name]
        rep = next(r for r in summary["per_table"] if r["table"] == name)
        assert before["plan"] > 0 and rep["plan"]["version"] == before["version"]
        assert len(rep["plan"]["actions"]) == before["plan"]
        assert rep["compaction"]["actions_committed"] >= 1
        assert rep["compaction"]["versions_committed"], rep
        assert rep["vacuum"]["files"] > 0 and rep["vacuum"]["bytes"] > 0
        assert len(t.state.rowsets) < before["rowsets"]
        assert_same_rows(t.to_arrow(), before["rows"])
        assert t.check().ok
    assert summary["actions_committed"] == sum(r["compaction"]["actions_committed"] for r in summary["per_table"])
    json.dumps(summary)     # XCom holds plain JSON


@needs_airflow
def test_compaction_dag_rerun_is_harmless(compaction_runs):
    second = compaction_runs["runs"][1]
    assert_succeeded(second)
    for rep in second["xcom"]["summarize"]["-1"]["per_table"]:
        assert rep["plan"]["actions"] == [], rep       # the first run left nothing worth doing
        assert rep["compaction"]["versions_committed"] == []
    for name, t in compaction_runs["tables"].items():
        assert len(t.compaction_plan(64 << 20)) == 0
        assert_same_rows(t.to_arrow(), compaction_runs["before"][name]["rows"])


@needs_airflow
@pytest.mark.skipif(not HAS_SPARK, reason="needs pyspark and Java")
def test_compaction_dag_spark_engine(compaction_runs):
    rep = next(r for r in compaction_runs["runs"][0]["xcom"]["summarize"]["-1"]["per_table"]
               if r["table"] == "metrics_spark")
    assert rep["compaction"]["engine"] == "spark" and rep["compaction"]["actions_committed"] >= 1


@needs_airflow
def test_compaction_dag_with_exactly_one_table(airflow_env, tmp_path):
    """The most likely first setup: one table. The summary over one mapped report is still a list."""
    t = _fragmented_table(str(tmp_path / "only"))
    expect = t.to_arrow()
    ice = str(tmp_path / "only_iceberg")
    conf = {"defaults": {"vacuum": {"retain_seconds": 0, "grace_seconds": 0}},
            "tables": [{"uri": t.uri, "mirror": {"iceberg": ice}}]}
    run, = run_airflow(airflow_env, "tableformat_compaction", ["2026-11-21T00:00:00+00:00"],
                       AIRFLOW_VAR_TABLEFORMAT_TABLES=json.dumps(conf))
    assert_succeeded(run)
    summary = run["xcom"]["summarize"]["-1"]
    assert summary["tables"] == ["only"] and [r["table"] for r in summary["per_table"]] == ["only"]
    assert summary["actions_committed"] >= 1 and summary["files_vacuumed"] > 0
    assert_same_rows(tf.open_table(t.uri).to_arrow(), expect)
    # the mirror task ran after the compaction, before the vacuum: one Iceberg snapshot of that version
    rep = summary["per_table"][0]
    assert rep["mirror"]["iceberg"]["table_version"] == rep["compaction"]["version_after"] == \
        rep["vacuum"]["version_before"]
    pytest.importorskip("pyiceberg")
    from pyiceberg.table import StaticTable
    assert_same_rows(StaticTable.from_metadata(ice).scan().to_arrow(), expect)


def test_the_mirror_task_refreshes_the_configured_mirrors(tmp_path):
    """run_mirror, as the DAG's mirror task calls it: a snapshot when the table moved, none on a rerun."""
    pytest.importorskip("pyiceberg")
    from pyiceberg.table import StaticTable
    t = _fragmented_table(str(tmp_path / "metrics"))
    ice = str(tmp_path / "metrics_iceberg")
    cfg = config.parse_config([{"uri": t.uri, "mirror": {"iceberg": ice}}])[0]
    first = maintenance.run_mirror(cfg)["iceberg"]
    assert first["snapshot_id"] is not None and first["table_version"] == t.version
    assert maintenance.run_mirror(cfg)["iceberg"]["snapshot_id"] is None
    assert_same_rows(StaticTable.from_metadata(ice).scan().to_arrow(), t.to_arrow())
    assert maintenance.run_mirror(config.parse_config([{"uri": t.uri}])[0]) == {"table": "metrics", "iceberg": None,
                                                                                 "delta": None}
    kept = config.parse_config([{"uri": t.uri, "mirror": {"iceberg": ice, "keep_snapshots": 1}}])[0]
    t.insert(metrics_rows(30, seed=9, start=9000))
    assert maintenance.run_mirror(kept)["iceberg"]["snapshot_id"] is not None
    assert len(StaticTable.from_metadata(ice).metadata.snapshots) == 1
    for bad in ({}, {"iceberg": ""}, {"iceberg": ice, "colour": 1}, {"iceberg": ice, "options": 3},
                {"iceberg": ice, "keep_snapshots": 0}, {"delta": ice, "keep_snapshots": 2}):
        with pytest.raises(config.ConfigError, match="mirror"):
            config.parse_config([{"uri": t.uri, "mirror": bad}])


def test_overlapping_compactions_of_one_table_do_no_harm(tmp_path):
    """What two overlapping DAG runs do to one table: both succeed, the rows are intact."""
    t = _fragmented_table(str(tmp_path / "metrics"))
    expect = t.to_arrow()
    cfg = config.parse_config([{"uri": t.uri}])[0]      # the grace period protects the other run's new files
    results, errors = [], []

    def work():
        try:
            results.append(maintenance.run_compaction(cfg))
            results.append(maintenance.run_vacuum(cfg))
        except BaseException as e:     # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    compactions = [r for r in results if "actions_planned" in r]
    assert sum(r["actions_committed"] for r in compactions) >= 1
    t = tf.open_table(t.uri)
    assert_same_rows(t.to_arrow(), expect)
    assert t.check().ok


def test_an_action_whose_inputs_are_gone_gives_up_as_success(tmp_path):
    t = _fragmented_table(str(tmp_path / "metrics"))
    plan = t.compaction_plan()
    tf.open_table(t.uri).compact(plan)                 # another run got there first
    res = maintenance._compact_inprocess(t, plan)
    assert [r["version"] for r in res] == [None] * len(plan.actions)
    cfg = config.parse_config([{"uri": t.uri}])[0]
    assert maintenance.run_compaction(cfg)["actions_planned"] == 0


# --- change export ---------------------------------------------------------------------------------
STEP = 6   # seconds per data interval in these tests (room for a slow CI machine)


def _boundary(after: float) -> float:
    return (int(after) // STEP + 1) * STEP


def _sleep_until(t: float) -> None:
    time.sleep(max(0.0, t - time.time()))


def _iso(sec: float) -> str:
    return dt.datetime.fromtimestamp(sec, dt.timezone.utc).isoformat()


def _exported(out: Path) -> tuple[pa.Table, list[int], dict]:
    """Every change listed by a manifest, the versions of every part file on disk, and the manifests."""
    parts, versions, manifests = [], [], {}
    for d in sorted(out.glob("interval=*")):
        m = json.loads((d / export.MANIFEST).read_text())
        manifests[d.name] = m
        parts += [pq.read_table(d / f["path"]) for f in m["files"]]
        versions += [int(p.name[5:-8]) for p in d.glob("part-*.parquet")]
    return (pa.concat_tables(parts) if parts else None), versions, manifests


def assert_same_changes(got: pa.Table, expect: pa.Table) -> None:
    assert_same_rows(got, expect, keys=["_version"] + KEYS)


@pytest.fixture(scope="module")
def export_runs(airflow_env, tmp_path_factory):
    """A table with commits in three STEP-second intervals, exported out of order: I2, I3, then the
    backfill of I1; then, in a second process, a rerun of I2 and a run of I0, before the export start."""
    root = tmp_path_factory.mktemp("export")
    t = tf.create_table(str(root / "metrics"), metrics_schema(), partitioning=metrics_partitioning())
    b0 = _boundary(time.time() + 0.3)
    _sleep_until(b0 + 0.1)                                          # I1 = [b0, b0 + STEP)
    t.insert(metrics_rows(200))
    t.update(metrics_rows(200).slice(0, 30).select(KEYS + ["tag"]).set_column(3, "tag", pa.array(["u"] * 30)))
    _sleep_until(b0 + STEP + 0.1)                                   # I2
    t.insert(metrics_rows(100, start=200))
    t.delete(metrics_rows(300).slice(10, 20).select(KEYS))
    t.compact()                                                    # versions without data changes
    _sleep_until(b0 + 2 * STEP + 0.1)                               # I3
    t.upsert(metrics_rows(50, seed=5, start=280))
    t.update(metrics_rows(300).slice(100, 10).select(KEYS).append_column("value", pa.array([42.0] * 10)))
    _sleep_until(b0 + 3 * STEP + 0.05)
    assert all(b0 <= h.timestamp / 1e6 < b0 + 3 * STEP for h in t.history()[1:]), "a commit missed its interval"
    out = root / "exports"
    conf = root / "tables.yaml"
    conf.write_text(yaml.safe_dump({"tables": [{"uri": t.uri, "export": {
        "output": str(out), "start": _iso(b0), "settle_seconds": 0}}]}))
    env = {"TABLEFORMAT_TABLES_FILE": str(conf), "TABLEFORMAT_EXPORT_SCHEDULE": f"{STEP}s"}
    end = [_iso(b0 + i * STEP) for i in range(4)]                   # a run at end[i] exports I(i)
    t0 = time.time()
    first = run_airflow(airflow_env, "tableformat_change_export", [end[2], end[3], end[1]], **env)
    after_first = {p.relative_to(out): p.read_bytes() for p in out.rglob("part-*.parquet")}
    mtimes = {p.relative_to(out): p.stat().st_mtime_ns for p in out.rglob("part-*.parquet")}
    second = run_airflow(airflow_env, "tableformat_change_export", [end[2], end[0]], **env)
    return {"table": t, "out": out / "metrics", "b0": b0, "first": first, "second": second,
            "after_first": after_first, "mtimes": mtimes, "root": out, "seconds": time.time() - t0}


def _summary(run: dict) -> dict:
    return run["xcom"]["export"]["0"]


@needs_airflow
def test_change_export_dag_exports_every_change_exactly_once(export_runs):
    t, out = export_runs["table"], export_runs["out"]
    for run in export_runs["first"] + export_runs["second"]:
        assert_succeeded(run)
    got, versions, manifests = _exported(out)
    expect = t.changes(0)
    assert_same_changes(got, expect)
    assert len(versions) == len(set(versions))                      # no version in two places
    data_versions = sorted(set(expect["_version"].to_pylist()))
    assert sorted(versions) == data_versions                        # no stray or missing file
    assert len(manifests) == 3
    for m in manifests.values():                                     # each change in its commit's interval
        for f in m["files"]:
            ts = pq.read_table(out / export.interval_dir(config.parse_time(m["start"])) / f["path"])["_timestamp"]
            assert all(config.parse_time(m["start"]) <= x < config.parse_time(m["end"]) for x in ts.to_pylist())
    wm = json.loads((out / export.WATERMARK).read_text())
    assert wm["version"] == t.version and wm["origin_version"] == 0
    assert config.parse_time(wm["through"]).timestamp() == export_runs["b0"] + 3 * STEP


@needs_airflow
def test_change_export_watermark_waits_for_the_backfill(export_runs):
    """I2 and I3 ran before I1: the watermark stays at the export start until I1 is exported."""
    i2, i3, i1 = (_summary(r) for r in export_runs["first"])
    b0 = export_runs["b0"]
    assert config.parse_time(i2["watermark"]["through"]).timestamp() == b0
    assert config.parse_time(i3["watermark"]["through"]).timestamp() == b0 and i3["watermark"]["version"] == 0
    assert config.parse_time(i1["watermark"]["through"]).timestamp() == b0 + 3 * STEP
    assert i1["watermark"]["version"] == export_runs["table"].version
    assert i1["files"] == 2 and i3["files"] == 2 and i2["files"] == 2    # I2's compaction has no file
    assert all(not s["late_versions"] for s in (i1, i2, i3))


@needs_airflow
def test_change_export_rerun_and_earlier_interval_change_nothing(export_runs):
    rerun, before_start = (_summary(r) for r in export_runs["second"])
    assert rerun["files"] == 2 and rerun["skipped"] is None
    assert before_start["skipped"] and before_start["files"] == 0
    now = {p.relative_to(export_runs["root"]): p.read_bytes() for p in export_runs["root"].rglob("part-*.parquet")}
    assert now == export_runs["after_first"]                        # same files, same bytes
    rewritten = [p for p, m in export_runs["mtimes"].items()
                 if (export_runs["root"] / p).stat().st_mtime_ns != m]
    rerun_dir = export.interval_dir(config.parse_time(rerun["interval"]["start"]))
    assert rewritten and all(str(p).startswith(f"metrics/{rerun_dir}") for p in rewritten)  # only its own


def test_export_picks_up_a_commit_that_lands_in_an_exported_interval(tmp_path):
    """A writer whose clock lags commits into an interval already exported: the next run
    re-exports that interval and reports the version as late (simulated by skipping the settle wait)."""
    t = tf.create_table(str(tmp_path / "metrics"), metrics_schema(), partitioning=metrics_partitioning())
    a = _boundary(time.time() + 0.2)
    _sleep_until(a + 0.05)
    t.insert(metrics_rows(20))
    cfg = config.parse_config([{"uri": t.uri, "export": {"output": str(tmp_path / "out"), "start": _iso(a)}}])[0]
    ia = (config.parse_time(_iso(a)), config.parse_time(_iso(a + STEP)))
    first = export.export_interval(cfg, *ia, sleep=lambda s: None)      # exported while still open
    late = t.update(metrics_rows(20).slice(0, 5).select(KEYS + ["value"]))
    assert late.timestamp / 1e6 < a + STEP, "too slow: the commit missed the open interval"
    _sleep_until(a + STEP + 0.05)
    t.insert(metrics_rows(10, start=20))
    nxt = export.export_interval(cfg, ia[1], config.parse_time(_iso(a + 2 * STEP)), sleep=lambda s: None)
    assert first["versions"] == [1, 1] and nxt["late_versions"] == [late.version]
    got, versions, _ = _exported(tmp_path / "out" / "metrics")
    assert sorted(versions) == [1, 2, 3]
    assert_same_changes(got, t.changes(0))
    assert nxt["watermark"]["version"] == 3


def test_export_refuses_overlapping_intervals_and_another_tables_output(tmp_path):
    t = tf.create_table(str(tmp_path / "metrics"), metrics_schema(), partitioning=metrics_partitioning())
    t.insert(metrics_rows(10))
    cfg = config.parse_config([{"uri": t.uri, "export": {"output": str(tmp_path / "out"), "settle_seconds": 0,
                                                      "start": "2026-01-01T00:00:00Z"}}])[0]
    h = dt.timedelta(hours=1)
    s = config.parse_time("2026-01-01T00:00:00Z")
    export.export_interval(cfg, s, s + h)
    with pytest.raises(export.ExportError, match="overlaps"):
        export.export_interval(cfg, s + h / 2, s + 2 * h)                # the schedule changed
    shutil.rmtree(tmp_path / "metrics")
    tf.create_table(str(tmp_path / "metrics"), metrics_schema(), partitioning=metrics_partitioning())
    with pytest.raises(export.ExportError, match="another table"):
        export.export_interval(cfg, s + h, s + 2 * h)


WAITER = r'''
import datetime as dt, logging, signal, sys, time
sys.path.insert(0, sys.argv[1])
import tableformat_config as config, tableformat_export as export
signal.signal(signal.SIGTERM, lambda *a: None)    # a host whose handler returns (as Airflow's task runner)
signal.signal(signal.SIGINT, lambda *a: None)
logging.basicConfig(level=logging.INFO, stream=sys.stdout, force=True)
cfg = config.parse_config([{"uri": sys.argv[2], "export": {"output": sys.argv[3], "settle_seconds": 0}}])[0]
now = dt.datetime.now(dt.timezone.utc)
try:
    export.export_interval(cfg, now - dt.timedelta(seconds=60), now + dt.timedelta(seconds=300))
except export.ExportWaitInterrupted as e:
    print("INTERRUPTED", e, flush=True)
    sys.exit(3)
print("FINISHED", flush=True)
'''


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_export_settle_wait_ends_promptly_on_a_signal(tmp_path, sig):
    """The wait for an interval to end ignored SIGTERM and SIGINT under Airflow (its handlers return):
    it now ends within a second or two, with a typed error and nothing exported."""
    import signal
    t = tf.create_table(str(tmp_path / "metrics"), metrics_schema(), partitioning=metrics_partitioning())
    script = tmp_path / "waiter.py"
    script.write_text(WAITER)
    p = subprocess.Popen([sys.executable, str(script), str(DAGS), t.uri, str(tmp_path / "out")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in p.stdout:                      # the wait has begun once it is explained
        lines.append(line)
        if "waiting" in line:
            break
    assert "settle_seconds" in lines[-1] and "max_wait_seconds" in lines[-1], lines
    time.sleep(0.5)
    sent = time.monotonic()
    p.send_signal(getattr(signal, sig))
    out = p.communicate(timeout=60)[0]
    assert time.monotonic() - sent < 5, "the wait ignored the signal"
    assert p.returncode == 3 and f"INTERRUPTED {sig} received" in out, out
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*.parquet"))


def test_export_wait_is_bounded_and_explained(tmp_path):
    t = tf.create_table(str(tmp_path / "metrics"), metrics_schema(), partitioning=metrics_partitioning())
    waits = []
    now = dt.datetime.now(dt.timezone.utc)
    cfg = config.parse_config([{"uri": t.uri, "export": {"output": str(tmp_path / "out")}}])[0]
    assert cfg.export.wait_bound == 660                             # settle_seconds 60 + 600
    t0 = time.monotonic()
    with pytest.raises(export.ExportNotDueError, match=r"max_wait_seconds \(660 s\).*can run after"):
        export.export_interval(cfg, now, now + dt.timedelta(hours=1), sleep=waits.append)    # the current hour
    assert time.monotonic() - t0 < 5 and waits == []
    export.export_interval(cfg, now - dt.timedelta(minutes=5), now + dt.timedelta(seconds=30), sleep=waits.append)
    assert len(waits) == 1 and 60 < waits[0] <= 90                 # the end plus settle_seconds, in bound
    short = config.parse_config([{"uri": t.uri, "export": {"output": str(tmp_path / "out"),
                                                           "max_wait_seconds": 70}}])[0]
    with pytest.raises(export.ExportNotDueError,
                       match=r"cannot be exported yet: .* beyond export\.max_wait_seconds \(70 s\)"):
        export.export_interval(short, now, now + dt.timedelta(seconds=30), sleep=waits.append)
    with pytest.raises(config.ConfigError, match="below settle_seconds"):
        config.parse_config([{"uri": t.uri, "export": {"output": "/o", "max_wait_seconds": 5}}])


# --- configuration ---------------------------------------------------------------------------------
def test_config_defaults_validation_and_secrets(tmp_path):
    cfgs = config.parse_config_text(yaml.safe_dump({
        "defaults": {"budget_mb": 32, "vacuum": {"grace_seconds": 60}},
        "tables": [{"uri": "s3://b/metrics", "storage_options": {"secret": "sekrit-do-not-print"},
                    "vacuum": {"retain_seconds": 10}},
                   {"uri": "/data/other", "name": "o", "engine": "spark", "budget_mb": 8}]}))
    a, b = cfgs
    assert (a.name, a.budget_mb, a.vacuum.grace_seconds, a.vacuum.retain_seconds) == ("metrics", 32, 60, 10)
    assert (b.name, b.engine, b.budget_bytes) == ("o", "spark", 8 << 20)
    assert "sekrit" not in repr(a)
    for bad, match in [([{"uri": "/x", "budget_md": 3}], "unknown key"), ([{"name": "x"}], "uri"),
                       ([{"uri": "/x", "engine": "flink"}], "engine"), ([{"uri": "/a/x"}, {"uri": "/b/x"}], "twice"),
                       ([{"uri": "/x", "export": {"start": "2026-01-01"}}], "export.output")]:
        with pytest.raises(config.ConfigError, match=match):
            config.parse_config(bad)
    variables = {config.CONFIG_FILE_VARIABLE: str(tmp_path / "t.yaml")}
    (tmp_path / "t.yaml").write_text("- uri: /data/m\n")
    assert [c.name for c in config.load_config(variables.get)] == ["m"]
    assert config.load_config({config.CONFIG_VARIABLE: '[{"uri": "/data/j"}]'}.get)[0].name == "j"


@pytest.mark.skipif(importlib.util.find_spec("croniter") is None, reason="croniter comes with Airflow")
def test_schedule_hints():
    s = config.parse_time("2026-01-01T23:00:00Z")
    assert config.is_due("@daily", s, s + dt.timedelta(hours=1))
    assert not config.is_due("@daily", s - dt.timedelta(hours=1), s)
    assert config.is_due(None, s, s + dt.timedelta(hours=1))
    with pytest.raises(config.ConfigError, match="cron"):
        config.parse_config([{"uri": "/x", "schedule": "every day"}])


@needs_airflow
def test_the_readme_tells_how_to_run_the_export_on_a_short_schedule(airflow_env):
    """airflow/README.md names every setting the export DAG reads from the environment, and its
    short-schedule example gives the DAG a fixed-step interval of that length (issue #34)."""
    import re
    readme = (ROOT / "airflow" / "README.md").read_text()
    dag_source = (DAGS / "tableformat_change_export.py").read_text()
    for name in re.findall(r'os\.environ\.get\("(TABLEFORMAT_EXPORT_\w+)"', dag_source):
        assert f"`{name}`" in readme, name
    step = re.search(r"export TABLEFORMAT_EXPORT_SCHEDULE=(\S+)", readme).group(1)
    r = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import tableformat_config "
                        "as c; t = c.timetable(sys.argv[2]); print(type(t).__name__, t.delta.total_seconds())",
                        str(DAGS), step], check=False, env=airflow_env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["DeltaDataIntervalTimetable", "60.0"]
