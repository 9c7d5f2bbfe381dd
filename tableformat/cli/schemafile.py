"""The schema file of `create --schema`: YAML, or JSON when the name ends in .json.

    name: metrics                       # optional; default: the last segment of the URI
    columns:                            # in order; every key but name and type is optional
      - {name: host, type: string}
      - {name: time, type: unixtime_micros}
      - {name: value, type: double, nullable: true, encoding: bitshuffle, compression: lz4}
      - {name: price, type: "decimal(18,2)", nullable: true}     # quote a type with a comma
      - {name: tag, type: varchar(16), nullable: true, default: none}
    primary_key: [host, time]           # or one name
    partitioning:                       # optional; default: one unbounded range partition
      hash:                             # zero or more levels
        - {columns: [host], buckets: 4, seed: 0}      # seed is optional (0)
      range:
        columns: [time]                 # default: the primary key
        bounds: [[2023-11-14T00:00:00Z, 2024-11-14T00:00:00Z]]   # [lower, upper) pairs; null: unbounded
        splits: [2024-05-01T00:00:00Z]  # split points inside the bounds
    properties: {history_max_age: 259200}

Types are those of `specs/format.md` §2.1 (int8..int64, bool, float, double,
decimal(p,s), varchar(n), string, binary, date, unixtime_micros); `nullable`
defaults to false; `encoding` and `compression` to the type's defaults
(§2). Values (defaults, bounds, splits) are YAML/JSON scalars, written as
`values.py` says. A bound or split over several range columns is a list of
values, one per column.
"""
from __future__ import annotations

import json
from typing import Any

import tableformat as tf

from ..format.errors import InvalidOptionError, PartitionSchemaError, SchemaError
from ..format.types import parse_type
from .values import typed, typed_bound


def example() -> str:
    """The annotated example above, for `create --help`."""
    start = __doc__.index("    name: metrics")
    return __doc__[start:__doc__.index("\n\n", start)]


def _fields(d: Any, what: str, allowed: set, required: set = frozenset(), error: type = SchemaError) -> dict:
    """`d`, if it is a mapping with no key outside `allowed` and every `required` one: typos must not pass."""
    if not isinstance(d, dict):
        raise error(f"{what} must be a mapping, got {type(d).__name__}")
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise error(f"{what} has unknown key(s) {unknown}; allowed: {sorted(allowed)}")
    missing = sorted(required - set(d))
    if missing:
        raise error(f"{what} needs {' and '.join(map(repr, missing))}")
    return d


def load_schema_file(path: str) -> tuple[tf.Schema, tf.PartitionSchema | None, dict | None, str | None]:
    """Schema, partitioning, properties and name."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    import yaml
    try:
        doc = json.loads(text) if path.lower().endswith(".json") else yaml.safe_load(text)
    except (yaml.YAMLError, ValueError) as e:
        raise SchemaError(f"cannot parse schema file {path}: {' '.join(str(e).split())}") from None
    doc = _fields(doc, f"schema file {path}", {"name", "columns", "primary_key", "partitioning", "properties"})
    if not isinstance(doc.get("columns"), list) or not doc["columns"]:
        raise SchemaError(f"schema file {path}: 'columns' must be a non-empty list")
    columns = []
    for i, c in enumerate(doc["columns"]):
        c = _fields(c, f"column {i + 1}", {"name", "type", "nullable", "default", "encoding", "compression"},
                    {"name", "type"})
        ctype = parse_type(c["type"])
        nullable = c.get("nullable", False)
        if not isinstance(nullable, bool):
            raise SchemaError(f"column {c['name']!r}: nullable must be true or false, got {nullable!r}")
        default = typed(ctype, c.get("default"), f"default of column {c['name']!r}", SchemaError)
        columns.append(tf.Column(c["name"], ctype, nullable, default, c.get("encoding"),
                                 c.get("compression") or "lz4"))
    if doc.get("primary_key") is None:
        raise SchemaError(f"schema file {path}: 'primary_key' is required (a column name or a list)")
    schema = tf.Schema(columns, doc["primary_key"])
    parts = _partitioning(doc["partitioning"], schema) if doc.get("partitioning") is not None else None
    props = doc.get("properties")
    if props is not None and not isinstance(props, dict):
        raise InvalidOptionError(f"schema file {path}: 'properties' must be a mapping")
    name = doc.get("name")
    if name is not None and not isinstance(name, str):
        raise SchemaError(f"schema file {path}: 'name' must be text")
    return schema, parts, props, name


def _partitioning(d: Any, schema: tf.Schema) -> tf.PartitionSchema:
    d = _fields(d, "'partitioning'", {"hash", "range"}, error=PartitionSchemaError)
    levels = []
    for i, h in enumerate(d.get("hash") or []):
        h = _fields(h, f"hash level {i + 1}", {"columns", "buckets", "seed"}, {"columns", "buckets"},
                    PartitionSchemaError)
        levels.append(tf.HashPartition(h["columns"], h["buckets"], h.get("seed", 0)))
    r = d.get("range")
    if r is None:
        return tf.PartitionSchema(hash=levels, range=None)
    r = _fields(r, "'range'", {"columns", "bounds", "splits"}, error=PartitionSchemaError)
    names = r.get("columns")
    names = [names] if isinstance(names, str) else names
    rnames = list(names) if names is not None else list(schema.primary_key)
    unknown = [n for n in rnames if not schema.has_column(n)]
    if unknown:
        raise PartitionSchemaError(f"range column(s) {unknown} are not in the schema")
    rcols = [schema.column(n) for n in rnames]

    def bound(v: Any, what: str) -> Any:
        if v is None:
            return None
        v = [v] if len(rcols) == 1 else v
        if not isinstance(v, list) or len(v) != len(rcols):
            raise PartitionSchemaError(f"{what} {v!r}: give a list of {len(rcols)} values, one per range column")
        return typed_bound(rcols, v, what)
    bounds = []
    for b in r.get("bounds") or []:
        if not isinstance(b, list) or len(b) != 2:
            raise PartitionSchemaError(f"each range bound is a [lower, upper] pair, got {b!r}")
        bounds.append((bound(b[0], "lower bound"), bound(b[1], "upper bound")))
    splits = [bound(s, "split") for s in r.get("splits") or []]
    return tf.PartitionSchema(hash=levels, range=tf.RangePartition(names, bounds=bounds, splits=splits))
