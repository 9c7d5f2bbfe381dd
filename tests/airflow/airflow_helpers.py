"""Running the DAGs in airflow/dags on real Airflow, shared by the tests of tests/airflow: each
Airflow step in a subprocess with its own environment (Airflow reads its configuration when
first imported), `dag.test()` once per logical date; the runs' states and XComs come back as JSON."""
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

DAGS = ROOT / "airflow" / "dags"


def _installed(dist: str) -> bool:
    try:
        importlib.metadata.version(dist)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


# Not `import airflow`: it would configure itself from this process's environment (~/airflow).
needs_airflow = pytest.mark.skipif(not _installed("apache-airflow-core"),
                                   reason="Airflow is not installed (pip install -e '.[airflow]')")
HAS_SPARK = importlib.util.find_spec("pyspark") is not None and shutil.which("java") is not None

RUNNER = r'''
import datetime as dt, json, sys
from sqlalchemy import select
from airflow.dag_processing.dagbag import DagBag
from airflow.models.taskinstance import TaskInstance
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session

dag_id, dates, folder = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
bag = DagBag(dag_folder=folder)
if dag_id == "-":
    print("RESULT " + json.dumps({"errors": bag.import_errors, "dags": {
        d.dag_id: {"max_active_runs": d.max_active_runs, "timetable": type(d.timetable).__name__}
        for d in bag.dags.values()}}))
    sys.exit(0)
assert not bag.import_errors, bag.import_errors
dag = bag.dags[dag_id]
out = []
for d in dates:
    dr = dag.test(logical_date=dt.datetime.fromisoformat(d))
    with create_session() as s:
        xcom = {}
        for r in s.scalars(XComModel.get_many(run_id=dr.run_id, key="return_value", dag_ids=dag_id)):
            xcom.setdefault(r.task_id, {})[str(r.map_index)] = XComModel.deserialize_value(r)
        tis = s.scalars(select(TaskInstance).where(TaskInstance.dag_id == dag_id,
                                                   TaskInstance.run_id == dr.run_id))
        tasks = {f"{ti.task_id}[{ti.map_index}]": str(ti.state) for ti in tis}
    out.append({"logical_date": d, "state": str(dr.state), "tasks": tasks, "xcom": xcom})
print("RESULT " + json.dumps(out, default=str))
'''


def run_airflow(env: dict, dag_id: str, dates: list[str], **extra_env) -> list | dict:
    """Run `dag.test()` once per logical date in a fresh process; the runs' states and XComs."""
    home = Path(env["AIRFLOW_HOME"])
    r = subprocess.run([sys.executable, str(home / "run_dag.py"), dag_id, json.dumps(dates), str(DAGS)],
                       check=False, env={**env, **extra_env}, cwd=home, capture_output=True, text=True,
                       timeout=900)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, (r.stdout[-6000:] + "\n--- stderr ---\n" + r.stderr[-6000:])
    return json.loads(lines[-1][len("RESULT "):])


def assert_succeeded(run: dict) -> None:
    bad = {k: v for k, v in run["tasks"].items() if v not in ("success", "skipped")}
    assert run["state"] == "success" and not bad, (run["state"], bad)


def make_airflow_env(home: Path) -> dict:
    """A migrated SQLite metadata database in `home` (a temporary AIRFLOW_HOME), and the environment to use it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TABLEFORMAT_"))}
    env.update(AIRFLOW_HOME=str(home), AIRFLOW__CORE__LOAD_EXAMPLES="False",
               AIRFLOW__CORE__DAGS_FOLDER=str(DAGS), AIRFLOW__LOGGING__LOGGING_LEVEL="INFO",
               PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               TABLEFORMAT_DAG_RETRIES="0")      # a failure fails the test now, not after retry delays
    runner = home / "run_dag.py"
    runner.write_text(RUNNER)
    r = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=False, env=env, cwd=home,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return env


