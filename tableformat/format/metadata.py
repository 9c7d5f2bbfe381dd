"""Immutable table metadata: the descriptors the log records (Kudu's tablet metadata).

FileRef, RowSetMeta and DeltaFileMeta describe files; TableState is what one
version of the log says the table is; CommitInfo is one line of history. How
log actions change a TableState lives in `actions`. See `specs/format.md` §8.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from .errors import InvalidOptionError
from .partition import Partitioning
from .schema import Schema

# 2: UNDO delta files, rowset created_ts, the `history` action (specs/format.md §12).
# 3: checksums over whole commits and checkpoints, and a `crc32` of every data, index, bloom and
#    delta file in the log (specs/format.md §8).
# 4: tags (the `tag` and `untag` actions, `tags` in checkpoints; specs/format.md §8.2, §12); the
#    `sequence_column` table property (a string) and the `skipped` action (§14); history-only
#    rowsets (`live_until`, §8.2, §12); split-block bloom filters (§7).
# 5: `_mirrors/`, the files Delta mirrors read, which vacuum keeps (specs/format.md §15): an engine
#    that does not know it must not vacuum the table. No commit or file layout changed. 1-4 are still read.
# 6: the `txn` action (an application's transaction version: a streaming sink's query id and batch
#    id) and `txns` in a checkpoint's state (specs/format.md §8.2, §8.3). 1-5 are still read.
FORMAT_VERSION = 6

# A commit or checkpoint declares the lowest format version its contents need, never below the
# log before it (specs/format.md "Format versions of commits and checkpoints"), so a reader of
# an older format keeps reading a table that never used a newer feature, as Delta's protocol
# versions rise only when a feature is used. Every write needs 5 (`_mirrors/`: an older engine's
# vacuum must refuse the table); a `txn` action, or `txns` in a checkpoint's state, needs 6.
WRITE_FORMAT_FLOOR = 5
TXN_FORMAT_VERSION = 6


def written_format_version(*needed: int) -> int:
    """The format version a commit or checkpoint declares: the highest of the floor and what
    it `needed` (its actions, its table, the commits before it), never above this engine's."""
    return min(FORMAT_VERSION, max((WRITE_FORMAT_FLOOR, *needed)))

DEFAULT_PROPERTIES: dict[str, int] = {
    # A rowset rolls once its in-memory (Arrow) size reaches this; 128 MiB of Arrow data
    # is roughly 20-60 MiB of Parquet, a good object-store GET size.
    "rowset_target_bytes": 128 * 1024 * 1024,
    # Parquet row group size of base files: the unit a point lookup decodes.
    "row_group_rows": 16384,
    # Rows per PK index block: the unit a key check reads when it need not read the whole index.
    "pk_index_block_rows": 4096,
    # A checkpoint every N commits keeps opening a table O(checkpoint + N commits).
    "checkpoint_interval": 10,
    # Kudu's tablet_history_max_age_sec: snapshots older than this are refused and their files vacuumed.
    "history_max_age": 7 * 24 * 3600,
    # Compaction rewrites a rowset alone once this percentage of its rows is deleted (0: never).
    "reclaim_deleted_pct": 20,
}
_PROPERTY_RANGES = {
    "rowset_target_bytes": (1 << 16, 1 << 34),
    "row_group_rows": (128, 1 << 24),
    "pk_index_block_rows": (16, 1 << 20),
    "checkpoint_interval": (1, 100_000),
    "history_max_age": (-1, 10 * 365 * 24 * 3600),
    "reclaim_deleted_pct": (0, 100),
}
# Properties whose value is a column name (None unsets them); checked against the schema by
# `sequence.check_sequence_column`.
_NAME_PROPERTIES = ("sequence_column",)


def validate_properties(props: Mapping[str, Any] | None, base: Mapping[str, int] | None = None) -> dict:
    from collections.abc import Mapping as _Mapping
    if props is not None and not isinstance(props, _Mapping):
        raise InvalidOptionError(f"table properties must be a dict of name -> integer, got "
                                 f"{type(props).__name__} {props!r:.60}")
    out = {**DEFAULT_PROPERTIES, **(base or {})}
    for k, v in (props or {}).items():
        if k in _NAME_PROPERTIES:
            if v is None:
                out.pop(k, None)
            elif not isinstance(v, str) or not v:
                raise InvalidOptionError(f"table property {k} must be a column name (or None to unset it), "
                                         f"got {v!r}")
            else:
                out[k] = v
            continue
        if not isinstance(k, str) or k not in _PROPERTY_RANGES:
            raise InvalidOptionError(f"unknown table property {k!r}; known: "
                                     f"{', '.join(sorted([*_PROPERTY_RANGES, *_NAME_PROPERTIES]))}")
        lo, hi = _PROPERTY_RANGES[k]
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            raise InvalidOptionError(f"table property {k} must be an integer in [{lo}, {hi}], got {v!r}")
        out[k] = v
    return out


def property_value(properties: Mapping[str, Any], name: str) -> int:
    """A table property, or its default when the table's properties lack it (a table written
    before the property existed): the defaults are DEFAULT_PROPERTIES' alone."""
    return properties.get(name, DEFAULT_PROPERTIES[name])


@dataclass(frozen=True)
class FileRef:
    """A file of the table, relative to its root, with the size and CRC-32 recorded at write time.

    `crc32` (format 3) covers every byte of the file; files written before have None.
    """

    path: str
    size: int
    column_ids: tuple[int, ...] = ()
    crc32: int | None = None

    def to_json(self) -> dict:
        d: dict[str, Any] = {"path": self.path, "size": self.size}
        if self.column_ids:
            d["column_ids"] = list(self.column_ids)
        if self.crc32 is not None:
            d["crc32"] = self.crc32
        return d

    @staticmethod
    def from_json(d: dict) -> "FileRef":
        return FileRef(d["path"], d["size"], tuple(d.get("column_ids", ())), d.get("crc32"))


@dataclass(frozen=True)
class RowSetMeta:
    """A DiskRowSet: base files (column groups), PK index, bloom filter, key bounds, stats.

    Rows are sorted by encoded primary key; a row's rowid is its ordinal.
    `stats` maps column ID to {"min", "max", "nulls"} in the JSON value encoding.
    """

    id: str
    tablet: str
    num_rows: int
    min_key: bytes
    max_key: bytes
    base: tuple[FileRef, ...]
    pk_index: FileRef
    bloom: FileRef
    stats: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    # When its rows were inserted: the adding commit's timestamp for an insert's rowset (filled in
    # at replay); 0 for a merging compaction's output, whose rows carry UNDO DELETE records instead.
    created_ts: int | None = None
    # Format 4: set on a history-only rowset, one a merging compaction filled with rows deleted
    # within the history only: the newest of their delete timestamps. From then on no row of it
    # is live, so current reads and key probes skip it by this field alone.
    live_until: int | None = None

    @property
    def history_only(self) -> bool:
        return self.live_until is not None

    def visible_at(self, read_ts: int | None) -> bool:
        """Whether a read may see rows of this rowset: a read of a snapshot's own files
        (`read_ts` None) or as of a time at or after `live_until` cannot."""
        return self.live_until is None or (read_ts is not None and read_ts < self.live_until)

    @property
    def files(self) -> list[FileRef]:
        return [*self.base, self.pk_index, self.bloom]

    @property
    def size_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def base_file_for(self, column_id: int) -> FileRef | None:
        """The newest base file holding the column (later column groups win)."""
        for f in reversed(self.base):
            if column_id in f.column_ids:
                return f
        return None

    def to_json(self) -> dict:
        return {"id": self.id, "tablet": self.tablet, "num_rows": self.num_rows,
                "min_key": self.min_key.hex(), "max_key": self.max_key.hex(),
                "base": [f.to_json() for f in self.base], "pk_index": self.pk_index.to_json(),
                "bloom": self.bloom.to_json(),
                "stats": {str(k): dict(v) for k, v in self.stats.items()},
                **({} if self.created_ts is None else {"created_ts": self.created_ts}),
                **({} if self.live_until is None else {"live_until": self.live_until})}

    @staticmethod
    def from_json(d: dict) -> "RowSetMeta":
        return RowSetMeta(d["id"], d["tablet"], d["num_rows"], bytes.fromhex(d["min_key"]),
                          bytes.fromhex(d["max_key"]), tuple(FileRef.from_json(f) for f in d["base"]),
                          FileRef.from_json(d["pk_index"]), FileRef.from_json(d["bloom"]),
                          {int(k): v for k, v in d.get("stats", {}).items()}, d.get("created_ts"),
                          d.get("live_until"))


@dataclass(frozen=True)
class DeltaFileMeta:
    """A delta file and its stats (Kudu's DeltaStats), as recorded in the log."""

    path: str
    size: int
    kind: str                      # "redo" or "undo"
    rowset: str
    num_records: int
    delete_count: int
    reinsert_count: int
    update_counts: Mapping[int, int] = field(default_factory=dict)
    min_ts: int = 0                # for a commit's REDO: the commit timestamp
    max_ts: int = 0
    has_ts_column: bool = False
    crc32: int | None = None       # format 3: CRC-32 of the whole file

    @property
    def ref(self) -> FileRef:
        return FileRef(self.path, self.size, crc32=self.crc32)

    def updates(self, column_id: int) -> bool:
        return self.update_counts.get(column_id, 0) > 0

    def to_json(self) -> dict:
        return {"path": self.path, "size": self.size, "kind": self.kind, "rowset": self.rowset,
                "num_records": self.num_records, "delete_count": self.delete_count,
                "reinsert_count": self.reinsert_count,
                "update_counts": {str(k): v for k, v in self.update_counts.items()},
                "min_ts": self.min_ts, "max_ts": self.max_ts, "has_ts_column": self.has_ts_column,
                **({} if self.crc32 is None else {"crc32": self.crc32})}

    @staticmethod
    def from_json(d: dict) -> "DeltaFileMeta":
        return DeltaFileMeta(d["path"], d["size"], d["kind"], d["rowset"], d["num_records"], d["delete_count"],
                             d["reinsert_count"], {int(k): v for k, v in d["update_counts"].items()},
                             d.get("min_ts", 0), d.get("max_ts", 0), d.get("has_ts_column", False),
                             d.get("crc32"))


@dataclass(frozen=True)
class CommitInfo:
    """One line of history: what a version did and when."""

    version: int
    timestamp: int
    operation: str
    counts: Mapping[str, int]
    read_version: int | None = None

    def to_json(self) -> list:
        return [self.version, self.timestamp, self.operation, dict(self.counts), self.read_version]

    @staticmethod
    def from_json(d: list) -> "CommitInfo":
        return CommitInfo(d[0], d[1], d[2], d[3], d[4])


@dataclass(frozen=True)
class TableState:
    """The table as of one version: definition plus the live rowsets."""

    version: int
    timestamp: int
    table_id: str
    name: str
    schema: Schema
    partitioning: Partitioning
    properties: Mapping[str, int]
    rowsets: Mapping[str, RowSetMeta]
    format_version: int = FORMAT_VERSION
    # Delta files per rowset id, in commit order (oldest first).
    deltas: Mapping[str, tuple] = field(default_factory=dict)
    # Versions before this are read from this version's files through UNDO records (vacuum moved it).
    history_horizon: int = 0
    # Compactions dropped UNDO records and deleted rows older than this timestamp.
    history_gc_ts: int = 0
    # Tags (format 4): name -> (version, that version's commit timestamp). History they need is kept.
    tags: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    # Format 6: app id -> the newest transaction version a `txn` action recorded for it.
    txns: Mapping[str, int] = field(default_factory=dict)
    # Not stored: the newest format version the log declared up to here (its commits, or the
    # checkpoint it was read from; 0 unknown). `format_version` is the one the table was created in.
    log_format: int = field(default=0, compare=False)
    # Not stored: set when this state is version `version` read from a later version's files;
    # readers then apply UNDO records newer than it and skip REDO records newer than it.
    read_ts: int | None = None

    def rowsets_in(self, tablet: str) -> list[RowSetMeta]:
        return [r for r in self.rowsets.values() if r.tablet == tablet]

    def deltas_of(self, rowset_id: str) -> tuple:
        return self.deltas.get(rowset_id, ())

    @property
    def num_rows(self) -> int:
        return sum(r.num_rows for r in self.rowsets.values())

    def to_json(self) -> dict:
        return {"format_version": self.format_version, "version": self.version, "timestamp": self.timestamp,
                "table_id": self.table_id, "name": self.name, "schema": self.schema.to_json(),
                "partitioning": self.partitioning.to_json(self.schema), "properties": dict(self.properties),
                "rowsets": [r.to_json() for r in self.rowsets.values()],
                "deltas": [d.to_json() for ds in self.deltas.values() for d in ds],
                "history_horizon": self.history_horizon, "history_gc_ts": self.history_gc_ts,
                **({"tags": {k: list(v) for k, v in self.tags.items()}} if self.tags else {}),
                **({"txns": dict(self.txns)} if self.txns else {})}

    @staticmethod
    def from_json(d: dict) -> "TableState":
        schema = Schema.from_json(d["schema"])
        deltas: dict[str, tuple] = {}
        for x in d.get("deltas", []):
            m = DeltaFileMeta.from_json(x)
            deltas[m.rowset] = deltas.get(m.rowset, ()) + (m,)
        return TableState(d["version"], d["timestamp"], d["table_id"], d["name"], schema,
                          Partitioning.from_json(d["partitioning"], schema),
                          MappingProxyType(dict(d["properties"])),
                          MappingProxyType({r["id"]: RowSetMeta.from_json(r) for r in d["rowsets"]}),
                          d["format_version"], MappingProxyType(deltas), d.get("history_horizon", 0),
                          d.get("history_gc_ts", 0),
                          MappingProxyType({k: (int(v[0]), int(v[1])) for k, v in d.get("tags", {}).items()}),
                          MappingProxyType({str(k): int(v) for k, v in d.get("txns", {}).items()}))
