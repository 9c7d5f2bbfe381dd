"""Column types, encodings and compressions, as Kudu defines them (schema-design seed).

Each Kudu type maps to one Arrow type in memory and one Parquet physical type
on disk; `specs/format.md` section "Types" is the contract.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa

from .errors import SchemaError

MAX_CELL_BYTES = 64 * 1024          # Kudu: no cell larger than 64 KB
MAX_ENCODED_KEY_BYTES = 16 * 1024   # Kudu: composite key at most 16 KB after encoding

_FIXED_KINDS = {
    "bool": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(),
    "int64": pa.int64(), "float": pa.float32(), "double": pa.float64(),
    "date": pa.date32(), "unixtime_micros": pa.timestamp("us", tz="UTC"),
    "string": pa.string(), "binary": pa.binary(),
}
_INT_WIDTH = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "date": 4, "unixtime_micros": 8}

ENCODINGS = ("plain", "bitshuffle", "run_length", "dictionary", "prefix")
COMPRESSIONS = ("none", "lz4", "snappy", "zlib", "zstd")

# Allowed encodings per kind and the default (first), from the seed's Table 1, except that
# numbers default to plain: Kudu's bitshuffle is Parquet's BYTE_STREAM_SPLIT, which Spark 4.2's
# vectorized reader (every delta-spark user's, reading a Delta mirror) cannot decode (§5).
_ENCODINGS_BY_KIND = {
    **{k: ("plain", "bitshuffle", "run_length") for k in ("int8", "int16", "int32", "int64", "date", "unixtime_micros")},
    **{k: ("plain", "bitshuffle") for k in ("float", "double", "decimal")},
    "bool": ("run_length", "plain"),
    **{k: ("dictionary", "plain", "prefix") for k in ("string", "varchar", "binary")},
}


@dataclass(frozen=True)
class ColumnType:
    """A parsed Kudu column type such as ``int64``, ``decimal(18,2)`` or ``varchar(16)``."""

    kind: str
    precision: int | None = None
    scale: int | None = None
    length: int | None = None

    @property
    def name(self) -> str:
        if self.kind == "decimal":
            return f"decimal({self.precision},{self.scale})"
        if self.kind == "varchar":
            return f"varchar({self.length})"
        return self.kind

    def arrow(self) -> pa.DataType:
        if self.kind == "decimal":
            return pa.decimal128(self.precision, self.scale)
        if self.kind == "varchar":
            return pa.string()
        return _FIXED_KINDS[self.kind]

    @property
    def is_keyable(self) -> bool:
        return self.kind not in ("bool", "float", "double")

    @property
    def is_variable_width(self) -> bool:
        return self.kind in ("string", "varchar", "binary")

    @property
    def key_width(self) -> int:
        """Bytes of a fixed-width value in the key encoding (Kudu's physical width)."""
        if self.kind == "decimal":
            return decimal_storage_bytes(self.precision)
        return _INT_WIDTH[self.kind]

    @property
    def encodings(self) -> tuple[str, ...]:
        return _ENCODINGS_BY_KIND[self.kind]

    def __str__(self) -> str:
        return self.name


def decimal_storage_bytes(precision: int) -> int:
    """Kudu stores decimal(p<=9) in 4 bytes, p<=18 in 8 and p<=38 in 16."""
    return 4 if precision <= 9 else 8 if precision <= 18 else 16


_DECIMAL_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_VARCHAR_RE = re.compile(r"^varchar\(\s*(\d+)\s*\)$")
_ALIASES = {"boolean": "bool", "float32": "float", "float64": "double", "timestamp": "unixtime_micros",
            "utf8": "string", "tinyint": "int8", "smallint": "int16", "int": "int32", "bigint": "int64"}


def parse_type(spec: str | ColumnType) -> ColumnType:
    """Parse a type name; raise SchemaError naming the allowed types when it is unknown."""
    if isinstance(spec, ColumnType):
        return spec
    if not isinstance(spec, str):
        raise SchemaError(f"column type must be a string such as 'int64', got {spec!r}")
    s = spec.strip().lower()
    s = _ALIASES.get(s, s)
    if s in _FIXED_KINDS:
        return ColumnType(s)
    m = _DECIMAL_RE.match(s)
    if m:
        p, sc = int(m.group(1)), int(m.group(2))
        if not 1 <= p <= 38:
            raise SchemaError(f"decimal precision must be 1..38, got {p} in {spec!r}")
        if not 0 <= sc <= p:
            raise SchemaError(f"decimal scale must be 0..precision ({p}), got {sc} in {spec!r}")
        return ColumnType("decimal", precision=p, scale=sc)
    m = _VARCHAR_RE.match(s)
    if m:
        n = int(m.group(1))
        if not 1 <= n <= 65535:
            raise SchemaError(f"varchar length must be 1..65535, got {n} in {spec!r}")
        return ColumnType("varchar", length=n)
    allowed = ", ".join(list(_FIXED_KINDS) + ["decimal(p,s)", "varchar(n)"])
    raise SchemaError(f"unknown column type {spec!r}; use one of: {allowed}")
