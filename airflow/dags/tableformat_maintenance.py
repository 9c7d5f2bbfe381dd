"""Compaction, mirrors and vacuum of one configured table, as the compaction DAG runs them.

Every call opens the table and plans afresh, so retries, reruns and
overlapping runs are safe: an action whose inputs changed meanwhile gives up
without effect (specs/format.md §12, Concurrency). Results are plain JSON, for
XCom.
"""
from __future__ import annotations

import logging
from dataclasses import replace

import tableformat as tf
from tableformat_config import TableConfig

log = logging.getLogger("tableformat.airflow")


def plan_compaction(cfg: TableConfig) -> dict:
    """The policy's plan now, printable and JSON-serialisable."""
    t = cfg.open()
    plan = t.compaction_plan(cfg.budget_bytes)
    log.info("table %s, engine %s:\n%s", cfg.name, cfg.engine, plan)
    return {"table": cfg.name, "version": plan.version, "actions": [_action_json(a) for a in plan.actions],
            "bytes_read": sum(a.bytes_read for a in plan.actions)}


def _action_json(a) -> dict:
    return {"kind": a.kind, "tablet": a.tablet, "rowsets": len(a.rowsets), "score": round(a.score, 4),
            "bytes_read": a.bytes_read, "reason": a.reason}


def run_compaction(cfg: TableConfig) -> dict:
    """Plan again (a retry or a concurrent run may have done part of it) and run the plan.

    An action that gives up is a success: the next run re-plans.
    """
    t = cfg.open()
    before = t.version
    plan = t.compaction_plan(cfg.budget_bytes)
    if not plan.actions:
        log.info("table %s: nothing to compact at version %d", cfg.name, before)
        results: list[dict] = []
    elif cfg.engine == "spark":
        results = _compact_spark(cfg, plan)
    else:
        results = _compact_inprocess(t, plan)
    for r in results:
        if r["version"] is None:
            log.info("table %s: %s of tablet %s gave up: its inputs changed concurrently (another "
                     "compaction, or an ALTER); the next run re-plans", cfg.name, r["kind"], r["tablet"])
        else:
            log.info("table %s: %s of tablet %s committed version %d", cfg.name, r["kind"], r["tablet"],
                     r["version"])
    committed = sorted(r["version"] for r in results if r["version"] is not None)
    return {"table": cfg.name, "engine": cfg.engine, "plan_version": plan.version,
            "actions_planned": len(plan.actions), "actions_committed": len(committed),
            "actions_gave_up": len(results) - len(committed), "versions_committed": committed,
            "bytes_written": sum(r["bytes_written"] for r in results),
            "version_before": before, "version_after": t.version}


def _compact_inprocess(t: tf.Table, plan: tf.CompactionPlan) -> list[dict]:
    out = []
    for a in plan.actions:    # one action at a time, to pair each with what it committed
        res = t.compact(replace(plan, actions=(a,)))
        out.append({"kind": a.kind, "tablet": a.tablet, "version": res[0].version if res else None,
                    "bytes_written": res[0].bytes_written if res else 0})
    return out


def _compact_spark(cfg: TableConfig, plan: tf.CompactionPlan) -> list[dict]:
    from spark_jobs.session import get_spark
    from spark_jobs.compaction import compact_table
    spark = get_spark(f"tableformat-compaction-{cfg.name}", cfg.spark_master)
    try:
        res = compact_table(spark, cfg.uri, cfg.budget_bytes, cfg.storage_options, plan=plan)
    finally:
        spark.stop()    # a worker slot must not keep a JVM
    return [{"kind": r["kind"], "tablet": r["tablet"], "version": r["version"], "bytes_written": r["bytes_written"]}
            for r in res["results"]]


def run_vacuum(cfg: TableConfig) -> dict:
    """Drop history beyond the retention and delete the files no retained snapshot needs."""
    vc = cfg.vacuum
    if not vc.enabled:
        log.info("table %s: vacuum disabled", cfg.name)
        return {"table": cfg.name, "enabled": False, "files": 0, "bytes": 0}
    t = cfg.open()
    before = t.version
    res = t.vacuum(retain_seconds=vc.retain_seconds, dry_run=vc.dry_run, grace_seconds=vc.grace_seconds)
    log.info("table %s: %s", cfg.name, res)
    for p in res.files[:20]:
        log.info("  %s", p)
    if len(res.files) > 20:
        log.info("  ... and %d more", len(res.files) - 20)
    return {"table": cfg.name, "enabled": True, "dry_run": vc.dry_run, "files": len(res.files),
            "bytes": res.bytes, "retained_from_version": res.retained_from_version,
            "version_before": before, "version_after": t.version}


def run_mirror(cfg: TableConfig) -> dict:
    """Refresh the table's zero-copy mirrors (one Iceberg snapshot, one Delta commit) to its latest
    version, before the vacuum, so the vacuum keeps what they reference (specs/format.md §15, §16).
    A rerun with nothing new writes nothing."""
    mc = cfg.mirror
    out: dict = {"table": cfg.name, "iceberg": None, "delta": None}
    if mc is None:
        return out
    t = cfg.open()
    if mc.iceberg:
        r = t.mirror_iceberg(mc.iceberg, mc.options, compact=mc.compact, keep_snapshots=mc.keep_snapshots)
        log.info("table %s: %s", cfg.name, r)
        out["iceberg"] = {"snapshot_id": r.snapshot_id, "metadata_version": r.metadata_version,
                          "table_version": r.table_version, "files": r.files, "compacted": sorted(r.compacted)}
    if mc.delta:
        r = t.mirror_delta(mc.delta, mc.options, compact=mc.compact)
        log.info("table %s: %s", cfg.name, r)
        out["delta"] = {"delta_version": r.delta_version, "table_version": r.table_version, "files": r.files,
                        "compacted": sorted(r.compacted)}
    return out
