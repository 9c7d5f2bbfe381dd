"""Vacuum: delete files that no snapshot within the history retention needs.

A file is deleted only when (1) no state from the oldest retained snapshot to
the head references it, and (2) it is older than a grace period, so files of
writers still in flight (written, not yet committed) are safe.
"""
from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass, field

from .metadata import TableState
from .storage import Storage

TABLETS = "tablets"


def state_files(st: TableState) -> set[str]:
    out = set()
    for r in st.rowsets.values():
        out.update(f.path for f in r.files)
    for ds in st.deltas.values():
        out.update(d.path for d in ds)
    return out


def commit_files(commit: dict) -> set[str]:
    out = set()
    for a in commit["actions"]:
        if "add_rowset" in a:
            r = a["add_rowset"]
            out.update([f["path"] for f in r["base"]] + [r["pk_index"]["path"], r["bloom"]["path"]])
        elif "add_delta" in a:
            out.add(a["add_delta"]["path"])
    return out


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
    root = storage.path(TABLETS)
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
    for name in storage.list("_log"):
        if name.startswith(".tmp-"):
            rel = f"_log/{name}"
            try:
                info = storage.fs.info(storage.path(rel))
            except FileNotFoundError:
                continue
            if now - _mtime(info) >= grace_seconds:
                out.append((rel, int(info.get("size") or 0)))
    return sorted(out)
