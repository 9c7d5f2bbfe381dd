"""Scan predicates: parsing, exact evaluation and the bounds used for pruning.

A filter is a conjunction of (column, op, value) with op in =, !=, <, <=, >, >=,
in, is null, is not null. Pruning only ever uses conservative bounds; the exact
Arrow expression is always applied to the rows read, so results are exact.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from .errors import InvalidFilterError, SchemaError, UnknownScanColumnError
from .keyencoder import encode_key, prefix_successor
from .schema import Column, Schema, coerce_scalar, value_from_json

_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=",
        "in": "in", "is null": "is null", "is not null": "is not null", "is_null": "is null",
        "is_not_null": "is not null"}


@dataclass(frozen=True)
class Predicate:
    column: str
    op: str
    value: Any = None   # a Python value of the column's type, a tuple for "in"

    arrow_type: pa.DataType | None = None

    def mask(self, table: pa.Table) -> pa.Array:
        """Boolean mask of matching rows (NULL counts as no match, as in SQL)."""
        col = table.column(self.column)
        if self.op == "is null":
            return pc.is_null(col)
        if self.op == "is not null":
            return pc.is_valid(col)
        if self.op == "in":
            return pc.is_in(col, value_set=pa.array(list(self.value), self.arrow_type))
        v = pa.scalar(self.value, self.arrow_type)
        return _COMPARE[self.op](col, v)


_COMPARE = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
            ">=": pc.greater_equal}


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
        if key not in _OPS:
            raise InvalidFilterError(f"unknown filter operator {op!r}; use one of {sorted(set(_OPS.values()))}")
        op = _OPS[key]
        col = schema.column(name)
        if op in ("is null", "is not null"):
            out.append(Predicate(name, op, None, col.arrow_type))
            continue
        if len(p) != 3:
            raise InvalidFilterError(f"filter term {p!r} needs a value")
        try:
            if op == "in":
                if isinstance(p[2], (str, bytes)) or not hasattr(p[2], "__iter__"):
                    raise InvalidFilterError(f"'in' needs a list of values, got {p[2]!r}")
                vals = tuple(coerce_scalar(col.type, v, f"filter on {name!r}").as_py() for v in p[2])
                out.append(Predicate(name, op, tuple(v for v in vals if v is not None), col.arrow_type))
            else:
                if p[2] is None:
                    raise InvalidFilterError(f"compare with None is never true; use (\"{name}\", \"is null\")")
                v = coerce_scalar(col.type, p[2], f"filter on {name!r}").as_py()
                out.append(Predicate(name, op, v, col.arrow_type))
        except SchemaError as e:
            raise InvalidFilterError(str(e)) from None
    return out


def filter_table(table: pa.Table, preds: Sequence[Predicate], live=None) -> pa.Table:
    """Rows of `table` matching every predicate (and `live`, a bool mask), by whole-column compute."""
    if not preds or table.num_rows == 0:
        return table if live is None else table.filter(pa.array(live))
    mask = None if live is None else pa.array(live)
    for p in preds:
        m = p.mask(table)
        mask = m if mask is None else pc.and_kleene(mask, m)
    return table.filter(mask, null_selection_behavior="drop")


@dataclass
class Bounds:
    """What the predicates say about one column, for pruning."""

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
            return min(self.values) if self.values else None
        return self.lo

    def upper(self):
        if self.values is not None:
            return (max(self.values), True) if self.values else (None, True)
        return self.hi, self.hi_incl


def column_bounds(preds: Sequence[Predicate]) -> dict[str, Bounds]:
    out: dict[str, Bounds] = {}
    for p in preds:
        b = out.setdefault(p.column, Bounds())
        if p.op in ("=", "in"):
            vals = (p.value,) if p.op == "=" else tuple(sorted(set(p.value)))
            b.values = vals if b.values is None else tuple(v for v in b.values if v in vals)
        elif p.op in (">", ">="):
            if b.lo is None or p.value > b.lo or (p.value == b.lo and p.op == ">"):
                b.lo, b.lo_incl = p.value, p.op == ">="
        elif p.op in ("<", "<="):
            if b.hi is None or p.value < b.hi or (p.value == b.hi and p.op == "<"):
                b.hi, b.hi_incl = p.value, p.op == "<="
        elif p.op == "is null":
            b.is_null = True
        elif p.op == "is not null":
            b.not_null = True
    for b in out.values():
        if b.values is not None:
            b.values = tuple(v for v in b.values
                             if (b.lo is None or v > b.lo or (b.lo_incl and v == b.lo))
                             and (b.hi is None or v < b.hi or (b.hi_incl and v == b.hi)))
            b.empty = not b.values
        elif b.lo is not None and b.hi is not None:
            b.empty = b.lo > b.hi or (b.lo == b.hi and not (b.lo_incl and b.hi_incl))
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


def stats_may_match(col: Column, stats: dict | None, num_rows: int, b: Bounds) -> bool:
    """Can a rowset with these column statistics hold a row matching the bounds?"""
    if b.empty:
        return False
    if not stats:
        return True
    nulls = stats.get("nulls", 0)
    if b.is_null:
        return nulls > 0
    if nulls >= num_rows and (b.not_null or b.values is not None or b.lo is not None or b.hi is not None):
        return False
    if "min" not in stats:
        return True
    lo, hi = value_from_json(col.type, stats["min"]), value_from_json(col.type, stats["max"])
    if b.values is not None:
        return any(lo <= v <= hi for v in b.values)
    if b.lo is not None and (hi < b.lo or (hi == b.lo and not b.lo_incl)):
        return False
    if b.hi is not None and (lo > b.hi or (lo == b.hi and not b.hi_incl)):
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
    return pa.table({c.name: pa.array([x[i] for x in combos], c.arrow_type) for i, c in enumerate(cols)})
