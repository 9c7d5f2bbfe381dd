"""The registry of mirrors in our table (specs/format.md §15, §16): for each Delta or Iceberg
mirror, the files of ours it references (Delta: its latest version; Iceberg: every snapshot its
metadata retains), so that our vacuum keeps them. The mirror (`interop`) writes it; vacuum
(`maintenance`) reads it.
"""
from __future__ import annotations

import hashlib
import json

from .storage import Storage

MIRRORS = "_mirrors"                    # in our table: what each mirror references


def _registry_name(mirror_uri: str) -> str:
    return f"{MIRRORS}/{hashlib.sha256(mirror_uri.encode()).hexdigest()[:32]}.json"


def mirrored_files(storage: Storage) -> set[str]:
    """Files of ours that some mirror references (vacuum keeps them)."""
    out: set[str] = set()
    for n in storage.list(MIRRORS):
        if n.endswith(".json"):
            try:
                out.update(json.loads(storage.read(f"{MIRRORS}/{n}"))["files"])
            except (FileNotFoundError, ValueError, KeyError):
                continue
    return out


def registered_mirror(storage: Storage, mirror_uri: str) -> dict | None:
    """The registry entry of one mirror (None: none, or unreadable)."""
    try:
        return json.loads(storage.read(_registry_name(mirror_uri)))
    except (FileNotFoundError, ValueError):
        return None


def register_mirror(storage: Storage, mirror_uri: str, table_version: int, files: set[str], **fields) -> None:
    """Record the files `mirror_uri` references, with the mirror's own version fields
    (`delta_version`; `format`, `iceberg_metadata_version`, `snapshots`)."""
    storage.write(_registry_name(mirror_uri), json.dumps(
        {"mirror": mirror_uri, **fields, "table_version": table_version, "files": sorted(files)}).encode())
