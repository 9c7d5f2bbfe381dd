"""Scan predicates: parsing, exact evaluation and the bounds used for pruning.

A filter is a conjunction of (column, op, value) with op in =, !=, <, <=, >, >=,
in, is null, is not null. Pruning only ever uses conservative bounds; the exact
Arrow expression is always applied to the rows read, so results are exact.
"""
from __future__ import annotations

import datetime as _dt
import itertools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..format.errors import InvalidFilterError, SchemaError, UnknownScanColumnError
from ..format.keyencoder import encode_key, prefix_successor
from ..format.cfile_set import bool_array
from ..format.comparison import NOT_REPRESENTABLE, is_nan, locate, order_key, to_array, to_scalar
from ..format.schema import Column, Schema, value_from_json
from ..format.types import ColumnType

_NAN = float("nan")

_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=",
        "in": "in", "is null": "is null", "is not null": "is not null", "is_null": "is null",
        "is_not_null": "is not null"}


@dataclass(frozen=True)
class Predicate:
    """One normalized term. `value` is a domain value of the column type (`comparison.locate`),
    a tuple of them for "in". Besides the user's operators, "none" matches no row: what
    `=` with a value the type cannot hold, or `<` below its smallest value, become."""

    column: str
    op: str
    value: Any = None
    ctype: ColumnType | None = None

    @property
    def arrow_type(self) -> pa.DataType | None:
        return self.ctype.arrow() if self.ctype is not None else None

    def mask(self, table: pa.Table) -> pa.Array:
        """Boolean mask of matching rows (NULL counts as no match, as in SQL)."""
        col = table.column(self.column)
        if self.op == "is null":
            return pc.is_null(col)
        if self.op == "is not null":
            return pc.is_valid(col)
        if self.op == "none":
            return pa.array(np.zeros(len(col), dtype=bool))
        if self.ctype.kind in ("float", "double"):
            return _float_mask(col, self.op, self.value)
        if self.op == "in":
            return pc.is_in(col, value_set=to_array(self.ctype, self.value))
        return _COMPARE[self.op](col, to_scalar(self.ctype, self.value))


_COMPARE = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
            ">=": pc.greater_equal}


def _float_mask(col, op: str, v) -> pa.Array:
    """Spark's order (`comparison`): NaN = NaN, NaN above every number, -0.0 = 0.0.

    IEEE comparisons already give -0.0 = 0.0, False for NaN in =, <, <= and True for
    NaN != x; only NaN in > / >= and comparisons with a NaN value are added. float32
    compares as double (exact, as Spark's cast to double is).
    """
    if col.type != pa.float64():
        col = col.cast(pa.float64())
    if op == "in":
        # +0.0 turns -0.0 into 0.0 (IEEE), so the hash lookup sees one zero; is_in matches NaN to NaN.
        vals = pa.array([x + 0.0 for x in v], pa.float64())
        return pc.is_in(pc.add(col, pa.scalar(0.0)), value_set=vals)
    nan = pc.is_nan(col)
    if is_nan(v):
        if op in ("=", ">="):
            return nan
        if op in ("!=", "<"):
            return pc.invert(nan)
        if op == "<=":
            return pc.is_valid(col)
        return pa.array(np.zeros(len(col), dtype=bool))          # > NaN
    m = _COMPARE[op](col, pa.scalar(v, pa.float64()))
    return pc.or_(m, nan) if op in (">", ">=") else m


def _normalize(name: str, ctype: ColumnType, op: str, value: Any) -> Predicate:
    """One comparison with the value placed exactly in the column's domain (never rounded)."""
    what = f"filter on {name!r}"
    if op == "in":
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise InvalidFilterError(f"'in' needs a list of values, got {value!r}")
        keep: dict = {}
        for v in value:
            if v is None or (isinstance(v, pa.Scalar) and not v.is_valid):
                continue          # x IN (..., NULL) is never true through the NULL
            exact = locate(ctype, v, what)[0]
            if exact is not NOT_REPRESENTABLE:
                keep.setdefault(order_key(exact), exact)
        vals = tuple(keep[k] for k in sorted(keep))
        return Predicate(name, "in", vals, ctype) if vals else Predicate(name, "none", None, ctype)
    if value is None or (isinstance(value, pa.Scalar) and not value.is_valid):
        raise InvalidFilterError(f"compare with None is never true; use (\"{name}\", \"is null\")")
    exact, below, above = locate(ctype, value, what)
    if is_nan(exact):
        # NaN is the largest double: >= NaN is = NaN and > NaN nothing (a point for the bounds).
        if op == ">=":
            return Predicate(name, "=", exact, ctype)
        if op == ">":
            return Predicate(name, "none", None, ctype)
        return Predicate(name, op, exact, ctype)
    # On int and decimal columns `locate` puts NaN and +inf above every value, as Spark orders them.
    if exact is not NOT_REPRESENTABLE:
        return Predicate(name, op, exact, ctype)
    if op == "=":
        return Predicate(name, "none", None, ctype)
    if op == "!=":
        return Predicate(name, "is not null", None, ctype)
    if op in ("<", "<="):
        return Predicate(name, "<=", below, ctype) if below is not None else Predicate(name, "none", None, ctype)
    return Predicate(name, ">=", above, ctype) if above is not None else Predicate(name, "none", None, ctype)


def parse_filter(schema: Schema, flt: Any) -> list[Predicate]:
    """Accept None, one (col, op[, value]) tuple, or a list of them (ANDed)."""
    if flt is None:
        return []
    if isinstance(flt, tuple):
        flt = [flt]
    if not isinstance(flt, list):
        raise InvalidFilterError("filter must be a (column, op, value) tuple or a list of them, "
                                 f"got {type(flt).__name__}")
    out = []
    for p in flt:
        if not isinstance(p, (tuple, list)) or len(p) not in (2, 3):
            raise InvalidFilterError(f"filter term {p!r} must be (column, op, value) or (column, 'is null')")
        name, op = p[0], p[1]
        if not isinstance(name, str) or not schema.has_column(name):
            raise UnknownScanColumnError(f"filter names unknown column {name!r}; columns are {schema.names}")
        key = op.strip().lower() if isinstance(op, str) else op
        if not isinstance(key, str) or key not in _OPS:
            raise InvalidFilterError(f"unknown filter operator {op!r}; use one of {sorted(set(_OPS.values()))}")
        op = _OPS[key]
        col = schema.column(name)
        if op in ("is null", "is not null"):
            out.append(Predicate(name, op, None, col.type))
            continue
        if len(p) != 3:
            raise InvalidFilterError(f"filter term {p!r} needs a value")
        try:
            out.append(_normalize(name, col.type, op, p[2]))
        except SchemaError as e:
            raise InvalidFilterError(str(e)) from None
    return out


def filter_table(table: pa.Table, preds: Sequence[Predicate], live=None) -> pa.Table:
    """Rows of `table` matching every predicate (and `live`, a bool mask), by whole-column compute."""
    if not preds or table.num_rows == 0:
        return table if live is None else table.filter(bool_array(live))
    mask = None if live is None else bool_array(live)
    for p in preds:
        m = p.mask(table)
        mask = m if mask is None else pc.and_kleene(mask, m)
    return table.filter(mask, null_selection_behavior="drop")


@dataclass
class Bounds:
    """What the predicates say about one column, for pruning. Values are domain values
    (`comparison`), ordered by `order_key` (NaN above every number)."""

    values: tuple | None = None    # from = and IN: the only possible values
    lo: Any = None
    lo_incl: bool = True
    hi: Any = None
    hi_incl: bool = True
    is_null: bool = False
    not_null: bool = False
    empty: bool = False

    def lower(self):
        if self.values is not None:
            return min(self.values, key=order_key) if self.values else None
        return self.lo

    def upper(self):
        if self.values is not None:
            return (max(self.values, key=order_key), True) if self.values else (None, True)
        return self.hi, self.hi_incl

    def admits(self, v) -> bool:
        """Is the domain value v within [lo, hi]? (NaN is the largest float.)"""
        k = order_key(v)
        return ((self.lo is None or k > order_key(self.lo) or (self.lo_incl and k == order_key(self.lo)))
                and (self.hi is None or k < order_key(self.hi) or (self.hi_incl and k == order_key(self.hi))))


def column_bounds(preds: Sequence[Predicate]) -> dict[str, Bounds]:
    out: dict[str, Bounds] = {}
    for p in preds:
        b = out.setdefault(p.column, Bounds())
        if p.op in ("=", "in"):
            vals = {order_key(v): v for v in ((p.value,) if p.op == "=" else p.value)}
            b.values = tuple(vals[k] for k in sorted(vals)) if b.values is None else \
                tuple(v for v in b.values if order_key(v) in vals)
        elif p.op in (">", ">="):
            k = order_key(p.value)
            if b.lo is None or k > order_key(b.lo) or (k == order_key(b.lo) and p.op == ">"):
                b.lo, b.lo_incl = p.value, p.op == ">="
        elif p.op in ("<", "<="):
            k = order_key(p.value)
            if b.hi is None or k < order_key(b.hi) or (k == order_key(b.hi) and p.op == "<"):
                b.hi, b.hi_incl = p.value, p.op == "<="
        elif p.op == "none":
            b.empty = True
        elif p.op == "is null":
            b.is_null = True
        elif p.op == "is not null":
            b.not_null = True
    for b in out.values():
        if b.empty:
            continue
        if b.values is not None:
            b.values = tuple(v for v in b.values if b.admits(v))
            b.empty = not b.values
        elif b.lo is not None and b.hi is not None:
            lo, hi = order_key(b.lo), order_key(b.hi)
            b.empty = lo > hi or (lo == hi and not (b.lo_incl and b.hi_incl))
        if b.is_null and (b.not_null or b.values is not None or b.lo is not None or b.hi is not None):
            b.empty = True
    return out


def key_range(cols: Sequence[Column], bounds: dict[str, Bounds]) -> tuple[bytes | None, bytes | None]:
    """Conservative encoded-key interval [lower, upper) implied by predicates on key columns.

    Equality on a prefix of the columns, then a range on the next one, as Kudu's
    scan spec does. None means unbounded.
    """
    prefix: list = []
    types = [c.type for c in cols]
    n = len(cols)
    for i, c in enumerate(cols):
        b = bounds.get(c.name)
        if b is not None and b.values is not None and len(b.values) == 1:
            prefix.append(b.values[0])
            continue
        lo = b.lower() if b is not None else None
        hi, hi_incl = b.upper() if b is not None else (None, True)
        terminal = i == n - 1
        if lo is None and hi is None:
            break
        lower = encode_key(prefix + [lo], types[: i + 1], terminal) if lo is not None else \
            (encode_key(prefix, types[:i], False) if prefix else None)
        if hi is not None:
            e = encode_key(prefix + [hi], types[: i + 1], terminal)
            upper = prefix_successor(e) if hi_incl else e
        else:
            upper = prefix_successor(encode_key(prefix, types[:i], False)) if prefix else None
        return lower, upper
    else:
        k = encode_key(prefix, types, True)
        return k, k + b"\x00"
    if not prefix:
        return None, None
    p = encode_key(prefix, types[: len(prefix)], False)
    return p, prefix_successor(p)


def stat_value(ctype: ColumnType, v: Any) -> Any:
    """A min/max statistic from the log as a domain value (dates may be ISO text or int days)."""
    k = ctype.kind
    if k == "date":
        return v if isinstance(v, int) else (_dt.date.fromisoformat(v) - _dt.date(1970, 1, 1)).days
    if k == "unixtime_micros":
        return int(v)
    if k in ("float", "double"):
        return float(v)
    return value_from_json(ctype, v)


def stats_may_match(col: Column, stats: dict | None, num_rows: int, b: Bounds) -> bool:
    """Can a rowset with these column statistics hold a row matching the bounds?

    A rowset's values lie in [min, max], and for floats also at NaN: float min/max
    exclude NaN and `nan` counts the NaNs. Files written before `nan` was recorded may
    hold NaN (and a NaN min/max says nothing about the numbers).
    """
    if b.empty:
        return False
    if not stats:
        return True
    nulls = stats.get("nulls", 0)
    if b.is_null:
        return nulls > 0
    if nulls >= num_rows and (b.not_null or b.values is not None or b.lo is not None or b.hi is not None):
        return False
    pieces = _stat_pieces(col, stats)
    if not pieces:
        return True
    if b.values is not None:
        return any(lo <= order_key(v) <= hi for v in b.values for lo, hi in pieces)
    return any(_overlaps(lo, hi, b) for lo, hi in pieces)


def _stat_pieces(col: Column, stats: dict) -> list[tuple] | None:
    """The order_key intervals a rowset's non-NULL values lie in; None or [] when unknown."""
    lo = hi = None
    if "min" in stats:
        lo, hi = stat_value(col.type, stats["min"]), stat_value(col.type, stats["max"])
    if col.type.kind not in ("float", "double"):
        return None if lo is None else [(order_key(lo), order_key(hi))]
    if is_nan(lo) or is_nan(hi):
        lo = hi = None
    nan = stats.get("nan")
    if nan is None and lo is None:          # older file: nothing known about its numbers
        return None
    pieces = [] if lo is None else [(order_key(lo), order_key(hi))]
    if nan is None or nan > 0:
        pieces.append((order_key(_NAN), order_key(_NAN)))
    return pieces


def _overlaps(lo, hi, b: Bounds) -> bool:
    if b.lo is not None and (hi < order_key(b.lo) or (hi == order_key(b.lo) and not b.lo_incl)):
        return False
    if b.hi is not None and (lo > order_key(b.hi) or (lo == order_key(b.hi) and not b.hi_incl)):
        return False
    return True


def hash_values(bounds: dict[str, Bounds], cols: Sequence[Column], limit: int = 4096) -> pa.Table | None:
    """All value combinations of `cols` allowed by =/IN predicates, or None if unconstrained."""
    vals = []
    for c in cols:
        b = bounds.get(c.name)
        if b is None or b.values is None:
            return None
        vals.append(b.values)
    total = 1
    for v in vals:
        total *= len(v)
    if total > limit:
        return None
    combos = list(itertools.product(*vals))
    return pa.table({c.name: to_array(c.type, [x[i] for x in combos]) for i, c in enumerate(cols)})
