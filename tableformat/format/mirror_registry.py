"""The registry of Delta mirrors in our table (specs/format.md §15): for each mirror, the files
of ours its latest version references, so that our vacuum keeps them. The mirror (`interop`)
writes it; vacuum (`maintenance`) reads it.
"""
from __future__ import annotations

import hashlib
import json

from .storage import Storage

MIRRORS = "_mirrors"                    # in our table: what each mirror's latest version references


def _registry_name(mirror_uri: str) -> str:
    return f"{MIRRORS}/{hashlib.sha256(mirror_uri.encode()).hexdigest()[:32]}.json"


def mirrored_files(storage: Storage) -> set[str]:
    """Files of ours that the latest version of some Delta mirror references (vacuum keeps them)."""
    out: set[str] = set()
    for n in storage.list(MIRRORS):
        if n.endswith(".json"):
            try:
                out.update(json.loads(storage.read(f"{MIRRORS}/{n}"))["files"])
            except (FileNotFoundError, ValueError, KeyError):
                continue
    return out


def register_mirror(storage: Storage, mirror_uri: str, delta_version: int, table_version: int, files: set[str]) -> None:
    storage.write(_registry_name(mirror_uri), json.dumps(
        {"mirror": mirror_uri, "delta_version": delta_version, "table_version": table_version,
         "files": sorted(files)}).encode())
