"""Native reads: a table as an ordinary Spark DataFrame, and which reader reads each rowset.

    from spark_jobs.read import read_changes, read_table, register_view
    df = read_table(spark, "/data/metrics", as_of=None)
    register_view(spark, "metrics", "/data/metrics")
    spark.sql("SELECT host, avg(value) FROM metrics GROUP BY host")
    changes = read_changes(spark, "/data/metrics", start=3)     # Table.changes(3) (spark_jobs/changes.py)

The JVM connector (`spark_jobs/connector/`, format `tableformat-jvm`) is the first choice,
and the JVM plans its reads itself (the log and §9.4's plan in `connector/src/main/java/tableformat/
{log,plan}`, a second implementation of Python's planner): `read_table` hands it the table's
path and the version, Spark pushes the filter into the scan, which prunes tablets and rowsets
before any file is opened; it reads base files with Spark's vectorized Parquet reader and
applies REDO and UNDO records inside each ColumnarBatch. A view from `register_view` is planned
again at each query, so it reads the latest version and its WHERE prunes. The connector is used
when the session loaded its jar (`get_spark()` does, when a JDK can compile it).

Python's own plan (`Snapshot.read_plan`) is still read where the connector is not: by the join
path (`read_join.py`: Spark's Parquet scan of the base files, pending REDO records joined to
them by row) when the session has no connector jar, with one log line saying why; and by the
Python data source (`datasource.py`) where no JVM path can read a rowset: a URI scheme the JVM
cannot open (only local paths, `file://` and Hadoop's own `hdfs://`, `webhdfs://`, `viewfs://`
are assumed readable; declare others with `jvm_schemes`, `jvm_paths.py`), or (without the
connector) a version behind the history horizon that needs UNDO records.
`path="native"` refuses to fall back (NativeReadUnavailableError); `path="python"` reads
everything through the data source; `path="join"` skips the connector. Whatever reads them,
the rows are filtered by Spark with the engine's semantics (`read_filters.py`).
"""
from __future__ import annotations

import json
import logging
import os
from collections import Counter
from typing import Any, Iterable, Sequence

import tableformat as tf

from .changes import feed_columns, struct_type
from .connect import default_parallelism
from .jvm_paths import configure_s3a, jvm_path, jvm_unreadable, s3a_ready
from .read_filters import column, quoted, spark_filter
from .read_join import MAX_JOIN_ROWS, native_parts, reads_byte_stream_split
from .snapshots import open_snapshot, parse_as_of, spark_schema

log = logging.getLogger(__name__)

PATHS = ("auto", "native", "python", "join")
_JOIN_ASKED = "path='join' was asked for"


def read_table(spark: Any, uri: str, as_of: Any = None, storage_options: dict | None = None,
               columns: Sequence[str] | None = None, filter: Any = None, path: str = "auto",
               jvm_schemes: Iterable[str] = ()) -> Any:
    """The table (as of a version, Timestamp, datetime or ISO string) as a DataFrame.

    `columns` (names; None: all) and `filter` (the engine's (column, op, value) terms, ANDed)
    narrow the read: tablets and rowsets are pruned, Spark evaluates the terms with the
    engine's semantics (specs/format.md §13). `path`: "auto" (the JVM connector, else Spark's
    Parquet scan plus a join, where possible), "native" (never the Python data source),
    "join" (never the connector; also TABLEFORMAT_SPARK_READ=join) or "python". `jvm_schemes`: URI schemes the cluster's JVM can
    read beyond Hadoop's own (hdfs, webhdfs, viewfs: always there), e.g. {"gs"}.
    The DataFrame keeps the version read now (or `as_of`'s); `register_view` follows the latest.
    """
    from .errors import typed_errors
    with typed_errors():                       # a JVM error while Spark resolves the read: the engine's class
        return _read(spark, uri, False, as_of, storage_options, columns, filter, path, jvm_schemes)


def register_view(spark: Any, name: str, uri: str, **options: Any) -> Any:
    """read_table(spark, uri, **options) as the temporary view `name` (replaced if it exists).

    Through the JVM connector (the session has its jar) and with no `as_of`, every query of the
    view is planned by the JVM planner when it runs (specs/format.md §9.4): it reads the version
    that is latest then, and its WHERE prunes tablets and rowsets. Its columns are those of now:
    a column added later is not shown, and one dropped, renamed or re-typed later makes a query
    fail with SchemaChangedError (`spark_jobs.errors.typed_error`; register the view again). Without the connector the
    view is fixed at the version read now: register it again to see later commits."""
    from .errors import typed_errors
    with typed_errors():
        df = _read(spark, uri, options.get("as_of") is None, **options)
        df.createOrReplaceTempView(name)
    return df


def _read(spark, uri: str, latest: bool, as_of: Any = None, storage_options: dict | None = None,
          columns: Sequence[str] | None = None, filter: Any = None, path: str = "auto",
          jvm_schemes: Iterable[str] = ()):
    """read_table's DataFrame; `latest`: the JVM connector plans the latest version at each query."""
    if path not in PATHS:
        raise tf.InvalidOptionError(f"path must be one of {PATHS}, got {path!r}")
    if isinstance(jvm_schemes, str):
        jvm_schemes = [jvm_schemes]
    snap = open_snapshot(uri, storage_options, parse_as_of(as_of))
    scanner = snap.scan(columns, filter)        # the engine's checks of columns and filter
    names, predicates = list(scanner.columns), scanner.predicates
    read_names = _read_names(snap.schema, names, predicates)
    storage = tf.Storage(uri, storage_options)
    if s3a_ready(spark, storage):
        jvm_schemes = [*jvm_schemes, "s3", "s3a"]
        configure_s3a(spark, storage, storage_options)
    scheme_reason = jvm_unreadable(storage, jvm_schemes)
    no_connector = path == "join" or os.environ.get("TABLEFORMAT_SPARK_READ") == "join"   # a process-wide choice
    connector_reason = _JOIN_ASKED if no_connector else _connector_unavailable(spark)
    if path != "python" and scheme_reason is None and connector_reason is None:
        df = _jvm_planned(spark, storage, None if latest else snap.version, read_names)
    else:
        df = _python_planned(spark, uri, storage_options, snap, filter, read_names, path,
                             scheme_reason, connector_reason)
    cond = spark_filter(predicates)
    if cond is not None:
        df = df.filter(cond)
    return df if list(df.columns) == names else df.selectExpr(*[quoted(n) for n in names])


def _jvm_planned(spark, storage: tf.Storage, version: int | None, read_names: list[str]):
    """The table read by the JVM connector, planned by the JVM planner (specs/format.md §9.4):
    `spark.read.format("tableformat-jvm").load(path)` at the version Python resolved (a timestamp
    or tag reads that version's state, §8.2), or None: the latest version at each query. Filters
    Spark pushes into the scan prune tablets and rowsets."""
    from .connector import NAME
    r = spark.read.format(NAME)
    if version is not None:
        r = r.option("as_of", str(version))
    return r.load(jvm_path(storage, "").rstrip("/")).select(*[column(n) for n in read_names])


def _python_planned(spark, uri: str, storage_options: dict | None, snap, filter: Any, read_names: list[str],
                    path: str, scheme_reason: str | None, connector_reason: str | None):
    """The table read from Python's plan (`Snapshot.read_plan`): by the join path where the
    connector is not loaded, or by the Python data source (a scheme the JVM cannot open,
    path='python', a version behind the history horizon without the connector)."""
    plan = snap.read_plan(read_names, filter)
    storage = tf.Storage(uri, storage_options)
    split_reason = _byte_stream_split_reason(spark, snap.schema, read_names, path, scheme_reason, connector_reason)
    native, fallback, reasons = _route(plan, path, scheme_reason, connector_reason, split_reason)
    if fallback and path == "native":
        raise tf.NativeReadUnavailableError(
            f"{len(fallback)} of {len(plan.rowsets)} rowsets of {uri!r} version {plan.version} cannot be read "
            f"natively: {'; '.join(reasons)}; use path='auto' to read them through the Python data source")
    parts = _join_parts(spark, storage, plan, native, path, connector_reason)
    if fallback:
        log.warning("read_table %s version %d: %d of %d rowsets read through the Python data source (%s)",
                    storage, plan.version, len(fallback), len(plan.rowsets),
                    "; ".join(f"{n}: {r}" for r, n in reasons.items()))
        parts.append(_python_part(spark, uri, storage_options, plan, [r.id for r in fallback], read_names,
                                  snap.table_id))
    return _union(spark, parts, snap.schema, read_names)


def _read_names(schema: tf.Schema, names: list[str], predicates: list) -> list[str]:
    """The columns to read: those asked for, then those only the filter needs (Spark filters after
    the read). With no column at all (count(*)) Spark's reader still needs one to count rows by:
    the first key column."""
    read_names = names + [p.column for p in predicates if p.column not in names]
    return list(dict.fromkeys(read_names)) or [schema.primary_key[0]]


def _connector_unavailable(spark) -> str | None:
    """Why the JVM connector cannot read for this session (None: it can)."""
    from .connector import loaded
    return loaded(spark)


def _byte_stream_split_reason(spark, schema: tf.Schema, read_names: list[str], path: str,
                              scheme_reason: str | None, connector_reason: str | None) -> str | None:
    """Why the join path cannot read the columns asked for (None: it can): bitshuffle columns
    where this Spark's Parquet reader cannot decode them. The connector decodes them itself."""
    split = [n for n in read_names if schema.column(n).encoding == "bitshuffle"
             and not (schema.column(n).type.kind == "decimal" and schema.column(n).type.precision > 18)]
    return (f"column(s) {split} use encoding bitshuffle (Parquet BYTE_STREAM_SPLIT), which this Spark's "
            "vectorized Parquet reader cannot decode") \
        if split and path != "python" and not scheme_reason and connector_reason is not None \
        and not reads_byte_stream_split(spark) else None     # the connector decodes it itself


def _route(plan: tf.ReadPlan, path: str, scheme_reason: str | None, connector_reason: str | None,
           split_reason: str | None) -> tuple[list, list, Counter]:
    """Which rowsets a JVM path reads and which fall back to the Python data source, with why
    (a count of rowsets per reason). Returns (native, fallback, reasons)."""
    native, fallback, reasons = [], [], Counter()
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
    return native, fallback, reasons


def _join_parts(spark, storage: tf.Storage, plan: tf.ReadPlan, native: list, path: str,
                connector_reason: str | None) -> list:
    """The natively read rowsets as DataFrames of the join path (the connector is not loaded)."""
    if native and path != "python" and connector_reason != _JOIN_ASKED:
        log.info("read_table %s: the JVM connector is not used: %s", storage, connector_reason)
    return native_parts(spark, storage, plan, native) if native else []


def _union(spark, parts: list, schema: tf.Schema, read_names: list[str]):
    """One DataFrame of every part (an empty one of the read columns when there is none)."""
    if not parts:
        return spark.createDataFrame([], spark_schema(schema, read_names))
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p)
    return df


def _python_part(spark, uri: str, storage_options: dict | None, plan: tf.ReadPlan, rowset_ids: list,
                 names: list, table_id: str):
    """Just these rowsets of the same version of the same table (`table_id`: a table re-created at
    the path since is TableReplacedError, specs/format.md §9.5) through the `tableformat` data source."""
    import json
    from .datasource import NAME, register
    register(spark)         # and Python filter pushdown on: the reader defines pushFilters
    r = (spark.read.format(NAME).schema(spark_schema(plan.schema, names))
         .option("as_of", str(plan.version)).option("rowsets", ",".join(rowset_ids))
         .option("table_id", table_id))
    if storage_options:
        r = r.option("storage_options", json.dumps(storage_options))
    return r.load(uri)


def read_changes(spark: Any, uri: str, start: Any, end: Any = None, mode: str = "all", before_image: bool = False,
                 images: str = "full", skipped: bool = False, columns: str = "tableformat",
                 storage_options: dict | None = None, num_partitions: int | None = None) -> Any:
    """Table.changes(start, end, ...) as a DataFrame computed on the executors, the parts packed
    into `num_partitions` tasks (default: twice the default parallelism, option numPartitions).

    `start` and `end` are Table.changes' own (start exclusive: the changes committed after it;
    a version, Timestamp, datetime, ISO string or tag), resolved here to the data source's
    inclusive versions. `columns="delta"` gives Delta's change feed columns. Errors are typed."""
    from .datasource import NAME, register
    from .errors import typed_errors
    with typed_errors():
        t = tf.open_table(uri, storage_options=storage_options)
        plan = t.change_plan(start, end, mode, before_image, images, skipped)   # checks every option
        if plan.start == plan.end:             # no commit in range: no version to start from
            return spark.createDataFrame([], struct_type(plan, feed_columns(columns)))
        register(spark)
        r = (spark.read.format(NAME).option("readChangeFeed", "true")
             .option("startingVersion", str(plan.start + 1)).option("endingVersion", str(plan.end))
             .option("mode", mode).option("before_image", str(before_image).lower()).option("images", images)
             .option("skipped", str(skipped).lower()).option("changeFeedColumns", columns)
             .option("numPartitions", str(num_partitions or 2 * default_parallelism(spark))))
        if storage_options:
            r = r.option("storage_options", json.dumps(storage_options))
        return r.load(uri)
