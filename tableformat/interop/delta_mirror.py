"""A zero-copy Delta Lake mirror: a Delta log that describes one version of our table.

Kudu keeps a rowset's base data immutable and tracks deletes beside it; Delta
Lake's deletion vectors do the same, so a rowset whose only deltas are
deletes is a Delta "logical file": our base Parquet file (by absolute path,
never copied) plus a deletion vector of its deleted rowids. Column mapping
(`name` mode) maps each column to our `c<id>` Parquet field, so renames and
dropped columns cost nothing. Rowsets Delta cannot express (pending REDO
updates or REINSERTs, several column groups, a column added with a read
default the file lacks, float footer statistics written before §5's rule that
hide NaN) are first rewritten by our own merging compaction.

Each call writes one Delta commit holding only the difference from the last
mirrored version (`remove` + `add` actions; a file whose deletes grew gets a
new deletion vector), with our version and timestamp in `commitInfo`. The
files the latest mirrored version references are registered in our table
(`_mirrors/`), and our vacuum keeps them. The contract is specs/format.md §15.
"""
from __future__ import annotations

import json
import struct
import time
import urllib.parse
import uuid
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..format.mirror_registry import register_mirror
from ..log.handle import TableHandle
from ..maintenance.compaction_policy import CompactionAction
from ..maintenance.maintenance import compact_action
from ..read.delta_tracker import deleted_mask
from ..format.constants import field_name
from ..format.cfile_set import parquet_file
from ..format.deltafile import REDO
from ..format.errors import InvalidOptionError, MirrorError, MissingDependencyError
from ..format.metadata import RowSetMeta, TableState
from ..format.storage import Storage, check_outside_table
from ..format.schema import value_from_json

LOG = "_delta_log"
DV_MAGIC = 1681511377                   # Delta's RoaringBitmapArray magic number (PROTOCOL.md)
FEATURES = ["columnMapping", "deletionVectors"]
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_STATS_KINDS = {"int8", "int16", "int32", "int64", "float", "double", "date", "unixtime_micros", "decimal",
                "string", "varchar"}


@dataclass
class MirrorResult:
    """What one `mirror_delta` call did: the Delta version written (None: the mirror already
    described this version), our version it describes, the files added and removed, and the
    rowsets our compaction rewrote first because Delta could not express them (id -> why)."""

    path: str
    delta_version: int | None
    table_version: int
    files: int
    added: int = 0
    removed: int = 0
    deletion_vectors: int = 0
    compacted: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        if self.delta_version is None:
            return f"Delta mirror {self.path} already at version {self.table_version}"
        c = f"; compacted first: {len(self.compacted)} rowset(s)" if self.compacted else ""
        return (f"Delta mirror {self.path}: Delta version {self.delta_version} = our version {self.table_version}, "
                f"{self.files} file(s) (+{self.added} -{self.removed}), {self.deletion_vectors} deletion vector(s){c}")


# --- what Delta cannot express ------------------------------------------------------------------
def inexpressible(state: TableState, rs: RowSetMeta, storage: Storage | None = None) -> str | None:
    """Why a live rowset cannot be a Delta logical file as it stands (None: it can). With
    `storage`, a base file's footer is read where its float statistics may hide NaN."""
    if len(rs.base) > 1:
        return "several column groups"
    redo = [d for d in state.deltas_of(rs.id) if d.kind == REDO]
    if any(d.update_counts for d in redo):
        return "pending REDO updates"
    if any(d.reinsert_count for d in redo):
        return "REINSERT records (rows deleted and inserted again with new values)"
    have = set(rs.base[0].column_ids)
    for c in state.schema.columns:
        if c.id not in have and c.read_default is not None:
            return f"column {c.name!r} added with a read default its base file lacks"
    return _footer_hides_nan(storage, state, rs) if storage is not None else None


def _footer_hides_nan(storage: Storage, state: TableState, rs: RowSetMeta) -> str | None:
    """A base file written before specs §5's footer rule: a float column that holds NaN (the
    log's statistics say so, or do not say) with footer min/max that leave it out, so Delta's
    readers, pruning row groups by them, would drop NaN rows. Its rewrite follows the rule."""
    ref = rs.base[0]
    names = {field_name(c.id): c.name for c in state.schema.columns
             if c.type.kind in ("float", "double") and c.id in ref.column_ids
             and (rs.stats.get(c.id) or {}).get("nan", 1)}
    if not names:
        return None
    md = parquet_file(storage, ref).metadata
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for j in range(rg.num_columns):
            cc = rg.column(j)
            if cc.path_in_schema in names and cc.statistics is not None and cc.statistics.has_min_max:
                return (f"column {names[cc.path_in_schema]!r} holds NaN and its Parquet footer's min/max "
                        "leave it out (a file written before specs §5's rule)")
    return None


def compact_inexpressible(handle: TableHandle, who: str = "mirror_delta") -> dict[str, str]:
    """Rewrite, by merging compaction (one action per tablet), every rowset a mirror cannot express
    (Delta and Iceberg readers alike: `inexpressible`)."""
    done: dict[str, str] = {}
    for _ in range(5):               # a concurrent writer may change the rowsets between plan and commit
        st = handle.refresh()
        todo: dict[str, list[tuple[str, str]]] = {}
        for rs in st.rowsets.values():
            if rs.history_only:
                continue
            why = inexpressible(st, rs, handle.storage)
            if why:
                todo.setdefault(rs.tablet, []).append((rs.id, why))
        if not todo:
            return done
        for tablet, items in todo.items():
            ids = tuple(i for i, _ in items)
            size = sum(f.size for i in ids for f in st.rowsets[i].base)
            action = CompactionAction("merge", tablet, ids, 1.0, f"{who}: " + "; ".join(sorted({w for _, w in items})),
                                      size)
            if compact_action(handle, action) is not None:
                done.update(dict(items))
    raise MirrorError(f"rowsets kept changing while the mirror compacted them; retry {who}")


# --- Delta encodings ------------------------------------------------------------------------------
def z85(data: bytes) -> str:
    """Z85 (ZeroMQ's Base85), Delta's encoding of deletion vector ids; len(data) % 4 == 0."""
    out = []
    for (v,) in struct.iter_unpack(">I", data):
        chunk = []
        for _ in range(5):
            v, r = divmod(v, 85)
            chunk.append(_Z85[r])
        out.extend(reversed(chunk))
    return "".join(out)


def dv_bytes(rowids: np.ndarray) -> bytes:
    """A deletion vector's bitmap: the magic, then a 64-bit Roaring bitmap in the portable format
    (rowids are below 2^32: one bucket, key 0, holding a standard 32-bit Roaring bitmap)."""
    try:
        from pyroaring import BitMap
    except ImportError as e:
        raise MissingDependencyError("mirror_delta writes deletion vectors with pyroaring: "
                                     "pip install 'tableformat[delta]'") from e
    bm = BitMap(rowids.astype(np.uint32, copy=False))
    return struct.pack("<iqI", DV_MAGIC, 1, 0) + bm.serialize()


def delta_schema(state: TableState) -> str:
    fields = [{"name": c.name, "type": c.type.delta_name, "nullable": bool(c.nullable),
               "metadata": {"delta.columnMapping.id": c.id, "delta.columnMapping.physicalName": field_name(c.id)}}
              for c in state.schema.columns]
    return json.dumps({"type": "struct", "fields": fields})


def _stat_value(ctype, v: Any, upper: bool) -> Any:
    """Our statistic (specs §2.2) as Delta writes it; None when Delta cannot use it safely."""
    k = ctype.kind
    if k == "unixtime_micros":
        us = int(v)
        ms = -((-us) // 1000) if upper else us // 1000     # Delta keeps milliseconds: widen, never narrow
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"
    if k in ("float", "double"):
        return None if isinstance(v, str) else float(v)
    if k in ("string", "varchar"):
        return v if len(v) <= 32 else None                # Delta truncates longer strings itself
    if k == "decimal":
        return float(value_from_json(ctype, v)) if ctype.precision <= 15 else None
    return v                                              # integers, dates (YYYY-MM-DD)


def file_stats(state: TableState, rs: RowSetMeta, has_dv: bool) -> str:
    """`add.stats`: numRecords (rows in the file, as Delta requires with a deletion vector),
    per-column null counts and bounds keyed by physical name; bounds are wide once rows are deleted."""
    mins, maxs, nulls = {}, {}, {}
    for c in state.schema.columns:
        s = rs.stats.get(c.id)
        phys = field_name(c.id)
        if s is None or c.id not in rs.base[0].column_ids:
            continue
        if s.get("nulls") is not None and not has_dv:
            nulls[phys] = int(s["nulls"])
        if c.type.kind not in _STATS_KINDS or s.get("min") is None or s.get("max") is None:
            continue
        if c.type.kind in ("float", "double") and s.get("nan", 1):
            continue                                      # NaN sorts above every number: no safe max
        lo, hi = _stat_value(c.type, s["min"], False), _stat_value(c.type, s["max"], True)
        if lo is not None and hi is not None:
            mins[phys], maxs[phys] = lo, hi
    return json.dumps({"numRecords": rs.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls,
                       "tightBounds": not has_dv})


def file_uri(storage: Storage, rel: str) -> str:
    """The absolute URI of one of our files, as a Delta `add.path` (RFC 2396, percent-encoded)."""
    p = storage.path(rel)
    scheme = "file" if storage.is_local else storage.protocol
    if storage.is_local:
        return "file://" + urllib.parse.quote(p, safe="/")
    if storage.is_hdfs:          # the NameNode is in the URI, not in the path
        return f"hdfs://{urllib.parse.urlsplit(storage.uri).netloc}" + urllib.parse.quote(p, safe="/")
    return f"{scheme}://" + urllib.parse.quote(p, safe="/")


# --- the mirror's log -----------------------------------------------------------------------------
@dataclass
class _MirrorState:
    version: int = -1
    files: dict[str, dict] = field(default_factory=dict)     # path -> its add action
    metadata: dict | None = None
    table_version: int | None = None


def read_mirror(m: Storage) -> _MirrorState:
    """Replay the mirror's JSON commits (ours, and any a Delta VACUUM added)."""
    names = sorted(n for n in m.list(LOG) if n.endswith(".json") and n[:-5].isdigit())
    st = _MirrorState()
    for i, n in enumerate(names):
        v = int(n[:-5])
        if v != i:
            raise MirrorError(f"the Delta log at {m.uri} lacks commit {i} (cleaned up after a checkpoint?): "
                              "mirror into a new directory")
        for line in m.read(f"{LOG}/{n}").decode().splitlines():
            if not line.strip():
                continue
            a = json.loads(line)
            if "add" in a:
                st.files[a["add"]["path"]] = a["add"]
            elif "remove" in a:
                st.files.pop(a["remove"]["path"], None)
            elif "metaData" in a:
                st.metadata = a["metaData"]
            elif "commitInfo" in a and "tableformat" in a["commitInfo"]:
                st.table_version = a["commitInfo"]["tableformat"]["version"]
        st.version = v
    return st


def mirror_delta(handle: TableHandle, path: str, storage_options: dict | None = None,
                 compact: bool = True) -> MirrorResult:
    """Write one Delta commit at `path` making the mirror describe the table's latest version
    (the facade checked the arguments); compactions run through `maintenance`, as `Table`'s do."""
    compacted = compact_inexpressible(handle) if compact else {}
    state = handle.refresh()
    storage = handle.storage
    m = Storage(path, storage_options)
    prev = read_mirror(m)
    if prev.table_version == state.version and prev.version >= 0:
        return MirrorResult(path, None, state.version, len(prev.files), compacted=compacted)
    now_ms = int(time.time() * 1000)
    new, referenced, dvs = _logical_files(storage, state, prev, now_ms)
    if dvs:
        _write_deletion_vectors(m, new, dvs)
    added = [a for p, a in new.items() if prev.files.get(p) is not a]
    removed = [a for p, a in prev.files.items() if new.get(p) is not a]
    actions = [{"remove": _remove(a, now_ms)} for a in removed] + [{"add": a} for a in added]
    meta = _changed_metadata(state, prev, now_ms)
    if meta is not None:
        actions.insert(0, {"metaData": meta})
    if prev.version < 0:
        actions.insert(0, {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": FEATURES,
                                        "writerFeatures": FEATURES + ["appendOnly", "invariants"]}})
    actions.insert(0, {"commitInfo": _commit_info(state, storage, compacted, now_ms)})
    version = prev.version + 1
    # our vacuum must keep both the old and the new files until the commit is in, then only the new
    register_mirror(storage, m.uri, state.version,
                    {referenced[p] for p in new} | {_rel(storage, p) for p in prev.files if _rel(storage, p)},
                    delta_version=version)
    if not m.put_if_absent(f"{LOG}/{version:020d}.json", "\n".join(json.dumps(a) for a in actions).encode() + b"\n"):
        raise MirrorError(f"another writer committed version {version} of the Delta mirror at {path} meanwhile; "
                          "retry mirror_delta")
    register_mirror(storage, m.uri, state.version, {referenced[p] for p in new}, delta_version=version)
    return MirrorResult(path, version, state.version, len(new), len(added), len(removed), len(dvs), compacted)


def _logical_files(storage: Storage, state: TableState, prev: _MirrorState,
                   now_ms: int) -> tuple[dict[str, dict], dict[str, str], list[tuple[str, bytes, int]]]:
    """The `add` action of every live rowset, the previous one kept where its deletes did not change.

    Returns (add.path -> add action, add.path -> our relative path, the new deletion vectors as
    (add.path, bitmap bytes, cardinality)).
    """
    new: dict[str, dict] = {}
    referenced: dict[str, str] = {}         # add.path -> our relative path
    dvs: list[tuple[str, bytes, int]] = []  # (add.path, bitmap bytes, cardinality) for new deletion vectors
    for rs in sorted(state.rowsets.values(), key=lambda r: r.id):
        if rs.history_only:
            continue
        why = inexpressible(state, rs, storage)
        if why:
            raise MirrorError(f"rowset {rs.id} cannot be mirrored ({why}); run mirror_delta with compact=True")
        ref = rs.base[0]
        uri = file_uri(storage, ref.path)
        referenced[uri] = ref.path
        mask = deleted_mask(storage, rs, state.deltas_of(rs.id))
        deleted = np.flatnonzero(mask) if mask is not None else np.zeros(0, np.int64)
        old = prev.files.get(uri)
        old_dv = (old or {}).get("deletionVector")
        if old is not None and (old_dv or {}).get("cardinality", 0) == len(deleted):
            new[uri] = old                  # deletes only grow (REINSERTs were compacted): same set
            continue
        add = {"path": uri, "partitionValues": {}, "size": ref.size, "modificationTime": now_ms,
               "dataChange": True, "stats": file_stats(state, rs, len(deleted) > 0)}
        new[uri] = add
        if len(deleted):
            dvs.append((uri, dv_bytes(deleted), len(deleted)))
    return new, referenced, dvs


def _write_deletion_vectors(m: Storage, new: dict[str, dict], dvs: list[tuple[str, bytes, int]]) -> None:
    """One DV file per commit, in the mirror's own directory; each add action points into it."""
    u = uuid.uuid4()
    buf, offsets = bytearray(b"\x01"), []
    for _, data, _ in dvs:
        offsets.append(len(buf))
        buf += struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    m.write(f"deletion_vector_{u}.bin", bytes(buf))
    for (uri, data, card), off in zip(dvs, offsets):
        new[uri]["deletionVector"] = {"storageType": "u", "pathOrInlineDv": z85(u.bytes), "offset": off,
                                      "sizeInBytes": len(data), "cardinality": card}


def _remove(a: dict, now_ms: int) -> dict:
    """The `remove` action of a previously added file (with its deletion vector, as Delta requires)."""
    r = {"path": a["path"], "deletionTimestamp": now_ms, "dataChange": True, "extendedFileMetadata": True,
         "partitionValues": {}, "size": a["size"]}
    if a.get("deletionVector"):
        r["deletionVector"] = a["deletionVector"]
    return r


def _changed_metadata(state: TableState, prev: _MirrorState, now_ms: int) -> dict | None:
    """A new `metaData` action when the schema changed (or on the first commit), keeping the table's id."""
    schema = delta_schema(state)
    meta = prev.metadata
    if meta is not None and meta.get("schemaString") == schema:
        return None
    return {"id": (meta or {}).get("id") or str(uuid.uuid4()), "name": state.name,
            "format": {"provider": "parquet", "options": {}}, "schemaString": schema, "partitionColumns": [],
            "configuration": {"delta.columnMapping.mode": "name",
                              "delta.columnMapping.maxColumnId": str(max(state.schema.next_column_id - 1, 0)),
                              "delta.enableDeletionVectors": "true", "delta.appendOnly": "true"},
            "createdTime": (meta or {}).get("createdTime", now_ms)}


def _commit_info(state: TableState, storage: Storage, compacted: dict, now_ms: int) -> dict:
    """`commitInfo` naming the version of ours the commit mirrors (read back by `read_mirror`)."""
    info = {"version": state.version, "timestamp": state.timestamp, "table_id": state.table_id,
            "table": storage.uri, "compacted": sorted(compacted)}
    return {"timestamp": now_ms, "operation": "TABLEFORMAT MIRROR",
            "operationParameters": {"tableVersion": str(state.version)},
            "isBlindAppend": False, "engineInfo": "tableformat",
            "userMetadata": json.dumps({"tableformat": info}), "tableformat": info}


def _rel(storage: Storage, uri: str) -> str | None:
    """Our relative path of an absolute `add.path` we wrote (None: not one of our files)."""
    prefix = file_uri(storage, "")
    return urllib.parse.unquote(uri[len(prefix):].lstrip("/")) if uri.startswith(prefix) else None


def check_mirror_path(path: Any, table_uri: str, kind: str = "Delta") -> None:
    """A mirror needs its own directory apart from the table's: a Delta VACUUM (or Iceberg's
    remove_orphan_files) of a directory that holds the table, or lies inside it, deletes our
    files (§15, §16)."""
    if not isinstance(path, str) or not path:
        raise InvalidOptionError(f"path must be a non-empty string (the {kind} table's directory), got {path!r}")
    check_outside_table(path, table_uri, f"the {kind} mirror")
