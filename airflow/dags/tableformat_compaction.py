"""tableformat_compaction: compaction, mirrors, then vacuum, for every configured table.

Per table (a mapped task group): `plan` logs the policy's plan; `compact` runs
it in-process (Table.compact) or as the Spark job
(spark_jobs.compaction.compact_table); `mirror` refreshes the table's `mirror`
section (an Iceberg snapshot, a Delta commit; nothing without one); `vacuum` drops history beyond the
retention and deletes unreferenced files; `report` puts a JSON summary in
XCom. A scheduled run handles the tables whose `schedule` hint fires within
its data interval; a manual run handles all of them, or the `tables` param.

Reruns, retries and overlapping runs are safe: each action plans again and
commits on its own, and an action whose inputs changed meanwhile (another
compaction, an ALTER) gives up without effect, which counts as success.
Configuration: see tableformat_config.py.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
if _here not in sys.path:     # Airflow adds the DAG folder; a DAG bundle elsewhere may not
    sys.path.insert(0, _here)

from airflow.sdk import Param, dag, get_current_context, task, task_group  # noqa: E402
from tableformat_config import (  # noqa: E402
    ConfigError, is_due, load_config, retries, run_type, table_config, timetable)
from tableformat_maintenance import plan_compaction, run_compaction, run_mirror, run_vacuum  # noqa: E402

log = logging.getLogger("tableformat.airflow")
RETRIES = retries()


def _label(name: str) -> None:
    get_current_context()["table_name"] = name      # shown as the map index in the UI


def due_table_names(ctx) -> list[str]:
    """The configured tables this run maintains: the `tables` param's (all configured, or an
    error naming the unknown ones), and on a scheduled run only those whose `schedule` hint
    fires within the run's data interval."""
    cfgs = load_config()
    only = list(ctx["params"].get("tables") or [])
    missing = sorted(set(only) - {c.name for c in cfgs})
    if missing:
        raise ConfigError(f"tables {missing} are not configured; configured: {[c.name for c in cfgs]}")
    hinted = run_type(ctx) in ("scheduled", "backfill")
    names = []
    for c in cfgs:
        if only and c.name not in only:
            continue
        if hinted and not is_due(c.schedule, ctx.get("data_interval_start"), ctx.get("data_interval_end")):
            log.info("table %s: schedule %r does not fire in this interval; skipped", c.name, c.schedule)
            continue
        names.append(c.name)
    log.info("tables to maintain: %s", names)
    return names


def run_summary(reports) -> dict:
    """One run's totals over its tables' reports, logged."""
    # Airflow 3 hands a mapped group that expanded to one instance over as that one value, not a list
    # of one: a single table (the most common first setup) gave a dict here.
    reports = [reports] if isinstance(reports, dict) else list(reports or [])
    total = {
        "tables": [r["table"] for r in reports],
        "actions_committed": sum(r["compaction"]["actions_committed"] for r in reports),
        "actions_gave_up": sum(r["compaction"]["actions_gave_up"] for r in reports),
        "files_vacuumed": sum(r["vacuum"]["files"] for r in reports),
        "bytes_vacuumed": sum(r["vacuum"]["bytes"] for r in reports),
        "per_table": reports,
    }
    log.info("compaction run: %d table(s), %d action(s) committed, %d gave up, %d file(s) / %d byte(s) "
             "vacuumed", len(reports), total["actions_committed"], total["actions_gave_up"],
             total["files_vacuumed"], total["bytes_vacuumed"])
    return total


@dag(
    dag_id="tableformat_compaction",
    schedule=timetable(os.environ.get("TABLEFORMAT_COMPACTION_SCHEDULE", "@hourly")),
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    max_active_runs=1,
    tags=["tableformat"],
    doc_md=__doc__,
    params={"tables": Param([], type="array", description="only these table names (empty: every due table)")},
)
def tableformat_compaction():
    @task
    def due_tables() -> list[str]:
        return due_table_names(get_current_context())

    @task(map_index_template="{{ table_name }}")
    def plan(name: str) -> dict:
        _label(name)
        return plan_compaction(table_config(name))

    @task(map_index_template="{{ table_name }}", **RETRIES)
    def compact(name: str) -> dict:
        _label(name)
        return run_compaction(table_config(name))

    @task(map_index_template="{{ table_name }}", **RETRIES)
    def mirror(name: str) -> dict:
        _label(name)
        return run_mirror(table_config(name))

    @task(map_index_template="{{ table_name }}", **RETRIES)
    def vacuum(name: str) -> dict:
        _label(name)
        return run_vacuum(table_config(name))

    @task(map_index_template="{{ table_name }}")
    def report(planned: dict, compacted: dict, mirrored: dict, vacuumed: dict) -> dict:
        _label(planned["table"])
        summary = {"table": planned["table"], "plan": planned, "compaction": compacted, "mirror": mirrored,
                   "vacuum": vacuumed}
        log.info("summary: %s", json.dumps(summary))
        return summary

    @task_group(group_id="table")
    def maintain(name: str):
        planned = plan(name)
        compacted = compact(name)
        mirrored = mirror(name)
        vacuumed = vacuum(name)
        planned >> compacted >> mirrored >> vacuumed
        return report(planned, compacted, mirrored, vacuumed)

    @task(trigger_rule="none_failed")
    def summarize(reports) -> dict:
        return run_summary(reports)

    summarize(maintain.expand(name=due_tables()))


tableformat_compaction()
