"""A zero-copy Apache Iceberg mirror: Iceberg table metadata (format v2) describing our table.

Iceberg's design matches Kudu's where it matters: columns have IDs (our Parquet fields `c<id>`
already carry them as Parquet field ids, and the `schema.name-mapping.default` property maps the
names too), data files are immutable, and deletes are positions in a file. So a live rowset is a
data file by absolute path, never copied, and its REDO DELETEs become one position-delete file in
the mirror's directory (`iceberg_files`). Rowsets Iceberg cannot express are those Delta cannot
(`delta_mirror.inexpressible`) and are first rewritten by our merging compaction, as the Delta
mirror does.

Each call adds one snapshot (Hadoop-catalog layout: `metadata/v<N>.metadata.json` created
put-if-absent, then `version-hint.text`), so earlier mirror runs stay readable by snapshot id or
timestamp. `gc.enabled=false` makes Iceberg's expire_snapshots and remove_orphan_files refuse to
delete files, which here are ours; our vacuum keeps every file a retained mirror snapshot
references (`_mirrors/`). The contract is specs/format.md §16.
"""
from __future__ import annotations

import json
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..format.constants import field_name
from ..format.errors import MirrorError
from ..format.metadata import TableState
from ..format.mirror_registry import register_mirror, registered_mirror
from ..format.storage import Storage
from ..log.handle import TableHandle
from ..read.delta_tracker import deleted_mask
from .delta_mirror import compact_inexpressible, inexpressible
from .iceberg_files import (data_file, delete_file, delete_manifest_writer, iceberg_schema,
                            iceberg_uri, pyiceberg_manifest, pytype, storage_io)

META = "metadata"
HINT = f"{META}/version-hint.text"


@dataclass
class IcebergMirrorResult:
    """What one `mirror_iceberg` call did: the snapshot added (None: the mirror already described
    this version), the metadata version written, our version it describes, data files in the
    snapshot (added/removed from the previous one), position-delete files written, and the
    rowsets our compaction rewrote first because Iceberg could not express them (id -> why)."""

    path: str
    snapshot_id: int | None
    metadata_version: int
    table_version: int
    files: int
    added: int = 0
    removed: int = 0
    delete_files: int = 0
    compacted: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        if self.snapshot_id is None:
            return f"Iceberg mirror {self.path} already at version {self.table_version}"
        c = f"; compacted first: {len(self.compacted)} rowset(s)" if self.compacted else ""
        return (f"Iceberg mirror {self.path}: snapshot {self.snapshot_id} (metadata v{self.metadata_version}) = "
                f"our version {self.table_version}, {self.files} data file(s) (+{self.added} -{self.removed}), "
                f"{self.delete_files} new position-delete file(s){c}")


# --- the previous state --------------------------------------------------------------------------
@dataclass
class _MirrorState:
    version: int = 0                                   # N of the latest v<N>.metadata.json; 0: none
    meta: dict | None = None
    data: dict[str, Any] = field(default_factory=dict)       # file_path -> live data ManifestEntry
    deletes: dict[str, Any] = field(default_factory=dict)    # delete file_path -> its live ManifestEntry
    table_version: int | None = None


def metadata_versions(m: Storage) -> list[int]:
    """The N of every `v<N>.metadata.json` (Hadoop layout), ascending."""
    return sorted(int(n[1:-14]) for n in m.list(META)
                  if n.startswith("v") and n.endswith(".metadata.json") and n[1:-14].isdigit())


def read_mirror(m: Storage, fio) -> _MirrorState:
    """The latest metadata version (as Hadoop catalogs find it: the highest v<N> present, so a
    version-hint left behind by an interrupted run is no harm) and its current snapshot's files."""
    mf = pyiceberg_manifest()
    vs = metadata_versions(m)
    st = _MirrorState()
    if not vs:
        return st
    st.version = vs[-1]
    st.meta = json.loads(m.read(f"{META}/v{st.version}.metadata.json"))
    if st.meta.get("format-version") != 2:
        raise MirrorError(f"the Iceberg table at {m.uri} is format version {st.meta.get('format-version')}, "
                          "not a mirror this engine wrote: mirror into a new directory")
    snap = next((s for s in st.meta.get("snapshots", []) if s["snapshot-id"] == st.meta.get("current-snapshot-id")),
                None)
    if snap is None:
        return st
    v = snap.get("summary", {}).get("tableformat.version")
    st.table_version = int(v) if v is not None else None
    for man in mf.read_manifest_list(fio.new_input(snap["manifest-list"])):
        for e in man.fetch_manifest_entry(fio, discard_deleted=True):
            f = e.data_file
            if f.content == mf.DataFileContent.DATA:
                st.data[f.file_path] = e
            elif f.content == mf.DataFileContent.POSITION_DELETES:
                st.deletes[f.file_path] = e
    return st


def _write_hint(m: Storage, version: int) -> None:
    try:
        if m.read(HINT).decode().strip() == str(version):
            return
    except FileNotFoundError:
        pass
    m.write(HINT, str(version).encode())


# --- one run ---------------------------------------------------------------------------------------
@dataclass
class _Snapshot:
    """The new snapshot being assembled: its files, and what changed from the previous one."""

    sid: int
    seq: int
    data: dict[str, Any] = field(default_factory=dict)      # file_path -> DataFile
    deletes: dict[str, Any] = field(default_factory=dict)   # delete file_path -> DataFile
    ours: dict[str, str] = field(default_factory=dict)      # file_path -> our relative path
    added: int = 0
    removed: int = 0
    new_deletes: int = 0
    manifests: list = field(default_factory=list)


def mirror_iceberg(handle: TableHandle, path: str, storage_options: dict | None = None,
                   compact: bool = True, keep_snapshots: int | None = None) -> IcebergMirrorResult:
    """Add one snapshot to the Iceberg table at `path` describing our latest version (the facade
    checked the arguments); compactions run through `maintenance`, as `Table`'s do. With
    `keep_snapshots`, the metadata keeps only that many newest snapshots, so our vacuum may free
    the files only older ones read (Iceberg's expire_snapshots refuses while gc.enabled is false)."""
    pyiceberg_manifest()
    compacted = compact_inexpressible(handle, "mirror_iceberg") if compact else {}
    state = handle.refresh()
    m = Storage(path, storage_options)
    base = iceberg_uri(m, "")
    fio = storage_io(m, base)
    prev = read_mirror(m, fio)
    if prev.meta is not None and prev.table_version == state.version:
        _write_hint(m, prev.version)                  # a run killed between commit and hint
        return IcebergMirrorResult(path, None, prev.version, state.version, len(prev.data), compacted=compacted)
    meta = prev.meta or {}
    taken = {s["snapshot-id"] for s in meta.get("snapshots", [])}
    olds = [s["snapshot-id"] for s in sorted(meta.get("snapshots", []), key=lambda s: s["sequence-number"])]
    expired = set(olds[:max(0, len(olds) + 1 - keep_snapshots)]) if keep_snapshots else set()
    sid = next(x for x in iter(lambda: random.SystemRandom().getrandbits(62) + 1, 0) if x not in taken)
    snap = _Snapshot(sid, int(meta.get("last-sequence-number", 0)) + 1)
    schemas, schema_id = _schemas(state, meta)
    _live_files(handle, state, m, base, prev, snap)
    _write_manifests(fio, base, prev, snap, _pyschema(state, schema_id))
    list_loc = f"{base}/{META}/snap-{sid}-1-{uuid.uuid4()}.avro"
    with pyiceberg_manifest().write_manifest_list(2, fio.new_output(list_loc), sid, meta.get("current-snapshot-id"),
                                                  snap.seq, "deflate") as lw:
        lw.add_manifests(snap.manifests)
    version = prev.version + 1
    new_meta = _metadata(state, handle.storage, base, prev, snap, schemas, schema_id, list_loc, compacted, expired)
    fio.flush()                                        # manifests and list: new names, nothing refers to them yet
    # our vacuum must keep what every retained snapshot references, the new one included, before it is in
    register_mirror(handle.storage, m.uri, state.version,
                    _retained_files(handle.storage, m, fio, prev, snap, expired),
                    format="iceberg", iceberg_metadata_version=version, snapshots=sorted([*(taken - expired), sid]))
    if not m.put_if_absent(f"{META}/v{version}.metadata.json", json.dumps(new_meta, indent=1).encode()):
        _register_winner(handle.storage, m, fio)    # ours may have overwritten the winner's registration
        raise MirrorError(f"another writer committed metadata version {version} of the Iceberg mirror at {path} "
                          "meanwhile; retry mirror_iceberg")
    _write_hint(m, version)
    return IcebergMirrorResult(path, sid, version, state.version, len(snap.data), snap.added, snap.removed,
                               snap.new_deletes, compacted)


def _live_files(handle: TableHandle, state: TableState, m: Storage, base: str, prev: _MirrorState,
                snap: _Snapshot) -> None:
    """Each live rowset's data file (its previous entry's DataFile where it was mirrored before)
    and, where rows are deleted, its position-delete file (written now unless its content exists)."""
    storage = handle.storage
    for rs in sorted(state.rowsets.values(), key=lambda r: r.id):
        if rs.history_only:
            continue
        why = inexpressible(state, rs, storage)
        if why:
            raise MirrorError(f"rowset {rs.id} cannot be mirrored ({why}); run mirror_iceberg with compact=True")
        uri = iceberg_uri(storage, rs.base[0].path)
        snap.ours[uri] = rs.base[0].path
        snap.data[uri] = prev.data[uri].data_file if uri in prev.data else data_file(state, rs, uri)
        mask = deleted_mask(storage, rs, state.deltas_of(rs.id))
        if mask is not None and mask.any():
            f = delete_file(m, base, uri, np.flatnonzero(mask))
            snap.deletes[f.file_path] = f


def _write_manifests(fio, base: str, prev: _MirrorState, snap: _Snapshot, pyschema) -> None:
    """One data manifest and one delete manifest (when there is anything to list): entries new in
    this snapshot ADDED, kept ones EXISTING with their sequence numbers, gone ones DELETED."""
    mf = pyiceberg_manifest()
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC as spec

    def fill(w, new: dict, old: dict) -> tuple[int, int]:
        added = removed = 0
        for p, f in new.items():
            if p in old:
                w.existing(old[p])
            else:
                w.add(mf.ManifestEntry.from_args(status=mf.ManifestEntryStatus.ADDED, snapshot_id=snap.sid,
                                                 data_file=f))
                added += 1
        for p, e in old.items():
            if p not in new:
                w.delete(e)
                removed += 1
        return added, removed
    if snap.data or prev.data:
        out = fio.new_output(f"{base}/{META}/{uuid.uuid4()}-m0.avro")
        with mf.write_manifest(2, spec, pyschema, out, snap.sid, "deflate") as w:
            snap.added, snap.removed = fill(w, snap.data, prev.data)
        snap.manifests.append(w.to_manifest_file())
    if snap.deletes or prev.deletes:
        with delete_manifest_writer(spec, pyschema, fio.new_output(f"{base}/{META}/{uuid.uuid4()}-m1.avro"),
                                    snap.sid) as w:
            snap.new_deletes, _ = fill(w, snap.deletes, prev.deletes)
        snap.manifests.append(w.to_manifest_file())


def _pyschema(state: TableState, schema_id: int):
    from pyiceberg.schema import Schema
    from pyiceberg.types import NestedField
    return Schema(*[NestedField(c.id, c.name, pytype(c.type), required=not c.nullable) for c in state.schema.columns],
                  schema_id=schema_id)


def _schemas(state: TableState, meta: dict) -> tuple[list[dict], int]:
    """The metadata's schemas, with ours appended (a new schema id) when it differs from the current."""
    schemas = list(meta.get("schemas", []))
    cur = next((s for s in schemas if s["schema-id"] == meta.get("current-schema-id")), None)
    want = iceberg_schema(state, 0)
    strip = lambda s: {k: v for k, v in s.items() if k != "schema-id"}  # noqa: E731
    if cur is not None and strip(cur) == strip(want):
        return schemas, cur["schema-id"]
    sid = max((s["schema-id"] for s in schemas), default=-1) + 1
    return schemas + [iceberg_schema(state, sid)], sid


def _metadata(state: TableState, storage: Storage, base: str, prev: _MirrorState, snap: _Snapshot,
              schemas: list[dict], schema_id: int, list_loc: str, compacted: dict, expired: set[int]) -> dict:
    """The next `v<N>.metadata.json`: the previous one with the new snapshot, schema and properties,
    without the `expired` snapshots."""
    meta = prev.meta or {}
    snaps = [s for s in meta.get("snapshots", []) if s["snapshot-id"] not in expired]
    ts_ms = max([int(state.timestamp) // 1000] + [s["timestamp-ms"] for s in snaps])
    summary = {"operation": "overwrite", "tableformat.version": str(state.version),
               "tableformat.timestamp": str(int(state.timestamp)), "tableformat.table-id": state.table_id,
               "tableformat.compacted": json.dumps(sorted(compacted)),
               "added-data-files": str(snap.added), "deleted-data-files": str(snap.removed),
               "added-delete-files": str(snap.new_deletes), "total-data-files": str(len(snap.data)),
               "total-delete-files": str(len(snap.deletes)),
               "total-records": str(sum(f.record_count for f in snap.data.values())),
               "total-position-deletes": str(sum(f.record_count for f in snap.deletes.values()))}
    new = {"snapshot-id": snap.sid, "sequence-number": snap.seq, "timestamp-ms": ts_ms, "manifest-list": list_loc,
           "summary": summary, "schema-id": schema_id}
    if meta.get("current-snapshot-id") is not None:
        new["parent-snapshot-id"] = meta["current-snapshot-id"]
    prev_file = [{"timestamp-ms": meta["last-updated-ms"], "metadata-file": f"{base}/{META}/v{prev.version}.metadata.json"}
                 ] if prev.meta else []
    return {
        "format-version": 2, "table-uuid": meta.get("table-uuid") or str(uuid.uuid4()), "location": base,
        "last-sequence-number": snap.seq, "last-updated-ms": max(int(time.time() * 1000), ts_ms),
        "last-column-id": max([int(meta.get("last-column-id", 0)), state.schema.next_column_id - 1,
                               *(c.id for c in state.schema.columns)]),
        "current-schema-id": schema_id, "schemas": schemas,
        "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}], "last-partition-id": 999,
        "default-sort-order-id": 0, "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": _properties(state, storage, meta, schemas),
        "current-snapshot-id": snap.sid, "refs": {"main": {"snapshot-id": snap.sid, "type": "branch"}},
        "snapshots": snaps + [new],
        "snapshot-log": [e for e in meta.get("snapshot-log", []) if e["snapshot-id"] not in expired]
        + [{"timestamp-ms": ts_ms, "snapshot-id": snap.sid}],
        "metadata-log": list(meta.get("metadata-log", [])) + prev_file,
    }


def _properties(state: TableState, storage: Storage, meta: dict, schemas: list[dict]) -> dict:
    """gc.enabled=false (Iceberg's cleanup would delete our files) and the name mapping of every
    column any schema held to its `c<id>` Parquet field, for files read without field ids."""
    ids = sorted({f["id"] for s in schemas for f in s["fields"]})
    props = dict(meta.get("properties", {}))
    props.update({"gc.enabled": "false", "write.metadata.delete-after-commit.enabled": "false",
                  "schema.name-mapping.default": json.dumps([{"field-id": i, "names": [field_name(i)]} for i in ids]),
                  "tableformat.table": storage.uri, "tableformat.table-id": state.table_id})
    return props


def _register_winner(storage: Storage, m: Storage, fio) -> None:
    """After losing the race for a metadata version: register what the winner's metadata retains,
    read from its manifests (our registration, written before the race was lost, may have
    replaced the winner's)."""
    cur = read_mirror(m, fio)
    snaps = sorted(s["snapshot-id"] for s in (cur.meta or {}).get("snapshots", []))
    files = _manifest_files(storage, fio, cur.meta or {})
    register_mirror(storage, m.uri, cur.table_version if cur.table_version is not None else -1, files,
                    format="iceberg", iceberg_metadata_version=cur.version, snapshots=snaps)


def _manifest_files(storage: Storage, fio, meta: dict, expired: frozenset = frozenset()) -> set[str]:
    """Our files that the data manifests of every snapshot of `meta` (but the expired) list as live."""
    mf = pyiceberg_manifest()
    prefix = iceberg_uri(storage, "") + "/"
    files: set[str] = set()
    seen: set[str] = set()
    for s in meta.get("snapshots", []):
        if s["snapshot-id"] in expired:
            continue
        for man in mf.read_manifest_list(fio.new_input(s["manifest-list"])):
            if man.manifest_path in seen or man.content != mf.ManifestContent.DATA:
                continue
            seen.add(man.manifest_path)
            files.update(e.data_file.file_path[len(prefix):] for e in man.fetch_manifest_entry(fio)
                         if e.data_file.file_path.startswith(prefix))
    return files


def _retained_files(storage: Storage, m: Storage, fio, prev: _MirrorState, snap: _Snapshot,
                    expired: set[int]) -> set[str]:
    """Our files that some snapshot of the new metadata references: the previous registration's
    when it covered exactly the snapshots still retained (else read from their manifests), plus
    the new snapshot's."""
    files = set(snap.ours.values())
    if prev.meta is None:
        return files
    retained = {s["snapshot-id"] for s in prev.meta.get("snapshots", [])} - expired
    reg = registered_mirror(storage, m.uri)
    if reg is not None and set(reg.get("snapshots", [])) == retained:
        return files | set(reg["files"])
    return files | _manifest_files(storage, fio, prev.meta, frozenset(expired))
