"""Batch change reads in Spark: Table.changes() as a DataFrame, computed on executors.

    df = (spark.read.format("tableformat").option("readChangeFeed", "true")
          .option("startingVersion", 3).option("endingVersion", 7).load(uri))
    df = read_changes(spark, uri, start=2, end=7, mode="net")      # Table.changes' own arguments

The driver plans from the log alone (Table.change_plan): the commits in range cut into
independent parts, one per rowset (mode "all") or per key-closed group of tablets (mode "net",
whose per-key collapse needs every rowset a key lived in). Each Spark partition computes one
part with tf.compute_changes, or with option `numPartitions` (read_changes sets it to twice the
default parallelism) several, packed by their cost from the log; nothing is collected on the
driver. The rows are exactly
Table.changes()'s, with the same columns and types.

Versions, as Delta's change data feed reads them: `startingVersion` and `endingVersion` are both
inclusive, so they are Table.changes(startingVersion - 1, endingVersion), whose start is the
state the changes apply to (exclusive). Version 0 is the table's creation and holds no rows, so
startingVersion 0 reads as 1. `startingTimestamp` is the first commit at or after it (changes
after the state just before it: start = Timestamp(T - 1 µs)); `endingTimestamp` the last commit
at or before it. No end: the latest version. A start behind the history horizon raises
HistoryExpiredError (typed through spark_jobs.errors.typed_errors).

Our options: `mode` (all | net), `before_image`, `images` (full | changed), `skipped`.
`changeFeedColumns` = "delta" gives Delta's columns instead: the table's columns, then
`_change_type` (insert / update_preimage / update_postimage / delete), `_commit_version`,
`_commit_timestamp` and our `_commit_order` (as Table.changes'); an update is two rows, its
before-image and its after-image, and a delete carries the row's last values, as Delta writes them. It needs full images and no skipped rows.
"""
from __future__ import annotations

import heapq
import json
import re
from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceReader, InputPartition

import tableformat as tf

from .snapshots import spark_schema, storage_options_from

COLUMNS = ("tableformat", "delta")
DELTA_META = ("_change_type", "_commit_version", "_commit_timestamp", "_commit_order")


def wants_changes(options: dict) -> bool:
    """Whether a read asks for the change feed (option readChangeFeed, as Delta's)."""
    raw = lower_keys(options).get("readchangefeed")
    if raw is None:
        return False
    return _bool(raw, "readChangeFeed")


def lower_keys(options: dict) -> dict:
    return {str(k).lower(): v for k, v in options.items()}


def _bool(raw: Any, name: str) -> bool:
    if isinstance(raw, bool):
        return raw
    s = str(raw).strip().lower()
    if s not in ("true", "false"):
        raise tf.InvalidOptionError(f"option {name!r} must be true or false, got {raw!r}")
    return s == "true"


def version_option(raw: Any, name: str) -> int:
    """ASCII digits only, as as_of reads them (specs/format.md §9.1): str.isdigit took '٣' as 3 and
    let '²' or 5000 digits through to a bare ValueError of int()."""
    s = str(raw).strip()
    if s[:1] == "-" and _ASCII_DIGITS.fullmatch(s[1:]):      # a version no log holds: the class as_of=-1 gets
        raise tf.VersionNotFoundError(f"option {name!r}: version {s[:40]} does not exist; versions start at 0")
    if not _ASCII_DIGITS.fullmatch(s):
        raise tf.InvalidOptionError(f"option {name!r} must be a version number (0 or more), got {raw!r:.80}")
    n = s.lstrip("0") or "0"
    if len(n) > 40:                                           # far past any int64 version; int() refuses 4300+
        raise tf.VersionNotFoundError(f"option {name!r}: version {n[:20]}... ({len(n)} digits) does not exist")
    return int(n)


_ASCII_DIGITS = re.compile(r"[0-9]+")


def timestamp_option(raw: Any, name: str) -> tf.Timestamp:
    ts = tf.parse_as_of(str(raw), f"option {name!r}")
    if not isinstance(ts, tf.Timestamp):
        raise tf.InvalidOptionError(f"option {name!r} must be a date-time such as 2024-05-01 12:00:00 "
                                    f"(UTC), got {raw!r}")
    return ts


def feed_columns(raw: Any) -> str:
    """Option changeFeedColumns: "tableformat" (Table.changes' columns) or "delta"."""
    columns = str(raw).strip().lower()
    if columns not in COLUMNS:
        raise tf.InvalidOptionError(f"option 'changeFeedColumns' must be one of {COLUMNS}, got {raw!r}")
    return columns


def row_options(o: dict) -> tuple[str, bool, str, bool, str]:
    """(mode, before_image, images, skipped, columns) from a read's options (keys lower-cased),
    checked: what a batch read and a stream share."""
    columns = feed_columns(o.get("changefeedcolumns", "tableformat"))
    mode = str(o.get("mode", "all"))
    images = str(o.get("images", "full"))
    before = _bool(o.get("before_image", False), "before_image")
    skipped = _bool(o.get("skipped", False), "skipped")
    if columns == "delta":
        if images != "full":
            raise tf.InvalidOptionError("changeFeedColumns='delta' gives whole rows: it needs images='full'")
        if skipped:
            raise tf.InvalidOptionError("changeFeedColumns='delta' has no skipped rows: Delta's change "
                                        "types are insert, update_preimage, update_postimage and delete")
        before = True                  # a preimage row, and a delete's values, are before-images
    return mode, before, images, skipped, columns


@dataclass(frozen=True)
class ChangeOptions:
    """A change read's options, checked: Table.changes' arguments plus the column naming."""

    start: Any                 # Table.changes' start (exclusive)
    end: Any                   # inclusive; None: latest
    starting_version: int | None
    mode: str
    before_image: bool
    images: str
    skipped: bool
    columns: str

    @classmethod
    def parse(cls, options: dict) -> "ChangeOptions":
        o = lower_keys(options)
        sv, st = o.get("startingversion"), o.get("startingtimestamp")
        ev, et = o.get("endingversion"), o.get("endingtimestamp")
        if (sv is None) == (st is None):
            raise tf.InvalidOptionError("a change read needs exactly one of startingVersion and startingTimestamp")
        if ev is not None and et is not None:
            raise tf.InvalidOptionError("give at most one of endingVersion and endingTimestamp")
        starting_version = None if sv is None else version_option(sv, "startingVersion")
        start = max(starting_version - 1, 0) if sv is not None else \
            tf.Timestamp(timestamp_option(st, "startingTimestamp") - 1)
        end = version_option(ev, "endingVersion") if ev is not None else \
            (timestamp_option(et, "endingTimestamp") if et is not None else None)
        if starting_version is not None and ev is not None and starting_version > end:
            raise tf.InvalidOptionError(f"startingVersion {starting_version} is after endingVersion {end}")
        return cls(start, end, starting_version, *row_options(o))

    def plan(self, uri: str, storage_options: dict | None) -> tf.ChangePlan:
        """The change read planned from the log (on the driver: no data is read). A startingVersion
        past the next commit is a version that does not exist (the stream's words); the next commit
        itself has no changes yet, so a batch read of it is refused as after the last version read
        (a stream may start there: it waits for that commit)."""
        t = tf.open_table(uri, storage_options=storage_options)
        sv = self.starting_version
        if sv is not None and sv > t.version + 1:        # the stream's check and wording (stream.py)
            raise tf.VersionNotFoundError(f"startingVersion {sv} does not exist; versions are 0..{t.version}")
        plan = t.change_plan(self.start, self.end, self.mode, self.before_image, self.images, self.skipped)
        if sv is not None and sv > plan.end:
            raise tf.InvalidOptionError(f"startingVersion {self.starting_version} is after the last version "
                                        f"read, {plan.end}")
        return plan


DELTA_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")


def arrow_schema(plan: tf.ChangePlan, columns: str) -> pa.Schema:
    """The Arrow schema every batch of the read has; a data column named as one of Delta's change
    columns is a SchemaError, as the engine's own names are (Table.change_plan)."""
    s = plan.arrow_schema()
    if columns != "delta":
        return s
    data = [s.field(c.name) for c in plan.schema.columns]
    clash = sorted({f.name for f in data} & set(DELTA_COLUMNS))
    if clash:
        raise tf.SchemaError(f"the table's column(s) {clash} have the names of Delta's change columns: the change "
                             "rows could not tell them apart. Rename them (Table.alter().rename_column), or read "
                             "with changeFeedColumns=\"tableformat\"")
    return pa.schema(data + [pa.field("_change_type", pa.string()), pa.field("_commit_version", pa.int64()),
                             s.field("_timestamp").with_name("_commit_timestamp"), s.field("_commit_order")])


def struct_type(plan: tf.ChangePlan, columns: str):
    """The Spark schema of the read, declared field by field (every field nullable: a delete's
    after-image is NULL outside the key, a skipped row lacks what its input lacked)."""
    from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType, TimestampType
    data = {f.name: f.dataType for f in spark_schema(plan.schema).fields}
    fields = []
    for f in arrow_schema(plan, columns):
        if f.name in data:
            typ = data[f.name]
        elif f.name.startswith("_before_") and f.name[len("_before_"):] in data:
            typ = data[f.name[len("_before_"):]]
        else:
            typ = {"_op": StringType(), "_version": LongType(), "_timestamp": TimestampType(),
                   "_changed_columns": ArrayType(StringType(), True), "_reason": StringType(),
                   "_change_type": StringType(), "_commit_version": LongType(),
                   "_commit_timestamp": TimestampType(), "_commit_order": LongType()}[f.name]
        fields.append(StructField(f.name, typ, True))
    return StructType(fields)


def delta_rows(t: pa.Table, plan: tf.ChangePlan) -> pa.Table:
    """Changes (with before-images) as Delta's change feed rows: an insert its row, a delete its
    before-image, an update its before-image (update_preimage) and after-image (update_postimage)."""
    names = [c.name for c in plan.schema.columns]
    op = t.column("_op")
    out = []
    for label, when, before in (("insert", "insert", False), ("delete", "delete", True),
                                ("update_preimage", "update", True), ("update_postimage", "update", False)):
        sel = t.filter(pc.equal(op, when))
        cols = [sel.column(("_before_" if before else "") + n) for n in names]
        cols += [pa.repeat(pa.scalar(label, pa.string()), sel.num_rows), sel.column("_version"),
                 sel.column("_timestamp"), sel.column("_commit_order")]
        out.append(pa.Table.from_arrays(cols, names=names + list(DELTA_META)))
    return pa.concat_tables(out)


def num_partitions(o: dict) -> int | None:
    """Option numPartitions (keys lower-cased): at most this many Spark partitions, the parts packed
    into them by cost; None (the default): one partition per part."""
    raw = o.get("numpartitions")
    if raw is None:
        return None
    s = str(raw).strip()
    if not s.isdigit() or int(s) <= 0:
        raise tf.InvalidOptionError(f"option 'numPartitions' must be a positive integer, got {raw!r}")
    return int(s)


def part_cost(part: tf.ChangePart) -> int:
    """A part's work in rows, from the log: its change records plus the base rows of the rowsets
    whose REDO files it replays (full images read the touched rows' base values, and at a few
    percent of rows touched that is every row group)."""
    return part.records() + sum(rs.num_rows for rs, _, _ in part.rowsets)


def pack(items: list, n: int | None) -> list[tuple]:
    """(plan header, part) items into at most `n` groups of about equal cost (heaviest first into
    the lightest group), so a read of many small parts pays Spark's per-task cost (a Python worker
    round trip, about 0.3 s each on local[2]) a few times, not once per rowset. None: one each."""
    if n is None or n >= len(items):
        return [(i,) for i in items]
    costs = [max(part_cost(p), 1) for _, p in items]
    groups: list[list] = [[] for _ in range(n)]
    heap = [(0, g) for g in range(n)]
    for i in sorted(range(len(items)), key=lambda i: -costs[i]):
        load, g = heapq.heappop(heap)
        groups[g].append(items[i])
        heapq.heappush(heap, (load + costs[i], g))
    return [tuple(g) for g in groups if g]


@dataclass
class ChangePartition(InputPartition):
    """Parts of a planned change read, each with its plan's header (the plan without parts)."""

    uri: str
    options: str               # JSON storage options
    items: tuple               # ((tf.ChangePlan with parts=(), tf.ChangePart), ...); () for an empty read
    columns: str

    def __init__(self, uri, options, items, columns):
        super().__init__(None)
        self.uri, self.options, self.items, self.columns = uri, options, tuple(items), columns


class ChangeReader(DataSourceReader):
    """Plans on the driver from the log; each partition computes its parts on an executor."""

    def __init__(self, options: dict):
        self.uri = options["path"]
        self.storage_options = storage_options_from(options)
        self.opts = ChangeOptions.parse(options)
        self.num_partitions = num_partitions(lower_keys(options))

    def partitions(self):
        plan = self.opts.plan(self.uri, self.storage_options)
        head, opts = plan.header(), json.dumps(self.storage_options)
        groups = pack([(head, p) for p in plan.parts], self.num_partitions)
        return [ChangePartition(self.uri, opts, g, self.opts.columns) for g in groups] or \
            [ChangePartition(self.uri, opts, (), self.opts.columns)]

    def read(self, partition: ChangePartition) -> Iterator[pa.RecordBatch]:
        return read_part(partition)


def read_part(partition: ChangePartition) -> Iterator[pa.RecordBatch]:
    """A partition's changes, part by part, on an executor (a batch read's task, or a stream's)."""
    if not partition.items:
        return
    storage = tf.Storage(partition.uri, json.loads(partition.options))
    for plan, part in partition.items:
        t = tf.compute_changes(storage, plan, part)
        if partition.columns == "delta":
            t = delta_rows(t, plan)
        yield from t.cast(arrow_schema(plan, partition.columns)).to_batches()


def change_schema(options: dict):
    """The Spark schema of a change read with these options (the data source's schema()): the end
    version's columns; with no end (a stream, or a batch read up to the latest), the latest's."""
    o = lower_keys(options)
    if o.get("endingversion") is not None or o.get("endingtimestamp") is not None:
        c = ChangeOptions.parse(options)
        return struct_type(c.plan(options["path"], storage_options_from(options)), c.columns)
    mode, before, images, skipped, columns = row_options(o)
    t = tf.open_table(options["path"], storage_options=storage_options_from(options))
    return struct_type(t.change_plan(t.version, None, mode, before, images, skipped), columns)


__all__ = ["ChangeReader", "ChangeOptions", "change_schema", "wants_changes"]
