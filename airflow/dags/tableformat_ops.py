"""What the tableformat DAGs do, as plain functions: configuration, compaction, vacuum and change export.

No Airflow import at module level, so the DAG files stay thin and this logic
runs (and is tested) without a scheduler. Airflow puts the DAG folder on
sys.path, which is how the DAG files import this module.

Configuration: the Airflow Variable `tableformat_tables` (JSON), or a YAML/JSON
file named by the Variable `tableformat_tables_file` or the environment
variable `TABLEFORMAT_TABLES_FILE`. Either a list of tables or
`{"defaults": {...}, "tables": [...]}`; see `TableConfig` for the keys.

Change export layout (one directory per table under the configured output):

    <output>/<name>/_watermark.json
    <output>/<name>/interval=<start, UTC, 20260101T000000Z>/_manifest.json
    <output>/<name>/interval=<start>/part-<version, 20 digits>.parquet

Reading contract:
- A commit belongs to the data interval [start, end) holding its timestamp,
  so each change is in exactly one file, `part-<v>.parquet` of that interval,
  holding `Table.changes(v - 1, v)`. Files are rewritten only with the same
  content: retries, reruns and backfills of any interval, in any order,
  never duplicate a change. Versions without data changes (compactions,
  vacuum, ALTER) have no file.
- An interval is complete once its `_manifest.json` exists; read the files it
  lists and ignore others (a run in flight may be writing them).
- `_watermark.json` holds `through` (a time) and `version` W: every interval
  before `through` is complete, so the files of versions <= W hold every
  change after `origin_version` up to W, each once. Changes at or before
  `origin_version` (the table before the export's `start`) are not exported:
  bootstrap from a snapshot `as_of=origin_version`. A consumer remembers the
  W it processed and next reads the part files with W_old < version <= W.
- A commit whose writer's clock lagged by more than `settle_seconds` can land
  in an interval already exported; the next run re-exports that interval (the
  same files plus the late one), reports it under `late_versions`, and a
  version-based consumer (above) still reads it exactly once.
- Exporting an interval reads history as of its commits: keep the table's
  `history_max_age` and the vacuum `retain_seconds` longer than the oldest
  interval you may backfill.
"""
from __future__ import annotations

import bisect
import datetime as _dt
import json
import logging
import os
import posixpath
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

import tableformat as tf
from tableformat.compaction import CompactionPlan
from tableformat.storage import Storage

log = logging.getLogger("tableformat.airflow")

CONFIG_VARIABLE = "tableformat_tables"
CONFIG_FILE_VARIABLE = "tableformat_tables_file"
CONFIG_FILE_ENV = "TABLEFORMAT_TABLES_FILE"
ENGINES = ("inprocess", "spark")
WATERMARK = "_watermark.json"
MANIFEST = "_manifest.json"
MIB = 1 << 20
UTC = _dt.timezone.utc
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=UTC)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SECRET_WORDS = ("key", "secret", "token", "password", "credential")


class ConfigError(ValueError):
    """The table list is malformed; the message names the table and the key."""


class ExportError(RuntimeError):
    """An export would break exactly-once (another table's output, or intervals that overlap)."""


# --- configuration ----------------------------------------------------------------------------
@dataclass(frozen=True)
class VacuumConfig:
    enabled: bool = True
    retain_seconds: float | None = None     # None: the table's history_max_age
    grace_seconds: float = 3600             # must exceed the longest write or compaction in flight
    dry_run: bool = False


@dataclass(frozen=True)
class ExportConfig:
    output: str
    output_options: dict | None = field(default=None, repr=False)
    start: _dt.datetime | None = None       # the export origin; None: the first interval exported
    settle_seconds: float = 60              # allowance for writers' clock skew before an interval is read


@dataclass(frozen=True)
class TableConfig:
    """One table. Keys: name, uri, storage_options, budget_mb, schedule, engine,
    spark_master, vacuum {enabled, retain_seconds, grace_seconds, dry_run},
    export {output, output_options, start, settle_seconds}."""

    name: str
    uri: str
    storage_options: dict | None = field(default=None, repr=False)
    budget_mb: int = 256
    schedule: str | None = None             # cron or preset: when the compaction DAG handles it
    engine: str = "inprocess"
    spark_master: str | None = None
    vacuum: VacuumConfig = VacuumConfig()
    export: ExportConfig | None = None

    @property
    def budget_bytes(self) -> int:
        return self.budget_mb * MIB

    def open(self) -> tf.Table:
        return tf.open_table(self.uri, storage_options=self.storage_options)


def _check_keys(where: str, d: Any, allowed: set[str]) -> dict:
    if not isinstance(d, dict):
        raise ConfigError(f"{where} must be a mapping, got {type(d).__name__}")
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
    return d


def _number(where: str, v: Any, minimum: float = 0) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < minimum:
        raise ConfigError(f"{where} must be a number >= {minimum}, got {v!r}")
    return v


def parse_time(v: Any) -> _dt.datetime:
    """An aware UTC datetime from a datetime or an ISO string (naive means UTC)."""
    if isinstance(v, str):
        v = _dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    if not isinstance(v, _dt.datetime):
        raise ConfigError(f"expected an ISO date-time, got {v!r}")
    v = (v.replace(tzinfo=UTC) if v.tzinfo is None else v).astimezone(UTC)
    # a plain datetime, also from Airflow's pendulum ones, whose arithmetic differs
    return _dt.datetime(v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond, tzinfo=UTC)


def _table_config(raw: Any, defaults: dict, i: int) -> TableConfig:
    where = f"table #{i + 1}"
    raw = _check_keys(where, raw, {f for f in TableConfig.__dataclass_fields__})
    d = {**defaults, **raw}
    for sub in ("vacuum", "export"):
        if isinstance(defaults.get(sub), dict) and isinstance(raw.get(sub), dict):
            d[sub] = {**defaults[sub], **raw[sub]}
    if not isinstance(d.get("uri"), str) or not d["uri"]:
        raise ConfigError(f"{where}: 'uri' is required")
    name = d.get("name") or posixpath.basename(d["uri"].rstrip("/"))
    where = f"table {name!r}"
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"{where}: name must match {_NAME.pattern} (it names output directories)")
    if d.get("storage_options") is not None and not isinstance(d["storage_options"], dict):
        raise ConfigError(f"{where}: storage_options must be a mapping")
    budget = d.get("budget_mb", 256)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise ConfigError(f"{where}: budget_mb must be a positive integer, got {budget!r}")
    engine = d.get("engine", "inprocess")
    if engine not in ENGINES:
        raise ConfigError(f"{where}: engine must be one of {ENGINES}, got {engine!r}")
    schedule = d.get("schedule")
    if schedule is not None:
        _validate_cron(where, schedule)
    v = _check_keys(f"{where}: vacuum", d.get("vacuum") or {}, set(VacuumConfig.__dataclass_fields__))
    vac = VacuumConfig(
        enabled=bool(v.get("enabled", True)),
        retain_seconds=None if v.get("retain_seconds") is None
        else _number(f"{where}: vacuum.retain_seconds", v["retain_seconds"]),
        grace_seconds=_number(f"{where}: vacuum.grace_seconds", v.get("grace_seconds", 3600)),
        dry_run=bool(v.get("dry_run", False)))
    export = None
    if d.get("export") is not None:
        e = _check_keys(f"{where}: export", d["export"], set(ExportConfig.__dataclass_fields__))
        if not isinstance(e.get("output"), str) or not e["output"]:
            raise ConfigError(f"{where}: export.output is required")
        if e.get("output_options") is not None and not isinstance(e["output_options"], dict):
            raise ConfigError(f"{where}: export.output_options must be a mapping")
        try:
            start = None if e.get("start") is None else parse_time(e["start"])
        except (ValueError, ConfigError):
            raise ConfigError(f"{where}: export.start must be an ISO date-time, got {e['start']!r}") from None
        export = ExportConfig(e["output"], e.get("output_options"), start,
                              _number(f"{where}: export.settle_seconds", e.get("settle_seconds", 60)))
    return TableConfig(name, d["uri"], d.get("storage_options"), budget, schedule, engine,
                       d.get("spark_master"), vac, export)


def _validate_cron(where: str, expr: Any) -> None:
    from croniter import croniter
    if not isinstance(expr, str) or not croniter.is_valid(expr):
        raise ConfigError(f"{where}: schedule must be a cron expression or preset like '@daily', got {expr!r}")


def parse_config(data: Any) -> list[TableConfig]:
    """Tables from parsed JSON/YAML: a list, or {"defaults": {...}, "tables": [...]}."""
    if data is None:
        return []
    defaults: dict = {}
    if isinstance(data, dict):
        _check_keys("configuration", data, {"defaults", "tables"})
        defaults = _check_keys("defaults", data.get("defaults") or {}, set(TableConfig.__dataclass_fields__))
        data = data.get("tables") or []
    if not isinstance(data, list):
        raise ConfigError(f"configuration must be a list of tables, got {type(data).__name__}")
    tables = [_table_config(raw, defaults, i) for i, raw in enumerate(data)]
    seen: set[str] = set()
    for t in tables:
        if t.name in seen:
            raise ConfigError(f"table name {t.name!r} appears twice; give each table a unique 'name'")
        seen.add(t.name)
    return tables


def parse_config_text(text: str) -> list[TableConfig]:
    try:
        return parse_config(yaml.safe_load(text))     # YAML is a superset of JSON
    except yaml.YAMLError as e:
        raise ConfigError(f"the table configuration is not valid JSON/YAML: {e}") from None


def load_config(variable_get: Callable[[str], str | None] | None = None) -> list[TableConfig]:
    """The configured tables: the JSON Variable first, else the file (Variable, then environment)."""
    get = variable_get or _airflow_variable
    text = get(CONFIG_VARIABLE)
    if text:
        return parse_config_text(text)
    path = get(CONFIG_FILE_VARIABLE) or os.environ.get(CONFIG_FILE_ENV)
    if not path:
        log.warning("no tables configured: set the Variable %r (JSON), or %r / $%s to a YAML file",
                    CONFIG_VARIABLE, CONFIG_FILE_VARIABLE, CONFIG_FILE_ENV)
        return []
    with open(path, encoding="utf-8") as f:
        return parse_config_text(f.read())


def _airflow_variable(key: str) -> str | None:
    from airflow.sdk import Variable
    return Variable.get(key, default=None)


def table_config(name: str, variable_get: Callable[[str], str | None] | None = None) -> TableConfig:
    """One table's configuration, read again by each task so secrets never travel through XCom."""
    cfgs = {c.name: c for c in load_config(variable_get)}
    if name not in cfgs:
        raise ConfigError(f"table {name!r} is no longer configured; configured: {sorted(cfgs)}")
    cfg = cfgs[name]
    _mask_secrets(cfg)
    return cfg


def _mask_secrets(cfg: TableConfig) -> None:
    """Tell Airflow's log masker about credential values, in case a library logs them."""
    try:
        from airflow.sdk.log import mask_secret
    except ImportError:
        return
    for opts in (cfg.storage_options, cfg.export.output_options if cfg.export else None):
        for k, v in (opts or {}).items():
            if isinstance(v, str) and v and any(w in k.lower() for w in _SECRET_WORDS):
                mask_secret(v, k)


def is_due(schedule: str | None, start: _dt.datetime | None, end: _dt.datetime | None) -> bool:
    """Does the table's schedule hint fire within (start, end]? No hint, or no interval: always."""
    if schedule is None or start is None or end is None or end <= start:
        return True
    from croniter import croniter
    return croniter(schedule, parse_time(start)).get_next(_dt.datetime) <= parse_time(end)


# --- compaction and vacuum --------------------------------------------------------------------
def _action_json(a) -> dict:
    return {"kind": a.kind, "tablet": a.tablet, "rowsets": len(a.rowsets), "score": round(a.score, 4),
            "bytes_read": a.bytes_read, "reason": a.reason}


def plan_compaction(cfg: TableConfig) -> dict:
    """The policy's plan now, printable and JSON-serialisable."""
    t = cfg.open()
    plan = t.compaction_plan(cfg.budget_bytes)
    log.info("table %s, engine %s:\n%s", cfg.name, cfg.engine, plan)
    return {"table": cfg.name, "version": plan.version, "actions": [_action_json(a) for a in plan.actions],
            "bytes_read": sum(a.bytes_read for a in plan.actions)}


def run_compaction(cfg: TableConfig) -> dict:
    """Plan again (a retry or a concurrent run may have done part of it) and run the plan.

    An action whose inputs changed meanwhile gives up without effect (the
    table's optimistic concurrency); that is success: the next run re-plans.
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
            "version_before": before, "version_after": t.version}


def _compact_inprocess(t: tf.Table, plan: CompactionPlan) -> list[dict]:
    out = []
    for a in plan.actions:    # one action at a time, to pair each with what it committed
        res = t.compact(replace(plan, actions=(a,)))
        out.append({"kind": a.kind, "tablet": a.tablet, "version": res[0].version if res else None})
    return out


def _compact_spark(cfg: TableConfig, plan: CompactionPlan) -> list[dict]:
    from spark_jobs.common import get_spark
    from spark_jobs.compaction import compact_table
    spark = get_spark(f"tableformat-compaction-{cfg.name}", cfg.spark_master)
    try:
        res = compact_table(spark, cfg.uri, cfg.budget_bytes, cfg.storage_options, plan=plan)
    finally:
        spark.stop()    # a worker slot must not keep a JVM
    return [{"kind": r["kind"], "tablet": r["tablet"], "version": r["version"]} for r in res["results"]]


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


# --- change export ----------------------------------------------------------------------------
def micros(t: _dt.datetime) -> int:
    return (parse_time(t) - _EPOCH) // _dt.timedelta(microseconds=1)


def from_micros(us: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(microseconds=us)


def interval_dir(start: _dt.datetime) -> str:
    """A sortable, colon-free (HDFS-safe) ISO 8601 name."""
    s = parse_time(start)
    frac = f".{s.microsecond:06d}" if s.microsecond else ""
    return f"interval={s.strftime('%Y%m%dT%H%M%S')}{frac}Z"


def _dir_start(name: str) -> _dt.datetime | None:
    if not name.startswith("interval="):
        return None
    s = name[len("interval="):].rstrip("Z")
    fmt = "%Y%m%dT%H%M%S.%f" if "." in s else "%Y%m%dT%H%M%S"
    try:
        return _dt.datetime.strptime(s, fmt).replace(tzinfo=UTC)
    except ValueError:
        return None


def part_name(version: int) -> str:
    return f"part-{version:020d}.parquet"


def _iso(t: _dt.datetime) -> str:
    return parse_time(t).isoformat()


def _put(out: Storage, rel: str, data: bytes) -> None:
    """Replace a file whole: a reader sees the old or the new content, never a torn one."""
    if not out.is_local:
        out.write(rel, data)        # an object-store PUT replaces atomically
        return
    p = out.path(rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    tmp = os.path.join(os.path.dirname(p), f".tmp-{uuid.uuid4().hex}")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, p)


def _read_json(out: Storage, rel: str) -> dict | None:
    """None when absent or torn (a crash mid-write): the writer's retry rewrites it."""
    try:
        return json.loads(out.read(rel))
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError):
        log.warning("ignoring unreadable %s; the run that wrote it is redone", rel)
        return None


class _History:
    """Version <-> commit timestamp, from Table.history()."""

    def __init__(self, t: tf.Table):
        self.infos = t.history()
        self.ts = [h.timestamp for h in self.infos]
        self._ts_of = {h.version: h.timestamp for h in self.infos}

    def ts_of(self, version: int) -> int:
        return self._ts_of[version]

    @property
    def latest(self) -> int:
        return self.infos[-1].version

    def last_before(self, us: int) -> int:
        """The last version committed before `us` (0: none after creation)."""
        return max(0, bisect.bisect_left(self.ts, us) - 1)

    def versions_in(self, lo: int, hi: int, after: int) -> list[int]:
        """Versions with lo <= timestamp < hi, above `after`."""
        a, b = bisect.bisect_left(self.ts, lo), bisect.bisect_left(self.ts, hi)
        return [self.infos[i].version for i in range(a, b) if self.infos[i].version > after]


def export_root(cfg: TableConfig) -> str:
    return cfg.export.output.rstrip("/") + "/" + cfg.name


def export_interval(cfg: TableConfig, start: _dt.datetime, end: _dt.datetime,
                    sleep: Callable[[float], None] = time.sleep) -> dict:
    """Export the changes committed in [start, end), then move the watermark. Safe to repeat."""
    if cfg.export is None:
        raise ConfigError(f"table {cfg.name!r} has no 'export' configuration")
    start, end = parse_time(start), parse_time(end)
    if end <= start:
        raise ExportError(f"empty data interval [{_iso(start)}, {_iso(end)}): the export needs a "
                          "data-interval timetable (CronDataIntervalTimetable), not a trigger timetable")
    wait = (end - _dt.datetime.now(UTC)).total_seconds() + cfg.export.settle_seconds
    if wait > 0:
        log.info("waiting %.1f s for commits stamped by clocks behind ours (settle_seconds)", wait)
        sleep(wait)
    t = cfg.open()
    out = Storage(export_root(cfg), cfg.export.output_options)
    hist = _History(t)
    wm = _read_json(out, WATERMARK)
    if wm is None:
        origin = cfg.export.start or start
        ov = hist.last_before(micros(origin))
        wm = {"table_id": t.state.table_id, "origin": _iso(origin), "origin_version": ov,
              "through": _iso(origin), "version": ov}
        _put(out, WATERMARK, json.dumps(wm).encode())
        log.info("table %s: export origin %s (changes after version %d)", cfg.name, wm["origin"], ov)
    elif wm.get("table_id") != t.state.table_id:
        raise ExportError(f"{export_root(cfg)} holds the export of another table (id {wm.get('table_id')}), "
                          f"not of {cfg.uri} (id {t.state.table_id}): was the table re-created? "
                          "Export it to a new output")
    elif cfg.export.start is not None and parse_time(wm["origin"]) != cfg.export.start:
        log.warning("table %s: export.start %s differs from the origin %s fixed by the first export; the "
                    "origin stays (export to a new output to change it)", cfg.name, _iso(cfg.export.start),
                    wm["origin"])
    summary = {"table": cfg.name, "interval": {"start": _iso(start), "end": _iso(end)}, "versions": None,
               "files": 0, "rows": 0, "late_versions": [], "skipped": None}
    origin_us = micros(wm["origin"])
    starts = _interval_starts(out)
    if micros(end) <= origin_us:
        summary["skipped"] = f"before the export origin {wm['origin']}"
        log.info("table %s: interval ends before the export origin %s; nothing to export", cfg.name,
                 wm["origin"])
    else:
        _check_no_overlap(out, starts, start, end)
        m = _write_interval(t, out, hist, wm, start, end)
        summary.update(versions=None if m["first_version"] is None else [m["first_version"], m["last_version"]],
                       files=len(m["files"]), rows=m["rows"])
        if start not in starts:
            starts = sorted(starts + [start])
    wm, late = _advance(t, out, hist, wm, starts)
    summary["late_versions"] = late
    summary["watermark"] = {"through": wm["through"], "version": wm["version"]}
    log.info("table %s: watermark through %s, version %d", cfg.name, wm["through"], wm["version"])
    return summary


def _interval_starts(out: Storage) -> list[_dt.datetime]:
    return sorted(s for s in (_dir_start(n) for n in out.list("")) if s is not None)


def _check_no_overlap(out: Storage, starts: list[_dt.datetime], start: _dt.datetime, end: _dt.datetime) -> None:
    """Intervals must tile time, or one commit could land in two directories."""
    i = bisect.bisect_left(starts, start)
    neighbours = starts[max(0, i - 1):i + 2]
    for s in neighbours:
        m = _read_json(out, f"{interval_dir(s)}/{MANIFEST}")
        if m is None:
            continue
        e = parse_time(m["end"])
        if (s, e) != (start, end) and s < end and start < e:
            raise ExportError(
                f"interval [{_iso(start)}, {_iso(end)}) overlaps the exported interval [{_iso(s)}, {_iso(e)}): "
                "the schedule changed; export to a new output (or with a new table name) to change it")


def _write_interval(t: tf.Table, out: Storage, hist: _History, wm: dict, start: _dt.datetime,
                    end: _dt.datetime) -> dict:
    """One part file per version with changes, then the manifest; stray part files are removed."""
    lo = max(micros(start), micros(wm["origin"]))
    versions = hist.versions_in(lo, micros(end), wm["origin_version"])
    d = interval_dir(start)
    files = []
    for v in versions:
        ch = t.changes(v - 1, v)
        if ch.num_rows == 0:
            continue
        sink = pa.BufferOutputStream()
        pq.write_table(ch, sink, compression="zstd")
        _put(out, f"{d}/{part_name(v)}", sink.getvalue().to_pybytes())
        files.append({"version": v, "path": part_name(v), "rows": ch.num_rows})
    keep = {f["path"] for f in files}
    out.delete_quietly([f"{d}/{n}" for n in out.list(d) if n.startswith("part-") and n not in keep])
    m = {"table_id": t.state.table_id, "start": _iso(start), "end": _iso(end),
         "first_version": versions[0] if versions else None, "last_version": versions[-1] if versions else None,
         "table_version_seen": hist.latest, "files": files, "rows": sum(f["rows"] for f in files),
         "written_at": _dt.datetime.now(UTC).isoformat()}
    _put(out, f"{d}/{MANIFEST}", json.dumps(m).encode())
    log.info("exported [%s, %s): versions %s..%s, %d file(s), %d change(s) -> %s", m["start"], m["end"],
             m["first_version"], m["last_version"], len(files), m["rows"], d)
    return m


def _advance(t: tf.Table, out: Storage, hist: _History, wm: dict,
             starts: list[_dt.datetime]) -> tuple[dict, list[int]]:
    """Move the watermark over every complete interval, re-exporting any that missed a late commit."""
    through, version = micros(wm["through"]), wm["version"]
    ov = wm["origin_version"]
    late = hist.versions_in(0, through, max(ov, version))     # committed behind the watermark
    for v in late:
        i = bisect.bisect_right(starts, from_micros(hist.ts_of(v))) - 1
        m = _read_json(out, f"{interval_dir(starts[i])}/{MANIFEST}") if i >= 0 else None
        if m is None or micros(m["end"]) <= hist.ts_of(v):
            raise ExportError(f"version {v} committed at {_iso(from_micros(hist.ts_of(v)))}, behind the watermark, "
                              "but no exported interval holds that time; the output is damaged")
        if m.get("last_version") is None or m["last_version"] < v:
            log.warning("version %d arrived late in [%s, %s): re-exporting that interval", v, m["start"], m["end"])
            _write_interval(t, out, hist, wm, starts[i], parse_time(m["end"]))
    if late:
        version = max(late)
    while True:
        i = bisect.bisect_right(starts, from_micros(through)) - 1
        m = _read_json(out, f"{interval_dir(starts[i])}/{MANIFEST}") if i >= 0 else None
        if m is None or micros(m["end"]) <= through:
            break                            # the next interval is not exported yet
        end = micros(m["end"])
        expect = hist.versions_in(max(micros(starts[i]), micros(wm["origin"])), end, ov)
        got = [m["first_version"], m["last_version"]]
        if expect and got != [expect[0], expect[-1]]:
            missed = [v for v in expect if m["last_version"] is None or v > m["last_version"]]
            log.warning("versions %s arrived late in [%s, %s): re-exporting that interval", missed, m["start"],
                        m["end"])
            late.extend(missed)
            _write_interval(t, out, hist, wm, starts[i], parse_time(m["end"]))
        through = end
        version = max(version, hist.last_before(through))
    if through > micros(wm["through"]) or version > wm["version"]:
        current = _read_json(out, WATERMARK) or wm
        if micros(current["through"]) > through:
            return current, sorted(set(late))   # a concurrent run got further: never move back
        wm = {**wm, "through": _iso(from_micros(through)), "version": version,
              "updated_at": _dt.datetime.now(UTC).isoformat()}
        _put(out, WATERMARK, json.dumps(wm).encode())
    return wm, sorted(set(late))


# --- scheduling -------------------------------------------------------------------------------
_DELTA = re.compile(r"^(\d+)([smhd])$")


def timetable(spec: str):
    """A data-interval timetable from a cron expression / preset, or a fixed step like '30s' or '6h'.

    Airflow 3 turns a bare cron string into a trigger timetable whose data
    interval is empty; the export needs real, contiguous intervals.
    """
    try:
        from airflow.sdk import CronDataIntervalTimetable, DeltaDataIntervalTimetable
    except ImportError:      # Airflow before 3.1
        from airflow.timetables.interval import (
            CronDataIntervalTimetable,
            DeltaDataIntervalTimetable,
        )
    m = _DELTA.match(spec.strip())
    if m:
        unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[m.group(2)]
        return DeltaDataIntervalTimetable(_dt.timedelta(**{unit: int(m.group(1))}))
    return CronDataIntervalTimetable(spec, timezone="UTC")


def retries() -> dict:
    """Task retries, $TABLEFORMAT_DAG_RETRIES (default 2): every task is safe to repeat."""
    return {"retries": int(os.environ.get("TABLEFORMAT_DAG_RETRIES", "2")), "retry_delay": _dt.timedelta(minutes=1)}


def run_type(ctx: Any) -> str:
    rt = getattr(ctx.get("dag_run"), "run_type", None)
    return str(getattr(rt, "value", rt))
