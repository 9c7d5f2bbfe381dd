"""tableformat_change_export: each data interval's committed changes, as Parquet, exactly once.

For the interval [start, end) and each table with an `export` section, the
commits whose timestamps fall in it (Table.history) are written, one file per
version with `Table.changes(v - 1, v)`, to
`<output>/<name>/interval=<start>/part-<version>.parquet`, then the interval's
`_manifest.json`, then the watermark moves over every complete interval.
Paths depend only on the commit, so retries, reruns and backfills (in any
order) overwrite the same files and never duplicate a change. The reading
contract is in tableformat_export.py. With `export.format: stream` (or `delta`)
a run exports every commit not yet exported instead (tableformat_export.py).

Schedule: $TABLEFORMAT_EXPORT_SCHEDULE (cron or preset, default @hourly; or a
fixed step such as 10m), from $TABLEFORMAT_EXPORT_START_DATE with catchup, so
no interval is skipped while the scheduler is down.
"""
from __future__ import annotations

import logging
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
if _here not in sys.path:     # Airflow adds the DAG folder; a DAG bundle elsewhere may not
    sys.path.insert(0, _here)

from airflow.sdk import dag, get_current_context, task  # noqa: E402
from tableformat_config import load_config, parse_time, retries, table_config, timetable  # noqa: E402
from tableformat_export import ExportError, export_interval  # noqa: E402

log = logging.getLogger("tableformat.airflow")


@dag(
    dag_id="tableformat_change_export",
    schedule=timetable(os.environ.get("TABLEFORMAT_EXPORT_SCHEDULE", "@hourly")),
    start_date=parse_time(os.environ.get("TABLEFORMAT_EXPORT_START_DATE", "2026-11-01T00:00:00Z")),
    catchup=os.environ.get("TABLEFORMAT_EXPORT_CATCHUP", "true").lower() != "false",
    max_active_runs=1,
    tags=["tableformat"],
    doc_md=__doc__,
)
def tableformat_change_export():
    @task
    def export_tables() -> list[str]:
        names = [c.name for c in load_config() if c.export is not None]
        log.info("tables to export: %s", names)
        return names

    @task(map_index_template="{{ table_name }}", **retries())
    def export(name: str) -> dict:
        ctx = get_current_context()
        ctx["table_name"] = name
        start, end = ctx.get("data_interval_start"), ctx.get("data_interval_end")
        if start is None or end is None:
            raise ExportError("this run has no data interval: trigger it with a logical date")
        return export_interval(table_config(name), start, end)

    @task(trigger_rule="none_failed")
    def summarize(results) -> dict:
        results = list(results or [])
        total = {"tables": [r["table"] for r in results], "files": sum(r["files"] for r in results),
                 "rows": sum(r["rows"] for r in results),
                 "late_versions": {r["table"]: r["late_versions"] for r in results if r["late_versions"]},
                 "per_table": results}
        log.info("change export: %d table(s), %d file(s), %d change(s)", len(results), total["files"],
                 total["rows"])
        return total

    summarize(export.expand(name=export_tables()))


tableformat_change_export()
