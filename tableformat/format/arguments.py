"""Validators of public arguments: a wrong type is a typed error before anything is written.

Every public entry point checks its arguments with these before it plans, writes
or commits, so a bad argument never escapes as a bare TypeError, AttributeError,
OverflowError or ValueError, and never after a first action has committed
(`specs/guarantees.md`, "Bad arguments"). Each raises `error` (InvalidOptionError
unless the caller names a more precise class) with a message that says what was
expected and what was given: `columns must be a list of column names, got int 5`.

Conventions, the same everywhere:
- a bool is never an integer or a number (`budget_bytes=True` is refused);
- numbers must be finite; integers and seconds have an upper bound, so a huge
  value is refused rather than overflowing later;
- a single string where a list of names is expected means a list of that one
  name (`columns="value"` is `columns=["value"]`), as for `primary_key` and
  partition columns; any other non-list is refused, and so is a name given twice.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Callable

from .errors import InvalidOptionError

# Seconds an option may name (retention, grace period): 100 years, far past any history.
MAX_SECONDS = 100 * 365 * 24 * 3600


def given(value: Any) -> str:
    """`int 5`, `str 'x'`, `list [1, 2]`: what a message says was given."""
    r = repr(value)
    if len(r) > 60:
        r = r[:57] + "..."
    return f"{type(value).__name__} {r}"


def _fail(error: type, what: str, expected: str, value: Any):
    raise error(f"{what} must be {expected}, got {given(value)}")


def is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and \
        type(value).__name__ != "bool_"


def integer(value: Any, what: str, lo: int | None = None, hi: int | None = None, *, none: bool = False,
            error: type = InvalidOptionError) -> int | None:
    """An integer (not a bool) in [lo, hi]; None only when `none`."""
    if value is None and none:
        return None
    bounds = f" in [{lo if lo is not None else '-inf'}, {hi if hi is not None else 'inf'}]" \
        if lo is not None or hi is not None else ""
    expected = f"an integer{bounds}" + (" or None" if none else "")
    if not is_int(value):
        _fail(error, what, expected, value)
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        _fail(error, what, expected, value)
    return v


def number(value: Any, what: str, lo: float | None = None, hi: float | None = None, *, none: bool = False,
           error: type = InvalidOptionError) -> float | int | None:
    """A finite int or float (not a bool) in [lo, hi]; None only when `none`."""
    if value is None and none:
        return None
    bounds = f" in [{lo if lo is not None else '-inf'}, {hi if hi is not None else 'inf'}]" \
        if lo is not None or hi is not None else ""
    expected = f"a finite number{bounds}" + (" or None" if none else "")
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or type(value).__name__ == "bool_":
        _fail(error, what, expected, value)
    try:
        ok = math.isfinite(value) and (lo is None or value >= lo) and (hi is None or value <= hi)
    except OverflowError:                     # an int too large for a float
        ok = False
    if not ok:
        _fail(error, what, expected, value)
    return value


def seconds(value: Any, what: str, *, none: bool = False, error: type = InvalidOptionError):
    """A duration: a finite number of seconds in [0, MAX_SECONDS]."""
    return number(value, what, 0, MAX_SECONDS, none=none, error=error)


def boolean(value: Any, what: str, *, none: bool = False, error: type = InvalidOptionError) -> bool | None:
    """True or False (a numpy bool too); never 0/1 or a string."""
    if value is None and none:
        return None
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    _fail(error, what, "True or False" + (" or None" if none else ""), value)


def string(value: Any, what: str, *, none: bool = False, error: type = InvalidOptionError) -> str | None:
    if value is None and none:
        return None
    if not isinstance(value, str):
        _fail(error, what, "a string" + (" or None" if none else ""), value)
    return value


def choice(value: Any, what: str, options, *, none: bool = False, error: type = InvalidOptionError):
    """One of `options` (strings)."""
    if value is None and none:
        return None
    if not isinstance(value, str) or value not in options:
        _fail(error, what, "one of " + ", ".join(map(repr, options)) + (" or None" if none else ""), value)
    return value


def names(value: Any, what: str, *, none: bool = True, empty: bool = True,
          error: type = InvalidOptionError) -> list[str] | None:
    """A list (or tuple) of column names; one string is a list of that one name."""
    if value is None and none:
        return None
    expected = "a list of column names" + (" or None" if none else "")
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        _fail(error, what, expected, value)
    bad = [v for v in value if not isinstance(v, str)]
    if bad:
        raise error(f"{what} must be a list of column names (strings), got {given(bad[0])} in {given(value)}")
    if not empty and not value:
        _fail(error, what, "a non-empty list of column names", value)
    if len(set(value)) != len(value):     # a name twice: which column a result's name means is ambiguous
        dups = sorted({v for v in value if value.count(v) > 1})
        raise error(f"{what} must name each column once, got {dups} more than once in {given(value)}")
    return list(value)


def sequence(value: Any, what: str, *, error: type = InvalidOptionError) -> tuple:
    """A list or tuple (not a string, a dict or an iterator that a second look would find empty)."""
    if not isinstance(value, (list, tuple)):
        _fail(error, what, "a list or tuple", value)
    return tuple(value)


def mapping(value: Any, what: str, *, none: bool = True, error: type = InvalidOptionError) -> dict | None:
    from collections.abc import Mapping
    if value is None and none:
        return None
    if not isinstance(value, Mapping):
        _fail(error, what, "a dict" + (" or None" if none else ""), value)
    return dict(value)


def instance(value: Any, what: str, cls: type | tuple, expected: str, *, none: bool = False,
             error: type = InvalidOptionError):
    """An instance of `cls`, described to the user as `expected` (e.g. "a tf.CompactionPlan")."""
    if value is None and none:
        return None
    if not isinstance(value, cls):
        _fail(error, what, expected + (" or None" if none else ""), value)
    return value


def function(value: Any, what: str, *, none: bool = False, error: type = InvalidOptionError) -> Callable | None:
    if value is None and none:
        return None
    if not callable(value):
        _fail(error, what, "a callable" + (" or None" if none else ""), value)
    return value


def has_method(value: Any, what: str, method: str, expected: str, *, none: bool = False,
               error: type = InvalidOptionError):
    """Duck typing for pluggable objects (a compaction policy has `pick`)."""
    if value is None and none:
        return None
    if not callable(getattr(value, method, None)):
        _fail(error, what, expected + (" or None" if none else ""), value)
    return value
