"""Shared pieces of the Spark jobs, gathered for callers: options, type mapping and cached
snapshots (`snapshots`). The session is `spark_jobs.session.get_spark`, reached one way."""
from .snapshots import delete_files, open_snapshot, parse_as_of, spark_schema, spark_type, storage_options_from

__all__ = ["delete_files", "open_snapshot", "parse_as_of", "spark_schema", "spark_type", "storage_options_from"]
