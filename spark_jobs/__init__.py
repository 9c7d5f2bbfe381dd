"""The Spark side of tableformat: the data sources (the Python one and the JVM connector), the
distributed jobs (insert, merge, compaction, export, backfill) and the session that runs them."""
from typing import Any


def register(spark: Any) -> None:
    """Register `format("tableformat")` (the Python data source and stream sink) on a session of
    either kind, classic or Spark Connect (README "Spark Connect"): a session started otherwise than
    by `spark_jobs.session.get_spark()` answers DATA_SOURCE_NOT_FOUND until this is called. On
    Connect the registration is the server's session's, and its Python workers must import
    `spark_jobs` and `tableformat`."""
    from .datasource import register as register_source
    register_source(spark)
