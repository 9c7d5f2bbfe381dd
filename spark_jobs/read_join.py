"""The join path: base files by Spark's Parquet scan, pending REDO records joined to them by row.

Base files are a plain `spark.read.parquet` of the exact files the snapshot references
(column pruning, filter pushdown, vectorized decoding), with `c<id>` renamed to the column
names. Rowsets with pending REDO records get them applied inside the JVM, the way Delta
applies deletion vectors and Hudi merges by position: the REDO files are read by the same
reader (only the columns read, a delete flag only when some file deletes) and broadcast-joined
to base rows on one long, `base file size << 32 | _metadata.row_index` (Spark has the size per
file for free; a path string per row costs several times the scan); the newest change per
(rowset, rowid, column) wins and deleted rows are dropped. Rowsets without deltas are never
joined. The rules are specs/format.md §9.4; the engine gives the recipe (`Snapshot.read_plan`).
"""
from __future__ import annotations

import weakref
from typing import Any

import pyarrow as pa

import tableformat as tf

from .jvm_paths import jvm_path
from .read_filters import literal, quoted
from .snapshots import spark_type

_RS, _ROW = "__tf_rowset", "__tf_row"
_KEY, _DKEY = "__tf_key", "__d_key"
# the delta op codes and field names are the format's (tableformat.format, specs/format.md §9)
_UPDATE, _DELETE, _REINSERT = (int(op) for op in (tf.DeltaOp.UPDATE, tf.DeltaOp.DELETE, tf.DeltaOp.REINSERT))
_field, _flag = tf.format.field_name, tf.format.flag_name
# page CRCs are part of the format (specs/format.md §5): the JVM reader checks them too
_VERIFY_CONF = "parquet.page.verify-checksum.enabled"
# REDO files up to this size (compressed, as the log records them) are broadcast to the base scan
_BROADCAST_DELTA_BYTES = 32 << 20
# a rowset with deltas is joined on a long of (its file, its row index): 32 bits each
MAX_JOIN_ROWS = 1 << 32


def native_parts(spark, storage: tf.Storage, plan: tf.ReadPlan, rowsets: list) -> list:
    """One DataFrame per rowset shape (which file provides which column, which columns are
    missing, with or without deltas): rowsets alike are read by one Parquet scan per file.
    Rowsets with deltas are further split so that no two in one scan share a file key."""
    if spark.conf.get(_VERIFY_CONF, None) is None:     # session confs reach the readers' Hadoop conf
        spark.conf.set(_VERIFY_CONF, "true")
    groups: dict[tuple, list[tuple[set, list]]] = {}
    for rs in rowsets:
        shape = (tuple(tuple(i for i, _ in b.columns) for b in rs.base), rs.missing, rs.clean)
        high = None if rs.clean else _key_high(rs)
        subs = groups.setdefault(shape, [])
        for taken, members in subs:  # noqa: B007 (used after the break)
            if high not in taken:
                break
        else:
            taken, members = set(), []
            subs.append((taken, members))
        if high is not None:
            taken.add(high)
        members.append(rs)
    return [_read_group(spark, storage, plan, shape, members) for shape, subs in groups.items() for _, members in subs]


def _key_high(rs) -> int:
    """The high half of a base row's join key: the size of its rowset's first base file (the
    low half is the row index; rowsets have fewer than MAX_JOIN_ROWS rows). A per-file number
    Spark has for free, where a file name or path costs a string per row. Rowsets read by one
    scan must differ in it, so that a key names one row of one file."""
    return rs.base[0].size & 0xFFFFFFFF


def _rowset_of(file_path: str) -> str:
    """SQL: the rowset id of a base or delta file, the name of its directory (specs §1)."""
    return f"substring_index(substring_index({file_path}, '/', -2), '/', 1)"


def _read_group(spark, storage: tf.Storage, plan: tf.ReadPlan, shape: tuple, rowsets: list):
    """Expressions are SQL text: each py4j call costs a millisecond or more on a busy driver."""
    from pyspark.sql import functions as F
    positions, missing, clean = shape
    schema = plan.schema
    fp = "_metadata.file_path"
    base = None
    for pos, ids in enumerate(positions):
        ddl = ", ".join(f"{_field(i)} {schema.by_id(i).type.spark_name}" for i in ids)
        df = spark.read.schema(ddl).parquet(*[jvm_path(storage, rs.base[pos].path) for rs in rowsets])
        keys = []
        if len(positions) > 1:   # column groups: their rows meet on (rowset id, the directory they share; row)
            keys += [f"{_rowset_of(fp)} AS {_RS}", f"_metadata.row_index AS {_ROW}"]
        if not clean and pos == 0:
            # (_key_high) and the file's size checked against the log's (specs §8.2)
            sizes = ", ".join(f"{rs.base[0].size}L" for rs in rowsets)
            keys += [f"CASE WHEN _metadata.file_size IN ({sizes}) THEN shiftleft(_metadata.file_size, 32) "
                     f"| _metadata.row_index ELSE raise_error(concat({fp}, ' does not have the size the table log "
                     f"recorded: it was replaced or is corrupt')) END AS {_KEY}"]
        if keys:
            df = df.selectExpr(*[_field(i) for i in ids], *keys)
        base = df if base is None else base.join(df, [_RS, _ROW])
    cols = {c.id: _field(c.id) for c in plan.read_columns if c.id not in missing}
    updated = []
    if not clean:
        deltas, updated, deletes = _delta_changes(spark, storage, plan, rowsets)
        if sum(f.size for rs in rowsets for f in rs.redo) <= _BROADCAST_DELTA_BYTES:
            deltas = F.broadcast(deltas)     # base rows stay where they are: no shuffle of the big side
        # one long key per row (_key_high): Spark joins on a long fast, on a (path, long) pair slowly
        base = base.join(deltas, F.expr(f"{_KEY} = {_DKEY}"), "left")
        if deletes:
            base = base.where("NOT coalesce(__deleted, false)")
    if missing:   # rows written before the column was added: its read default
        base = base.select("*", *[_default(c).alias(_field(c.id)) for c in plan.read_columns if c.id in missing])
        cols.update({i: _field(i) for i in missing})
    for cid in updated:
        cols[cid] = f"CASE WHEN __u{cid} THEN __v{cid} ELSE {cols[cid]} END"
    return base.selectExpr(*[f"{cols[c.id]} AS {quoted(c.name)}" for c in plan.read_columns])


def _default(c):
    """A column's read default as a Spark value of its type. A date or timestamp Python's datetime
    cannot hold is kept as int days or microseconds (`Column.read_default`): a cast of an int to
    a timestamp would read it as seconds."""
    from pyspark.sql import functions as F
    v = c.read_default
    if v is not None and c.type.kind in ("date", "unixtime_micros") and isinstance(v, int):
        return literal(c.type, v)
    return F.lit(v).cast(spark_type(c.type))


def _delta_changes(spark, storage: tf.Storage, plan: tf.ReadPlan, rowsets: list):
    """Per changed row: the base side's join key (_key_high), for each updated column read the
    newest value and whether it changed, and (if any file deletes) whether the row is deleted.
    Newest = greatest (file rank, record timestamp). Returns (changes, updated ids, deletes)."""
    read_ids = {c.id for c in plan.read_columns}
    files = [(rs, f) for rs in rowsets for f in rs.redo]
    updated = sorted({u for _, f in files for u in f.updates} & read_ids)
    deletes = any(f.deletes for _, f in files)
    # one file per rowset whose records all carry its commit time, none after the cut
    simple = all(len(rs.redo) == 1 and not rs.redo[0].has_ts_column
                 and (plan.read_ts is None or rs.redo[0].max_ts <= plan.read_ts) for rs in rowsets)
    ddl = ["rowid bigint"] + (["op tinyint"] if deletes else []) + ([] if simple else ["ts bigint"])
    for cid in updated:
        ddl += [f"{_flag(cid)} boolean",
                f"{_field(cid)} {plan.schema.by_id(cid).type.spark_name}"]
    d = spark.read.schema(", ".join(ddl)).parquet(*[jvm_path(storage, f.path) for _, f in files])
    # each file's rank, commit time and its rowset's key (_key_high), by "<rowset id>/<file name>"
    # (ids and names are hex: safe in SQL text)
    info = "map(" + ", ".join(
        f"'{rs.id}/{f.path.rsplit('/', 1)[-1]}', named_struct('o', {f.order}, 'm', {f.max_ts}L, "
        f"'s', {rs.base[0].size}L)" for rs, f in files) + ")"
    info = f"element_at({info}, substring_index(_metadata.file_path, '/', -2))"

    def key(i: str) -> str:
        return f"shiftleft({i}.s, 32) | rowid AS {_DKEY}"

    if simple:
        # one commit's REDO file per rowset holds at most one record per row (§9): the records
        # are the changes, no aggregation (and no shuffle) needed; one projection
        changed = "" if not deletes else f" AND op != {_DELETE}"
        return d.selectExpr(key(info), *([f"op = {_DELETE} AS __deleted"] if deletes else []),
                            *[f"coalesce({_flag(cid)}, false){changed} AS __u{cid}" for cid in updated],
                            *[f"{_field(cid)} AS __v{cid}" for cid in updated]), updated, deletes
    op = "op" if deletes else f"{_UPDATE}Y"
    d = d.selectExpr("rowid", f"{op} AS op", "ts", *[c for cid in updated for c in (_flag(cid), _field(cid))],
                     f"{info} AS i")
    # a commit's REDO file has no ts column: every record is at its commit time
    d = d.selectExpr("*", key("i"), "named_struct('o', i.o, 't', coalesce(ts, i.m)) AS rank")
    if plan.read_ts is not None:
        d = d.where(f"rank.t <= {int(plan.read_ts)}L")
    aggs = [f"max_by(op, CASE WHEN op IN ({_DELETE}, {_REINSERT}) THEN rank END) = {_DELETE} AS __deleted"]
    for cid in updated:
        changes = f"coalesce({_flag(cid)}, false) AND op != {_DELETE}"
        aggs += [f"coalesce(max(CASE WHEN {changes} THEN true END), false) AS __u{cid}",
                 f"max_by({_field(cid)}, CASE WHEN {changes} THEN rank END) AS __v{cid}"]
    from pyspark.sql import functions as F
    return d.groupBy(_DKEY).agg(*[F.expr(a) for a in aggs]), updated, deletes


_SPLIT_PROBED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def reads_byte_stream_split(spark: Any) -> bool:
    """Whether this session's Parquet reader decodes BYTE_STREAM_SPLIT (a column encoded
    bitshuffle; numbers default to plain, §5): probed once per session on a one-row file, since
    it depends on the Spark version (pyspark 4.2's vectorized reader cannot)."""
    if spark not in _SPLIT_PROBED:
        import shutil
        import tempfile
        import pyarrow.parquet as pq
        d = tempfile.mkdtemp(prefix="tableformat-probe-")
        try:
            pq.write_table(pa.table({"x": pa.array([1], pa.int64())}), f"{d}/p.parquet", use_dictionary=False,
                           column_encoding={"x": "BYTE_STREAM_SPLIT"}, data_page_version="2.0")
            try:
                ok = spark.read.parquet(f"file://{d}/p.parquet").collect()[0][0] == 1
            except Exception:  # noqa: BLE001 - any failure to decode means: not supported
                ok = False
        finally:
            shutil.rmtree(d, ignore_errors=True)
        _SPLIT_PROBED[spark] = ok
    return _SPLIT_PROBED[spark]
