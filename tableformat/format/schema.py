"""Table schema: typed columns with internal column IDs and an enforced primary key.

Column IDs follow specs/design/schema-change.md: they are assigned once, are
never reused, and are what every file refers to. Users only ever see names.
See `specs/format.md`, section "Schema".
"""
from __future__ import annotations

import base64
import datetime as _dt
import decimal as _decimal
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Sequence

import pyarrow as pa

from . import arguments as arg
from .comparison import exact_value
from .errors import InvalidIdentifierError, SchemaError
from .types import COMPRESSIONS, ColumnType, parse_type

MAX_COLUMNS = 300
MAX_IDENTIFIER_BYTES = 256


def validate_identifier(name: Any, what: str = "column") -> str:
    """Names are never used in file paths, but must still be clean, printable UTF-8."""
    if isinstance(name, bytes):
        try:
            name = name.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidIdentifierError(f"{what} name {name!r} is not valid UTF-8") from None
    if not isinstance(name, str):
        raise InvalidIdentifierError(f"{what} name must be a string, got {type(name).__name__}")
    if not name:
        raise InvalidIdentifierError(f"{what} name must not be empty")
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidIdentifierError(f"{what} name {name!r} is not valid UTF-8 (lone surrogate)") from None
    if len(encoded) > MAX_IDENTIFIER_BYTES:
        raise InvalidIdentifierError(
            f"{what} name is {len(encoded)} bytes of UTF-8; the limit is {MAX_IDENTIFIER_BYTES}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise InvalidIdentifierError(f"{what} name {name!r} contains a control character (NUL, newline...)")
    if "/" in name or "\\" in name or name in (".", ".."):
        raise InvalidIdentifierError(f"{what} name {name!r} contains a path separator or is '.'/'..'")
    return name


# --- typed values <-> JSON (defaults, statistics, partition bounds) ----------------

def value_to_json(ctype: ColumnType, value: Any) -> Any:
    """Encode a Python value of `ctype` as JSON; the inverse of value_from_json."""
    if value is None:
        return None
    k = ctype.kind
    if k == "binary":
        return base64.b64encode(bytes(value)).decode("ascii")
    if k == "decimal":
        return str(value)
    if k == "date":
        return value.isoformat() if isinstance(value, _dt.date) else int(value)
    if k == "unixtime_micros":
        if isinstance(value, _dt.datetime):
            return pa.scalar(value, type=ctype.arrow()).value
        return int(value)
    if k in ("float", "double"):
        f = float(value)
        return f if f == f and f not in (float("inf"), float("-inf")) else repr(f)
    return value


def value_from_json(ctype: ColumnType, value: Any) -> Any:
    if value is None:
        return None
    k = ctype.kind
    if k == "binary":
        return base64.b64decode(value)
    if k == "decimal":
        return _decimal.Decimal(value)
    if k == "date":   # ISO text, or int days for a date Python cannot hold
        return value if isinstance(value, int) else _dt.date.fromisoformat(value)
    if k == "unixtime_micros":
        return scalar_to_python(pa.scalar(int(value), type=ctype.arrow()))
    if k in ("float", "double") and isinstance(value, str):
        return float(value)
    return value


def coerce_scalar(ctype: ColumnType, value: Any, what: str) -> pa.Scalar:
    """A user value (a default, a partition bound) as an Arrow scalar of the column type, or SchemaError.

    Exact: a value the type cannot hold (1.7 for an int, a datetime with a time of day for a
    date, 2**70 for an int64) is an error, never rounded. Two rules of the type itself apply, as
    on insert: varchar values are truncated to their length and float values rounded to float32.
    """
    if value is None or (isinstance(value, pa.Scalar) and not value.is_valid):
        return pa.scalar(None, type=ctype.arrow())
    v = exact_value(ctype, value, what)
    try:
        s = pa.scalar(v, type=ctype.arrow())
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
        raise SchemaError(f"{what}: {value!r} is not a valid {ctype.name} ({e})") from None
    if ctype.kind == "varchar" and len(v) > ctype.length:
        s = pa.scalar(v[: ctype.length], type=pa.string())
    return s


def scalar_to_python(s: pa.Scalar) -> Any:
    """`s.as_py()`, except dates and timestamps Python's datetime cannot hold stay ints (days, micros)."""
    try:
        return s.as_py()
    except (OverflowError, ValueError):
        return s.cast(pa.int32() if pa.types.is_date32(s.type) else pa.int64()).as_py()


@dataclass(frozen=True)
class Column:
    """One column. `id` is assigned by the Schema and never reused."""

    name: str
    type: ColumnType | str
    nullable: bool = False
    default: Any = None
    encoding: str | None = None       # None: the type's default encoding
    compression: str = "lz4"
    id: int | None = None
    # Read default: what rows written before the column existed read as. Fixed when
    # the column is added (Kudu's read default); `default` is the write default.
    read_default: Any = None

    def __post_init__(self):
        object.__setattr__(self, "name", validate_identifier(self.name))
        what = f"column {self.name!r}:"
        arg.boolean(self.nullable, f"{what} nullable", error=SchemaError)
        arg.string(self.encoding, f"{what} encoding", none=True, error=SchemaError)
        arg.string(self.compression, f"{what} compression", none=True, error=SchemaError)
        arg.integer(self.id, f"{what} id", 0, none=True, error=SchemaError)
        ctype = parse_type(self.type)
        object.__setattr__(self, "type", ctype)
        enc = self.encoding or ctype.encodings[0]
        enc = enc.lower().replace(" ", "_")
        if enc == "rle":
            enc = "run_length"
        if enc not in ctype.encodings:
            raise SchemaError(f"column {self.name!r}: encoding {self.encoding!r} is not allowed for "
                              f"{ctype.name}; allowed: {', '.join(ctype.encodings)}")
        object.__setattr__(self, "encoding", enc)
        comp = (self.compression or "none").lower()
        if comp not in COMPRESSIONS:
            raise SchemaError(f"column {self.name!r}: unknown compression {self.compression!r}; "
                              f"use one of {', '.join(COMPRESSIONS)}")
        object.__setattr__(self, "compression", comp)
        if self.default is not None:
            s = coerce_scalar(ctype, self.default, f"default of column {self.name!r}")
            object.__setattr__(self, "default", scalar_to_python(s))
        if self.read_default is not None:
            s = coerce_scalar(ctype, self.read_default, f"read default of column {self.name!r}")
            object.__setattr__(self, "read_default", scalar_to_python(s))

    @property
    def arrow_type(self) -> pa.DataType:
        return self.type.arrow()

    def to_json(self) -> dict:
        return {"id": self.id, "name": self.name, "type": self.type.name, "nullable": self.nullable,
                "default": value_to_json(self.type, self.default), "encoding": self.encoding,
                "compression": self.compression, "read_default": value_to_json(self.type, self.read_default)}

    @staticmethod
    def from_json(d: dict) -> "Column":
        ctype = parse_type(d["type"])
        return Column(d["name"], ctype, d["nullable"], value_from_json(ctype, d.get("default")),
                      d["encoding"], d["compression"], d["id"], value_from_json(ctype, d.get("read_default")))


@dataclass(frozen=True)
class Schema:
    """Columns plus the primary key. Immutable; changes make a new Schema."""

    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    next_column_id: int = field(default=0)

    def __init__(self, columns: Sequence[Column], primary_key: Sequence[str] | str,
                 next_column_id: int | None = None):
        primary_key = arg.names(primary_key, "primary_key", error=SchemaError)
        cols = list(arg.sequence(columns, "schema columns", error=SchemaError))
        arg.integer(next_column_id, "next_column_id", 0, none=True, error=SchemaError)
        if not cols:
            raise SchemaError("a schema needs at least one column")
        if len(cols) > MAX_COLUMNS:
            raise SchemaError(f"a table has at most {MAX_COLUMNS} columns, got {len(cols)}")
        for c in cols:
            if not isinstance(c, Column):
                raise SchemaError(f"schema columns must be tf.Column, got {type(c).__name__}")
        names = [c.name for c in cols]
        dups = sorted({n for n in names if names.count(n) > 1})
        if dups:
            raise SchemaError(f"duplicate column names: {', '.join(map(repr, dups))}")
        pk = list(primary_key or [])
        if not pk:
            raise SchemaError("a primary key of one or more columns is required")
        if len(set(pk)) != len(pk):
            raise SchemaError(f"primary key lists a column twice: {pk}")
        by_name = {c.name: c for c in cols}
        for k in pk:
            if k not in by_name:
                raise SchemaError(f"primary key column {k!r} is not in the schema")
            c = by_name[k]
            if c.nullable:
                raise SchemaError(f"primary key column {k!r} cannot be nullable")
            if not c.type.is_keyable:
                raise SchemaError(f"primary key column {k!r} has type {c.type.name}; "
                                  "bool, float and double cannot be key columns")
        # Assign IDs to new columns, never reusing one.
        used = [c.id for c in cols if c.id is not None]
        if len(set(used)) != len(used):
            raise SchemaError("duplicate column IDs")
        nxt = max([next_column_id or 0] + [i + 1 for i in used])
        assigned = []
        for c in cols:
            if c.id is None:
                c = replace(c, id=nxt)
                nxt += 1
            assigned.append(c)
        object.__setattr__(self, "columns", tuple(assigned))
        object.__setattr__(self, "primary_key", tuple(pk))
        object.__setattr__(self, "next_column_id", nxt)

    # lookups
    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def expect_column(self, name: str, type: str | None = None, nullable: bool | None = None,
                      table: str = "") -> Column:
        """The column called `name`; ColumnNotFoundError if absent or not of the expected type or
        nullability (what a job checks before it relies on a column)."""
        from .errors import ColumnNotFoundError
        arg.string(name, "name")
        arg.string(type, "type", none=True)
        arg.boolean(nullable, "nullable", none=True)
        if not self.has_column(name):
            raise ColumnNotFoundError(f"column {name!r} is not in table {table!r}; columns are {self.names}")
        c = self.column(name)
        if type is not None and parse_type(type).name != c.type.name:
            raise ColumnNotFoundError(f"column {name!r} is {c.type.name}, not {parse_type(type).name}")
        if nullable is not None and nullable != c.nullable:
            raise ColumnNotFoundError(f"column {name!r} is {'' if c.nullable else 'not '}nullable")
        return c

    def has_column(self, name: str) -> bool:
        return any(c.name == name for c in self.columns)

    def has_id(self, column_id: int) -> bool:
        return any(c.id == column_id for c in self.columns)

    def by_id(self, column_id: int) -> Column:
        for c in self.columns:
            if c.id == column_id:
                return c
        raise KeyError(column_id)

    @property
    def key_columns(self) -> list[Column]:
        return [self.column(k) for k in self.primary_key]

    def arrow_schema(self, names: Iterable[str] | None = None) -> pa.Schema:
        cols = self.columns if names is None else [self.column(n) for n in names]
        return pa.schema([pa.field(c.name, c.arrow_type, nullable=c.nullable) for c in cols])

    def to_json(self) -> dict:
        return {"columns": [c.to_json() for c in self.columns], "primary_key": list(self.primary_key),
                "next_column_id": self.next_column_id}

    @staticmethod
    def from_json(d: dict) -> "Schema":
        return Schema([Column.from_json(c) for c in d["columns"]], d["primary_key"], d["next_column_id"])

    def __repr__(self) -> str:
        cols = ", ".join(f"{c.name} {c.type.name}{'' if c.nullable else ' NOT NULL'} [id {c.id}]"
                         for c in self.columns)
        return f"Schema({cols}; PRIMARY KEY ({', '.join(self.primary_key)}))"
