"""Which tables the tableformat DAGs handle, with what settings, and when they run.

The helper modules (this one, tableformat_maintenance, tableformat_export)
import nothing from Airflow at module level, so the DAG files stay thin and
the logic runs (and is tested) without a scheduler. Airflow puts the DAG
folder on sys.path, which is how the DAG files import them.

The tables come from the Airflow Variable `tableformat_tables` (JSON), or a
YAML/JSON file named by the Variable `tableformat_tables_file` or the
environment variable `TABLEFORMAT_TABLES_FILE`. Either a list of tables or
`{"defaults": {...}, "tables": [...]}`; see `TableConfig` for the keys.
"""
from __future__ import annotations

import datetime as _dt
import logging
import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

import tableformat as tf

log = logging.getLogger("tableformat.airflow")

CONFIG_VARIABLE = "tableformat_tables"
CONFIG_FILE_VARIABLE = "tableformat_tables_file"
CONFIG_FILE_ENV = "TABLEFORMAT_TABLES_FILE"
ENGINES = ("inprocess", "spark")
MIB = 1 << 20
UTC = _dt.timezone.utc
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SECRET_WORDS = ("key", "secret", "token", "password", "credential")


class ConfigError(ValueError):
    """The table list is malformed; the message names the table and the key."""


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
    format: str = "parquet"                 # "parquet" (interval files), "delta" (a Delta table) or "stream"
    #                                         (an AvailableNow change stream into Parquet, spark_jobs/stream_export.py)
    mode: str = "append"                    # delta only: "append" (change rows) or "apply" (a replica by key)
    delta_options: dict | None = field(default=None, repr=False)   # delta only: delta-rs storage options
    max_wait_seconds: float | None = None   # the longest wait for an interval's end + settle (None: settle + 600)
    max_versions_per_trigger: int | None = None   # stream only: commits per micro-batch (None: all at once)

    @property
    def wait_bound(self) -> float:
        return self.settle_seconds + 600 if self.max_wait_seconds is None else self.max_wait_seconds


@dataclass(frozen=True)
class MirrorConfig:
    """Zero-copy mirrors the compaction DAG refreshes after compacting (README "Iceberg", "Delta Lake")."""
    iceberg: str | None = None              # an Iceberg table's directory (Table.mirror_iceberg)
    delta: str | None = None                # a Delta table's directory (Table.mirror_delta)
    options: dict | None = field(default=None, repr=False)   # fsspec storage options of the mirror paths
    compact: bool = True                    # False: refuse rowsets the mirror cannot express
    keep_snapshots: int | None = None       # iceberg: keep only the N newest snapshots


@dataclass(frozen=True)
class TableConfig:
    """One table. Keys: name, uri, storage_options, budget_mb, schedule, engine,
    spark_master, vacuum {enabled, retain_seconds, grace_seconds, dry_run}, mirror {iceberg, delta, options,
    compact, keep_snapshots},
    export {output, output_options, start, settle_seconds, max_wait_seconds, format, mode, delta_options,
    max_versions_per_trigger}."""

    name: str
    uri: str
    storage_options: dict | None = field(default=None, repr=False)
    budget_mb: int = 256
    schedule: str | None = None             # cron or preset: when the compaction DAG handles it
    engine: str = "inprocess"
    spark_master: str | None = None
    vacuum: VacuumConfig = VacuumConfig()
    export: ExportConfig | None = None
    mirror: MirrorConfig | None = None

    @property
    def budget_bytes(self) -> int:
        return self.budget_mb * MIB

    def open(self) -> tf.Table:
        return tf.open_table(self.uri, storage_options=self.storage_options)


# --- parsing ----------------------------------------------------------------------------------
def parse_time(v: Any) -> _dt.datetime:
    """An aware UTC datetime from a datetime or an ISO string (naive means UTC)."""
    if isinstance(v, str):
        v = _dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    if not isinstance(v, _dt.datetime):
        raise ConfigError(f"expected an ISO date-time, got {v!r}")
    v = (v.replace(tzinfo=UTC) if v.tzinfo is None else v).astimezone(UTC)
    # a plain datetime, also from Airflow's pendulum ones, whose arithmetic differs
    return _dt.datetime(v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond, tzinfo=UTC)


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


def _table_config(raw: Any, defaults: dict, i: int) -> TableConfig:
    where = f"table #{i + 1}"
    raw = _check_keys(where, raw, set(TableConfig.__dataclass_fields__))
    d = {**defaults, **raw}
    for sub in ("vacuum", "export", "mirror"):     # a table's section refines the default one, key by key
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
    vacuum = _vacuum_config(where, d.get("vacuum") or {})
    export = None if d.get("export") is None else _export_config(where, d["export"])
    mirror = None if d.get("mirror") is None else _mirror_config(where, d["mirror"])
    return TableConfig(name, d["uri"], d.get("storage_options"), budget, schedule, engine,
                       d.get("spark_master"), vacuum, export, mirror)


def _mirror_config(where: str, raw: Any) -> MirrorConfig:
    m = _check_keys(f"{where}: mirror", raw, set(MirrorConfig.__dataclass_fields__))
    for k in ("iceberg", "delta"):
        if m.get(k) is not None and (not isinstance(m[k], str) or not m[k]):
            raise ConfigError(f"{where}: mirror.{k} must be a path, got {m[k]!r}")
    if not m.get("iceberg") and not m.get("delta"):
        raise ConfigError(f"{where}: mirror needs 'iceberg' or 'delta' (a path)")
    if m.get("options") is not None and not isinstance(m["options"], dict):
        raise ConfigError(f"{where}: mirror.options must be a mapping")
    keep = m.get("keep_snapshots")
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1 or not m.get("iceberg")):
        raise ConfigError(f"{where}: mirror.keep_snapshots must be a positive integer, and only with 'iceberg', "
                          f"got {keep!r}")
    return MirrorConfig(m.get("iceberg"), m.get("delta"), m.get("options"), bool(m.get("compact", True)), keep)


def _vacuum_config(where: str, raw: Any) -> VacuumConfig:
    v = _check_keys(f"{where}: vacuum", raw, set(VacuumConfig.__dataclass_fields__))
    return VacuumConfig(
        enabled=bool(v.get("enabled", True)),
        retain_seconds=None if v.get("retain_seconds") is None
        else _number(f"{where}: vacuum.retain_seconds", v["retain_seconds"]),
        grace_seconds=_number(f"{where}: vacuum.grace_seconds", v.get("grace_seconds", 3600)),
        dry_run=bool(v.get("dry_run", False)))


def _export_config(where: str, raw: Any) -> ExportConfig:
    e = _check_keys(f"{where}: export", raw, set(ExportConfig.__dataclass_fields__))
    if not isinstance(e.get("output"), str) or not e["output"]:
        raise ConfigError(f"{where}: export.output is required")
    if e.get("output_options") is not None and not isinstance(e["output_options"], dict):
        raise ConfigError(f"{where}: export.output_options must be a mapping")
    try:
        start = None if e.get("start") is None else parse_time(e["start"])
    except (ValueError, ConfigError):
        raise ConfigError(f"{where}: export.start must be an ISO date-time, got {e['start']!r}") from None
    settle = _number(f"{where}: export.settle_seconds", e.get("settle_seconds", 60))
    bound = None if e.get("max_wait_seconds") is None else _number(f"{where}: export.max_wait_seconds",
                                                                   e["max_wait_seconds"])
    if bound is not None and bound < settle:
        raise ConfigError(f"{where}: export.max_wait_seconds ({bound:g}) is below settle_seconds ({settle:g}): "
                          "even a run that starts when its interval ends waits settle_seconds")
    fmt, mode = e.get("format", "parquet"), e.get("mode", "append")
    if fmt not in ("parquet", "delta", "stream"):
        raise ConfigError(f"{where}: export.format must be 'parquet', 'delta' or 'stream', got {fmt!r}")
    if mode not in ("append", "apply") or (fmt != "delta" and "mode" in e):
        raise ConfigError(f"{where}: export.mode must be 'append' or 'apply', and only with format 'delta', "
                          f"got {mode!r}")
    if e.get("delta_options") is not None and (fmt != "delta" or not isinstance(e["delta_options"], dict)):
        raise ConfigError(f"{where}: export.delta_options must be a mapping, and only with format 'delta'")
    per = e.get("max_versions_per_trigger")
    if per is not None and (fmt != "stream" or isinstance(per, bool) or not isinstance(per, int) or per <= 0):
        raise ConfigError(f"{where}: export.max_versions_per_trigger must be a positive integer, and only with "
                          f"format 'stream', got {per!r}")
    return ExportConfig(e["output"], e.get("output_options"), start, settle, fmt, mode, e.get("delta_options"),
                        bound, per)


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


def _validate_cron(where: str, expr: Any) -> None:
    from croniter import croniter
    if not isinstance(expr, str) or not croniter.is_valid(expr):
        raise ConfigError(f"{where}: schedule must be a cron expression or preset like '@daily', got {expr!r}")


# --- loading ----------------------------------------------------------------------------------
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
    for opts in (cfg.storage_options, cfg.export.output_options if cfg.export else None,
                 cfg.mirror.options if cfg.mirror else None):
        for k, v in (opts or {}).items():
            if isinstance(v, str) and v and any(w in k.lower() for w in _SECRET_WORDS):
                mask_secret(v, k)


# --- scheduling -------------------------------------------------------------------------------
_STEP = re.compile(r"^(\d+)([smhd])$")


def is_due(schedule: str | None, start: _dt.datetime | None, end: _dt.datetime | None) -> bool:
    """Does the table's schedule hint fire within (start, end]? No hint, or no interval: always."""
    if schedule is None or start is None or end is None or end <= start:
        return True
    from croniter import croniter
    return croniter(schedule, parse_time(start)).get_next(_dt.datetime) <= parse_time(end)


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
    m = _STEP.match(spec.strip())
    if m:
        unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[m.group(2)]
        return DeltaDataIntervalTimetable(_dt.timedelta(**{unit: int(m.group(1))}))
    return CronDataIntervalTimetable(spec, timezone="UTC")


def retries() -> dict:
    """Task retries, $TABLEFORMAT_DAG_RETRIES (default 2): every task is safe to repeat."""
    return {"retries": int(os.environ.get("TABLEFORMAT_DAG_RETRIES", "2")), "retry_delay": _dt.timedelta(minutes=1)}


def run_type(ctx: Any) -> str:
    """'scheduled', 'manual', 'backfill', ...: only scheduled and backfill runs follow the schedule hints."""
    rt = getattr(ctx.get("dag_run"), "run_type", None)
    return str(getattr(rt, "value", rt))
