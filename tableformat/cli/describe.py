"""`describe`: schema, partitioning, tablets, rowsets, deltas and sizes of one snapshot.

`describe()` builds JSON-ready data from the log state (`describe --json`);
`render()` prints the same data for people, so the two cannot disagree.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import tableformat as tf

from ..format.keyencoder import decode_key
from ..format.metadata import TableState
from ..format.schema import value_from_json, value_to_json
from ..format.types import ColumnType
from .display import grid, iso, show, show_bound, size
from .options import safe_uri


def _to_json(types: Sequence[ColumnType], vals: Sequence | None) -> list | None:
    return None if vals is None else [value_to_json(t, v) for t, v in zip(types, vals)]


def _from_json(types: Sequence[ColumnType], vals: Sequence) -> tuple:
    return tuple(value_from_json(t, v) for t, v in zip(types, vals))


def _rowset(st: TableState, rs: Any, cname: Callable[[int], str], key_json: Callable[[bytes], Any]) -> dict:
    """One rowset's sizes and delta counts; `describe` sums them into tablets and totals."""
    ds = st.deltas_of(rs.id)
    deltas = {kind: _delta_stats([d for d in ds if d.kind == kind], cname) for kind in ("redo", "undo")}
    deltas["bytes"] = sum(d.size for d in ds)
    base_bytes, index_bytes = sum(f.size for f in rs.base), rs.pk_index.size + rs.bloom.size
    return {"id": rs.id, "rows": rs.num_rows,
            "deleted_rows": sum(d.delete_count - d.reinsert_count for d in ds if d.kind == "redo"),
            "min_key": key_json(rs.min_key), "max_key": key_json(rs.max_key),
            "min_key_hex": rs.min_key.hex(), "max_key_hex": rs.max_key.hex(),
            "base_files": len(rs.base), "base_bytes": base_bytes, "index_bytes": index_bytes,
            "deltas": deltas, "bytes": base_bytes + index_bytes + deltas["bytes"]}


def _delta_stats(ds: list, cname: Callable[[int], str]) -> dict:
    """Kudu's DeltaStats summed over files of one kind (REDO: changes; UNDO: history)."""
    updates: Counter = Counter()
    for d in ds:
        for cid, n in d.update_counts.items():
            updates[cname(cid)] += n
    return {"files": len(ds), "records": sum(d.num_records for d in ds), "deletes": sum(d.delete_count for d in ds),
            "reinserts": sum(d.reinsert_count for d in ds), "updates": updates, "bytes": sum(d.size for d in ds)}


def describe(table: tf.Table, snap: tf.Snapshot) -> dict:
    """Everything `describe` shows, as JSON-ready data."""
    st = snap.state
    schema, part = st.schema, st.partitioning
    names = {c.id: c.name for c in schema.columns}
    key_types = [c.type for c in schema.key_columns]

    def cname(cid: int) -> str:
        return names.get(cid, f"#{cid} (dropped)")

    def key_json(k: bytes) -> list | None:
        try:
            return _to_json(key_types, decode_key(k, key_types))
        except ValueError:
            return None          # shown as hex

    columns = [{"id": c.id, "name": c.name, "type": c.type.name, "nullable": c.nullable,
                "key": c.name in schema.primary_key, "default": value_to_json(c.type, c.default),
                "read_default": value_to_json(c.type, c.read_default), "encoding": c.encoding,
                "compression": c.compression} for c in schema.columns]
    rcols = [schema.by_id(i) for i in part.range_column_ids]
    rtypes = [c.type for c in rcols]
    partitioning = {
        "hash": [{"columns": [cname(i) for i in h.column_ids], "buckets": h.buckets, "seed": h.seed}
                 for h in part.hash_levels],
        "range": {"columns": [c.name for c in rcols],
                  "partitions": [{"id": r.id, "lower": _to_json(rtypes, r.lower_values),
                                  "upper": _to_json(rtypes, r.upper_values)} for r in part.ranges]},
    }
    by_tablet: dict[str, list] = {tid: [] for tid in part.tablet_ids()}
    for rs in st.rowsets.values():
        by_tablet.setdefault(rs.tablet, []).append(rs)
    tablets = []
    for tid, rowsets in by_tablet.items():
        out = [_rowset(st, rs, cname, key_json) for rs in sorted(rowsets, key=lambda r: r.min_key)]
        tablets.append({"id": tid, "rowsets": out, "rows": sum(r["rows"] for r in out),
                        "bytes": sum(r["bytes"] for r in out)})
    rowsets = [r for t in tablets for r in t["rowsets"]]
    deltas = [r["deltas"] for r in rowsets]
    tot = {"tablets": len(tablets), "tablets_with_rows": sum(bool(t["rowsets"]) for t in tablets),
           "rowsets": len(rowsets)}
    for k in ("rows", "deleted_rows", "base_files", "base_bytes", "index_bytes"):
        tot[k] = sum(r[k] for r in rowsets)
    for kind in ("redo", "undo"):
        k = {f: sum(d[kind][f] for d in deltas) for f in ("files", "records", "deletes", "reinserts", "bytes")}
        k["updates"] = sum((Counter(d[kind]["updates"]) for d in deltas), Counter())
        tot[kind] = k
    tot["delta_bytes"] = sum(d["bytes"] for d in deltas)
    tot["live_rows"] = tot["rows"] - tot["deleted_rows"]
    tot["bytes"] = tot["base_bytes"] + tot["index_bytes"] + tot["delta_bytes"]
    return {"uri": safe_uri(table.uri), "name": st.name, "table_id": st.table_id,
            "created_format_version": st.format_version,
            "min_reader_format_version": max(st.log_format, st.format_version), "version": st.version, "timestamp": st.timestamp,
            "time": iso(st.timestamp),
            "schema": {"columns": columns, "primary_key": list(schema.primary_key),
                       "next_column_id": schema.next_column_id},
            "partitioning": partitioning, "properties": dict(st.properties),
            "history": {"horizon_version": st.history_horizon, "gc_before": iso(st.history_gc_ts)
                        if st.history_gc_ts else None},
            "tablets": tablets, "totals": tot}


def _delta_lines(d: dict) -> list[str]:
    out = []
    for kind, what in (("redo", "REDO"), ("undo", "UNDO (history)")):
        k = d[kind]
        if k["files"]:
            ups = ", ".join(f"{c}={n}" for c, n in sorted(k["updates"].items())) or "none"
            out.append(f"{what}: {k['files']} file(s) {size(k['bytes'])}, {k['records']} record(s), "
                       f"{k['deletes']} delete(s), {k['reinserts']} reinsert(s); updates per column: {ups}")
    return out


def _history_line(h: dict) -> str:
    """What vacuum and compaction did to the history (§12); nothing for a table they never touched."""
    parts = []
    if h["horizon_version"]:
        parts.append(f"versions before {h['horizon_version']} read through UNDO records")
    if h["gc_before"]:
        parts.append(f"compactions dropped history before {h['gc_before']}")
    return "history: " + "; ".join(parts) if parts else ""


def render(info: dict, snap: tf.Snapshot, brief: bool) -> str:
    """`describe` for people: the rowset lines are left out with `brief`."""
    schema = snap.state.schema
    key_types = [c.type for c in schema.key_columns]
    rtypes = [schema.column(n).type for n in info["partitioning"]["range"]["columns"]]

    def key(vals: list | None, hexkey: str) -> str:
        return "0x" + hexkey if vals is None else show_bound(_from_json(key_types, vals))

    def bound(v: list | None) -> str:
        vals = None if v is None else _from_json(rtypes, v)
        return show_bound(vals[0] if vals is not None and len(vals) == 1 else vals)

    out = [f"table {info['name']!r} at {info['uri']}",
           f"  version {info['version']} ({info['time']}), table id {info['table_id']}",
           (f"  format: created in format version {info['created_format_version']}; its log needs a reader of "
            f"format version {info['min_reader_format_version']} or later"), "", "columns:"]
    rows = [[str(c.id), c.name, c.type.name, "yes" if c.nullable else "no",
             "" if c.default is None else show(c.default), c.encoding, c.compression,
             "yes" if c.name in schema.primary_key else ""] for c in schema.columns]
    out.append(grid(["ID", "NAME", "TYPE", "NULLABLE", "DEFAULT", "ENCODING", "COMPRESSION", "KEY"], rows, "  "))
    out.append(f"primary key: ({', '.join(schema.primary_key)})")
    out += ["", "partitioning:"]
    for h in info["partitioning"]["hash"]:
        out.append(f"  hash ({', '.join(h['columns'])}) into {h['buckets']} buckets, seed {h['seed']}")
    rng = info["partitioning"]["range"]
    out.append(f"  range ({', '.join(rng['columns'])}): {len(rng['partitions'])} partition(s)")
    for p in rng["partitions"]:
        out.append(f"    r{p['id']}: [{bound(p['lower'])}, {bound(p['upper'])})")
    h = info["history"]
    out += ["", "properties: " + ", ".join(f"{k}={v}" for k, v in sorted(info["properties"].items()))]
    out += [line for line in (_history_line(h),) if line] + [""]
    tot = info["totals"]
    out.append(f"tablets: {tot['tablets']}, {tot['tablets_with_rows']} with rowsets")
    for t in info["tablets"]:
        if not t["rowsets"]:
            continue
        out.append(f"  {t['id']}: {len(t['rowsets'])} rowset(s), {t['rows']} rows, {size(t['bytes'])}")
        if brief:
            continue
        for r in t["rowsets"]:
            out.append(f"    rowset {r['id'][:8]}: {r['rows']} rows, keys {key(r['min_key'], r['min_key_hex'])} .. "
                       f"{key(r['max_key'], r['max_key_hex'])}")
            out.append(f"      base {r['base_files']} file(s) {size(r['base_bytes'])}, index {size(r['index_bytes'])}")
            out += ["      " + line for line in _delta_lines(r["deltas"])]
    empty = [t["id"] for t in info["tablets"] if not t["rowsets"]]
    if empty:
        shown = ", ".join(empty[:16]) + (", ..." if len(empty) > 16 else "")
        out.append(f"  {len(empty)} tablet(s) without rowsets: {shown}")
    out += ["", (f"total: {tot['rowsets']} rowset(s), {tot['rows']} rows ({tot['deleted_rows']} deleted, "
                 f"{tot['live_rows']} live), {size(tot['bytes'])}"),
            f"  base {tot['base_files']} file(s) {size(tot['base_bytes'])}, index {size(tot['index_bytes'])}"] + \
        ["  " + line for line in _delta_lines(tot)]
    return "\n".join(out)
