"""Column types, encodings and compressions, as Kudu defines them (specs/format.md §2.1).

Each logical type has one row in `TYPE_NAMES`: its Arrow type in memory, its Spark SQL name,
its Delta schema name, the physical kind the JVM connector copies its cells as, and its Iceberg
name. Every other spelling of a type (the Spark jobs' schemas, the connector's plan, the mirrors, the JVM's
`CellCopy`, tied by a test) derives from it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa

from .errors import SchemaError

MAX_CELL_BYTES = 64 * 1024          # Kudu: no cell larger than 64 KB
MAX_ENCODED_KEY_BYTES = 16 * 1024   # Kudu: composite key at most 16 KB after encoding



@dataclass(frozen=True)
class TypeNames:
    """One logical type as each system it crosses names it. `arrow` is None for decimal, whose
    Arrow type carries its precision and scale; Spark and Delta add "(p,s)" to its names."""

    arrow: pa.DataType | None
    spark: str          # Spark SQL (DDL) name: Spark schemas, the connector plan's column types
    delta: str          # Delta's schema name (Spark's JSON type name): the Delta mirror
    physical: str       # the JVM connector's vector kind (CellCopy): how a cell is copied
    iceberg: str        # Iceberg's primitive type name: the Iceberg mirror (§16)


TYPE_NAMES = {
    "bool": TypeNames(pa.bool_(), "boolean", "boolean", "BOOL", "boolean"),
    "int8": TypeNames(pa.int8(), "tinyint", "byte", "BYTE", "int"),
    "int16": TypeNames(pa.int16(), "smallint", "short", "SHORT", "int"),
    "int32": TypeNames(pa.int32(), "int", "integer", "INT", "int"),
    "int64": TypeNames(pa.int64(), "bigint", "long", "LONG", "long"),
    "float": TypeNames(pa.float32(), "float", "float", "FLOAT", "float"),
    "double": TypeNames(pa.float64(), "double", "double", "DOUBLE", "double"),
    "date": TypeNames(pa.date32(), "date", "date", "INT", "date"),                     # days since the epoch
    "unixtime_micros": TypeNames(pa.timestamp("us", tz="UTC"), "timestamp", "timestamp", "LONG", "timestamptz"),
    "string": TypeNames(pa.string(), "string", "string", "BYTES", "string"),
    "varchar": TypeNames(pa.string(), "string", "string", "BYTES", "string"),
    "binary": TypeNames(pa.binary(), "binary", "binary", "BYTES", "binary"),
    "decimal": TypeNames(None, "decimal", "decimal", "DEC", "decimal"),
}
_FIXED_KINDS = {k: n.arrow for k, n in TYPE_NAMES.items() if k not in ("decimal", "varchar")}
_INT_WIDTH = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "date": 4, "unixtime_micros": 8}

ENCODINGS = ("plain", "bitshuffle", "run_length", "dictionary", "prefix")
COMPRESSIONS = ("none", "lz4", "snappy", "zlib", "zstd")

# Allowed encodings per kind and the default (first), as Kudu allows them (specs/format.md §5), except that
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
        return TYPE_NAMES[self.kind].arrow

    def _with_params(self, name: str) -> str:
        return f"{name}({self.precision},{self.scale})" if self.kind == "decimal" else name

    @property
    def spark_name(self) -> str:
        """Spark SQL's name of the type (`DataType.simpleString`), e.g. "bigint", "decimal(18,2)"."""
        return self._with_params(TYPE_NAMES[self.kind].spark)

    @property
    def delta_name(self) -> str:
        """Delta's (Spark JSON's) name of the type, e.g. "long", "decimal(18,2)"."""
        return self._with_params(TYPE_NAMES[self.kind].delta)

    @property
    def iceberg_name(self) -> str:
        """Iceberg's name of the type, e.g. "long", "timestamptz", "decimal(18,2)" (specs §16)."""
        return self._with_params(TYPE_NAMES[self.kind].iceberg)

    @property
    def physical(self) -> str:
        """The JVM connector's vector kind for the type's cells (CellCopy's constant's name)."""
        return TYPE_NAMES[self.kind].physical

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
