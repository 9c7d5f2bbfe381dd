"""A zero-copy Apache Iceberg mirror: Iceberg table metadata (format v2) describing our table.

Iceberg's design matches Kudu's where it matters: columns have IDs (our Parquet fields `c<id>`
already carry them as Parquet field ids, and the `schema.name-mapping.default` property maps the
names too), data files are immutable, and deletes are positions in a file. So a live rowset is a
data file by absolute path, never copied, and its REDO DELETEs become one position-delete file in
the mirror's directory. Rowsets Iceberg cannot express are those Delta cannot (`delta_mirror.
inexpressible`) and are first rewritten by our merging compaction, as the Delta mirror does.

Each call adds one snapshot (Hadoop-catalog layout: `metadata/v<N>.metadata.json` created
put-if-absent, then `version-hint.text`), so earlier mirror runs stay readable by snapshot id or
timestamp. `gc.enabled=false` makes Iceberg's expire_snapshots and remove_orphan_files refuse to
delete files, which here are ours; our vacuum keeps every file a retained mirror snapshot
references (`_mirrors/`). The contract is specs/format.md §16.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import random
import time
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..format.constants import field_name
from ..format.errors import MirrorError, MissingDependencyError
from ..format.metadata import RowSetMeta, TableState
from ..format.mirror_registry import register_mirror, registered_mirror
from ..format.schema import value_from_json
from ..format.storage import Storage
from ..log.handle import TableHandle
from ..read.delta_tracker import deleted_mask
from .delta_mirror import compact_inexpressible, inexpressible

META = "metadata"
DATA = "data"
HINT = f"{META}/version-hint.text"
POS_PATH_ID, POS_POS_ID = 2147483546, 2147483545    # Iceberg's reserved ids of file_path and pos
STRING_BOUND_BYTES = 64                             # longer string bounds: lower truncated, upper left out
_ICEBERG_TYPE = {"bool": "boolean", "int8": "int", "int16": "int", "int32": "int", "int64": "long",
                 "float": "float", "double": "double", "date": "date", "unixtime_micros": "timestamptz",
                 "string": "string", "varchar": "string", "binary": "binary"}


def _pyiceberg():
    try:
        import pyiceberg.manifest as manifest
    except ImportError as e:
        raise MissingDependencyError("mirror_iceberg writes Iceberg manifests with pyiceberg: "
                                     "pip install 'tableformat[iceberg]'") from e
    return manifest


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


# --- locations and pyiceberg's FileIO over our Storage ---------------------------------------------
def iceberg_uri(storage: Storage, rel: str) -> str:
    """The absolute location of a file as Iceberg names it: scheme + path, not percent-encoded
    (Iceberg paths are plain strings, unlike Delta's URIs)."""
    p = storage.path(rel).rstrip("/")
    if storage.is_local:
        return "file://" + p
    if storage.is_hdfs:
        import urllib.parse
        return f"hdfs://{urllib.parse.urlsplit(storage.uri).netloc}" + p
    return f"{storage.protocol}://" + p


class _Bytes(io.BytesIO):
    def __init__(self, sink: dict, location: str):
        super().__init__()
        self._sink, self._loc = sink, location

    def close(self) -> None:
        if not self.closed:
            self._sink[self._loc] = self.getvalue()
        super().close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _storage_io(m: Storage, base: str):
    """pyiceberg's FileIO for the mirror's own files, through our Storage (local, S3, HDFS alike):
    reads come from Storage, writes collect in memory and are put by the caller (`flush`)."""
    from pyiceberg.io import FileIO, InputFile, OutputFile

    def rel(location: str) -> str:
        if not location.startswith(base + "/"):
            raise MirrorError(f"the Iceberg mirror at {base} names a file outside it: {location}")
        return location[len(base) + 1:]

    class In(InputFile):
        def __init__(self, location: str):
            super().__init__(location)
            self._data: bytes | None = None

        def _bytes(self) -> bytes:
            if self._data is None:
                self._data = m.read(rel(self.location))
            return self._data

        def __len__(self) -> int:
            return len(self._bytes())

        def exists(self) -> bool:
            return m.exists(rel(self.location))

        def open(self, seekable: bool = True):
            return io.BytesIO(self._bytes())

    class Out(OutputFile):
        def __init__(self, location: str, sink: dict):
            super().__init__(location)
            self._sink = sink

        def __len__(self) -> int:
            return len(self._sink[self.location])

        def exists(self) -> bool:
            return self.location in self._sink

        def to_input_file(self):
            return In(self.location)

        def create(self, overwrite: bool = False):
            return _Bytes(self._sink, self.location)

    class StorageIO(FileIO):
        def __init__(self):
            super().__init__({})
            self.written: dict[str, bytes] = {}

        def new_input(self, location: str):
            return In(location)

        def new_output(self, location: str):
            return Out(location, self.written)

        def delete(self, location) -> None:
            raise MirrorError("the Iceberg mirror never deletes files")

        def flush(self) -> None:
            for loc, data in self.written.items():
                m.write(rel(loc), data)

    return StorageIO()


# --- schema, statistics ------------------------------------------------------------------------
def iceberg_type(ctype) -> str:
    if ctype.kind == "decimal":
        return f"decimal({ctype.precision}, {ctype.scale})"
    return _ICEBERG_TYPE[ctype.kind]


def iceberg_schema(state: TableState, schema_id: int) -> dict:
    """Our schema as Iceberg's: field id = our column ID, the primary key as identifier fields."""
    fields = [{"id": c.id, "name": c.name, "required": not c.nullable, "type": iceberg_type(c.type)}
              for c in state.schema.columns]
    return {"type": "struct", "schema-id": schema_id, "fields": fields,
            "identifier-field-ids": [state.schema.column(n).id for n in state.schema.primary_key]}


def _pytype(ctype):
    from pyiceberg.types import (BinaryType, BooleanType, DateType, DecimalType, DoubleType, FloatType,
                                 IntegerType, LongType, StringType, TimestamptzType)
    if ctype.kind == "decimal":
        return DecimalType(ctype.precision, ctype.scale)
    return {"boolean": BooleanType, "int": IntegerType, "long": LongType, "float": FloatType, "double": DoubleType,
            "date": DateType, "timestamptz": TimestamptzType, "string": StringType,
            "binary": BinaryType}[_ICEBERG_TYPE[ctype.kind]]()


def _bounds(ctype, s: dict) -> tuple[bytes | None, bytes | None]:
    """Iceberg's lower/upper bound of one column of a file, from our statistics (§8.2), written
    only where every value of the file lies within them under every reader's comparison: no
    float bound where a NaN is or may be (Spark ranks NaN highest, Iceberg's spec leaves it out),
    zero widened to -0.0 / +0.0, strings exact up to 64 bytes (a longer minimum is truncated, a
    longer maximum left out), no binary bounds."""
    from pyiceberg.conversions import to_bytes
    lo, hi, k = s.get("min"), s.get("max"), ctype.kind
    if lo is None or hi is None or k == "binary":
        return None, None
    t = _pytype(ctype)
    if k in ("float", "double"):
        if s.get("nan", 1):
            return None, None
        lo, hi = float(lo), float(hi)
        if math.isnan(lo) or math.isnan(hi):
            return None, None
        lo, hi = (-0.0 if lo == 0 else lo), (0.0 if hi == 0 else hi)
        return to_bytes(t, lo), to_bytes(t, hi)
    if k in ("string", "varchar"):
        lb, hb = lo.encode(), hi.encode()
        if len(lb) > STRING_BOUND_BYTES:
            lb = lb[:STRING_BOUND_BYTES].decode(errors="ignore").encode()
        return lb, (hb if len(hb) <= STRING_BOUND_BYTES else None)
    if k == "date":
        lo, hi = value_from_json(ctype, lo), value_from_json(ctype, hi)
    elif k == "decimal":
        lo, hi = Decimal(lo), Decimal(hi)
    elif k == "unixtime_micros":
        lo, hi = int(lo), int(hi)
    return to_bytes(t, lo), to_bytes(t, hi)


def data_file(state: TableState, rs: RowSetMeta, uri: str):
    """The manifest's DataFile of a rowset's base file: counts and bounds of the file's rows."""
    mf = _pyiceberg()
    ref = rs.base[0]
    have = set(ref.column_ids)
    counts, nulls, nans, lower, upper = {}, {}, {}, {}, {}
    for c in state.schema.columns:
        if c.id not in have:                  # added later without a read default: all NULL (§11)
            counts[c.id] = nulls[c.id] = rs.num_rows
            continue
        s = rs.stats.get(c.id)
        if s is None:
            continue
        counts[c.id] = rs.num_rows
        if s.get("nulls") is not None:
            nulls[c.id] = int(s["nulls"])
        if c.type.kind in ("float", "double") and s.get("nan") is not None:
            nans[c.id] = int(s["nan"])
        lo, hi = _bounds(c.type, s)
        if lo is not None:
            lower[c.id] = lo
        if hi is not None:
            upper[c.id] = hi
    return mf.DataFile.from_args(
        content=mf.DataFileContent.DATA, file_path=uri, file_format=mf.FileFormat.PARQUET,
        partition=mf.Record(), record_count=rs.num_rows, file_size_in_bytes=ref.size,
        value_counts=counts, null_value_counts=nulls, nan_value_counts=nans,
        lower_bounds=lower, upper_bounds=upper, sort_order_id=None)


def _delete_file(m: Storage, base: str, data_uri: str, positions: np.ndarray):
    """The position-delete file of one data file: (file_path, pos) rows sorted by pos, named by a
    digest of its content, so an unchanged set of deleted rows is recognised and never rewritten."""
    mf = _pyiceberg()
    pos = np.sort(positions.astype(np.int64))
    digest = hashlib.sha256(data_uri.encode() + b"\0" + pos.tobytes()).hexdigest()[:40]
    rel = f"{DATA}/deletes-{digest}.parquet"
    schema = pa.schema([pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": str(POS_PATH_ID).encode()}),
                        pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": str(POS_POS_ID).encode()})])
    if m.exists(rel):
        size = m.size(rel)
    else:
        buf = pa.BufferOutputStream()
        pq.write_table(pa.table([pa.array([data_uri] * len(pos), pa.string()), pa.array(pos)], schema=schema), buf,
                       compression="zstd")
        size = m.write(rel, buf.getvalue())
    from pyiceberg.conversions import to_bytes
    from pyiceberg.types import LongType
    return mf.DataFile.from_args(
        content=mf.DataFileContent.POSITION_DELETES, file_path=f"{base}/{rel}", file_format=mf.FileFormat.PARQUET,
        partition=mf.Record(), record_count=len(pos), file_size_in_bytes=size,
        value_counts={POS_PATH_ID: len(pos), POS_POS_ID: len(pos)},
        null_value_counts={POS_PATH_ID: 0, POS_POS_ID: 0},
        lower_bounds={POS_PATH_ID: data_uri.encode(), POS_POS_ID: to_bytes(LongType(), int(pos[0]))},
        upper_bounds={POS_PATH_ID: data_uri.encode(), POS_POS_ID: to_bytes(LongType(), int(pos[-1]))})


# --- the mirror's metadata ---------------------------------------------------------------------
@dataclass
class _MirrorState:
    version: int = 0                                   # N of the latest v<N>.metadata.json; 0: none
    meta: dict | None = None
    data: dict[str, Any] = field(default_factory=dict)       # file_path -> live data ManifestEntry
    deletes: dict[str, Any] = field(default_factory=dict)    # data file_path -> its delete ManifestEntry
    table_version: int | None = None


def metadata_versions(m: Storage) -> list[int]:
    out = []
    for n in m.list(META):
        if n.startswith("v") and n.endswith(".metadata.json") and n[1:-14].isdigit():
            out.append(int(n[1:-14]))
    return sorted(out)


def _snapshot(meta: dict, sid: int | None) -> dict | None:
    return next((s for s in meta.get("snapshots", []) if s["snapshot-id"] == sid), None)


def _entries(fio, meta: dict, snap: dict) -> list:
    mf = _pyiceberg()
    out = []
    for man in mf.read_manifest_list(fio.new_input(snap["manifest-list"])):
        out.extend(man.fetch_manifest_entry(fio, discard_deleted=True))
    return out


def read_mirror(m: Storage, fio) -> _MirrorState:
    """The latest metadata version (as Hadoop catalogs find it: the highest v<N> present, so a
    version-hint left behind by an interrupted run is no harm) and its current snapshot's files."""
    mf = _pyiceberg()
    vs = metadata_versions(m)
    st = _MirrorState()
    if not vs:
        return st
    st.version = vs[-1]
    st.meta = json.loads(m.read(f"{META}/v{st.version}.metadata.json"))
    if st.meta.get("format-version") != 2:
        raise MirrorError(f"the Iceberg table at {m.uri} is format version {st.meta.get('format-version')}, "
                          "not a mirror this engine wrote: mirror into a new directory")
    snap = _snapshot(st.meta, st.meta.get("current-snapshot-id"))
    if snap is None:
        return st
    v = snap.get("summary", {}).get("tableformat.version")
    st.table_version = int(v) if v is not None else None
    for e in _entries(fio, st.meta, snap):
        f = e.data_file
        if f.content == mf.DataFileContent.DATA:
            st.data[f.file_path] = e
        elif f.content == mf.DataFileContent.POSITION_DELETES and (f.lower_bounds or {}).get(POS_PATH_ID):
            st.deletes[f.lower_bounds[POS_PATH_ID].decode()] = e
    return st


def _write_hint(m: Storage, version: int) -> None:
    try:
        if m.read(HINT).decode().strip() == str(version):
            return
    except FileNotFoundError:
        pass
    m.write(HINT, str(version).encode())


def mirror_iceberg(handle: TableHandle, path: str, storage_options: dict | None = None,
                   compact: bool = True) -> IcebergMirrorResult:
    """Add one snapshot to the Iceberg table at `path` describing our latest version (the facade
    checked the arguments); compactions run through `maintenance`, as `Table`'s do."""
    mf = _pyiceberg()
    compacted = compact_inexpressible(handle, "mirror_iceberg") if compact else {}
    state = handle.refresh()
    storage = handle.storage
    m = Storage(path, storage_options)
    base = iceberg_uri(m, "")
    fio = _storage_io(m, base)
    prev = read_mirror(m, fio)
    if prev.meta is not None and prev.table_version == state.version:
        _write_hint(m, prev.version)                  # a run killed between commit and hint
        return IcebergMirrorResult(path, None, prev.version, state.version, len(prev.data), compacted=compacted)
    meta = prev.meta or {}
    seq = int(meta.get("last-sequence-number", 0)) + 1
    taken = {s["snapshot-id"] for s in meta.get("snapshots", [])}
    sid = random.SystemRandom().getrandbits(62) + 1
    while sid in taken:
        sid = random.SystemRandom().getrandbits(62) + 1
    schemas, schema_id = _schemas(state, meta)
    pyschema = _pyschema(state, schema_id)
    spec = _unpartitioned()

    data_new, dels_new, ours = {}, {}, {}
    for rs in sorted(state.rowsets.values(), key=lambda r: r.id):
        if rs.history_only:
            continue
        why = inexpressible(state, rs, storage)
        if why:
            raise MirrorError(f"rowset {rs.id} cannot be mirrored ({why}); run mirror_iceberg with compact=True")
        uri = iceberg_uri(storage, rs.base[0].path)
        ours[uri] = rs.base[0].path
        data_new[uri] = prev.data[uri].data_file if uri in prev.data else data_file(state, rs, uri)
        mask = deleted_mask(storage, rs, state.deltas_of(rs.id))
        if mask is not None and mask.any():
            dels_new[uri] = _delete_file(m, base, uri, np.flatnonzero(mask))

    manifests = []
    added = removed = new_dels = 0
    if data_new or prev.data:
        with mf.write_manifest(2, spec, pyschema, fio.new_output(f"{base}/{META}/{uuid.uuid4()}-m0.avro"), sid,
                               "deflate") as w:
            for uri, f in data_new.items():
                if uri in prev.data:
                    w.existing(prev.data[uri])
                else:
                    w.add(mf.ManifestEntry.from_args(status=mf.ManifestEntryStatus.ADDED, snapshot_id=sid,
                                                     data_file=f))
                    added += 1
            for uri, e in prev.data.items():
                if uri not in data_new:
                    w.delete(e)
                    removed += 1
        manifests.append(w.to_manifest_file())
    old_dels = {e.data_file.file_path: e for e in prev.deletes.values()}
    new_paths = {f.file_path for f in dels_new.values()}
    if dels_new or old_dels:
        with _DeleteManifestWriter(spec, pyschema, fio.new_output(f"{base}/{META}/{uuid.uuid4()}-m1.avro"), sid,
                                   "deflate") as w:
            for f in dels_new.values():
                if f.file_path in old_dels:
                    w.existing(old_dels[f.file_path])
                else:
                    w.add(mf.ManifestEntry.from_args(status=mf.ManifestEntryStatus.ADDED, snapshot_id=sid,
                                                     data_file=f))
                    new_dels += 1
            for p, e in old_dels.items():
                if p not in new_paths:
                    w.delete(e)
        manifests.append(w.to_manifest_file())
    list_loc = f"{base}/{META}/snap-{sid}-1-{uuid.uuid4()}.avro"
    parent = meta.get("current-snapshot-id")
    with mf.write_manifest_list(2, fio.new_output(list_loc), sid, parent, seq, "deflate") as lw:
        lw.add_manifests(manifests)

    now_ms = int(time.time() * 1000)
    snaps = list(meta.get("snapshots", []))
    ts_ms = max([int(state.timestamp) // 1000] + [s["timestamp-ms"] for s in snaps])
    summary = {"operation": "overwrite", "tableformat.version": str(state.version),
               "tableformat.timestamp": str(int(state.timestamp)), "tableformat.table-id": state.table_id,
               "tableformat.compacted": json.dumps(sorted(compacted)),
               "added-data-files": str(added), "deleted-data-files": str(removed),
               "added-delete-files": str(new_dels), "total-data-files": str(len(data_new)),
               "total-delete-files": str(len(dels_new)),
               "total-records": str(sum(f.record_count for f in data_new.values())),
               "total-position-deletes": str(sum(f.record_count for f in dels_new.values()))}
    snap = {"snapshot-id": sid, "sequence-number": seq, "timestamp-ms": ts_ms, "manifest-list": list_loc,
            "summary": summary, "schema-id": schema_id}
    if parent is not None:
        snap["parent-snapshot-id"] = parent
    version = prev.version + 1
    new_meta = {
        "format-version": 2, "table-uuid": meta.get("table-uuid") or str(uuid.uuid4()), "location": base,
        "last-sequence-number": seq, "last-updated-ms": max(now_ms, ts_ms),
        "last-column-id": max([int(meta.get("last-column-id", 0)), state.schema.next_column_id - 1,
                               *(c.id for c in state.schema.columns)]),
        "current-schema-id": schema_id, "schemas": schemas,
        "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}], "last-partition-id": 999,
        "default-sort-order-id": 0, "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": _properties(state, storage, meta, schemas),
        "current-snapshot-id": sid, "refs": {"main": {"snapshot-id": sid, "type": "branch"}},
        "snapshots": snaps + [snap],
        "snapshot-log": list(meta.get("snapshot-log", [])) + [{"timestamp-ms": ts_ms, "snapshot-id": sid}],
        "metadata-log": list(meta.get("metadata-log", [])) + (
            [{"timestamp-ms": meta["last-updated-ms"], "metadata-file": f"{base}/{META}/v{prev.version}.metadata.json"}]
            if prev.meta else []),
    }
    fio.flush()                                        # manifests and list: new names, nothing refers to them yet
    # our vacuum must keep what every retained snapshot references, the new one included, before it is in
    register_mirror(storage, m.uri, state.version, _retained_files(storage, m, fio, prev, ours, sid),
                    format="iceberg", iceberg_metadata_version=version,
                    snapshots=sorted([s["snapshot-id"] for s in snaps] + [sid]))
    if not m.put_if_absent(f"{META}/v{version}.metadata.json", json.dumps(new_meta, indent=1).encode()):
        raise MirrorError(f"another writer committed metadata version {version} of the Iceberg mirror at {path} "
                          "meanwhile; retry mirror_iceberg")
    _write_hint(m, version)
    return IcebergMirrorResult(path, sid, version, state.version, len(data_new), added, removed, new_dels, compacted)


class _DeleteManifestWriter:
    """pyiceberg's v2 manifest writer, for a delete manifest (its own writes only data manifests)."""

    def __new__(cls, *args):
        mf = _pyiceberg()

        class W(mf.ManifestWriterV2):
            def content(self):
                return mf.ManifestContent.DELETES

            @property
            def _meta(self):
                return {**super()._meta, "content": "deletes"}
        return W(*args)


def _unpartitioned():
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
    return UNPARTITIONED_PARTITION_SPEC


def _pyschema(state: TableState, schema_id: int):
    from pyiceberg.schema import Schema
    from pyiceberg.types import NestedField
    return Schema(*[NestedField(c.id, c.name, _pytype(c.type), required=not c.nullable) for c in state.schema.columns],
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


def _properties(state: TableState, storage: Storage, meta: dict, schemas: list[dict]) -> dict:
    """gc.enabled=false (Iceberg's cleanup would delete our files) and the name mapping of every
    column any schema held to its `c<id>` Parquet field, for files read without field ids."""
    ids = sorted({f["id"] for s in schemas for f in s["fields"]})
    props = dict(meta.get("properties", {}))
    props.update({"gc.enabled": "false", "write.metadata.delete-after-commit.enabled": "false",
                  "schema.name-mapping.default": json.dumps([{"field-id": i, "names": [field_name(i)]} for i in ids]),
                  "tableformat.table": storage.uri, "tableformat.table-id": state.table_id})
    return props


def _rel(storage: Storage, uri: str) -> str | None:
    prefix = iceberg_uri(storage, "") + "/"
    return uri[len(prefix):] if uri.startswith(prefix) else None


def _retained_files(storage: Storage, m: Storage, fio, prev: _MirrorState, ours: dict[str, str],
                    sid: int) -> set[str]:
    """Our files that some snapshot of the new metadata references: the previous registration's
    when it covered exactly the snapshots still retained (else read from their manifests), plus
    the new snapshot's."""
    files = set(ours.values())
    if prev.meta is None:
        return files
    retained = {s["snapshot-id"] for s in prev.meta.get("snapshots", [])}
    reg = registered_mirror(storage, m.uri)
    if reg is not None and set(reg.get("snapshots", [])) == retained:
        return files | set(reg["files"])
    mf = _pyiceberg()
    seen: set[str] = set()
    for s in prev.meta.get("snapshots", []):
        for man in mf.read_manifest_list(fio.new_input(s["manifest-list"])):
            if man.manifest_path in seen or man.content != mf.ManifestContent.DATA:
                continue
            seen.add(man.manifest_path)
            for e in man.fetch_manifest_entry(fio, discard_deleted=True):
                r = _rel(storage, e.data_file.file_path)
                if r is not None:
                    files.add(r)
    return files
