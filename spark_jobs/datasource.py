"""The `tableformat` Spark data source (PySpark's Python Data Source API).

The driver plans: it opens the snapshot, prunes with the pushed filters and
makes one input partition per scan task (a rowset slice). Executors read: each
task reopens the same snapshot version and runs the tableformat engine on its
slice. Writes insert with the primary key enforced: executors write rowsets,
the driver commits once in `commit()`; `abort()` deletes what the tasks wrote.
In a session with the connector's SQL extension (`get_spark` sets it with the jar) an append
runs in the JVM writer and committer instead, as INSERT INTO does (tableformat.catalog.
DataSourceAppend; option `writePath` auto | jvm | python; one JVM log line names the path).
A write task sorts and streams its rows in chunks (option `write_chunk_bytes`,
default 64 MiB), so it holds a chunk, never its whole input.

    spark.dataSource.register(TableFormatDataSource)
    spark.read.format("tableformat").option("as_of", "3").load("/data/metrics")
    CREATE TEMPORARY VIEW m USING tableformat OPTIONS (path '/data/metrics')
    df.write.format("tableformat").mode("append").save("/data/metrics")

Column pruning: the API gives readers no pruning hook, so the reader reads the
columns of the schema Spark asks for. Give a narrower schema to read fewer
columns: `.schema("value double")`, `.option("columns", "value")`, or in SQL
`CREATE TEMPORARY VIEW v (value DOUBLE) USING tableformat OPTIONS (...)`.
Option `rowsets` (comma-separated rowset ids) restricts the read to those rowsets.
Filters are pushed when `spark.sql.python.filterPushdown.enabled` is true.
Option `readChangeFeed` true reads Table.changes() instead, on the executors (spark_jobs/changes.py);
`spark.readStream` with it streams them (spark_jobs/stream.py).
"""
from __future__ import annotations

import json
import weakref
from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow as pa
from pyspark.sql.datasource import (DataSource, DataSourceArrowWriter, DataSourceReader, EqualTo, GreaterThan,
                                    GreaterThanOrEqual, In, InputPartition, IsNotNull, IsNull, LessThan,
                                    LessThanOrEqual, WriterCommitMessage)
from pyspark.sql.types import StructType

import tableformat as tf

from .changes import ChangeReader, change_schema, wants_changes
from .snapshots import delete_files, open_snapshot, parse_as_of, spark_schema, storage_options_from
from .stream import ChangeStreamReader
from .writes import check_input_types, commit_fragments, insert_unsorted

NAME = "tableformat"
# auto | jvm | python: where an append runs. With the connector's SQL extension in the session
# (spark_jobs.session.get_spark), the JVM rule tableformat.catalog.DataSourceAppend runs it in the
# JVM writer and committer when it can and logs which path ran; this Python writer runs the rest.
WRITE_PATH = "writePath"
WRITE_CHUNK_BYTES = 64 << 20      # a write task sorts and streams its input in chunks of this many bytes


def _positive_int(options: dict, name: str, default: int) -> int:
    raw = options.get(name)
    try:
        value = default if raw is None else int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise tf.InvalidOptionError(f"option {name!r} must be a positive integer, got {raw!r}")
    return value


@dataclass
class ScanPartition(InputPartition):
    """One rowset slice of one snapshot version."""

    uri: str
    options: str          # JSON storage options
    version: int
    rowset: str
    start: int
    stop: int
    table_id: str

    def __init__(self, uri, options, version, rowset, start, stop, table_id):
        super().__init__(None)
        self.uri, self.options, self.version = uri, options, version
        self.rowset, self.start, self.stop, self.table_id = rowset, start, stop, table_id


_SIMPLE = {EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<="}


def _to_predicate(f, snap):
    """The engine filter meaning exactly what Spark's filter means, or None (Spark evaluates it).

    The engine compares as Spark does (specs/format.md §13): NaN = NaN, NaN above every
    number, -0.0 = 0.0, NULL matching no comparison. A float column compared with a double
    reaches us only after Spark has unwrapped its cast to double into an exact comparison
    with a float value (UnwrapCastInBinaryComparison), which the engine evaluates exactly.
    A value the engine rejects stays with Spark.
    """
    schema = snap.schema
    attr = getattr(f, "attribute", None)        # Not, And, Or have none: Spark evaluates them
    col = attr[0] if attr is not None and len(attr) == 1 else None
    if col is None or not schema.has_column(col):
        return None
    term = None
    for cls, op in _SIMPLE.items():
        if type(f) is cls:
            if f.value is None:
                return None
            term = (col, op, f.value)
    if isinstance(f, In):
        term = (col, "in", list(v for v in f.value if v is not None))
    elif isinstance(f, IsNull):
        term = (col, "is null")
    elif isinstance(f, IsNotNull):
        term = (col, "is not null")
    if term is None:
        return None
    try:
        snap.scan([], [term])                   # the engine's own check of the filter
    except tf.InvalidFilterError:
        return None
    return term


def _replaced(uri: str, planned: str, now: str) -> tf.TableReplacedError:
    return tf.TableReplacedError(f"the table at {uri!r} was replaced after the DataFrame was defined (it was "
                                 f"table {planned}, it is now {now}); read it again")


class TableFormatReader(DataSourceReader):
    def __init__(self, options: dict, schema: StructType):
        self.uri = options["path"]
        self.storage_options = storage_options_from(options)
        self.as_of = parse_as_of(options.get("as_of"))
        self.columns = [f.name for f in schema.fields]
        self.filters: list[tuple] = []
        # `rowsets`: comma-separated rowset ids; only those are read (read_table's per-rowset fallback)
        raw = options.get("rowsets")
        self.rowsets = None if raw is None else {r for r in raw.split(",") if r}
        snap = open_snapshot(self.uri, self.storage_options, self.as_of)
        self.version = snap.version
        self.table_id = snap.table_id
        planned = options.get("table_id")       # read_table's plan was made on this table (§9.5)
        if planned and planned != snap.table_id:
            raise _replaced(self.uri, planned, snap.table_id)

    def pushFilters(self, filters):
        for f in filters:
            p = _to_predicate(f, open_snapshot(self.uri, self.storage_options, self.version, self.table_id))
            if p is None:
                yield f
            else:
                self.filters.append(p)

    def partitions(self):
        snap = open_snapshot(self.uri, self.storage_options, self.version, self.table_id)
        tasks = snap.scan(self.columns, self.filters or None).plan()
        if self.rowsets is not None:
            tasks = [t for t in tasks if t.rowset.id in self.rowsets]
        opts = json.dumps(self.storage_options)
        parts = [ScanPartition(self.uri, opts, self.version, t.rowset.id, t.start, t.stop, self.table_id)
                 for t in tasks]
        return parts or [ScanPartition(self.uri, opts, self.version, "", 0, 0, self.table_id)]

    def read(self, partition: ScanPartition) -> Iterator[pa.RecordBatch]:
        if not partition.rowset:
            return
        options = json.loads(partition.options)
        snap = open_snapshot(partition.uri, options, partition.version, partition.table_id)
        scanner = snap.scan(self.columns, self.filters or None)
        try:
            batches = scanner.read_task(scanner.task(partition.rowset, partition.start, partition.stop)).to_batches()
        except tf.CorruptFileError:
            # a file gone since planning: the table re-created at the path is TableReplacedError (§9.5)
            now = tf.open_table(partition.uri, storage_options=options).table_id
            if now != partition.table_id:
                raise _replaced(partition.uri, partition.table_id, now) from None
            raise
        yield from batches


@dataclass
class WrittenRowsets(WriterCommitMessage):
    fragment: str         # the task's write fragment (JSON)
    files: str            # JSON list of written paths
    rows: int
    duplicates: int


class TableFormatWriter(DataSourceArrowWriter):
    """Inserts with the primary key enforced; one log commit for the whole job."""

    def __init__(self, options: dict, overwrite: bool, schema: StructType | None = None):
        if overwrite:
            raise tf.InvalidOptionError("tableformat supports mode('append') only: a table's rows change through "
                                     "insert, update, delete and upsert")
        write_path = (next((v for k, v in options.items() if k.lower() == WRITE_PATH.lower()), None) or "auto")
        if write_path.lower() not in ("auto", "jvm", "python"):
            raise tf.InvalidOptionError(f"option {WRITE_PATH} must be auto, jvm or python, got {write_path!r}")
        if write_path.lower() == "jvm":     # the JVM's rule (DataSourceAppend) would have taken the write
            raise tf.InvalidOptionError(f"option {WRITE_PATH}=jvm: this session runs the append in Python, it has "
                                        "no tableformat SQL extension (spark_jobs.session.get_spark sets it with "
                                        "the connector's jar)")
        self.uri = options["path"]
        self.storage_options = storage_options_from(options)
        snap = open_snapshot(self.uri, self.storage_options, None)   # fails clearly if there is no table
        self.version = snap.version
        self.table_id = snap.table_id
        self.chunk_bytes = _positive_int(options, "write_chunk_bytes", WRITE_CHUNK_BYTES)
        if schema is not None:      # at planning, before any task: the input's types fit the table's
            check_input_types(schema, snap.write_insert)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WrittenRowsets:
        res = insert_unsorted(self.uri, self.storage_options, self.version, self.table_id, iterator,
                              self.chunk_bytes)
        return WrittenRowsets(json.dumps(res["fragment"]), json.dumps(res["files"]), res["rows"], res["duplicates"])

    def commit(self, messages: list[WrittenRowsets]) -> None:
        messages = [m for m in messages if m]
        dups = sum(m.duplicates for m in messages)
        if dups:
            delete_files(self.uri, self.storage_options, [f for m in messages for f in json.loads(m.files)])
            raise tf.DuplicateKeyError(f"{dups} key(s) already exist in table at {self.uri!r} or repeat in the "
                                       "input; nothing was written", dups)
        frags = [json.loads(m.fragment) for m in messages]
        commit_fragments(self.uri, self.storage_options, [f for f in frags if f], "INSERT",
                         {"inserted": sum(m.rows for m in messages), "ignored": 0})

    def abort(self, messages: list[WrittenRowsets]) -> None:
        delete_files(self.uri, self.storage_options, [f for m in messages if m for f in json.loads(m.files)])


class TableFormatDataSource(DataSource):
    """Spark data source `tableformat` over a tableformat table (option `path`)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self):
        if wants_changes(self.options):         # readChangeFeed: Table.changes() (spark_jobs/changes.py)
            return change_schema(dict(self.options))
        snap = open_snapshot(self.options["path"], storage_options_from(self.options),
                             parse_as_of(self.options.get("as_of")))
        cols = self.options.get("columns")
        names = [c.strip() for c in cols.split(",")] if cols else None
        return spark_schema(snap.schema, names)

    def reader(self, schema: StructType) -> DataSourceReader:
        if wants_changes(self.options):
            return ChangeReader(dict(self.options))
        return TableFormatReader(dict(self.options), schema)

    def streamReader(self, schema: StructType) -> ChangeStreamReader:
        """spark.readStream: the change stream (readChangeFeed true; spark_jobs/stream.py)."""
        if not wants_changes(self.options):
            raise tf.InvalidOptionError("a stream from a tableformat table reads its changes: set option "
                                        "readChangeFeed to true")
        return ChangeStreamReader(dict(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> TableFormatWriter:
        return TableFormatWriter(dict(self.options), overwrite, schema)

    def streamWriter(self, schema: StructType, overwrite: bool):
        """df.writeStream: each micro-batch one commit, exactly once (spark_jobs/sink_format.py)."""
        from .sink_format import TableStreamWriter
        return TableStreamWriter(dict(self.options), overwrite)


_registered: "weakref.WeakSet" = weakref.WeakSet()


PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any) -> None:
    """Register the data source on a SparkSession, once: registering again made Spark log
    `DataSourceManager: ... replaced a previously registered data source` on every fallback read.
    Python filter pushdown goes on with it: with it off Spark refuses every read of a source that
    pushes filters (DATA_SOURCE_PUSHDOWN_DISABLED)."""
    if spark.conf.get(PUSHDOWN, "false") != "true":
        spark.conf.set(PUSHDOWN, "true")
    if spark in _registered:
        return
    spark.dataSource.register(TableFormatDataSource)
    _registered.add(spark)
