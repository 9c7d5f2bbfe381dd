"""Metadata tables as Spark views: `<name>__history`, `<name>__rowsets`, ... (Iceberg's metadata tables).

Each view is `Table.inspect(kind)` of the table's latest version at registration,
so Spark SQL can join and aggregate the log: rowsets by deleted fraction, delta
files per tablet, commits per operation.

    from spark_jobs.metadata_tables import register_metadata_views
    register_metadata_views(spark, "metrics", "/data/metrics")
    spark.sql("SELECT tablet, sum(bytes) FROM metrics__rowsets GROUP BY tablet")
"""
from __future__ import annotations

from typing import Any, Sequence

import tableformat as tf

KINDS = ("history", "tablets", "rowsets", "deltas", "files", "tags")


def register_metadata_views(spark: Any, name: str, uri: str, storage_options: dict | None = None,
                            kinds: Sequence[str] = KINDS, as_of: Any = None) -> list[str]:
    """Register one temporary view per kind, named `<name>__<kind>`; returns the view names."""
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        raise tf.InvalidOptionError(f"name must be letters, digits and _ (a view name prefix), got {name!r}")
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise tf.InvalidOptionError(f"unknown metadata table(s) {bad}; kinds are {', '.join(KINDS)}")
    from pyspark.sql.pandas.types import from_arrow_schema
    t = tf.open_table(uri, storage_options=storage_options)
    views = []
    for kind in kinds:
        data = t.inspect(kind, as_of=as_of)
        view = f"{name}__{kind}"
        # the schema given: Spark Connect cannot infer one from an empty table (no tags yet)
        spark.createDataFrame(data, from_arrow_schema(data.schema)).createOrReplaceTempView(view)
        views.append(view)
    return views
