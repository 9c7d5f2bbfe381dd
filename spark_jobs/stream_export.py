"""Stream export: a table's changes into Parquet through the change stream (spark_jobs/stream.py)
and Spark's file sink, run as Trigger.AvailableNow: each run exports what was committed since the
last one, exactly once.

    python -m spark_jobs.stream_export --table /data/metrics --output /exports/metrics/changes

Exactly once, across kills and re-runs: the checkpoint (default `<output>/_checkpoint`) holds the
query's offsets (log versions, spark_jobs/stream.py), so a restarted query replays an unfinished
micro-batch with the same rows; the file sink lists each batch's files in `<output>/_spark_metadata`
only once the batch is written, and skips a batch already listed. A reader that goes through that
log (spark.read.parquet(output), or `committed_files` here) sees every change once; files of a batch
killed mid-write are on disk but in no log entry. Compare `change_export` (spark_jobs/export.py):
one file per version and a watermark file, readable by any Parquet reader, but one task per version.

Across an ALTER: a run's files are in the table's columns when it started, a batch from before
the ALTER given in them by column ID (spark_jobs/stream_columns.py), so no ALTER stops the export,
and files of runs on either side of one differ in columns (read with mergeSchema, or by name).
mergeSchema lines up columns by name only: a column added is NULL in older files,
but a rename gives two half-NULL columns (the old name in older files, the new one in newer), and
a column dropped and added again with another type cannot merge; join those by hand.
"""
from __future__ import annotations

import argparse
import json
import posixpath
from typing import Any

import tableformat as tf
from tableformat import Storage

from .connect import default_parallelism

METADATA = "_spark_metadata"
CHECKPOINT = "_checkpoint"


def stream_export(spark: Any, uri: str, output: str, checkpoint: str | None = None,
                  storage_options: dict | None = None, starting_version: int | None = None,
                  starting_timestamp: str | None = None, max_versions_per_trigger: int | None = None,
                  columns: str = "tableformat", num_partitions: int | None = None) -> dict:
    """Run the change stream into `output` (Parquet) until it has read every commit there is now.

    The first run starts at `starting_version` (inclusive) or `starting_timestamp` (the first commit
    at or after it), else after the latest version; later runs continue from the checkpoint, whose
    offsets win over these options. A micro-batch's parts run in `num_partitions` tasks (default
    twice the default parallelism; option numPartitions). Output and checkpoint must lie outside the table
    (check_outside_table), checked before Spark does anything. Returns the batches and rows read."""
    checkpoint = checkpoint or output.rstrip("/") + "/" + CHECKPOINT
    tf.check_outside_table(output, uri, "the stream export's output")
    tf.check_outside_table(checkpoint, uri, "the stream export's checkpoint")
    from .datasource import NAME, register
    from .errors import typed_errors
    register(spark)
    r = (spark.readStream.format(NAME).option("readChangeFeed", "true").option("changeFeedColumns", columns)
         .option("numPartitions", str(num_partitions or 2 * default_parallelism(spark))))
    if starting_version is not None:
        r = r.option("startingVersion", str(starting_version))
    elif starting_timestamp is not None:
        r = r.option("startingTimestamp", str(starting_timestamp))
    if max_versions_per_trigger is not None:
        r = r.option("maxVersionsPerTrigger", str(max_versions_per_trigger))
    if storage_options:
        r = r.option("storage_options", json.dumps(storage_options))
    with typed_errors():
        q = _start(spark, r.load(uri).writeStream.format("parquet").option("path", output)
                   .option("checkpointLocation", checkpoint).trigger(availableNow=True))
        q.awaitTermination()
    # the progress objects' attributes: on Spark Connect their dict keys are not the JSON's names
    progress = [p for p in q.recentProgress if p.numInputRows is not None]
    ends = [p.sources[0].endOffset for p in progress if p.sources]
    end = json.loads(ends[-1]) if ends and ends[-1] else None
    return {"batches": len(progress), "rows": sum(int(p.numInputRows) for p in progress),
            "end": end, "output": output, "checkpoint": checkpoint}


def _start(spark: Any, writer: Any) -> Any:
    """Start the query writing timestamps as Parquet's TIMESTAMP_MICROS (UTC), which every reader
    reads as such, not Spark's default INT96; the query keeps the setting (it runs on a clone of
    the session's conf), the session gets its own back."""
    key = "spark.sql.parquet.outputTimestampType"
    old = spark.conf.get(key, None)
    spark.conf.set(key, "TIMESTAMP_MICROS")
    try:
        return writer.start()
    finally:
        if old is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, old)


def committed_files(output: str, output_options: dict | None = None) -> list[str]:
    """The Parquet files the file sink's log lists under `output` (absolute URIs), for readers
    other than Spark: the files of every finished micro-batch, none of a batch killed mid-write.

    The log (`_spark_metadata/<batch>`, every tenth one compacted into `<batch>.compact` holding
    all before it) is a version line then one JSON entry per file, action "add" or "delete"."""
    s = Storage(output, output_options)
    try:
        names = s.list(METADATA)
    except FileNotFoundError:
        return []
    batches = {}
    for n in names:
        base = posixpath.basename(n.rstrip("/"))
        stem = base[:-len(".compact")] if base.endswith(".compact") else base
        if stem.isdigit():
            batches[int(stem)] = base
    compacted = [b for b, n in batches.items() if n.endswith(".compact")]
    first = max(compacted) if compacted else 0
    files: dict[str, bool] = {}
    for b in sorted(x for x in batches if x >= first):
        for line in s.read(f"{METADATA}/{batches[b]}").decode().splitlines()[1:]:
            if line.strip():
                e = json.loads(line)
                files[e["path"]] = e.get("action", "add") == "add"
    return [p for p, live in files.items() if live]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--checkpoint")
    ap.add_argument("--starting-version", type=int)
    ap.add_argument("--starting-timestamp")
    ap.add_argument("--max-versions-per-trigger", type=int)
    ap.add_argument("--master")
    a = ap.parse_args(argv)
    from .session import get_spark
    spark = get_spark("tableformat-stream-export", a.master)
    res = stream_export(spark, a.table, a.output, a.checkpoint, starting_version=a.starting_version,
                        starting_timestamp=a.starting_timestamp, max_versions_per_trigger=a.max_versions_per_trigger)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
