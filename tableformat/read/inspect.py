"""Metadata tables: the log state of one snapshot as Arrow tables (Iceberg's metadata tables).

`Table.inspect(kind)` answers from the log alone (no data file is read): one row per
commit (`history`), tablet, rowset, delta file, live file, or tag. Rowsets carry their
key range as typed structs (`min_key.host`) and Kudu's compaction inputs: the deleted
fraction (what `reclaim_deleted_pct` and a merging compaction look at) and the delta
fraction (REDO update records per base row, what a major delta compaction looks at).
`stats` is the rowset's
column statistics at write time (min, max, nulls per column, JSON; §8.2). The
CLI (`tableformat inspect`) prints them; Spark registers them as views
(`spark_jobs.metadata_tables`).
"""
from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Sequence

import pyarrow as pa

from ..format.errors import InvalidOptionError
from ..format.keyencoder import decode_key
from ..format.metadata import CommitInfo, RowSetMeta, TableState

KINDS = ("history", "tablets", "rowsets", "deltas", "files", "tags")
TS = pa.timestamp("us", tz="UTC")


def _ts(values: Sequence[int | None]) -> pa.Array:
    return pa.array(values, pa.int64()).cast(TS)


def _key_type(state: TableState) -> pa.DataType:
    return pa.struct([pa.field(c.name, c.arrow_type) for c in state.schema.key_columns])


def _key(state: TableState, key: bytes) -> dict | None:
    cols = state.schema.key_columns
    try:
        vals = decode_key(key, [c.type for c in cols])
    except ValueError:
        return None
    return dict(zip([c.name for c in cols], vals))


def _deleted(deltas: Sequence) -> int:
    return sum(d.delete_count - d.reinsert_count for d in deltas if d.kind == "redo")


def _updates(deltas: Sequence) -> int:
    return sum(d.num_records - d.delete_count - d.reinsert_count for d in deltas if d.kind == "redo")


def history(state: TableState, commits: Sequence[CommitInfo]) -> pa.Table:
    hist = [h for h in commits if h.version <= state.version]

    def count(k: str) -> pa.Array:
        return pa.array([int(h.counts.get(k, 0)) for h in hist], pa.int64())
    return pa.table({
        "version": pa.array([h.version for h in hist], pa.int64()),
        "timestamp": _ts([h.timestamp for h in hist]),
        "operation": pa.array([h.operation for h in hist], pa.string()),
        "read_version": pa.array([h.read_version for h in hist], pa.int64()),
        **{k: count(k) for k in ("inserted", "updated", "deleted", "ignored")},
        "counts": pa.array([json.dumps(dict(h.counts), sort_keys=True) for h in hist], pa.string()),
    })


def _rowset_row(state: TableState, rs: RowSetMeta) -> dict:
    names = {c.id: c.name for c in state.schema.columns}
    ds = state.deltas_of(rs.id)
    redo = [d for d in ds if d.kind == "redo"]
    undo = [d for d in ds if d.kind == "undo"]
    deleted = _deleted(ds)
    base_bytes = sum(f.size for f in rs.base)
    index_bytes = rs.pk_index.size + rs.bloom.size
    delta_bytes = sum(d.size for d in ds)
    n = max(rs.num_rows, 1)
    return {"rowset": rs.id, "tablet": rs.tablet, "rows": rs.num_rows, "live_rows": rs.num_rows - deleted,
            "deleted_rows": deleted, "deleted_fraction": deleted / n, "delta_fraction": _updates(ds) / n,
            "min_key": _key(state, rs.min_key), "max_key": _key(state, rs.max_key),
            "min_key_hex": rs.min_key.hex(), "max_key_hex": rs.max_key.hex(),
            "base_files": len(rs.base), "redo_files": len(redo), "undo_files": len(undo),
            "redo_records": sum(d.num_records for d in redo), "undo_records": sum(d.num_records for d in undo),
            "base_bytes": base_bytes, "index_bytes": index_bytes, "delta_bytes": delta_bytes,
            "bytes": base_bytes + index_bytes + delta_bytes, "created": rs.created_ts or None,
            "stats": json.dumps({names.get(cid, f"#{cid}"): dict(v) for cid, v in sorted(rs.stats.items())},
                                sort_keys=True, default=str)}


def rowsets(state: TableState) -> pa.Table:
    rows = [_rowset_row(state, rs) for rs in sorted(state.rowsets.values(), key=lambda r: (r.tablet, r.min_key))]
    kt = _key_type(state)
    i64, f64, s = pa.int64(), pa.float64(), pa.string()
    types = {"rowset": s, "tablet": s, "rows": i64, "live_rows": i64, "deleted_rows": i64,
             "deleted_fraction": f64, "delta_fraction": f64, "min_key": kt, "max_key": kt, "min_key_hex": s,
             "max_key_hex": s, "base_files": i64, "redo_files": i64, "undo_files": i64, "redo_records": i64,
             "undo_records": i64, "base_bytes": i64, "index_bytes": i64, "delta_bytes": i64, "bytes": i64,
             "created": TS, "stats": s}
    return pa.table({k: (_ts([r[k] for r in rows]) if t == TS else pa.array([r[k] for r in rows], t))
                     for k, t in types.items()})


def tablets(state: TableState) -> pa.Table:
    part = state.partitioning
    rs = rowsets(state).to_pylist()
    by: dict[str, list] = {tid: [] for tid in part.tablet_ids()}
    for r in rs:
        by.setdefault(r["tablet"], []).append(r)
    ids = list(by)

    def total(k: str) -> pa.Array:
        return pa.array([sum(r[k] for r in by[t]) for t in ids], pa.int64())
    rows, deleted = total("rows"), total("deleted_rows")
    return pa.table({
        "tablet": pa.array(ids, pa.string()),
        "rowsets": pa.array([len(by[t]) for t in ids], pa.int64()),
        "rows": rows, "live_rows": total("live_rows"), "deleted_rows": deleted,
        "deleted_fraction": pa.array([d / r if r else 0.0 for d, r in zip(deleted.to_pylist(), rows.to_pylist())],
                                     pa.float64()),
        "redo_files": total("redo_files"), "undo_files": total("undo_files"),
        "base_bytes": total("base_bytes"), "index_bytes": total("index_bytes"),
        "delta_bytes": total("delta_bytes"), "bytes": total("bytes"),
    })


def deltas(state: TableState) -> pa.Table:
    names = {c.id: c.name for c in state.schema.columns}
    out = [(rs, d) for rs in state.rowsets.values() for d in state.deltas_of(rs.id)]
    return pa.table({
        "path": pa.array([d.path for _, d in out], pa.string()),
        "kind": pa.array([d.kind for _, d in out], pa.string()),
        "rowset": pa.array([d.rowset for _, d in out], pa.string()),
        "tablet": pa.array([rs.tablet for rs, _ in out], pa.string()),
        "records": pa.array([d.num_records for _, d in out], pa.int64()),
        "deletes": pa.array([d.delete_count for _, d in out], pa.int64()),
        "reinserts": pa.array([d.reinsert_count for _, d in out], pa.int64()),
        "updated_columns": pa.array([sorted(names.get(c, f"#{c}") for c, n in d.update_counts.items() if n)
                                     for _, d in out], pa.list_(pa.string())),
        "size": pa.array([d.size for _, d in out], pa.int64()),
        "min_ts": _ts([d.min_ts or None for _, d in out]),
        "max_ts": _ts([d.max_ts or None for _, d in out]),
    })


def files(state: TableState) -> pa.Table:
    out: list[tuple] = []
    for rs in state.rowsets.values():
        out += [(f.path, "base", rs.id, rs.tablet, f.size, f.crc32) for f in rs.base]
        out.append((rs.pk_index.path, "pk_index", rs.id, rs.tablet, rs.pk_index.size, rs.pk_index.crc32))
        out.append((rs.bloom.path, "bloom", rs.id, rs.tablet, rs.bloom.size, rs.bloom.crc32))
        out += [(d.path, d.kind, rs.id, rs.tablet, d.size, d.crc32) for d in state.deltas_of(rs.id)]
    cols = list(zip(*out)) if out else [()] * 6
    return pa.table({"path": pa.array(cols[0], pa.string()), "kind": pa.array(cols[1], pa.string()),
                     "rowset": pa.array(cols[2], pa.string()), "tablet": pa.array(cols[3], pa.string()),
                     "size": pa.array(cols[4], pa.int64()), "crc32": pa.array(cols[5], pa.int64())})


def _tag_fields(name: str, tag: Any, timestamp_of: Callable[[int], int | None]) -> tuple:
    """A tag as (name, version, timestamp), whether the state holds a version or a record."""
    if isinstance(tag, int):
        return name, tag, timestamp_of(tag)
    if isinstance(tag, (tuple, list)):      # TableState's (version, timestamp), §8.2
        return name, tag[0], tag[1]
    get = tag.get if isinstance(tag, Mapping) else lambda k: getattr(tag, k, None)
    v = get("version")
    ts = get("timestamp")
    return name, v, ts if ts is not None else (timestamp_of(v) if v is not None else None)


def tags(state: TableState, commits: Sequence[CommitInfo]) -> pa.Table:
    held = getattr(state, "tags", None) or {}
    by_version = {h.version: h.timestamp for h in commits}
    rows = [_tag_fields(n, held[n], by_version.get) for n in sorted(held)]
    cols = list(zip(*rows)) if rows else [()] * 3
    return pa.table({"name": pa.array(cols[0], pa.string()), "version": pa.array(cols[1], pa.int64()),
                     "timestamp": _ts(list(cols[2]))})


def inspect(state: TableState, commits: Sequence[CommitInfo], kind: str) -> pa.Table:
    if kind not in KINDS:
        raise InvalidOptionError(f"inspect kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if kind == "history":
        return history(state, commits)
    if kind == "tags":
        return tags(state, commits)
    return {"tablets": tablets, "rowsets": rowsets, "deltas": deltas, "files": files}[kind](state)
