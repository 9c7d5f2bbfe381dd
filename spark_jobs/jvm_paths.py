"""Where the JVM can read a table: which URI schemes, each file as a Hadoop path, s3a settings.

Spark's own readers (the JVM connector, and the Parquet scan of the join path) open the
table's files in the JVM; `read.read_table` asks here whether they can, before choosing a path.
"""
from __future__ import annotations

from typing import Iterable

import tableformat as tf


# Hadoop's own file systems: every Spark build carries the HDFS client (pyspark's
# hadoop-client-api and -runtime jars hold DistributedFileSystem and WebHdfsFileSystem).
HADOOP_SCHEMES = ("hdfs", "webhdfs", "swebhdfs", "viewfs")


def jvm_unreadable(storage: tf.Storage, jvm_schemes: Iterable[str]) -> str | None:
    """Why Spark's own reader cannot open the table's files (None: it can)."""
    if storage.is_local:
        return None
    scheme = storage.uri.split("://", 1)[0].lower() if "://" in storage.uri else storage.protocol
    if scheme in HADOOP_SCHEMES or scheme in {s.lower() for s in jvm_schemes}:
        return None
    return (f"the JVM is not known to read {scheme}:// URIs (declare it with jvm_schemes=[{scheme!r}] when "
            "the cluster has its Hadoop file system)")


def jvm_path(storage: tf.Storage, rel: str) -> str:
    """A table file as the URI the JVM opens it by (Hadoop's s3a for S3)."""
    if storage.is_local:
        return "file://" + storage.path(rel)
    root = storage.uri.rstrip("/")
    if root.startswith("s3://"):        # Hadoop's S3 file system is s3a (hadoop-aws)
        root = "s3a://" + root[len("s3://"):]
    return root + "/" + rel


def s3a_ready(spark, storage: tf.Storage) -> bool:
    """Whether the table is on S3 and this session's JVM has hadoop-aws (see session.s3a_packages)."""
    if not storage.uri.startswith(("s3://", "s3a://")):
        return False
    loaded = (spark.conf.get("spark.jars.packages", "") or "") + "," + (spark.conf.get("spark.jars", "") or "")
    return "hadoop-aws" in loaded


def configure_s3a(spark, storage: tf.Storage, storage_options: dict | None) -> None:
    """The table's storage options as s3a settings scoped to its bucket (`fs.s3a.bucket.<b>.*`),
    set on the session (readers' Hadoop confs copy them). Credentials go only there: never into
    a plan, a log line or an error."""
    from .session import s3a_settings
    bucket = storage.uri.split("://", 1)[1].split("/", 1)[0]
    for k, v in s3a_settings(bucket, storage_options).items():
        if spark.conf.get(k, None) != v:
            spark.conf.set(k, v)
