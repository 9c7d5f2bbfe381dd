"""Vacuum: delete files that no snapshot within the history retention needs.

A file is deleted only when (1) no state from the oldest retained snapshot to
the head references it, and (2) it is older than a grace period, so files of
writers still in flight (written, not yet committed) are safe. Before deleting,
vacuum records its history horizon in the log, so older versions are read from
the horizon's files through UNDO records. `plan` is printable, like the
compaction plan. See specs/format.md §12.
"""
from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass, field

from typing import Sequence

from ..log.actions import Commit, SetHistory
from ..log.requirements import TagsRetained
from ..format.mirror_registry import mirrored_files
from ..log.fragment import WriteFragment
from ..log.handle import TableHandle
from ..format.metadata import CommitInfo, TableState, property_value
from ..log.mvcc import history_horizon
from ..format.constants import LOG_DIR, TABLETS_DIR
from ..format.storage import Storage
from ..log.transaction import CommitProperties, Transaction
from ..log.txlog import TransactionLog, now_micros


def state_files(st: TableState) -> set[str]:
    out = set()
    for r in st.rowsets.values():
        out.update(f.path for f in r.files)
    for ds in st.deltas.values():
        out.update(d.path for d in ds)
    return out


def commit_files(commit: Commit) -> set[str]:
    return commit.files


@dataclass
class VacuumResult:
    dry_run: bool
    files: list[str] = field(default_factory=list)
    bytes: int = 0
    retained_from_version: int = 0

    def __str__(self) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        return f"vacuum {verb} {len(self.files)} file(s), {self.bytes / 2**20:.2f} MiB " \
               f"(snapshots from version {self.retained_from_version} kept)"


def _mtime(info: dict) -> float:
    if isinstance(info.get("modificationTime"), (int, float)):      # WebHDFS's FileStatus: milliseconds
        return info["modificationTime"] / 1000
    for k in ("mtime", "LastModified", "last_modified", "created"):
        v = info.get(k)
        if v is None:
            continue
        if isinstance(v, _dt.datetime):
            return v.timestamp()
        try:
            return float(v)
        except (TypeError, ValueError):
            continue
    return time.time()   # unknown age: treat as new, never delete


def unreferenced(storage: Storage, referenced: set[str], grace_seconds: float) -> list[tuple[str, int]]:
    """(relative path, size) of table files no retained snapshot references, older than the grace period."""
    root = storage.path(TABLETS_DIR)
    try:
        found = storage.fs.find(root, detail=True)
    except FileNotFoundError:
        found = {}
    now = time.time()
    prefix = storage.root.rstrip("/") + "/"
    out = []
    for path, info in found.items():
        rel = path[len(prefix):] if path.startswith(prefix) else path.split(storage.root.strip("/") + "/", 1)[-1]
        if rel in referenced or info.get("type") == "directory":
            continue
        if now - _mtime(info) < grace_seconds:
            continue
        out.append((rel, int(info.get("size") or 0)))
    # abandoned temporary commit files
    for name in storage.list(LOG_DIR):
        if name.startswith(".tmp-"):
            rel = f"{LOG_DIR}/{name}"
            try:
                info = storage.fs.info(storage.path(rel))
            except FileNotFoundError:
                continue
            if now - _mtime(info) >= grace_seconds:
                out.append((rel, int(info.get("size") or 0)))
    return sorted(out)


@dataclass(frozen=True)
class VacuumPlan:
    """What a vacuum would do: the oldest version kept readable from its own files, the
    history horizon it records first (None: it does not move), and the files it deletes."""

    version: int
    retain_from: int
    history: SetHistory | None
    files: tuple[tuple[str, int], ...]
    grace_seconds: float
    table_id: str | None = None

    @property
    def bytes(self) -> int:
        return sum(s for _, s in self.files)

    def __str__(self) -> str:
        head = f"Vacuum plan at version {self.version}: snapshots from version {self.retain_from} keep their files"
        hz = "" if self.history is None else \
            f"\n  record history horizon at version {self.history.horizon_version}" + \
            (f" (history before timestamp {self.history.gc_before_ts} is gone)" if self.history.gc_before_ts else "")
        return (f"{head}{hz}\n  delete {len(self.files)} file(s), {self.bytes / 2**20:.2f} MiB, "
                f"older than {self.grace_seconds:g} s")

    def fragment(self) -> WriteFragment:
        """The log commit of the horizon: it rebases on anything, unless it drops aged-out history
        (passing an old ALTER) and a tag created meanwhile may need it."""
        gc = self.history.gc_before_ts if self.history else None
        return WriteFragment("VACUUM", self.version, [self.history] if self.history else [], [],
                             {"horizon_version": self.history.horizon_version if self.history else 0},
                             [TagsRetained(gc)] if gc else [], data_change=False, table_id=self.table_id,
                             kind="vacuum")


def plan(storage: Storage, log: TransactionLog, state: TableState, history: Sequence[CommitInfo],
         retain_seconds: float | None, grace_seconds: float) -> VacuumPlan:
    """The horizon: the oldest snapshot still valid `retain_seconds` ago (history_max_age by
    default), never passing an ALTER or a format-1 commit within the history."""
    age = property_value(state.properties, "history_max_age") if retain_seconds is None else retain_seconds
    horizon_ts = now_micros() - int(age * 1_000_000) if age >= 0 else -1
    first = 0
    for h in history:
        if h.timestamp <= horizon_ts:
            first = h.version
    first, floor = history_horizon(state, history, first,
                                   lambda v: log.read_commit(v).format_version)
    if all(h.operation == "VACUUM" for h in history[state.history_horizon + 1:first + 1]):
        first = min(first, state.history_horizon)      # only vacuums since: no file to free, no commit
    action = SetHistory(first, floor or None) if first > state.history_horizon else None
    return VacuumPlan(state.version, max(first, state.history_horizon), action, tuple(deletable(storage, log, state, first, grace_seconds)),
                      grace_seconds, state.table_id)


def deletable(storage: Storage, log: TransactionLog, state: TableState, first: int,
              grace_seconds: float) -> list[tuple[str, int]]:
    """Files no state from version `first` to the head references, older than the grace period."""
    first = max(first, state.history_horizon)
    referenced = state_files(log.load(first)[0]) if first < state.version else set()
    for v in range(first + 1, state.version + 1):
        referenced |= commit_files(log.read_commit(v))
    referenced |= state_files(state)
    referenced |= mirrored_files(storage)      # a mirror (Delta: latest version; Iceberg: retained snapshots) reads them
    return unreferenced(storage, referenced, grace_seconds)


def vacuum(handle: TableHandle, plan_: VacuumPlan, grace_seconds: float, properties: CommitProperties) -> VacuumResult:
    """Run a plan: commit its history horizon first (older versions are read through UNDO from
    then on), then delete the files no kept snapshot references. The deletes come last, and a
    failed delete only leaves a file for the next vacuum."""
    if plan_.history is not None:
        Transaction(handle, plan_.fragment(), properties).commit()
    state = handle.refresh()
    victims = deletable(handle.storage, handle.log, state, plan_.retain_from, grace_seconds)
    res = VacuumResult(False, [f for f, _ in victims], sum(s for _, s in victims),
                       max(plan_.retain_from, state.history_horizon))
    handle.storage.delete_quietly(res.files)
    return res
