"""What every Spark-side piece shares: options, `as_of`, type mapping, and snapshots cached per
worker process (so every task of a job reads one state)."""
from __future__ import annotations

import json
import threading
from typing import Any, Sequence

import tableformat as tf

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
    """`as_of` option: a version number, a timestamp (ISO date-time, or `ts:<microseconds>`) or
    a tag name, parsed as the engine and the CLI parse it."""
    return tf.parse_as_of(value, "the as_of option", tags=True)


def _table(uri: str, storage_options: dict | None, table_id: str | None = None, fresh: bool = False):
    """This process's handle on the table at `uri`, reopened when the path now holds another
    table (a different table_id); TableReplacedError if it is not the table a job planned on."""
    key = (uri, json.dumps(storage_options, sort_keys=True))
    with _LOCK:
        t = None if fresh else _TABLES.get(key)
    if t is not None:
        try:
            t.refresh()
        except tf.TableReplacedError:
            t = None
        if t is not None and table_id is not None and t.table_id != table_id:
            t = None
    if t is None:
        t = tf.open_table(uri, storage_options=storage_options)
        with _LOCK:
            _TABLES[key] = t
    if table_id is not None and t.table_id != table_id:
        raise tf.TableReplacedError(f"the table at {uri!r} was replaced during the job (it was table {table_id}, "
                                    f"it is now {t.table_id}); run the job again")
    return t


def open_snapshot(uri: str, storage_options: dict | None, as_of: Any, table_id: str | None = None):
    """A snapshot of one table. A version is cached per worker process by (table_id, version,
    history horizon): every task of a job sees one state, a vacuum that moved the horizon makes
    older versions be read through UNDO records, and a table re-created at the same path is
    never mixed with the old one. Without a table_id (a driver planning a new job) the latest
    state comes from a fresh handle."""
    if isinstance(as_of, int) and not isinstance(as_of, tf.Timestamp):
        t = _table(uri, storage_options, table_id, fresh=table_id is None)
        key = (uri, json.dumps(storage_options, sort_keys=True), t.table_id, as_of, t.snapshot().history_horizon)
        with _LOCK:
            snap = _SNAPSHOTS.get(key)
        if snap is None:
            snap = t.snapshot(as_of)
            with _LOCK:
                _SNAPSHOTS[key] = snap
        return snap
    return _table(uri, storage_options, table_id, fresh=table_id is None).snapshot(as_of)


def spark_type(ctype):
    """The Spark SQL type of a tableformat column type, from the engine's name of it in Spark's JSON
    (`ColumnType.delta_name`, specs/format.md §2.1); built without a session: workers have none."""
    from pyspark.sql.types import StructField
    return StructField.fromJson({"name": "c", "type": ctype.delta_name, "nullable": True, "metadata": {}}).dataType


def spark_schema(schema: tf.Schema, names: Sequence[str] | None = None):
    from pyspark.sql.types import StructField, StructType
    cols = schema.columns if names is None else [schema.column(n) for n in names]
    return StructType([StructField(c.name, spark_type(c.type), c.nullable) for c in cols])


def delete_files(uri: str, storage_options: dict | None, paths: list[str]) -> None:
    tf.Storage(uri, storage_options).delete_quietly(paths)
