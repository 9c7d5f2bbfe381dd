"""Exact comparison of user values with column values: the one place filter values are coerced.

Every user value (a filter's, a default's, a range partition bound's) is placed
in the column type's domain by `locate`: the value itself when the type holds it
exactly, else the nearest values of the type below and above it. Nothing is
rounded or truncated silently. Values of the wrong kind (a string for an int
column, a float for a date column) raise SchemaError.

Domain values are plain Python values that order like the column: int for the
integer kinds, int days for `date`, int microseconds for `unixtime_micros` (so
every int32 date and int64 timestamp is representable, past year 9999 too),
Decimal for decimals, float for `float`/`double` (compared as doubles), str,
bytes, bool. Floating point follows Spark: NaN equals NaN and is greater than
every number (+inf too), -0.0 equals 0.0; `order_key` is that order. `locate`
places NaN and +inf above every int and decimal. See `specs/format.md` §13.
"""
from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import math
from typing import Any

import numpy as np
import pyarrow as pa

from .errors import SchemaError
from .types import ColumnType

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_CTX = _decimal.Context(prec=200, Emax=10**6, Emin=-10**6)
_NAN = float("nan")


class _Outside:
    """Marker: the value is not a value of the type (it lies between two of them, or beyond all)."""

    def __repr__(self) -> str:
        return "NOT_REPRESENTABLE"


NOT_REPRESENTABLE = _Outside()


def is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


def order_key(v: Any) -> tuple:
    """Sort and dedup key of a domain value in Spark's order: NaN equal to itself and above every number."""
    return (1, 0.0) if is_nan(v) else (0, v)


def _wrong(ctype: ColumnType, value: Any, what: str, why: str = "") -> SchemaError:
    return SchemaError(f"{what}: {value!r} ({type(value).__name__}) is not a valid {ctype.name}"
                       f"{'; ' + why if why else ''}")


def _number(value: Any):
    """A Python int, float or Decimal for numeric input, or None for anything else."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, _decimal.Decimal):
        if value.is_nan():
            return _NAN
        if value.is_infinite():
            return math.inf if value > 0 else -math.inf
        return value
    return None


def _integral(x, lo: int, hi: int):
    """(exact, below, above) of a number x in the integers [lo, hi]."""
    if is_nan(x) or x == math.inf:
        return NOT_REPRESENTABLE, hi, None      # NaN and +inf sit above every integer
    if x == -math.inf:
        return NOT_REPRESENTABLE, None, lo
    if isinstance(x, int):
        f = c = x
    elif isinstance(x, float):
        f, c = math.floor(x), math.ceil(x)
    else:
        f = int(x.to_integral_value(rounding=_decimal.ROUND_FLOOR, context=_CTX))
        c = int(x.to_integral_value(rounding=_decimal.ROUND_CEILING, context=_CTX))
    below = min(f, hi) if f >= lo else None
    above = max(c, lo) if c <= hi else None
    exact = f if f == c and lo <= f <= hi else NOT_REPRESENTABLE
    return exact, below, above


def _as_double(x):
    """(exact, below, above) of a number among the IEEE doubles (with NaN, Spark's order)."""
    if isinstance(x, float):
        return x, x, x
    try:
        f = float(x)
    except OverflowError:
        f = math.inf if x > 0 else -math.inf
    if f == x:
        return f, f, f
    if f > x:
        return NOT_REPRESENTABLE, math.nextafter(f, -math.inf), f
    return NOT_REPRESENTABLE, f, math.nextafter(f, math.inf)


def _as_decimal(ctype: ColumnType, x):
    p, s = ctype.precision, ctype.scale
    top = _decimal.Decimal((0, (9,) * p, -s))
    if is_nan(x) or x == math.inf:
        return NOT_REPRESENTABLE, top, None
    if x == -math.inf:
        return NOT_REPRESENTABLE, None, -top
    d = _decimal.Decimal(x) if not isinstance(x, _decimal.Decimal) else x
    if d > top:                               # beyond the type: above (below) every value it holds
        return NOT_REPRESENTABLE, top, None
    if d < -top:
        return NOT_REPRESENTABLE, None, -top
    quantum = _decimal.Decimal(1).scaleb(-s)
    f = d.quantize(quantum, rounding=_decimal.ROUND_FLOOR, context=_CTX)
    c = d.quantize(quantum, rounding=_decimal.ROUND_CEILING, context=_CTX)
    below = min(f, top) if f >= -top else None
    above = max(c, -top) if c <= top else None
    exact = f if f == c == d and -top <= f <= top else NOT_REPRESENTABLE
    return exact, below, above


def _micros(dt: _dt.datetime) -> tuple[int, bool]:
    """Microseconds since the epoch (naive = UTC), and whether that is exact (no nanoseconds lost)."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=_dt.timezone.utc)
    delta = dt - _EPOCH
    us = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    return us, not getattr(dt, "nanosecond", 0)


def _scalar_raw(value: pa.Scalar, ctype: ColumnType):
    """A pyarrow scalar as a domain-compatible Python value, without converting to datetime."""
    if not value.is_valid:
        return None
    if pa.types.is_date32(value.type) or pa.types.is_date64(value.type):
        return ("days", value.cast(pa.date32()).cast(pa.int32()).as_py())
    if pa.types.is_timestamp(value.type):
        return ("micros", value.cast(pa.timestamp("us", tz=value.type.tz)).cast(pa.int64()).as_py()) \
            if value.type.unit in ("s", "ms", "us") else ("nanos", value.cast(pa.int64()).as_py())
    return value.as_py()


def locate(ctype: ColumnType, value: Any, what: str = "value"):
    """(exact, below, above): `value` as a domain value of `ctype` (NOT_REPRESENTABLE when the type has
    no such value), the largest domain value <= it and the smallest >= it (None when there is none).

    Raises SchemaError for a value of the wrong kind. `value` must not be None.
    """
    k = ctype.kind
    if isinstance(value, _dt.datetime) and value != value:      # pandas NaT: a NULL, not a time
        raise _wrong(ctype, value, what, "it is NULL (NaT)")
    if isinstance(value, pa.Scalar):
        value = _scalar_raw(value, ctype)
        if value is None:
            raise _wrong(ctype, value, what, "it is NULL")
        if isinstance(value, tuple):
            return _locate_arrow_time(ctype, value, what)
    if k == "bool":
        if isinstance(value, (bool, np.bool_)):
            return bool(value), bool(value), bool(value)
        raise _wrong(ctype, value, what, "use True or False")
    if k in ("int8", "int16", "int32", "int64", "float", "double", "decimal"):
        return _locate_number(ctype, value, what)
    if k == "date":
        return _locate_date(ctype, value, what)
    if k == "unixtime_micros":
        return _locate_time(ctype, value, what)
    if k in ("string", "varchar", "binary"):
        return _locate_text(ctype, value, what)
    raise _wrong(ctype, value, what)


def _locate_arrow_time(ctype: ColumnType, value: tuple, what: str):
    """An Arrow date or timestamp scalar, as its (unit, count): only the column's own kind of time fits."""
    k = ctype.kind
    unit, n = value
    if k == "date" and unit == "days":
        return n, n, n
    if k == "unixtime_micros" and unit == "micros":
        return _integral(n, -2**63, 2**63 - 1)
    if k == "unixtime_micros" and unit == "nanos":
        return _integral(_decimal.Decimal(n) / 1000, -2**63, 2**63 - 1)
    raise _wrong(ctype, value, what)


def _locate_number(ctype: ColumnType, value: Any, what: str):
    """An integer, floating point or decimal column: the number placed in the type's range and precision."""
    k = ctype.kind
    if k in ("int8", "int16", "int32", "int64"):
        x = _number(value)
        if x is None:
            raise _wrong(ctype, value, what, "use a number")
        bits = 8 * ctype.key_width
        return _integral(x, -2 ** (bits - 1), 2 ** (bits - 1) - 1)
    if k in ("float", "double"):
        x = _number(value)
        if x is None:
            raise _wrong(ctype, value, what, "use a number")
        return _as_double(x)
    x = _number(value)
    if x is None and isinstance(value, str):
        try:
            x = _number(_decimal.Decimal(value.strip()))
        except _decimal.InvalidOperation:
            x = None
    if x is None:
        raise _wrong(ctype, value, what, "use a number or a decimal.Decimal")
    return _as_decimal(ctype, x)


def _locate_date(ctype: ColumnType, value: Any, what: str):
    """A date column: a date is exact; a date-time past midnight lies between two dates."""
    if isinstance(value, _dt.datetime):
        us, exact = _micros(value)
        days, rest = divmod(us, 86_400_000_000)
        if rest == 0 and exact:
            return _integral(days, -2**31, 2**31 - 1)
        # strictly inside day `days` (a time of day, or nanoseconds past midnight): between two dates
        return _integral(_decimal.Decimal(days) + _decimal.Decimal("0.5"), -2**31, 2**31 - 1)
    if isinstance(value, _dt.date):
        n = (value - _EPOCH_DATE).days
        return n, n, n
    raise _wrong(ctype, value, what, "use a datetime.date")


def _locate_time(ctype: ColumnType, value: Any, what: str):
    """A unixtime_micros column: a date-time (nanoseconds fall between two micros) or integer micros."""
    if isinstance(value, _dt.datetime):
        us, exact = _micros(value)
        if exact:
            return us, us, us
        return NOT_REPRESENTABLE, us, us + 1 if us < 2**63 - 1 else None
    x = _number(value)
    if x is None or isinstance(value, (float, np.floating, _decimal.Decimal)):
        raise _wrong(ctype, value, what, "use a datetime or integer microseconds since the epoch")
    return _integral(x, -2**63, 2**63 - 1)


def _locate_text(ctype: ColumnType, value: Any, what: str):
    """A string (valid UTF-8 only) or binary column: the value itself."""
    if ctype.kind in ("string", "varchar"):
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise _wrong(ctype, value, what, "it is not valid UTF-8") from None
            return value, value, value
        raise _wrong(ctype, value, what, "use a str")
    if isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value)
        return b, b, b
    raise _wrong(ctype, value, what, "use bytes")


def exact_value(ctype: ColumnType, value: Any, what: str) -> Any:
    """The domain value equal to `value`, or SchemaError: for defaults and partition bounds."""
    exact, _, _ = locate(ctype, value, what)
    if exact is NOT_REPRESENTABLE:
        raise SchemaError(f"{what}: {value!r} is not a valid {ctype.name}: the type has no such value "
                          "(it would be rounded, truncated or clamped); give an exact value")
    return exact


def to_scalar(ctype: ColumnType, v: Any) -> pa.Scalar:
    """A domain value as an Arrow scalar of the column type (never via datetime objects)."""
    return pa.scalar(v, ctype.arrow())


def to_array(ctype: ColumnType, values) -> pa.Array:
    return pa.array(list(values), ctype.arrow())


def to_python(ctype: ColumnType, v: Any) -> Any:
    """A domain value as the Python value Arrow gives for the type, when Python can hold it."""
    if v is None or ctype.kind not in ("date", "unixtime_micros"):
        return v
    try:
        return to_scalar(ctype, v).as_py()
    except (OverflowError, ValueError):
        return v
