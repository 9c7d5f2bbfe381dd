"""The SparkSession for tableformat jobs: local[2] by default, the data source registered.

Extra JVM packages are composed as a list of Maven coordinates (`packages`), so
each optional integration (Delta Lake here; a connector jar or hadoop-aws
elsewhere) adds its own coordinates without knowing the others. They must be
set before the JVM starts: a session that already exists keeps its jars.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from .datasource import register

# delta-spark's Python package (4.4.1 on PyPI) would ask Maven Central for
# io.delta:delta-spark_<spark major.minor>_2.13:4.4.1, which was never published
# there; the Python code of 4.4.0 and 4.4.1 is identical, so the jars are pinned
# to 4.4.0, exactly, for the pyspark 4.2 they were built against.
DELTA_JARS_VERSION = "4.4.0"
DELTA_SQL_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
# Transitive dependencies of delta-spark's kernel that pyspark already bundles
# (newer): excluded so Ivy neither downloads them nor puts a second copy on the classpath.
DELTA_EXCLUDES = ("org.apache.hadoop:hadoop-client-api", "org.apache.hadoop:hadoop-client-runtime",
                  "org.apache.parquet:parquet-column", "org.apache.parquet:parquet-common",
                  "org.apache.parquet:parquet-encoding", "org.apache.parquet:parquet-format-structures",
                  "org.apache.parquet:parquet-hadoop", "org.apache.parquet:parquet-jackson",
                  "com.github.luben:zstd-jni", "org.xerial.snappy:snappy-java",
                  "org.apache.logging.log4j:log4j-api", "org.apache.logging.log4j:log4j-core",
                  "org.apache.logging.log4j:log4j-slf4j2-impl", "org.slf4j:slf4j-api",
                  "com.fasterxml.jackson.core:jackson-core", "com.fasterxml.jackson.core:jackson-databind",
                  "com.fasterxml.jackson.core:jackson-annotations", "commons-logging:commons-logging",
                  "org.roaringbitmap:RoaringBitmap", "org.roaringbitmap:shims", "com.google.code.findbugs:jsr305")


def delta_package(spark_version: str | None = None) -> str:
    """The Maven coordinate of delta-spark's jars for the installed pyspark."""
    if spark_version is None:
        import pyspark
        spark_version = pyspark.__version__
    major_minor = ".".join(spark_version.split(".")[:2])
    return f"io.delta:delta-spark_{major_minor}_2.13:{DELTA_JARS_VERSION}"


def delta_available() -> bool:
    """delta-spark's Python package is installed (its jars come from Maven Central at session start)."""
    import importlib.util
    return importlib.util.find_spec("delta") is not None


def get_spark(app: str = "tableformat", master: str | None = None, packages: Sequence[str] = (),
              delta: bool = False, conf: dict | None = None):
    """A SparkSession with the data source registered and Python filter pushdown on.

    `packages`: extra Maven coordinates for `spark.jars.packages`; `delta`: add
    delta-spark's jars, SQL extension and catalog; `conf`: extra settings.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    b = SparkSession.builder.appName(app)
    if master or not os.environ.get("SPARK_MASTER_URL_SET"):
        b = b.master(master or os.environ.get("TABLEFORMAT_SPARK_MASTER", "local[2]"))
    pkgs = list(packages)
    settings = dict(conf or {})
    if delta:
        pkgs.append(delta_package())
        settings.update(DELTA_SQL_CONF)
        excludes = [e for e in settings.get("spark.jars.excludes", "").split(",") if e]
        settings["spark.jars.excludes"] = ",".join(excludes + list(DELTA_EXCLUDES))
    if pkgs:
        settings["spark.jars.packages"] = ",".join(dict.fromkeys(pkgs))
    b = (b.config("spark.sql.python.filterPushdown.enabled", "true")
         .config("spark.sql.shuffle.partitions", os.environ.get("TABLEFORMAT_SHUFFLE_PARTITIONS", "8"))
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
    for k, v in settings.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    register(spark)
    return spark


def has_delta(spark) -> bool:
    """The session was started with Delta's SQL extension (so `format("delta")` and DeltaTable work)."""
    return "DeltaSparkSessionExtension" in (spark.conf.get("spark.sql.extensions", "") or "")
