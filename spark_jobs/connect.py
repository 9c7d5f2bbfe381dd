"""Spark Connect sessions (README "Spark Connect"): which kind of session a job was given, and
the DataFrame-only forms of what the jobs once asked a classic session's SparkContext for.

A Connect client has no SparkContext, no RDDs and no py4j gateway (`spark.sparkContext` raises
`JVM_ATTRIBUTE_NOT_SUPPORTED`), so the jobs plan with `spark.conf` and run their tasks as
`mapInArrow` over a small DataFrame of task payloads, which both kinds of session run."""
from __future__ import annotations

from typing import Any, Callable, Iterable

import pyarrow as pa

RESULT = pa.schema([("result", pa.string())])


def is_connect(spark: Any) -> bool:
    """The session is a Spark Connect client (pyspark.sql.connect), not a classic py4j session."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def default_parallelism(spark: Any) -> int:
    """The cluster's default parallelism: the SparkContext's on a classic session; on Connect, the
    first of `spark.sql.leafNodeDefaultParallelism`, `spark.default.parallelism` and
    `spark.sql.shuffle.partitions` that is set (the server's SparkContext is out of reach)."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    for key in ("spark.sql.leafNodeDefaultParallelism", "spark.default.parallelism"):
        value = spark.conf.get(key, None)
        if value:
            return int(value)
    return int(spark.conf.get("spark.sql.shuffle.partitions"))


def run_payloads(spark: Any, payloads: list[str], fn: Callable[[str], Iterable[str]]) -> list[str]:
    """`fn(payload)` for each payload on the executors, about one task per payload (at most 64);
    the strings they return, concatenated. What `sparkContext.parallelize(...).flatMap(fn)` did,
    in the DataFrame API, so a job runs the same on a classic and a Connect session."""
    if not payloads:
        return []
    df = spark.createDataFrame(list(enumerate(payloads)), "i int, payload string")

    def task(batches):
        for b in batches:
            out = [r for p in b.column("payload").to_pylist() for r in fn(p)]
            yield pa.RecordBatch.from_pydict({"result": out}, RESULT)
    laid_out = df.repartitionByRange(min(len(payloads), 64), "i")
    return [r["result"] for r in laid_out.mapInArrow(task, "result string").collect()]
