"""Shared pieces of the Spark jobs, gathered for callers: options, type mapping, cached
snapshots (`snapshots`) and the session (`session`)."""
from .snapshots import delete_files, open_snapshot, parse_as_of, spark_schema, spark_type, storage_options_from
from .session import get_spark

__all__ = ["delete_files", "open_snapshot", "parse_as_of", "spark_schema", "spark_type", "storage_options_from",
           "get_spark"]
