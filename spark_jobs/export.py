"""Change export: a table's change history as Parquet, incrementally, exactly once.

The output holds one directory per exported version (`version=<v>/`) and a
watermark file `_tableformat_watermark.json` naming the last version whose
changes are complete. A run exports versions watermark+1 .. latest, one Spark
task per version, each overwriting its own deterministic file, and moves the
watermark only after every task succeeded. So a rerun after a failure
rewrites the same files: no change is duplicated or skipped. Readers should
read versions <= the watermark.

    python -m spark_jobs.export --table /data/metrics --output /exports/metrics
"""
from __future__ import annotations

import argparse
import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import tableformat as tf
from tableformat import Storage

WATERMARK = "_tableformat_watermark.json"


def read_watermark(output: str, output_options: dict | None = None) -> int:
    s = Storage(output, output_options)
    try:
        return int(json.loads(s.read(WATERMARK))["version"])
    except FileNotFoundError:
        return 0     # version 0 creates the table: no changes in it


def export_version(uri: str, storage_options: dict | None, output: str, output_options: dict | None,
                   version: int) -> int:
    """Write the changes of one commit to `output/version=<v>/changes.parquet`. Returns the row count."""
    t = tf.open_table(uri, storage_options=storage_options)
    ch = t.changes(version - 1, version)
    sink = pa.BufferOutputStream()
    pq.write_table(ch, sink, compression="zstd")
    Storage(output, output_options).write(f"version={version:020d}/changes.parquet", sink.getvalue())
    return ch.num_rows


def change_export(spark: Any, uri: str, output: str, storage_options: dict | None = None,
                  output_options: dict | None = None, end: int | None = None) -> dict:
    """Export every change committed since the watermark. Returns the range and row count."""
    t = tf.open_table(uri, storage_options=storage_options)
    start = read_watermark(output, output_options)
    end = t.version if end is None else end
    if end <= start:
        return {"start": start, "end": start, "rows": 0}
    versions = list(range(start + 1, end + 1))
    rdd = spark.sparkContext.parallelize(versions, min(len(versions), 64))
    rows = rdd.map(lambda v: export_version(uri, storage_options, output, output_options, v)).sum()
    Storage(output, output_options).write(WATERMARK, json.dumps({"version": end, "table": uri}).encode())
    return {"start": start, "end": end, "rows": int(rows)}


def main(argv=None) -> None:
    from .common import get_spark
    ap = argparse.ArgumentParser(prog="python -m spark_jobs.export", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", required=True)
    ap.add_argument("--output", required=True, help="output directory URI")
    ap.add_argument("--end", type=int, help="last version to export (default: the latest)")
    ap.add_argument("--storage-options", help="JSON fsspec storage options of the table")
    ap.add_argument("--output-options", help="JSON fsspec storage options of the output")
    ap.add_argument("--master")
    args = ap.parse_args(argv)
    spark = get_spark("tableformat-export", args.master)
    res = change_export(spark, args.table, args.output,
                        json.loads(args.storage_options) if args.storage_options else None,
                        json.loads(args.output_options) if args.output_options else None, args.end)
    print(f"exported versions {res['start'] + 1}..{res['end']}: {res['rows']} changes")


if __name__ == "__main__":
    main()
