"""Compaction job: the policy's plan, run with tablets in parallel on the executors.

The driver computes the plan with the engine's own policy (Kudu's cost-based policy under a
byte budget, less the rewrites that do not pay: specs/format.md §12), so the job rewrites
exactly what `Table.compact()` would; the result carries the plan's `explain()`.
Actions are grouped by tablet and each group runs in one Spark task, which
rewrites the files and commits each action on its own (put-if-absent plus
rebase), so actions of different tablets commit concurrently and a failure
loses only the action in progress.

    python -m spark_jobs.compaction --table /data/metrics [--budget-mb 256] [--plan-only]
"""
from __future__ import annotations

import argparse
import json
from typing import Any

import tableformat as tf

from .connect import run_payloads
from .session import get_spark


def _run_group(uri: str, storage_options: dict | None, actions: list[dict]) -> list[dict]:
    t = tf.open_table(uri, storage_options=storage_options)
    out = []
    for a in actions:
        act = tf.CompactionAction(a["kind"], a["tablet"], tuple(a["rowsets"]), a["score"], a["reason"],
                               a["bytes_read"], tuple(a["columns"]))
        r = t.compact_action(act)
        out.append({"kind": act.kind, "tablet": act.tablet, "version": r.version if r else None,
                    "rowsets_added": r.rowsets_added if r else 0, "bytes_written": r.bytes_written if r else 0})
    return out


def compact_table(spark: Any, uri: str, budget_bytes: int = 256 * 1024 * 1024,
                  storage_options: dict | None = None, plan: tf.CompactionPlan | None = None) -> dict:
    """Run the compaction plan; returns the plan's text and what each action committed."""
    table = tf.open_table(uri, storage_options=storage_options)
    plan = plan if plan is not None else table.compaction_plan(budget_bytes)   # an empty plan is falsy
    groups: dict[str, list[dict]] = {}
    for a in plan.actions:
        groups.setdefault(a.tablet, []).append({"kind": a.kind, "tablet": a.tablet, "rowsets": list(a.rowsets),
                                                "score": a.score, "reason": a.reason, "bytes_read": a.bytes_read,
                                                "columns": list(a.columns)})
    results: list[dict] = []
    if groups:
        payload = [json.dumps(g) for g in groups.values()]
        done = run_payloads(spark, payload, lambda g: [json.dumps(r) for r in
                                                       _run_group(uri, storage_options, json.loads(g))])
        results = [json.loads(r) for r in done]
    return {"plan": str(plan), "explain": plan.explain(), "actions": len(plan.actions),
            "committed": sum(1 for r in results if r["version"] is not None),
            "bytes_written": sum(r["bytes_written"] for r in results), "results": results}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m spark_jobs.compaction", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", required=True)
    ap.add_argument("--budget-mb", type=int, default=256)
    ap.add_argument("--plan-only", action="store_true", help="print the plan and stop")
    ap.add_argument("--storage-options")
    ap.add_argument("--master")
    args = ap.parse_args(argv)
    opts = json.loads(args.storage_options) if args.storage_options else None
    if args.budget_mb <= 0:
        ap.error("--budget-mb must be positive")
    if args.plan_only:
        print(tf.open_table(args.table, storage_options=opts).compaction_plan(args.budget_mb * 2**20).explain())
        return
    spark = get_spark("tableformat-compaction", args.master)
    res = compact_table(spark, args.table, args.budget_mb * 2**20, opts)
    print(res["explain"])
    print(f"committed {res['committed']} of {res['actions']} action(s)")


if __name__ == "__main__":
    main()
