"""The two halves of a distributed write: executors write fragments, the driver commits them.

Spark sorts, Python streams. A first pass computes each row's tablet and encoded key; Spark
range-partitions on (tablet, key) and sorts within partitions (its external sort spills), so
a tablet may span several tasks and a key's duplicates are adjacent in one. An insert whose
key columns Spark orders as the engine orders encoded keys skips that pass: Spark
range-partitions and sorts by the key columns, and each task routes its rows to one rowset
writer per tablet (`native_key_order`). Each task streams its sorted batches through the
engine (`Snapshot.rowset_writer` for inserts, `Snapshot.write_mutation` for merges), holding
a batch and a row group per open rowset (the first rows of a rowset until its encodings are
chosen), and returns a write fragment (JSON); the driver commits all fragments at once with
`Table.commit_fragments`, which checks the engine's own requirements.
"""
from __future__ import annotations

import json
import uuid
from functools import partial
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import tableformat as tf

from .snapshots import open_snapshot

TABLET_COL = "_tf_tablet"
KEY_COL = "_tf_key"
SEQ_COL = "_tf_seq"
PART_COL = "_tf_part"
LAYOUT_COLS = (TABLET_COL, KEY_COL, SEQ_COL, PART_COL)


def collect_rows(error_path: str, batch: pa.Table, rows: np.ndarray) -> None:
    """Write rejected rows to the error output, one uniquely named Parquet file per task."""
    import pyarrow.parquet as pq
    sink = pa.BufferOutputStream()
    pq.write_table(batch.take(pa.array(rows)), sink)
    tf.Storage(error_path).write(f"part-{uuid.uuid4().hex}.parquet", sink.getvalue())


def refuse_committed_txn(table: tf.Table, txn: tuple[str, int] | None) -> None:
    """Before a job reports its tasks' duplicate or missing keys: a streaming batch the table
    already holds (a replay racing its first run) is TxnAlreadyCommittedError, which a sink
    takes as done, not the error its own rows would now give."""
    if txn is None:
        return
    seen = table.snapshot().txn_version(txn[0])
    if seen >= txn[1]:
        raise tf.TxnAlreadyCommittedError(f"transaction {txn[1]} of application {txn[0]!r} is already committed "
                                          f"(the table records version {seen}); nothing was written",
                                          txn[0], txn[1], seen)


def commit_fragments(uri: str, storage_options: dict | None, fragments: list[dict], operation: str,
                     counts: dict, txn: tuple[str, int] | None = None, version: int | None = None) -> tf.WriteResult:
    """Driver side: one commit of every task's fragment (JSON), with the engine's key-level
    requirements (a key inserted concurrently fails it; a job planned on a definition since
    changed restarts). `counts` are the job's totals; with nothing to commit, nothing is, unless
    `txn` (a streaming batch, planned on `version`) must be recorded all the same."""
    table = tf.open_table(uri, storage_options=storage_options)
    frags = [tf.WriteFragment.from_json(d) for d in fragments]
    if txn is not None:
        frags = frags or [tf.WriteFragment(operation, table.version if version is None else version,
                                           table_id=table.table_id)]
        return table.commit_fragments(frags, operation, counts=counts, txn=txn)
    if all(f.empty for f in frags):
        st = table.snapshot()
        return tf.WriteResult(st.version, st.timestamp, operation,
                              **{k: counts.get(k, 0) for k in ("inserted", "updated", "deleted", "ignored")})
    # fragments without actions still count: their requirements (keys skipped as existing) hold
    return table.commit_fragments(frags, operation, counts=counts)


def key_and_tablet(uri: str, storage_options: dict | None, version: int, strict: bool = True,
                   table_id: str | None = None, bounds: list | None = None, slots: list | None = None):
    """A mapInArrow function adding each row's tablet ordinal (-1: in no range partition) and
    encoded primary key (binary: Spark orders it as memcmp, the engine's key order). With
    `bounds` ((tablet, key) cut points) it also adds the write partition's slot (`PART_COL`)."""
    def fn(batches):
        snap = open_snapshot(uri, storage_options, version, table_id)
        for b in batches:
            ordinal, keys = snap.route_keys(b, strict=strict)
            cols = list(b.columns) + [pa.array(ordinal, pa.int32()), keys]
            names = list(b.schema.names) + [TABLET_COL, KEY_COL]
            if bounds is not None:
                cols.append(pa.array(np.asarray(slots, np.int32)[range_of(ordinal, keys, bounds)], pa.int32()))
                names.append(PART_COL)
            yield pa.RecordBatch.from_arrays(cols, names=names)
    return fn


def range_of(ordinal: np.ndarray, keys: pa.Array, bounds: list) -> np.ndarray:
    """The range each (tablet, key) falls in: how many cut points are at or below it."""
    out = np.zeros(len(ordinal), np.int64)
    for tablet, key in bounds:
        at_or_above = pc.greater_equal(keys, pa.scalar(key, pa.binary())).to_numpy(zero_copy_only=False)
        out += (ordinal > tablet) | ((ordinal == tablet) & at_or_above)
    return out


def range_bounds(spark: Any, df: Any, uri: str, storage_options: dict | None, version: int, strict: bool,
                 table_id: str | None, n: int) -> list:
    """n-1 (tablet, key) cut points from a sample of the input (about 100 rows per range): what
    Spark's range partitioner computes, but sampling before the key pass so the input crosses
    into Python once."""
    from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType
    total = df.count()
    if n <= 1 or total == 0:
        return []
    sample = df.sample(fraction=min(1.0, 100.0 * n / total), seed=7)
    pairs = sample.mapInArrow(key_and_tablet(uri, storage_options, version, strict, table_id),
                              StructType(sample.schema.fields + [StructField(TABLET_COL, IntegerType(), False),
                                                                 StructField(KEY_COL, BinaryType(), False)])) \
        .select(TABLET_COL, KEY_COL).collect()
    points = sorted((int(r[0]), bytes(r[1])) for r in pairs)
    if not points:
        return []
    cuts = [points[len(points) * i // n] for i in range(1, n)]
    return sorted(set(cuts))


def partition_slots(spark: Any, n: int) -> list[int]:
    """For each partition p < n, an int v with Spark's pmod(hash(v), n) == p: repartition(n, col)
    then sends the rows of range p to partition p exactly."""
    rows = spark.range(0, 64 * n + 64).selectExpr("cast(id as int) as v", f"pmod(hash(cast(id as int)), {n}) as p") \
        .groupBy("p").min("v").collect()
    slot = {int(r[0]): int(r[1]) for r in rows}
    if len(slot) < n:
        raise tf.InvalidOptionError(f"could not find hash slots for {n} partitions")
    return [slot[p] for p in range(n)]


def sorted_by_key(spark: Any, df: Any, uri: str, storage_options: dict | None, version: int, strict: bool,
                  table_id: str | None = None, partitions: int | None = None, keep_order: bool = False):
    """The write layout: rows with their tablet and encoded key, range-partitioned on (tablet, key)
    so a tablet may span several tasks while every key meets its duplicates in one, then sorted
    within each partition by Spark's external sort (it spills; Python never holds a tablet).
    The ranges come from a sample (`range_bounds`), so the full input makes one pass through
    Python. keep_order adds the input position as a last sort key, so a key's rows keep their
    order."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType
    if keep_order:
        df = df.withColumn(SEQ_COL, F.monotonically_increasing_id())
    n = max(1, partitions or int(spark.conf.get("spark.sql.shuffle.partitions")))
    bounds = range_bounds(spark, df, uri, storage_options, version, strict, table_id, n)
    slots = partition_slots(spark, n)
    routed = df.mapInArrow(key_and_tablet(uri, storage_options, version, strict, table_id, bounds, slots),
                           StructType(df.schema.fields + [StructField(TABLET_COL, IntegerType(), False),
                                                          StructField(KEY_COL, BinaryType(), False),
                                                          StructField(PART_COL, IntegerType(), False)]))
    order = [TABLET_COL, KEY_COL] + ([SEQ_COL] if keep_order else [])
    return routed.repartition(n, PART_COL).sortWithinPartitions(*order)


# key types whose Spark order is the byte order of their key encoding (signed integers and
# timestamps sign-flipped big-endian, decimals likewise, strings and binary as unsigned bytes),
# given as the table's own Spark type, so the engine changes no value before encoding it. Not
# varchar: the engine truncates it first, so rows Spark orders apart can share an encoded key.
_NATIVE_ORDER_KINDS = ("int8", "int16", "int32", "int64", "date", "unixtime_micros", "decimal", "string",
                       "binary")
NATIVE_LAYOUT_MAX_TABLETS = 32     # a task holds up to a rowset's encoding sample per tablet


def native_key_order(df: Any, schema: tf.Schema, tablets: int) -> list[str] | None:
    """The primary key columns, when Spark can lay the rows out by them itself: each key column
    is given as the table's Spark type, of a kind Spark orders as the engine's encoded keys, and
    the table has at most NATIVE_LAYOUT_MAX_TABLETS tablets (a task keeps a rowset writer open
    per tablet it meets). Else None: the layout goes by (tablet, encoded key) (`sorted_by_key`)."""
    from .snapshots import spark_type
    if tablets > NATIVE_LAYOUT_MAX_TABLETS:
        return None
    fields = {f.name: f.dataType for f in df.schema.fields}
    for c in schema.key_columns:
        if c.type.kind not in _NATIVE_ORDER_KINDS or fields.get(c.name) != spark_type(c.type):
            return None
    return [c.name for c in schema.key_columns]


def table_runs(batch: pa.RecordBatch) -> Iterator[tuple[int, pa.Table, pa.Array]]:
    """A sorted batch as runs of one tablet each: (tablet ordinal, rows without the layout
    columns, encoded keys)."""
    t = pa.Table.from_batches([batch])
    tab = t.column(TABLET_COL).to_numpy()
    keys = t.column(KEY_COL).combine_chunks()
    data = t.drop([c for c in LAYOUT_COLS if c in t.column_names])
    cuts = [0] + (np.flatnonzero(np.diff(tab)) + 1).tolist() + [len(tab)]
    for s, e in zip(cuts, cuts[1:]):
        yield int(tab[s]), data.slice(s, e - s), keys.slice(s, e - s)


def routed_runs(snap: Any, batch: pa.RecordBatch) -> Iterator[tuple[int, pa.Table, pa.Array]]:
    """A batch sorted by primary key alone (the native layout) as its rows of each tablet, in
    key order: the tablets and keys computed here, in the task."""
    t = pa.Table.from_batches([batch])
    ordinal, keys = snap.route_keys(t)
    order = np.argsort(ordinal, kind="stable")
    tab = ordinal[order]
    cuts = [0] + (np.flatnonzero(np.diff(tab)) + 1).tolist() + [len(tab)]
    if len(cuts) > 2:
        idx = pa.array(order)
        t, keys = t.take(idx), keys.take(idx)
    for s, e in zip(cuts, cuts[1:]):
        yield int(tab[s]), t.slice(s, e - s), keys.slice(s, e - s)


class RejectedRows:
    """Rejected rows of one task for the error path, written in parts of bounded size."""

    LIMIT = 32 << 20

    def __init__(self, error_path: str | None):
        self.error_path, self.parts, self.nbytes = error_path, [], 0

    def add(self, batch: pa.Table, rows: np.ndarray) -> None:
        if self.error_path is None or not len(rows):
            return
        self.parts.append(batch.take(pa.array(rows)))
        self.nbytes += self.parts[-1].nbytes
        if self.nbytes >= self.LIMIT:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            t = pa.concat_tables(self.parts, promote_options="permissive")
            collect_rows(self.error_path, t, np.arange(t.num_rows))
            self.parts, self.nbytes = [], 0


TASK_BATCH_ROWS = 65536


def coalesced(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """The batches joined into ones of at least `rows` rows (the last may be shorter): each write
    call costs the same whatever its size, and Spark hands Python 10,000 rows at a time."""
    held, n = [], 0
    for b in batches:
        held.append(b)
        n += b.num_rows
        if n >= rows:
            yield pa.Table.from_batches(held).combine_chunks().to_batches()[0]
            held, n = [], 0
    if n:
        yield pa.Table.from_batches(held).combine_chunks().to_batches()[0]


def insert_task(uri: str, storage_options: dict | None, version: int, table_id: str | None, on_duplicate: str,
                error_path: str | None):
    """A mapInArrow function over one partition of the write layout: each tablet's sorted rows
    stream through the engine's rowset writer (rolled at the target size, keys checked batch
    by batch). Yields one row: the task's fragment and counts. With on_duplicate='fail', the
    first duplicate deletes the task's files; later rows are only checked, to count."""
    def fn(batches):
        snap = open_snapshot(uri, storage_options, version, table_id)
        tablets = snap.tablet_ids
        out = {"fragment": None, "files": [], "rows": 0, "duplicates": 0, "sample": ""}
        frags: list[tf.WriteFragment] = []
        errors = RejectedRows(error_path if on_duplicate == "collect" else None)
        writers: dict[int, tf.RollingRowSetWriter] = {}
        failed = False
        try:
            for b in coalesced(batches, TASK_BATCH_ROWS):
                by_tablet = TABLET_COL in b.schema.names
                for ordinal, data, keys in (table_runs(b) if by_tablet else routed_runs(snap, b)):
                    if ordinal not in writers:
                        if by_tablet:           # laid out by tablet: the others are done
                            frags += [w.finish() for w in writers.values()]
                            writers = {}
                        writers[ordinal] = snap.rowset_writer(tablets[ordinal], on_duplicate="ignore")
                        if failed:
                            writers[ordinal].abort()
                    rejected = writers[ordinal].write(data, keys)
                    if len(rejected):
                        out["duplicates"] += len(rejected)
                        if not out["sample"]:
                            out["sample"] = snap.describe_rows(data, rejected)
                        errors.add(data, rejected)
                        if on_duplicate == "fail" and not failed:
                            failed = True
                            for w in writers.values():
                                w.abort()
                            snap.storage.delete_quietly([p for f in frags for p in f.files])
                            frags = []
            frags += [w.finish() for w in writers.values()]
            writers = {}
            errors.flush()
        except BaseException:
            for w in writers.values():
                w.abort()
            snap.storage.delete_quietly([p for f in frags for p in f.files])
            raise
        frags = [f for f in frags if not f.empty or f.requirements]
        if frags and not failed:
            frag = tf.WriteFragment.combine(frags)
            out.update(fragment=frag.to_json(), files=list(frag.files), rows=frag.counts.get("inserted", 0))
        yield result_batch(out)
    return fn


def insert_unsorted(uri: str, storage_options: dict | None, version: int, table_id: str | None,
                    batches: Iterator[pa.RecordBatch], chunk_bytes: int) -> dict:
    """Executor side of an insert whose task gets rows in any order (the data source writer):
    chunks of about `chunk_bytes` each routed, sorted by (tablet, key) and streamed through the
    rowset writers (`insert_task`), so a task holds a chunk, not its input. A key repeated
    across chunks is caught at commit, like one repeated across tasks. Duplicates fail; the
    result holds every chunk's files, so a failed job deletes them all."""
    route = key_and_tablet(uri, storage_options, version, True, table_id)
    out = {"fragment": None, "files": [], "rows": 0, "duplicates": 0, "sample": ""}
    frags = []

    def flush(chunk):
        routed = pa.Table.from_batches(list(route(iter(chunk))))
        routed = routed.take(pc.sort_indices(routed, [(TABLET_COL, "ascending"), (KEY_COL, "ascending")]))
        r = next(insert_task(uri, storage_options, version, table_id, "fail", None)(iter(routed.to_batches())))
        r = r.to_pylist()[0]
        out["files"] += json.loads(r["files"])
        out["rows"] += r["rows"]
        out["duplicates"] += r["duplicates"]
        out["sample"] = out["sample"] or r["sample"]
        if r["fragment"] != "null":
            frags.append(tf.WriteFragment.from_json(json.loads(r["fragment"])))

    chunk, size = [], 0
    try:
        for b in batches:
            if b.num_rows:
                chunk.append(b)
                size += b.nbytes
            if size >= chunk_bytes:
                flush(chunk)
                chunk, size = [], 0
        if chunk:
            flush(chunk)
    except BaseException:
        # a failed task reports no files to the driver: its finished chunks' files go here
        if out["files"]:
            tf.Storage(uri, storage_options).delete_quietly(out["files"])
        raise
    if frags:
        out["fragment"] = tf.WriteFragment.combine(frags).to_json()
    return out


def result_batch(r: dict) -> pa.RecordBatch:
    """One task's result as the one-row batch the driver collects (fragment and files as JSON)."""
    r = {**r, "fragment": json.dumps(r["fragment"]), "files": json.dumps(r["files"])}
    if "counts" in r:
        r["counts"] = json.dumps(r["counts"])
    return pa.RecordBatch.from_pylist([r])


def arrow_input_schema(schema: Any, timezone: str = "UTC", large_types: bool = False) -> pa.Schema:
    """The Arrow schema the tasks receive for a DataFrame of this Spark schema (as mapInArrow and a
    Python data source's writer convert it); a column Arrow cannot carry is a TypeMismatchError."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType
    fields = []
    for f in schema.fields:
        try:
            fields.append(to_arrow_schema(StructType([f]), timezone=timezone, prefers_large_types=large_types)[0])
        except Exception as e:      # pyspark's own errors (PySparkTypeError, ...): an unsupported Spark type
            raise tf.TypeMismatchError(f"column {f.name!r} has Spark type {f.dataType.simpleString()}, which no "
                                       f"table column takes ({type(e).__name__}: {e})") from None
    return pa.schema(fields)


def check_input_types(schema: Any, plan: Callable[[pa.Table], Any], timezone: str = "UTC",
                      large_types: bool = False) -> None:
    """On the driver, before any task runs: plan the write on no rows of the input's types, so
    the engine's type checks (tableformat's InvalidDataError: a decimal(4,1) literal going into a
    double column, an unknown or missing column) fail here, typed, and not in every executor
    with a JVM stack trace."""
    empty = arrow_input_schema(schema, timezone, large_types).empty_table()
    try:
        plan(empty)
    except tf.InvalidDataError as e:
        raise type(e)(f"{e} (the DataFrame's schema is {schema.simpleString()}; checked on the driver before any "
                      "task ran: cast the column to the table's type, e.g. F.col(name).cast('double'); Spark SQL "
                      "reads a literal 123.0 as decimal(4,1) and 123.0D as a double)") from None


def session_arrow_options(spark: Any) -> dict:
    """The session settings that decide the Arrow types of timestamps and strings in the tasks."""
    conf = spark.conf
    return {"timezone": conf.get("spark.sql.session.timeZone", "UTC"),
            "large_types": str(conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false")).lower() == "true"}


def run_job(spark: Any, df: Any, uri: str, storage_options: dict | None, strict: bool,
            make_task: Callable, result_schema: str, finish: Callable, max_restarts: int, what: str,
            partitions: int | None = None, keep_order: bool = False, native: bool = False,
            check: Callable[[tf.Snapshot, pa.Table], Any] | None = None,
            jvm: Callable[[int, str | None], list[dict]] | None = None):
    """A distributed write: plan on a fresh snapshot, lay the rows out sorted by (tablet, key)
    (`sorted_by_key`; with `native`, by the key columns alone when Spark orders them as the
    engine does, `native_key_order`), run `make_task(version, table_id)` over each partition
    (one result row each, fragment and files as JSON), then `finish(table, version, results)`
    commits.
    RestartRequired runs the job again. `check(snapshot, rows)` plans the write on no rows of the
    input's types on the driver first (`check_input_types`), so a type error fails before any task.
    `jvm(version, table_id)`: the tasks run in the JVM instead (`insert.jvm_insert_results`), giving
    the same results."""
    for attempt in range(max_restarts + 1):
        table = tf.open_table(uri, storage_options=storage_options)
        if check is not None and attempt == 0:
            check_input_types(df.schema, partial(check, table.snapshot()), **session_arrow_options(spark))
        version, table_id = table.version, table.table_id
        if jvm is not None:
            try:
                return finish(table, version, jvm(version, table_id))
            except tf.RestartRequired:
                continue
        key = native_key_order(df, table.schema, len(table.snapshot().tablet_ids)) if native else None
        if key:             # Spark lays the rows out alone: the input crosses into Python once
            from pyspark.sql import functions as F
            rows = df.withColumn(SEQ_COL, F.monotonically_increasing_id()) if keep_order else df
            # No task count unless asked: adaptive execution then joins small neighbouring ranges
            # (a 1% update becomes one task), and every task writes a file per rowset it meets.
            ranged = rows.repartitionByRange(partitions, *key) if partitions else rows.repartitionByRange(*key)
            laid_out = ranged.sortWithinPartitions(*key, *([SEQ_COL] if keep_order else []))
        else:
            laid_out = sorted_by_key(spark, df, uri, storage_options, version, strict, table_id, partitions,
                                     keep_order)
        rows = laid_out.mapInArrow(make_task(version, table_id), result_schema).collect()   # one row per task
        results = [{**r.asDict(), "fragment": json.loads(r["fragment"]), "files": json.loads(r["files"])}
                   for r in rows]
        for r in results:
            if "counts" in r:
                r["counts"] = json.loads(r["counts"])
        try:
            return finish(table, version, results)
        except tf.RestartRequired:
            continue            # its files are deleted; plan again on the new snapshot
    raise tf.CommitConflictError(f"the {what} conflicted with concurrent commits {max_restarts + 1} times")
