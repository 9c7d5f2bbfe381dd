"""Typed values from command-line text and YAML/JSON scalars, and version selectors.

unixtime_micros is integer microseconds or an ISO-8601 date-time (UTC unless
it has an offset), date is YYYY-MM-DD, decimal a number or a string, binary
UTF-8 text. --as-of, --start and --end take a version number,
`ts:<microseconds>` or an ISO date-time. Ranges, precision and lengths are
left to the table, which checks them with its own typed errors.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import decimal as _decimal
import re
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import tableformat as tf

from ..format.errors import PartitionSchemaError
from ..format.types import ColumnType

_INT_KINDS = ("int8", "int16", "int32", "int64")
_BOOLS = {"true": True, "t": True, "yes": True, "1": True, "false": False, "f": False, "no": False, "0": False}


def parse_datetime(text: str) -> _dt.datetime:
    """ISO-8601, `Z` allowed; naive values are UTC."""
    s = text.strip()
    if s[-1:] in ("Z", "z"):
        s = s[:-1] + "+00:00"
    d = _dt.datetime.fromisoformat(s)
    return d if d.tzinfo is not None else d.replace(tzinfo=_dt.timezone.utc)


TIME_TYPE = pa.timestamp("us", tz="UTC")
_ZONED = r"(?:[Zz]|\d\d:\d\d(?::\d\d(?:\.\d*)?)?[+-]\d\d(?::?\d\d)?)$"    # Z, or an offset after a time


def parse_times(arr: pa.Array) -> pa.Array:
    """unixtime_micros cells, whole column at once: integers are microseconds since the epoch, text is
    integer microseconds or ISO-8601 (UTC unless it has an offset; a date alone is midnight UTC).
    The one parser of time values for `--key`, filters and every input file (CSV, JSON Lines,
    Parquet); ValueError names the first cell it cannot read."""
    t = arr.type
    if t == TIME_TYPE or pa.types.is_null(t):
        return arr.cast(TIME_TYPE)
    if pa.types.is_integer(t):
        return arr.cast(pa.int64()).cast(TIME_TYPE)
    if pa.types.is_timestamp(t):          # naive timestamps are UTC
        return arr.cast(pa.timestamp("us", tz=t.tz)).cast(pa.int64()).cast(TIME_TYPE)
    if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
        raise ValueError(f"expected integer microseconds or ISO-8601 date-times, got a column of {t}")
    s = pc.utf8_trim_whitespace(arr.cast(pa.string()))
    digits = pc.match_substring_regex(s, r"^-?\d+$")
    zoned = pc.and_not(pc.match_substring_regex(s, _ZONED), digits)
    naive = pc.and_not(pc.and_not(pc.is_valid(s), digits), zoned)
    null = pa.scalar(None, pa.string())
    parts = []
    for mask, target in ((digits, pa.int64()), (zoned, TIME_TYPE), (naive, pa.timestamp("us"))):
        text = {pa.int64(): s, TIME_TYPE: pc.replace_substring_regex(s, "z$", "Z"),
                pa.timestamp("us"): pc.replace_substring_regex(s, r"^(\d{4}-\d\d-\d\d)$", r"\1T00:00:00")}[target]
        sub = pc.if_else(mask, text, null)
        try:
            parts.append(sub.cast(target).cast(pa.int64()) if target != pa.int64() else sub.cast(target))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            bad = next(v for v, w in zip(pc.filter(s, mask).to_pylist(), pc.filter(text, mask).to_pylist())
                       if not _casts(w, target))
            raise ValueError(f"{bad!r} is not a time: expected integer microseconds or an ISO-8601 date-time "
                             "(UTC unless it has an offset)") from None
    return pc.coalesce(*parts).cast(TIME_TYPE)


def _casts(v: str, target: pa.DataType) -> bool:
    try:
        pa.array([v]).cast(target)
        return True
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False


def to_value(ctype: ColumnType, v: Any) -> Any:
    """A Python value of the column type; ValueError or TypeError when `v` cannot be one."""
    k = ctype.kind
    if v is None:
        return None
    if k in ("string", "varchar"):
        if isinstance(v, str):
            return v
        raise ValueError(f"expected text, got {type(v).__name__} {v!r} (quote it)")
    if k == "binary":
        if isinstance(v, (bytes, bytearray)):
            return bytes(v)
        if isinstance(v, str):
            return v.encode("utf-8")
        raise ValueError(f"expected text, got {v!r}")
    if isinstance(v, str):
        v = v.strip()
    if k == "bool":
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v.lower() in _BOOLS:
            return _BOOLS[v.lower()]
        raise ValueError(f"expected true or false, got {v!r}")
    if isinstance(v, bool):
        raise TypeError(f"expected a {ctype.name}, got the boolean {v!r}")
    if k in _INT_KINDS:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, (int, str)):
            return int(v)
        raise ValueError(f"expected an integer, got {v!r}")
    if k in ("float", "double"):
        if isinstance(v, (int, float, str)):
            return float(v)
        raise ValueError(f"expected a number, got {v!r}")
    if k == "decimal":
        if isinstance(v, (int, float, str, _decimal.Decimal)):
            with contextlib.suppress(_decimal.InvalidOperation):
                return _decimal.Decimal(str(v))
        raise ValueError(f"expected a decimal number, got {v!r}")
    if k == "date":
        return _to_date(v)
    if k == "unixtime_micros":
        return _to_time(v)
    raise ValueError(f"values of type {ctype.name} are not supported here")


def _to_date(v: Any) -> _dt.date:
    """A date from a date, the date part of a date-time, or YYYY-MM-DD."""
    if isinstance(v, _dt.datetime):
        return v.date()
    if isinstance(v, _dt.date):
        return v
    if isinstance(v, str):
        return _dt.date.fromisoformat(v)
    raise ValueError(f"expected a date YYYY-MM-DD, got {v!r}")


def _to_time(v: Any) -> int | _dt.datetime:
    """Integer microseconds, or an aware date-time (UTC unless it has an offset) the table converts."""
    if isinstance(v, int):
        return v
    if isinstance(v, _dt.datetime):
        return v if v.tzinfo is not None else v.replace(tzinfo=_dt.timezone.utc)
    if isinstance(v, _dt.date):
        return _dt.datetime(v.year, v.month, v.day, tzinfo=_dt.timezone.utc)
    if isinstance(v, str) and re.fullmatch(r"[+-]?\d+", v):
        return int(v)       # any size: the engine places it (filters) or refuses it, naming the column
    if isinstance(v, str):
        return parse_times(pa.array([v])).cast(pa.int64())[0].as_py()
    raise ValueError(f"expected microseconds or an ISO date-time, got {v!r}")


def typed(ctype: ColumnType, v: Any, what: str, error: type) -> Any:
    """`to_value`, failing with the typed error of the context (filter, schema, partition)."""
    try:
        return to_value(ctype, v)
    except (ValueError, TypeError) as e:
        raise error(f"{what}: {v!r} is not a valid {ctype.name}: {e}") from None


def typed_bound(columns: Sequence[tf.Column], values: Sequence, what: str) -> Any:
    """A range bound, one value per range column: a bare value when there is one column, else a tuple."""
    vals = tuple(typed(c.type, v, f"{what} for {c.name!r}", PartitionSchemaError) for c, v in zip(columns, values))
    return vals[0] if len(vals) == 1 else vals


def parse_as_of(text: str | None, what: str = "--as-of") -> Any:
    """A version (int), `ts:<micros>` (a tf.Timestamp), an ISO date-time or a tag name: the engine's parser."""
    return tf.parse_as_of(text, what, tags=True)