"""Time-travel backfill: read a table as of a version or timestamp and write a derived output.

Downstream data can be recomputed exactly as it would have been then. The
table is read by `read_table` (Spark's Parquet reader where it can open the
files, else the `tableformat` data source on the executors), exposed as the temporary view `source`, transformed by a SQL
query (default: every row) and written as Parquet.

    python -m spark_jobs.backfill --table /data/metrics --as-of 12 --output /out/daily \\
        --sql "SELECT host, metric, avg(value) AS avg_value FROM source GROUP BY host, metric"
"""
from __future__ import annotations

import argparse
import json
from typing import Any, Callable

import tableformat as tf

from .session import get_spark
from .read import read_table


def read_as_of(spark: Any, uri: str, as_of: Any = None, storage_options: dict | None = None,
               columns: list[str] | None = None):
    """The table as of a version or timestamp: read_table (native where Spark can read the files)."""
    return read_table(spark, uri, as_of, storage_options, columns=columns or None)


def time_travel_backfill(spark: Any, uri: str, as_of: Any, output: str, sql: str | None = None,
                         transform: Callable | None = None, storage_options: dict | None = None,
                         mode: str = "overwrite") -> int:
    """Recompute `output` from the table as of `as_of`. Returns the number of output rows.
    `output` must lie apart from the table: an overwrite there would delete the table's files."""
    tf.check_outside_table(output, uri, "the backfill's output")
    df = read_as_of(spark, uri, as_of, storage_options)
    if transform is not None:
        df = transform(df)
    if sql:
        df.createOrReplaceTempView("source")
        df = spark.sql(sql)
    df.write.mode(mode).parquet(output)
    return spark.read.parquet(output).count()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m spark_jobs.backfill", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", required=True)
    ap.add_argument("--as-of", required=True, help="a version number, an ISO date-time, or ts:<microseconds>")
    ap.add_argument("--output", required=True)
    ap.add_argument("--sql", help="query over the view `source` (default: all rows)")
    ap.add_argument("--storage-options")
    ap.add_argument("--master")
    args = ap.parse_args(argv)
    spark = get_spark("tableformat-backfill", args.master)
    n = time_travel_backfill(spark, args.table, args.as_of, args.output, args.sql,
                             storage_options=json.loads(args.storage_options) if args.storage_options else None)
    print(f"wrote {n} rows to {args.output}")


if __name__ == "__main__":
    main()
