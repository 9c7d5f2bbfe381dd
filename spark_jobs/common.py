"""Shared pieces of the Spark jobs: sessions, options, type mapping, cached snapshots."""
from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any, Sequence

import tableformat as tf
from tableformat.schema import Schema

_SNAPSHOTS: dict[tuple, Any] = {}
_TABLES: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def storage_options_from(options: dict) -> dict | None:
    """Spark options -> fsspec storage options: `storage_options` as JSON, or `storage.<key>` entries."""
    out: dict[str, Any] = {}
    raw = options.get("storage_options")
    if raw:
        out.update(json.loads(raw))
    for k, v in options.items():
        if k.startswith("storage."):
            out[k[len("storage."):]] = v
    return out or None


def parse_as_of(value: Any):
    """`as_of` option: a version number, or a timestamp (ISO date-time, or `ts:<microseconds>`)."""
    if value is None or value == "":
        return None
    if isinstance(value, int):
        return value
    s = str(value).strip()
    if s.lstrip("-").isdigit():
        return int(s)
    if s.startswith("ts:"):
        return tf.Timestamp(int(s[3:]))
    return s   # an ISO date-time; the table resolves it


def _table(uri: str, storage_options: dict | None):
    key = (uri, json.dumps(storage_options, sort_keys=True))
    with _LOCK:
        t = _TABLES.get(key)
    if t is None:
        t = tf.open_table(uri, storage_options=storage_options)
        with _LOCK:
            _TABLES[key] = t
    return t


def open_snapshot(uri: str, storage_options: dict | None, as_of: Any):
    """A snapshot, cached per worker process by (uri, version, history horizon): every task of a job
    sees one state, and a vacuum that moved the horizon (deleting files older versions referenced)
    makes older versions be read through UNDO records instead of from a stale cached state."""
    t = _table(uri, storage_options)
    if isinstance(as_of, int) and not isinstance(as_of, tf.Timestamp):
        key = (uri, json.dumps(storage_options, sort_keys=True), as_of, t.state.history_horizon)
        with _LOCK:
            snap = _SNAPSHOTS.get(key)
        if snap is None:
            snap = t.snapshot(as_of)
            with _LOCK:
                _SNAPSHOTS[key] = snap
        return snap
    return t.snapshot(as_of)


def spark_type(ctype):
    """The Spark SQL type of a tableformat column type (built without a session: workers have none)."""
    from pyspark.sql import types as T
    k = ctype.kind
    simple = {"bool": T.BooleanType, "int8": T.ByteType, "int16": T.ShortType, "int32": T.IntegerType,
              "int64": T.LongType, "float": T.FloatType, "double": T.DoubleType, "date": T.DateType,
              "unixtime_micros": T.TimestampType, "string": T.StringType, "varchar": T.StringType,
              "binary": T.BinaryType}
    if k in simple:
        return simple[k]()
    return T.DecimalType(ctype.precision, ctype.scale)


def spark_schema(schema: Schema, names: Sequence[str] | None = None):
    from pyspark.sql.types import StructField, StructType
    cols = schema.columns if names is None else [schema.column(n) for n in names]
    return StructType([StructField(c.name, spark_type(c.type), c.nullable) for c in cols])


def delete_files(uri: str, storage_options: dict | None, paths: list[str]) -> None:
    from tableformat.storage import Storage
    Storage(uri, storage_options).delete_quietly(paths)


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
    from .datasource import register
    register(spark)
    return spark
