"""The SparkSession for tableformat jobs: local[2] by default, the data source registered."""
from __future__ import annotations

import os
import sys

from .datasource import register


def get_spark(app: str = "tableformat", master: str | None = None):
    """A SparkSession with the data source registered and Python filter pushdown on."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    b = SparkSession.builder.appName(app)
    if master or not os.environ.get("SPARK_MASTER_URL_SET"):
        b = b.master(master or os.environ.get("TABLEFORMAT_SPARK_MASTER", "local[2]"))
    spark = (b.config("spark.sql.python.filterPushdown.enabled", "true")
             .config("spark.sql.shuffle.partitions", os.environ.get("TABLEFORMAT_SHUFFLE_PARTITIONS", "8"))
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .getOrCreate())
    register(spark)
    return spark
