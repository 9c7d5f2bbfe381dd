"""The read plan as the JVM connector takes it: `Snapshot.read_plan` as JSON (ReadPlan.java).

File URIs the JVM opens, column IDs, Spark types, read defaults in Catalyst's physical form,
ranks and the cut; `connector_part` reads rowsets through the connector with it. `read_table`
no longer uses it (the JVM plans its own reads, specs/format.md §9.4): the differential test of the
JVM planner (tests/spark/test_jvm_planner.py) compares against it, and benchmarks/bench_spark_sql.py
reads the view as it was before (Python's full plan, no pruning from SQL) with it.
"""
from __future__ import annotations

import tableformat as tf

from ..jvm_paths import jvm_path
from . import NAME


def connector_part(spark, storage: tf.Storage, plan: tf.ReadPlan, rowsets: list):
    """These rowsets read by the connector: the plan as JSON, columns named as the schema names them."""
    import json
    return spark.read.format(NAME).option("plan", json.dumps(connector_plan(storage, plan, rowsets))).load()


def _physical(ctype, value):
    """A value as the connector's plan carries it: Catalyst's physical form in JSON, by the type's
    physical kind (`ColumnType.physical`, what CellCopy.fromJson reads): a date's days and a
    timestamp's microseconds as integers, a decimal as text, binary bytes in base64."""
    import base64
    import math

    import pyarrow as pa
    if value is None:
        return None
    s = pa.scalar(value, type=ctype.arrow())
    physical = ctype.physical
    if physical in ("INT", "LONG"):
        return s.cast(pa.int32() if physical == "INT" else pa.int64()).as_py()
    if physical == "DEC":
        return str(s.as_py())
    if physical == "BYTES" and pa.types.is_binary(s.type):
        return base64.b64encode(s.as_py()).decode()
    v = s.as_py()
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v).replace("inf", "Infinity").replace("nan", "NaN")
    return v


def connector_plan(storage: tf.Storage, plan: tf.ReadPlan, rowsets: list) -> dict:
    """The read plan as the connector takes it (spark_jobs/connector/.../ReadPlan.java): file
    URIs the JVM opens, column IDs, Spark types, read defaults, ranks and the cut. Every field is
    required and no other is allowed there (ReadPlan.FIELDS): the JVM refuses a plan that differs."""
    def delta(f):
        return {"path": jvm_path(storage, f.path), "size": f.size, "order": f.order, "min_ts": f.min_ts,
                "max_ts": f.max_ts, "has_ts": f.has_ts_column, "updates": list(f.updates), "deletes": f.deletes}
    return {
        "version": plan.version, "read_ts": plan.read_ts,
        "columns": [{"id": c.id, "name": c.name, "type": c.type.spark_name, "nullable": True,
                     "default": _physical(c.type, c.read_default)} for c in plan.read_columns],
        "rowsets": [{"id": rs.id, "num_rows": rs.num_rows,
                     "base": [{"path": jvm_path(storage, b.path), "size": b.size, "columns": [i for i, _ in b.columns],
                               "crc32": b.crc32}
                              for b in rs.base],
                     "redo": [delta(f) for f in rs.redo], "undo": [delta(f) for f in rs.undo],
                     "missing": list(rs.missing), "tablet": rs.tablet, "native": rs.native} for rs in rowsets],
    }
