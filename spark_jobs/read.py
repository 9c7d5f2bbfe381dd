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

The JVM connector (`spark_jobs/connector/`, format `tableformat-jvm`) is the first choice:
it gets the plan as JSON, reads base files with Spark's vectorized Parquet reader and applies
REDO and UNDO records inside each ColumnarBatch, so pending deltas cost no join and reads
behind the history horizon stay native. It is used when the session loaded its jar
(`get_spark()` does, when a JDK can compile it); otherwise the Parquet-scan-plus-join path
above runs, and one log line says why.

Where neither JVM path can read a rowset, it falls back to the Python data source
(`datasource.py`), and one log line says why: a URI scheme the JVM cannot open (only local
paths and `file://` are assumed readable; declare others with `jvm_schemes`), or (without the
connector) a version behind the history horizon that needs UNDO records. `path="native"`
refuses to fall back (NativeReadUnavailableError); `path="python"` reads everything through
the data source; `path="join"` skips the connector.
"""
from __future__ import annotations

import logging
import os
import weakref
from collections import Counter
from typing import Any, Iterable, Sequence

import pyarrow as pa

import tableformat as tf

from .snapshots import open_snapshot, parse_as_of, spark_schema, spark_type

log = logging.getLogger(__name__)

PATHS = ("auto", "native", "python", "join")
_RS, _ROW = "__tf_rowset", "__tf_row"
_KEY, _DKEY = "__tf_key", "__d_key"
# the delta op codes and field names are the format's (tableformat.format, specs/format.md §9)
_UPDATE, _DELETE, _REINSERT = (int(op) for op in (tf.DeltaOp.UPDATE, tf.DeltaOp.DELETE, tf.DeltaOp.REINSERT))
_field, _flag = tf.format.field_name, tf.format.flag_name
# page CRCs are part of the format (specs/format.md §5): the JVM reader checks them too
_VERIFY_CONF = "parquet.page.verify-checksum.enabled"
# REDO files up to this size (compressed, as the log records them) are broadcast to the base scan
_BROADCAST_DELTA_BYTES = 32 << 20
CONNECTOR = "tableformat-jvm"   # the JVM connector's short name (spark_jobs/connector)
# a rowset with deltas is joined on a long of (its file, its row index): 32 bits each
MAX_JOIN_ROWS = 1 << 32


def read_table(spark: Any, uri: str, as_of: Any = None, storage_options: dict | None = None,
               columns: Sequence[str] | None = None, filter: Any = None, path: str = "auto",
               jvm_schemes: Iterable[str] = ()) -> Any:
    """The table (as of a version, Timestamp, datetime or ISO string) as a DataFrame.

    `columns` (names; None: all) and `filter` (the engine's (column, op, value) terms, ANDed)
    narrow the read: the engine prunes tablets and rowsets, Spark evaluates the terms with the
    same semantics (specs/format.md §13). `path`: "auto" (the JVM connector, else Spark's
    Parquet scan plus a join, where possible), "native" (never the Python data source),
    "join" (never the connector; also TABLEFORMAT_SPARK_READ=join) or "python". `jvm_schemes`: URI schemes the cluster's JVM can
    read (e.g. {"s3a", "hdfs"}).
    """
    if path not in PATHS:
        raise tf.InvalidOptionError(f"path must be one of {PATHS}, got {path!r}")
    if isinstance(jvm_schemes, str):
        jvm_schemes = [jvm_schemes]
    snap = open_snapshot(uri, storage_options, parse_as_of(as_of))
    schema = snap.schema
    scanner = snap.scan(columns, filter)        # the engine's checks of columns and filter
    names, predicates = list(scanner.columns), scanner.predicates
    read_names = names + [p.column for p in predicates if p.column not in names]
    # no column at all (count(*)): Spark's reader needs one to count rows by; the first key column
    read_names = list(dict.fromkeys(read_names)) or [schema.primary_key[0]]
    plan = snap.read_plan(read_names, filter)
    storage = tf.Storage(uri, storage_options)
    if _s3a_ready(spark, storage):
        jvm_schemes = [*jvm_schemes, "s3", "s3a"]
        _configure_s3a(spark, storage, storage_options)
    scheme_reason = _jvm_unreadable(storage, jvm_schemes)
    no_connector = path == "join" or os.environ.get("TABLEFORMAT_SPARK_READ") == "join"   # a process-wide choice
    connector_reason = "path='join' was asked for" if no_connector else _connector_unavailable(spark)
    native, fallback, reasons = [], [], Counter()
    split = [n for n in read_names if schema.column(n).encoding == "bitshuffle"
             and not (schema.column(n).type.kind == "decimal" and schema.column(n).type.precision > 18)]
    split_reason = (f"column(s) {split} use encoding bitshuffle (Parquet BYTE_STREAM_SPLIT), which this Spark's "
                    "vectorized Parquet reader cannot decode") \
        if split and path != "python" and not scheme_reason and connector_reason is not None \
        and not reads_byte_stream_split(spark) else None     # the connector decodes it itself
    for rs in plan.rowsets:
        if path == "python":
            why = "path='python' was asked for"
        elif connector_reason is None:       # the connector (its own reader for BYTE_STREAM_SPLIT)
            why = scheme_reason
        else:
            why = scheme_reason or split_reason or rs.reason or (
                f"a rowset with deltas of {MAX_JOIN_ROWS} rows or more" if rs.redo and rs.num_rows >= MAX_JOIN_ROWS
                else None)
        if why:
            fallback.append(rs)
            reasons[why] += 1
        else:
            native.append(rs)
    if fallback and path == "native":
        raise tf.NativeReadUnavailableError(
            f"{len(fallback)} of {len(plan.rowsets)} rowsets of {uri!r} version {plan.version} cannot be read "
            f"natively: {'; '.join(reasons)}; use path='auto' to read them through the Python data source")
    if native and connector_reason is None:
        parts = [_connector_part(spark, storage, plan, native)]
    else:
        if native and path != "python" and connector_reason != "path='join' was asked for":
            log.info("read_table %s: the JVM connector is not used: %s", storage, connector_reason)
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
    cond = _spark_filter(predicates)
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
    root = storage.uri.rstrip("/")
    if root.startswith("s3://"):        # Hadoop's S3 file system is s3a (hadoop-aws)
        root = "s3a://" + root[len("s3://"):]
    return root + "/" + rel


def _s3a_ready(spark, storage: tf.Storage) -> bool:
    """Whether the table is on S3 and this session's JVM has hadoop-aws (see session.s3a_packages)."""
    if not storage.uri.startswith(("s3://", "s3a://")):
        return False
    loaded = (spark.conf.get("spark.jars.packages", "") or "") + "," + (spark.conf.get("spark.jars", "") or "")
    return "hadoop-aws" in loaded


def _configure_s3a(spark, storage: tf.Storage, storage_options: dict | None) -> None:
    """The table's storage options as s3a settings scoped to its bucket (`fs.s3a.bucket.<b>.*`),
    set on the session (readers' Hadoop confs copy them). Credentials go only there: never into
    a plan, a log line or an error."""
    from .session import s3a_settings
    bucket = storage.uri.split("://", 1)[1].split("/", 1)[0]
    for k, v in s3a_settings(bucket, storage_options).items():
        if spark.conf.get(k, None) != v:
            spark.conf.set(k, v)


def _col(name: str):
    from pyspark.sql import functions as F
    return F.col("`" + name.replace("`", "``") + "`")


# --- the JVM connector ----------------------------------------------------------------

def _connector_unavailable(spark) -> str | None:
    """Why the JVM connector cannot read for this session (None: it can)."""
    from .connector import loaded
    return loaded(spark)


def _connector_part(spark, storage: tf.Storage, plan: tf.ReadPlan, rowsets: list):
    """These rowsets read by the connector: the plan as JSON, columns named as the schema names them."""
    import json
    return spark.read.format(CONNECTOR).option("plan", json.dumps(connector_plan(storage, plan, rowsets))).load()


def _physical(ctype, value):
    """A value as the connector's plan carries it: Catalyst's physical form in JSON."""
    import base64
    import math

    import pyarrow as pa
    if value is None:
        return None
    s = pa.scalar(value, type=ctype.arrow())
    k = ctype.kind
    if k == "date":
        return s.cast(pa.int32()).as_py()
    if k == "unixtime_micros":
        return s.cast(pa.int64()).as_py()
    if k == "decimal":
        return str(s.as_py())
    if k == "binary":
        return base64.b64encode(s.as_py()).decode()
    v = s.as_py()
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v).replace("inf", "Infinity").replace("nan", "NaN")
    return v


def connector_plan(storage: tf.Storage, plan: tf.ReadPlan, rowsets: list) -> dict:
    """The read plan as the connector takes it (spark_jobs/connector/.../ReadPlan.java): file
    URIs the JVM opens, column IDs, Spark types, read defaults, ranks and the cut."""
    def delta(f):
        return {"path": _jvm_path(storage, f.path), "size": f.size, "order": f.order, "min_ts": f.min_ts,
                "max_ts": f.max_ts, "has_ts": f.has_ts_column, "updates": list(f.updates), "deletes": f.deletes}
    return {
        "version": plan.version, "read_ts": plan.read_ts,
        "columns": [{"id": c.id, "name": c.name, "type": spark_type(c.type).simpleString(), "nullable": True,
                     "default": _physical(c.type, c.read_default)} for c in plan.read_columns],
        "rowsets": [{"id": rs.id, "num_rows": rs.num_rows,
                     "base": [{"path": _jvm_path(storage, b.path), "size": b.size, "columns": [i for i, _ in b.columns]}
                              for b in rs.base],
                     "redo": [delta(f) for f in rs.redo], "undo": [delta(f) for f in rs.undo],
                     "missing": list(rs.missing)} for rs in rowsets],
    }


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
        ddl = ", ".join(f"{_field(i)} {spark_type(schema.by_id(i).type).simpleString()}" for i in ids)
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
    return base.selectExpr(*[f"{cols[c.id]} AS {_q(c.name)}" for c in plan.read_columns])


def _default(c):
    """A column's read default as a Spark value of its type. A date or timestamp Python's datetime
    cannot hold is kept as int days or microseconds (`Column.read_default`): a cast of an int to
    a timestamp would read it as seconds."""
    from pyspark.sql import functions as F
    v = c.read_default
    if v is not None and c.type.kind in ("date", "unixtime_micros") and isinstance(v, int):
        return _literal(c.type, v)
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
                f"{_field(cid)} {spark_type(plan.schema.by_id(cid).type).simpleString()}"]
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

# Spark hands a pushed-down filter's value to a Python data source as a Python date or datetime:
# beyond these (with a day's margin for the session time zone) it cannot, and the query fails
_PY_MICROS = (-62_135_596_800_000_000 + 86_400_000_000, 253_402_300_799_999_999 - 86_400_000_000)
_PY_DAYS = (-719_162, 2_932_896)


def _literal(ctype, value):
    """A domain value (`Scanner.predicates`: int, int days, int microseconds, Decimal, float, str,
    bytes, bool) as a Spark literal of the column's own type: comparisons then never cast the
    column (a bigint compared with a double is rounded) and every value fits."""
    from pyspark.sql import functions as F
    k = ctype.kind
    if k == "unixtime_micros":
        return F.timestamp_micros(F.lit(int(value)))
    if k == "date":
        return F.date_from_unix_date(F.lit(int(value)))
    if k == "decimal":
        return F.lit(format(value, "f")).cast(spark_type(ctype))
    if k in ("int8", "int16", "int32", "int64"):
        return F.lit(int(value)).cast(spark_type(ctype))
    if k in ("float", "double"):
        return F.lit(float(value))                  # a double: a float32 column is compared as double
    if k == "binary":
        return F.lit(bytearray(value))
    return F.lit(value)


def _beyond_python(ctype, value) -> bool:
    """A timestamp or date Python's datetime cannot hold: compared as a number (unix_micros,
    unix_date), which Spark does not push down, so the value never has to become a datetime."""
    lo, hi = _PY_MICROS if ctype.kind == "unixtime_micros" else _PY_DAYS if ctype.kind == "date" else (None, None)
    return lo is not None and not lo <= value <= hi


def _operands(c, ctype, value):
    """(column side, value side) of one comparison, exact (`_literal`, `_beyond_python`)."""
    from pyspark.sql import functions as F
    if _beyond_python(ctype, value):
        return (F.unix_micros(c) if ctype.kind == "unixtime_micros" else F.unix_date(c)), F.lit(int(value))
    return c, _literal(ctype, value)


def _in(c, ctype, values):
    """`in`: members Python can hold as one isin (pushed down), the others compared as numbers."""
    from pyspark.sql import functions as F
    far = [v for v in values if _beyond_python(ctype, v)]
    near = [_literal(ctype, v) for v in values if not _beyond_python(ctype, v)]
    e = c.isin(*near) if near else None
    if far:
        col = F.unix_micros(c) if ctype.kind == "unixtime_micros" else F.unix_date(c)
        e2 = col.isin(*[F.lit(int(v)) for v in far])
        e = e2 if e is None else e | e2
    return e


def _float_term(c, op: str, v):
    """A normalized term on a float column. Parquet statistics leave NaN out, so a pushed-down
    `>`, `>=` or `!=` could skip a row group holding only matching NaN rows: those terms are
    written so Spark keeps them out of the scan (`OR isnan`); NaN values become isnan; `in`
    is one `=` per member (-0.0 = 0.0 by comparison, not by a hash set)."""
    from pyspark.sql import functions as F
    nan = F.isnan(c)
    if op == "in":
        e = None
        for x in v:
            m = nan if x != x else c == _literal_double(x)
            e = m if e is None else e | m
        return e
    if v != v:          # the engine left =, !=, <, <= with NaN (>= is = NaN, > is none)
        return {"=": nan, "!=": c.isNotNull() & ~nan, "<": c.isNotNull() & ~nan, "<=": c.isNotNull()}[op]
    lit = _literal_double(v)
    if op in (">", ">=", "!="):
        return ((c > lit) if op == ">" else (c >= lit) if op == ">=" else (c != lit)) | nan
    return {"=": c == lit, "<": c < lit, "<=": c <= lit}[op]


def _literal_double(v):
    from pyspark.sql import functions as F
    return F.lit(float(v) + 0.0)


def _spark_filter(predicates: list):
    """The engine's normalized filter terms (`Scanner.predicates`: each value already placed in
    the column's domain by the engine, §13, so nothing is left to round) as one Spark
    condition. Spark compares as the engine does (NULL matches nothing; NaN = NaN and above
    every number; -0.0 = 0.0), specs/format.md §13."""
    from pyspark.sql import functions as F
    cond = None
    for p in predicates:
        c, op = _col(p.column), p.op
        if op == "is null":
            e = c.isNull()
        elif op == "is not null":
            e = c.isNotNull()
        elif op == "none":
            e = F.lit(False)
        elif p.ctype.kind in ("float", "double"):
            e = _float_term(c, op, p.value)
        elif op == "in":
            e = _in(c, p.ctype, p.value)
        else:
            c, v = _operands(c, p.ctype, p.value)
            e = {"=": c == v, "!=": c != v, "<": c < v, "<=": c <= v, ">": c > v, ">=": c >= v}[op]
        cond = e if cond is None else cond & e
    return cond
