"""A Structured Streaming source of changes: Table.changes() as micro-batches.

    q = (spark.readStream.format("tableformat").option("readChangeFeed", "true")
         .option("startingVersion", 5).option("maxVersionsPerTrigger", 10).load(uri)
         .writeStream.trigger(availableNow=True).option("checkpointLocation", ckpt)...)

The options are the batch change read's (spark_jobs/changes.py: `mode`, `before_image`, `images`,
`skipped`, `changeFeedColumns`), without an end. Where the stream starts, as Delta's source reads
its options: `startingVersion` (inclusive) or `startingTimestamp` (the first commit at or after
it); with neither, the changes committed after the latest version when the query first starts
(Delta would first emit the latest snapshot as inserts; this source emits changes only: read the
snapshot with spark.read for that).

Offsets are log positions `{"version": v, "index": i}`: every change of the versions up to `v`,
and the first `i` parts (Table.change_plan of version v + 1 alone) of the next version; a
mid-version offset (i > 0) has `"order": 2`, the part order it counts in (found rows' changes
before inserts). One cut inside a version by an older release, without it, is refused with
UnsupportedFormatVersionError (resuming it would lose and repeat changes); whole-version offsets
of any release read on. Rate
limits: `maxVersionsPerTrigger` (commits per micro-batch) and `maxRowsPerTrigger` (change records
counted from the log, ChangePart.records; a batch takes at least one part), which may cut inside a
version at a part boundary, as Delta's offsets cut between the files of a version. In mode "net"
batches end on whole versions (a key's net change needs all of its version). A batch's partitions
are planned from the log alone, so the same (start, end) offsets give the same batch on a restart
from the checkpoint. Commits with data_change false (compactions, tags) add no rows.

A start behind the history horizon (vacuum removed the files its changes need) is a
HistoryExpiredError naming history_max_age and tags as the remedy, never a silent gap: the check
runs before each batch is admitted (latestOffset) and when it is planned (partitions).
The stream's columns are the table's when the query starts, and every batch is given in them,
matched by column ID (spark_jobs/stream_columns.py): a column renamed since keeps the stream's name,
one the batch's end version lacks (dropped, or added after it) is NULL, and one added after the
start joins at the next restart. No batch is refused for its columns, so an ALTER never stops the
stream, and a restart (the new columns) reads on from its checkpoint, a replayed batch included.
"""
from __future__ import annotations

import json
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxFiles, ReadMaxRows,
                                              SupportsTriggerAvailableNow)
from pyspark.sql.types import StructType

import tableformat as tf

from .changes import (ChangePartition, lower_keys, num_partitions, pack, read_part, row_options, struct_type,
                      timestamp_option, version_option)
from .snapshots import storage_options_from
from .stream_columns import StreamColumns


def _limit(o: dict, name: str) -> int | None:
    raw = o.get(name.lower())
    if raw is None:
        return None
    s = str(raw).strip()
    if not s.isdigit() or int(s) <= 0:
        raise tf.InvalidOptionError(f"option {name!r} must be a positive integer, got {raw!r}")
    return int(s)


def _last_before(t: tf.Table, ts: int) -> int:
    """The last version committed before `ts`; 0 (the creation, which holds no rows) when `ts` is
    at or before the table's creation, as Delta's startingTimestamp and the batch read take it."""
    try:
        return t.snapshot(tf.Timestamp(ts - 1)).version
    except tf.TimestampAfterLatestError:
        raise
    except tf.VersionNotFoundError:         # before the table was created
        return 0


# The order of a version's parts a mid-version offset counts in (Table.change_plan's: changes to
# found rows before inserts, since the change feed's _commit_order). An offset cut inside a version
# by an older release counted another order: it cannot be resumed exactly (`_pos`).
PART_ORDER = 2


def _offset(version: int, index: int = 0) -> dict:
    if index:
        return {"version": int(version), "index": int(index), "order": PART_ORDER}
    return {"version": int(version), "index": int(index)}


def _pos(offset: dict) -> tuple[int, int]:
    """An offset's (version, part index); a mid-version one of an older part order is refused."""
    v, i = int(offset["version"]), int(offset.get("index", 0))
    if i and offset.get("order") != PART_ORDER:
        raise tf.UnsupportedFormatVersionError(
            f"the stream's checkpoint holds offset {json.dumps(offset)}, cut inside version {v + 1} by an older "
            f"release, which ordered a version's parts otherwise: resuming it would lose some of version "
            f"{v + 1}'s changes and repeat others. Finish that version with the older release (a run without "
            f"maxRowsPerTrigger ends on whole versions), or start a new checkpoint with startingVersion "
            f"{v + 1} (version {v + 1}'s changes are delivered again: fine for an upsert sink)")
    return v, i


def _fields(schema: StructType) -> list:
    """A Spark schema's names and types, the part a query fixes (nullability aside)."""
    return [(f.name, f.dataType) for f in schema.fields]


class StreamPartition(ChangePartition):
    """A micro-batch's parts, each with its projection into the stream's columns (None: as is)."""

    def __init__(self, uri, options, items, columns, projections):
        super().__init__(uri, options, items, columns)
        self.projections = tuple(projections)


class ChangeStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches from the log on the driver; each partition computes one part on an executor."""

    def __init__(self, options: dict, schema: StructType):
        o = lower_keys(options)
        self.uri = options["path"]
        self.storage_options = storage_options_from(options)
        if o.get("endingversion") is not None or o.get("endingtimestamp") is not None:
            raise tf.InvalidOptionError("a change stream has no end: endingVersion and endingTimestamp are "
                                        "options of a batch read (spark.read)")
        self.starting_version = None if o.get("startingversion") is None else \
            version_option(o["startingversion"], "startingVersion")
        self.starting_timestamp = None if o.get("startingtimestamp") is None else \
            timestamp_option(o["startingtimestamp"], "startingTimestamp")
        if self.starting_version is not None and self.starting_timestamp is not None:
            raise tf.InvalidOptionError("give at most one of startingVersion and startingTimestamp")
        self.mode, self.before_image, self.images, self.skipped, self.columns = row_options(o)
        self.max_versions = _limit(o, "maxVersionsPerTrigger")
        self.max_rows = _limit(o, "maxRowsPerTrigger")
        self.num_partitions = num_partitions(o)
        self.stream_columns = self._stream_columns(schema)
        self.target: int | None = None          # Trigger.AvailableNow: the last version to read

    def _table(self) -> tf.Table:
        return tf.open_table(self.uri, storage_options=self.storage_options)

    def _stream_columns(self, schema: StructType) -> StreamColumns:
        """The stream's columns: those the query's schema names and types (change_schema: the latest
        version's when the query was defined), by ID. That is the latest's, unless ALTERs came since
        the query was defined (one started again from the same DataFrame): then the newest schema
        before them that has its names and types, so such a query reads on too. ALTERs are found by
        the versions' schemas, not by their commits' operation labels (a writer names its own)."""
        want = _fields(schema)
        t = self._table()
        horizon, seen = t.snapshot().history_horizon, None
        for v in range(t.version, max(horizon, 0) - 1, -1):
            try:
                head = self._plan(t, v, v).header()
            except tf.HistoryExpiredError:
                break
            if head.schema == seen:
                continue                        # no schema change at v: tried already
            seen = head.schema
            if _fields(struct_type(head, self.columns)) == want:
                return StreamColumns(head, self.columns)
        raise tf.SchemaChangedError(
            f"the query's columns {schema.simpleString()} are none of the table's columns since its history "
            "horizon: define the query again (spark.readStream...load()) and start it; it reads on from its "
            "checkpoint")

    def _plan(self, t: tf.Table, start: int, end: int) -> tf.ChangePlan:
        return t.change_plan(start, end, self.mode, self.before_image, self.images, self.skipped)

    def initialOffset(self) -> dict:
        t = self._table()
        if self.starting_version is not None:
            if self.starting_version > t.version + 1:
                raise tf.VersionNotFoundError(
                    f"startingVersion {self.starting_version} does not exist; versions are 0..{t.version} (a "
                    f"stream may also start at {t.version + 1}, the next commit)")
            v = max(self.starting_version - 1, 0)
        elif self.starting_timestamp is not None:
            v = _last_before(t, self.starting_timestamp)
        else:
            v = t.version
        self._check_horizon(t, v)
        return _offset(v)

    def _check_horizon(self, t: tf.Table, v: int) -> None:
        horizon = t.snapshot().history_horizon
        if v < horizon:
            raise tf.HistoryExpiredError(
                f"the change stream reads on from version {v + 1}, but the changes of versions {v + 1}.."
                f"{horizon} are no longer kept: vacuum moved the history horizon to version {horizon}. Start "
                f"a new stream at version {horizon + 1} or later; to keep history for a stream "
                "that may fall behind, raise the table property history_max_age, or tag the version it "
                "reads from (Table.tag): vacuum keeps a tag's history")

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._table().version

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.max_rows is not None:
            return ReadMaxRows(self.max_rows)
        if self.max_versions is not None:
            return ReadMaxFiles(self.max_versions)     # a version is one log file
        return ReadAllAvailable()

    def reportLatestOffset(self) -> dict | None:
        return _offset(self._table().version)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        t = self._table()
        v, i = _pos(start)
        self._check_horizon(t, v)
        top = t.version if self.target is None else min(t.version, self.target)
        if v >= top:
            return start
        if isinstance(limit, ReadAllAvailable):
            return _offset(top)
        max_versions = limit.max_files if isinstance(limit, ReadMaxFiles) else self.max_versions
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else self.max_rows
        last = top if max_versions is None else min(top, v + max_versions)
        if max_rows is None:
            return _offset(last)
        taken = 0
        for u in range(v + 1, last + 1):
            parts = self._plan(t, u - 1, u).parts
            first = i if u == v + 1 else 0
            if self.mode == "net":              # whole versions: a key's net change needs all of it
                n = sum(p.records() for p in parts[first:])
                if taken and taken + n > max_rows:
                    return _offset(u - 1)
                taken += n
                continue
            for j in range(first, len(parts)):
                n = parts[j].records()
                if taken and taken + n > max_rows:
                    return _offset(u - 1, j)
                taken += n
        return _offset(last)

    def partitions(self, start: dict, end: dict):
        (v0, i0), (v1, i1) = _pos(start), _pos(end)
        if (v0, i0) == (v1, i1):
            return []
        pieces = []                             # (start version, end version, the parts' slice)
        if i0 and v1 == v0:
            pieces.append((v0, v0 + 1, slice(i0, i1)))
        else:
            cur = v0
            if i0:
                pieces.append((v0, v0 + 1, slice(i0, None)))
                cur = v0 + 1
            if v1 > cur:
                pieces.append((cur, v1, slice(None)))
            if i1:
                pieces.append((v1, v1 + 1, slice(0, i1)))
        t = self._table()
        opts = json.dumps(self.storage_options)
        items, projections = [], {}
        for a, b, cut in pieces:
            plan = self._plan(t, a, b)
            head = plan.header()
            items += [(head, p) for p in plan.parts[cut]]
            projections[b] = self.stream_columns.projection(head)     # the columns at b: by ID
        groups = pack(items, self.num_partitions)
        return [StreamPartition(self.uri, opts, g, self.columns, [projections[h.end] for h, _ in g])
                for g in groups] or [StreamPartition(self.uri, opts, (), self.columns, ())]

    def read(self, partition: "StreamPartition") -> Iterator[pa.RecordBatch]:
        """Each part's rows, in the stream's columns."""
        for item, projection in zip(partition.items, partition.projections):
            one = ChangePartition(partition.uri, partition.options, (item,), partition.columns)
            for batch in read_part(one):
                yield batch if projection is None else projection.apply(batch)

    def commit(self, end: dict) -> None:
        """Nothing to release: the log is the source's whole state."""


__all__ = ["ChangeStreamReader"]
