"""Native reads: a table as an ordinary Spark DataFrame, read by Spark's own Parquet reader.

    from spark_jobs.read import read_table, register_view
    df = read_table(spark, "/data/metrics", as_of=None)
    register_view(spark, "metrics", "/data/metrics")
    spark.sql("SELECT host, avg(value) FROM metrics GROUP BY host")

Base files are a plain `spark.read.parquet` of the exact files the snapshot references
(column pruning, filter pushdown, vectorized decoding), with `c<id>` renamed to the column
names. Rowsets with pending REDO records get them applied inside the JVM, the way Delta
applies deletion vectors and Hudi merges by position: the REDO files are read by the same
reader (only the columns read, a delete flag only when some file deletes) and broadcast-joined
to base rows on one long, `base file size << 32 | _metadata.row_index` (Spark has the size per
file for free; a path string per row costs several times the scan); the newest change per
(rowset, rowid, column) wins and deleted rows are dropped. Rowsets without deltas are never
joined. The rules are specs/format.md §9.4; the engine gives the recipe (`Snapshot.read_plan`).

Where the JVM cannot do it, single rowsets fall back to the Python data source
(`datasource.py`), and one log line says why: a URI scheme the JVM cannot open (only local
paths and `file://` are assumed readable; declare others with `jvm_schemes`), or a version
behind the history horizon that needs UNDO records. `path="native"` refuses to fall back
(NativeReadUnavailableError); `path="python"` reads everything through the data source.
"""
from __future__ import annotations

import logging
import weakref
from collections import Counter
from typing import Any, Iterable, Sequence

import pyarrow as pa

import tableformat as tf

from .snapshots import open_snapshot, parse_as_of, spark_schema, spark_type

log = logging.getLogger(__name__)

PATHS = ("auto", "native", "python")
_RS, _ROW = "__tf_rowset", "__tf_row"
_KEY, _DKEY = "__tf_key", "__d_key"
_UPDATE, _DELETE, _REINSERT = 1, 2, 3
# page CRCs are part of the format (specs/format.md §5): the JVM reader checks them too
_VERIFY_CONF = "parquet.page.verify-checksum.enabled"
# REDO files up to this size (compressed, as the log records them) are broadcast to the base scan
_BROADCAST_DELTA_BYTES = 32 << 20
# a rowset with deltas is joined on a long of (its file, its row index): 32 bits each
MAX_JOIN_ROWS = 1 << 32


def read_table(spark: Any, uri: str, as_of: Any = None, storage_options: dict | None = None,
               columns: Sequence[str] | None = None, filter: Any = None, path: str = "auto",
               jvm_schemes: Iterable[str] = ()) -> Any:
    """The table (as of a version, Timestamp, datetime or ISO string) as a DataFrame.

    `columns` (names; None: all) and `filter` (the engine's (column, op, value) terms, ANDed)
    narrow the read: the engine prunes tablets and rowsets, Spark evaluates the terms with the
    same semantics (specs/format.md §13). `path`: "auto" (native where possible), "native"
    or "python". `jvm_schemes`: URI schemes the cluster's JVM can read (e.g. {"s3a", "hdfs"}).
    """
    if path not in PATHS:
        raise tf.InvalidOptionError(f"path must be one of {PATHS}, got {path!r}")
    if isinstance(jvm_schemes, str):
        jvm_schemes = [jvm_schemes]
    snap = open_snapshot(uri, storage_options, parse_as_of(as_of))
    schema = snap.schema
    names = list(snap.scan(columns, filter).columns)   # the engine's checks of columns and filter
    terms = [filter] if isinstance(filter, tuple) else list(filter or [])
    read_names = names + [t[0] for t in terms if t[0] not in names]
    read_names = list(dict.fromkeys(read_names))
    plan = snap.read_plan(read_names, filter)
    storage = tf.Storage(uri, storage_options)
    scheme_reason = _jvm_unreadable(storage, jvm_schemes)
    native, fallback, reasons = [], [], Counter()
    split = [n for n in read_names if schema.column(n).encoding == "bitshuffle"
             and not (schema.column(n).type.kind == "decimal" and schema.column(n).type.precision > 18)]
    split_reason = (f"column(s) {split} use encoding bitshuffle (Parquet BYTE_STREAM_SPLIT), which this Spark's "
                    "vectorized Parquet reader cannot decode") \
        if split and path != "python" and not scheme_reason and not reads_byte_stream_split(spark) else None
    for rs in plan.rowsets:
        why = "path='python' was asked for" if path == "python" else scheme_reason or split_reason or rs.reason or (
            f"a rowset with deltas of {MAX_JOIN_ROWS} rows or more" if rs.redo and rs.num_rows >= MAX_JOIN_ROWS else None)
        if why:
            fallback.append(rs)
            reasons[why] += 1
        else:
            native.append(rs)
    if fallback and path == "native":
        raise tf.NativeReadUnavailableError(
            f"{len(fallback)} of {len(plan.rowsets)} rowsets of {uri!r} version {plan.version} cannot be read "
            f"natively: {'; '.join(reasons)}; use path='auto' to read them through the Python data source")
    parts = _native_parts(spark, storage, plan, native) if native else []
    if fallback:
        log.warning("read_table %s version %d: %d of %d rowsets read through the Python data source (%s)",
                    storage, plan.version, len(fallback), len(plan.rowsets),
                    "; ".join(f"{n}: {r}" for r, n in reasons.items()))
        parts.append(_python_part(spark, uri, storage_options, plan, [r.id for r in fallback], read_names))
    if not parts:
        df = spark.createDataFrame([], spark_schema(schema, read_names))
    else:
        df = parts[0]
        for p in parts[1:]:
            df = df.unionByName(p)
    cond = _spark_filter(schema, terms)
    if cond is not None:
        df = df.filter(cond)
    return df if list(df.columns) == names else df.selectExpr(*[_q(n) for n in names])


def register_view(spark: Any, name: str, uri: str, **options: Any) -> Any:
    """read_table(spark, uri, **options) as the temporary view `name` (replaced if it exists).
    The view is fixed at the version read now: register it again to see later commits."""
    df = read_table(spark, uri, **options)
    df.createOrReplaceTempView(name)
    return df


# --- where the JVM can read -----------------------------------------------------------

def _jvm_unreadable(storage: tf.Storage, jvm_schemes: Iterable[str]) -> str | None:
    """Why Spark's own reader cannot open the table's files (None: it can)."""
    if storage.is_local:
        return None
    scheme = storage.uri.split("://", 1)[0].lower() if "://" in storage.uri else storage.protocol
    if scheme in {s.lower() for s in jvm_schemes}:
        return None
    return (f"the JVM is not known to read {scheme}:// URIs (declare it with jvm_schemes=[{scheme!r}] when "
            "the cluster has its Hadoop file system)")


def _jvm_path(storage: tf.Storage, rel: str) -> str:
    if storage.is_local:
        return "file://" + storage.path(rel)
    return storage.uri.rstrip("/") + "/" + rel


def _col(name: str):
    from pyspark.sql import functions as F
    return F.col("`" + name.replace("`", "``") + "`")


# --- the native part ------------------------------------------------------------------

def _native_parts(spark, storage: tf.Storage, plan: tf.ReadPlan, rowsets: list) -> list:
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
        for taken, members in subs:
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


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


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
        ddl = ", ".join(f"c{i} {spark_type(schema.by_id(i).type).simpleString()}" for i in ids)
        df = spark.read.schema(ddl).parquet(*[_jvm_path(storage, rs.base[pos].path) for rs in rowsets])
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
            df = df.selectExpr(*[f"c{i}" for i in ids], *keys)
        base = df if base is None else base.join(df, [_RS, _ROW])
    cols = {c.id: f"c{c.id}" for c in plan.read_columns if c.id not in missing}
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
        base = base.select("*", *[F.lit(c.read_default).cast(spark_type(c.type)).alias(f"c{c.id}")
                                  for c in plan.read_columns if c.id in missing])
        cols.update({i: f"c{i}" for i in missing})
    for cid in updated:
        cols[cid] = f"CASE WHEN __u{cid} THEN __v{cid} ELSE {cols[cid]} END"
    return base.selectExpr(*[f"{cols[c.id]} AS {_q(c.name)}" for c in plan.read_columns])


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
        ddl += [f"u{cid} boolean", f"c{cid} {spark_type(plan.schema.by_id(cid).type).simpleString()}"]
    d = spark.read.schema(", ".join(ddl)).parquet(*[_jvm_path(storage, f.path) for _, f in files])
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
                            *[f"coalesce(u{cid}, false){changed} AS __u{cid}" for cid in updated],
                            *[f"c{cid} AS __v{cid}" for cid in updated]), updated, deletes
    op = "op" if deletes else f"{_UPDATE}Y"
    d = d.selectExpr("rowid", f"{op} AS op", "ts", *[c for cid in updated for c in (f"u{cid}", f"c{cid}")],
                     f"{info} AS i")
    # a commit's REDO file has no ts column: every record is at its commit time
    d = d.selectExpr("*", key("i"), "named_struct('o', i.o, 't', coalesce(ts, i.m)) AS rank")
    if plan.read_ts is not None:
        d = d.where(f"rank.t <= {int(plan.read_ts)}L")
    aggs = [f"max_by(op, CASE WHEN op IN ({_DELETE}, {_REINSERT}) THEN rank END) = {_DELETE} AS __deleted"]
    for cid in updated:
        changes = f"coalesce(u{cid}, false) AND op != {_DELETE}"
        aggs += [f"coalesce(max(CASE WHEN {changes} THEN true END), false) AS __u{cid}",
                 f"max_by(c{cid}, CASE WHEN {changes} THEN rank END) AS __v{cid}"]
    from pyspark.sql import functions as F
    return d.groupBy(_DKEY).agg(*[F.expr(a) for a in aggs]), updated, deletes


_SPLIT_PROBED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def reads_byte_stream_split(spark: Any) -> bool:
    """Whether this session's Parquet reader decodes BYTE_STREAM_SPLIT (bitshuffle, the default
    encoding of integer, float and time columns): probed once per session on a one-row file, since
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


# --- the Python fallback --------------------------------------------------------------

def _python_part(spark, uri: str, storage_options: dict | None, plan: tf.ReadPlan, rowset_ids: list,
                 names: list):
    """Just these rowsets of the same version through the `tableformat` data source."""
    import json
    from .datasource import NAME, register
    register(spark)
    # the data source's reader defines pushFilters, which Spark refuses unless this is on
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    r = (spark.read.format(NAME).schema(spark_schema(plan.schema, names))
         .option("as_of", str(plan.version)).option("rowsets", ",".join(rowset_ids)))
    if storage_options:
        r = r.option("storage_options", json.dumps(storage_options))
    return r.load(uri)


# --- filters ----------------------------------------------------------------------------

def _literal(ctype, value):
    from pyspark.sql import functions as F
    if isinstance(value, int) and not isinstance(value, bool):
        if ctype.kind == "unixtime_micros":
            return F.timestamp_micros(F.lit(value))
        if ctype.kind == "date":
            return F.date_from_unix_date(F.lit(value))
    if hasattr(value, "as_py"):   # an Arrow scalar
        return _literal(ctype, value.as_py())
    return F.lit(value)


def _is_nan(v) -> bool:
    return isinstance(v, float) and v != v


def _compare(c, ctype, op: str, value):
    """One comparison. On float columns Parquet statistics leave NaN out, so a pushed-down
    `>`, `>=` or `!=` could skip a row group holding only matching NaN rows: those terms are
    written so Spark keeps them out of the scan (`OR isnan`), and NaN literals become isnan."""
    from pyspark.sql import functions as F
    op = {"==": "=", "<>": "!="}.get(op, op)
    if ctype.kind in ("float", "double"):
        if _is_nan(value):
            nan, notnull = F.isnan(c), c.isNotNull()
            return {"=": nan, ">=": nan, ">": F.lit(False), "<": notnull & ~nan, "<=": notnull,
                    "!=": notnull & ~nan}[op]
        if op in (">", ">=", "!="):
            v = F.lit(value)
            return ((c > v) if op == ">" else (c >= v) if op == ">=" else (c != v)) | F.isnan(c)
    v = _literal(ctype, value)
    return {"=": c == v, "!=": c != v, "<": c < v, "<=": c <= v, ">": c > v, ">=": c >= v}[op]


def _spark_filter(schema: tf.Schema, terms: list):
    """The engine's filter terms as one Spark condition. Spark compares as the engine does
    (NULL matches nothing; NaN = NaN and above every number; -0.0 = 0.0), specs/format.md §13."""
    from pyspark.sql import functions as F
    cond = None
    for t in terms:
        name, op = t[0], str(t[1]).strip().lower().replace("_", " ")
        c, ctype = _col(name), schema.column(name).type
        if op == "is null":
            e = c.isNull()
        elif op == "is not null":
            e = c.isNotNull()
        elif op == "in":
            vals = [v for v in t[2] if v is not None]
            e = c.isin(*[_literal(ctype, v) for v in vals]) if vals else c.isNull() & c.isNotNull()
            if ctype.kind in ("float", "double") and any(_is_nan(v) for v in vals):
                e = e | F.isnan(c)
        else:
            e = _compare(c, ctype, op, t[2])
        cond = e if cond is None else cond & e
    return cond
