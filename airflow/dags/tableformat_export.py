"""Change export: each data interval's committed changes (specs/format.md §9.2), as Parquet, exactly once.

Layout (one directory per table under the configured output):

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
- Before reading an interval the export waits until its end plus
  `settle_seconds`. A scheduled run starts when its interval ends, so it
  waits about `settle_seconds`. The wait is bounded by `max_wait_seconds`
  (default settle_seconds + 600): a run of an interval that ends later than
  that (a manual test run of the current interval: in Airflow 3 the logical
  date is the interval's end) fails at once with `ExportNotDueError`,
  saying when it can run. SIGTERM and SIGINT end the wait
  (`ExportWaitInterrupted`).
- Exporting an interval reads history as of its commits: keep the table's
  `history_max_age` and the vacuum `retain_seconds` longer than the oldest
  interval you may backfill.

With `export.format: delta` the output `<output>/<name>` is a Delta table
instead (spark_jobs/export.py `delta_export`, mode `append` or `apply`): a
run exports every version committed before its interval's end that the Delta
log's watermark (the txn version of appId `<name>`) has not seen, one Delta
commit per version, exactly once under retries, reruns and concurrent runs.
Backfills of older intervals find nothing left to do.

With `export.format: stream` a run is an AvailableNow change stream
(spark_jobs/stream_export.py) into `<output>/<name>/changes` (Parquet, Spark's
file sink), its checkpoint in `<output>/<name>/_checkpoint`: every commit not
yet exported, exactly once across kills and re-runs; read it through the sink's
log (spark.read.parquet, or stream_export.committed_files). ALTERs never stop it:
each run writes in the table's columns when it starts (a batch before an ALTER
matched by column ID, spark_jobs/stream_columns.py), so read across them with
mergeSchema. That lines columns up by name only: enough for an added or dropped
column, not for a rename (two half-NULL columns, old name and new) nor for a
column dropped and added again with another type (it cannot merge): combine those.
"""
from __future__ import annotations

import bisect
import datetime as _dt
import json
import logging
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq

import tableformat as tf
from tableformat import Storage
from tableformat_config import UTC, ConfigError, TableConfig, parse_time

log = logging.getLogger("tableformat.airflow")

WATERMARK = "_watermark.json"
MANIFEST = "_manifest.json"
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=UTC)


class ExportError(RuntimeError):
    """An export would break exactly-once (another table's output, or intervals that overlap)."""


class ExportNotDueError(ExportError):
    """The interval ends later than the export may wait for (export.max_wait_seconds)."""


class ExportWaitInterrupted(ExportError):
    """SIGTERM or SIGINT ended the wait for an interval to settle; nothing was read or written."""


def interruptible_sleep(seconds: float) -> None:
    """Sleep, ended by SIGTERM or SIGINT even when the host (Airflow's task runner, `dag.test()`)
    installed handlers that return: ours raise ExportWaitInterrupted after calling theirs. Handlers
    can only be set in the main thread; elsewhere the sleep is cut into 1 s slices."""
    def on_signal(signum, frame):
        prev = previous.get(signum)
        if callable(prev):
            prev(signum, frame)
        raise ExportWaitInterrupted(f"{signal.Signals(signum).name} received while waiting for the interval "
                                    "to settle; nothing was exported")
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGTERM, signal.SIGINT):
            previous[s] = signal.signal(s, on_signal)
    try:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, 1.0))
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


# --- names and times --------------------------------------------------------------------------
def micros(t: _dt.datetime) -> int:
    return (parse_time(t) - _EPOCH) // _dt.timedelta(microseconds=1)


def from_micros(us: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(microseconds=us)


def _iso(t: _dt.datetime) -> str:
    return parse_time(t).isoformat()


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


def export_root(cfg: TableConfig) -> str:
    return cfg.export.output.rstrip("/") + "/" + cfg.name


# --- files ------------------------------------------------------------------------------------
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


def _manifest(out: Storage, start: _dt.datetime) -> dict | None:
    return _read_json(out, f"{interval_dir(start)}/{MANIFEST}")


def _interval_starts(out: Storage) -> list[_dt.datetime]:
    return sorted(s for s in (_dir_start(n) for n in out.list("")) if s is not None)


def _covering(out: Storage, starts: list[_dt.datetime], us: int) -> tuple[_dt.datetime | None, dict | None]:
    """The last interval starting at or before `us`, and its manifest (None: not complete)."""
    i = bisect.bisect_right(starts, from_micros(us)) - 1
    return (starts[i], _manifest(out, starts[i])) if i >= 0 else (None, None)


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


# --- export -----------------------------------------------------------------------------------
def _watermark(cfg: TableConfig, t, out: Storage, hist: "_History", start: _dt.datetime) -> dict:
    """The export's watermark: written at the first export (its origin: export.start or this
    interval's start), refused when it belongs to another table (a re-created table)."""
    wm = _read_json(out, WATERMARK)
    if wm is None:
        origin = cfg.export.start or start
        ov = hist.last_before(micros(origin))
        wm = {"table_id": t.table_id, "origin": _iso(origin), "origin_version": ov,
              "through": _iso(origin), "version": ov}
        _put(out, WATERMARK, json.dumps(wm).encode())
        log.info("table %s: export origin %s (changes after version %d)", cfg.name, wm["origin"], ov)
    elif wm.get("table_id") != t.table_id:
        raise ExportError(f"{export_root(cfg)} holds the export of another table (id {wm.get('table_id')}), "
                          f"not of {cfg.uri} (id {t.table_id}): was the table re-created? "
                          "Export it to a new output")
    elif cfg.export.start is not None and parse_time(wm["origin"]) != cfg.export.start:
        log.warning("table %s: export.start %s differs from the origin %s fixed by the first export; the "
                    "origin stays (export to a new output to change it)", cfg.name, _iso(cfg.export.start),
                    wm["origin"])
    return wm


def export_interval(cfg: TableConfig, start: _dt.datetime, end: _dt.datetime,
                    sleep: Callable[[float], None] = interruptible_sleep) -> dict:
    """Export the changes committed in [start, end), then move the watermark. Safe to repeat."""
    if cfg.export is None:
        raise ConfigError(f"table {cfg.name!r} has no 'export' configuration")
    if cfg.export.format == "delta":
        return export_delta(cfg, start, end, sleep=sleep)
    if cfg.export.format == "stream":
        return export_stream(cfg, start, end)
    start, end = parse_time(start), parse_time(end)
    if end <= start:
        raise ExportError(f"empty data interval [{_iso(start)}, {_iso(end)}): the export needs a "
                          "data-interval timetable (CronDataIntervalTimetable), not a trigger timetable")
    settle, bound = cfg.export.settle_seconds, cfg.export.wait_bound
    wait = (end - _dt.datetime.now(UTC)).total_seconds() + settle
    if wait > bound:
        raise ExportNotDueError(
            f"interval [{_iso(start)}, {_iso(end)}) of table {cfg.name!r} cannot be exported yet: it ends at "
            f"{_iso(end)} and is read settle_seconds ({settle:g} s) later, {wait:.0f} s from now, beyond "
            f"export.max_wait_seconds ({bound:g} s). A scheduled run starts when its interval ends; a manual run "
            f"of the current interval (Airflow 3's logical date is the interval's end) can run after "
            f"{_iso(end + _dt.timedelta(seconds=settle))}")
    if wait > 0:
        log.info("waiting %.1f s (at most export.max_wait_seconds = %g s): until the interval's end %s plus "
                 "settle_seconds (%g s), so that commits stamped by writers' clocks behind ours land before "
                 "it is read; SIGTERM or SIGINT stops the wait", wait, bound, _iso(end), settle)
        sleep(wait)
    t = cfg.open()
    out = Storage(export_root(cfg), cfg.export.output_options)
    hist = _History(t)
    wm = _watermark(cfg, t, out, hist, start)
    summary = {"table": cfg.name, "interval": {"start": _iso(start), "end": _iso(end)}, "versions": None,
               "files": 0, "rows": 0, "late_versions": [], "skipped": None}
    starts = _interval_starts(out)
    if micros(end) <= micros(wm["origin"]):
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


def export_delta(cfg: TableConfig, start: _dt.datetime, end: _dt.datetime, spark=None,
                 sleep: Callable[[float], None] = time.sleep) -> dict:
    """The Delta sink: versions committed before `end`, after the Delta log's watermark."""
    from spark_jobs.export import delta_export
    start, end = parse_time(start), parse_time(end)
    wait = (end - _dt.datetime.now(UTC)).total_seconds() + cfg.export.settle_seconds
    if wait > 0:
        sleep(wait)
    t = cfg.open()
    last = _History(t).last_before(micros(end))
    if spark is None:
        from spark_jobs.session import get_spark
        spark = get_spark(f"tableformat-export-{cfg.name}", cfg.spark_master, delta=True)
    res = delta_export(spark, cfg.uri, export_root(cfg), cfg.name, cfg.export.mode, cfg.storage_options,
                       cfg.export.delta_options, end=last)
    log.info("table %s: Delta export (%s) through version %d: %d commit(s), %d row(s)", cfg.name,
             cfg.export.mode, last, len(res["commits"]), res["rows"])
    return {"table": cfg.name, "interval": {"start": _iso(start), "end": _iso(end)},
            "versions": [res["commits"][0], res["commits"][-1]] if res["commits"] else None,
            "files": len(res["commits"]), "rows": res["rows"], "late_versions": [], "skipped": None,
            "watermark": {"version": last}}


def export_stream(cfg: TableConfig, start: _dt.datetime, end: _dt.datetime, spark=None) -> dict:
    """The stream sink: an AvailableNow run of the change stream into `<output>/<name>/changes`
    (Parquet, Spark's file sink), its checkpoint in `<output>/<name>/_checkpoint`. Every commit
    not yet exported, whatever the interval: a run killed at any point is finished by the next
    one, and its changes are listed once in the sink's log (spark_jobs/stream_export.py)."""
    from spark_jobs.stream_export import CHECKPOINT, committed_files, stream_export
    root = export_root(cfg)
    tf.check_outside_table(root, cfg.uri, "the stream export's output")     # before Spark starts
    output, origin = root + "/changes", cfg.export.start or parse_time(start)
    before = len(committed_files(output, cfg.export.output_options))
    if spark is None:
        from spark_jobs.session import get_spark
        spark = get_spark(f"tableformat-export-{cfg.name}", cfg.spark_master)
    res = stream_export(spark, cfg.uri, output, root + "/" + CHECKPOINT, cfg.storage_options,
                        starting_timestamp=_iso(origin),
                        max_versions_per_trigger=cfg.export.max_versions_per_trigger)
    files = len(committed_files(output, cfg.export.output_options)) - before
    version = None if res["end"] is None else res["end"]["version"]
    log.info("table %s: stream export through version %s: %d micro-batch(es), %d file(s), %d row(s)", cfg.name,
             version, res["batches"], files, res["rows"])
    return {"table": cfg.name, "interval": {"start": _iso(start), "end": _iso(end)}, "versions": None,
            "files": files, "rows": res["rows"], "late_versions": [], "skipped": None,
            "batches": res["batches"], "watermark": {"version": version}}


def _check_no_overlap(out: Storage, starts: list[_dt.datetime], start: _dt.datetime, end: _dt.datetime) -> None:
    """Intervals must tile time, or one commit could land in two directories."""
    i = bisect.bisect_left(starts, start)
    for s in starts[max(0, i - 1):i + 2]:
        m = _manifest(out, s)
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
    m = {"table_id": t.table_id, "start": _iso(start), "end": _iso(end),
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
        s, m = _covering(out, starts, hist.ts_of(v))
        if m is None or micros(m["end"]) <= hist.ts_of(v):
            raise ExportError(f"version {v} committed at {_iso(from_micros(hist.ts_of(v)))}, behind the watermark, "
                              "but no exported interval holds that time; the output is damaged")
        if m.get("last_version") is None or m["last_version"] < v:
            log.warning("version %d arrived late in [%s, %s): re-exporting that interval", v, m["start"], m["end"])
            _write_interval(t, out, hist, wm, s, parse_time(m["end"]))
    if late:
        version = max(late)
    while True:
        s, m = _covering(out, starts, through)
        if m is None or micros(m["end"]) <= through:
            break                            # the next interval is not exported yet
        end = micros(m["end"])
        expect = hist.versions_in(max(micros(s), micros(wm["origin"])), end, ov)
        if expect and [m["first_version"], m["last_version"]] != [expect[0], expect[-1]]:
            missed = [v for v in expect if m["last_version"] is None or v > m["last_version"]]
            log.warning("versions %s arrived late in [%s, %s): re-exporting that interval", missed, m["start"],
                        m["end"])
            late.extend(missed)
            _write_interval(t, out, hist, wm, s, parse_time(m["end"]))
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
