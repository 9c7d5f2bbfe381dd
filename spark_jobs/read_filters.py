"""Filters for Spark: the engine's normalized filter terms as one exact Spark condition.

The engine has already placed each value in its column's domain (specs/format.md §13); the
terms here compare as the engine does, with literals of the column's own type, and values
Python's datetime cannot hold compared as numbers (Spark hands a pushed-down value to a Python
data source as a datetime).
"""
from __future__ import annotations

from .snapshots import spark_type


def quoted(name: str) -> str:
    """A column name as a quoted SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def column(name: str):
    """A Spark column by its name, quoted (names may hold any character)."""
    from pyspark.sql import functions as F
    return F.col("`" + name.replace("`", "``") + "`")


# Spark hands a pushed-down filter's value to a Python data source as a Python date or datetime:
# beyond these (with a day's margin for the session time zone) it cannot, and the query fails
_PY_MICROS = (-62_135_596_800_000_000 + 86_400_000_000, 253_402_300_799_999_999 - 86_400_000_000)
_PY_DAYS = (-719_162, 2_932_896)


def literal(ctype, value):
    """A domain value (`Scanner.predicates`: int, int days, int microseconds, Decimal, float, str,
    bytes, bool) as a Spark literal of the column's own type: comparisons then never cast the
    column (a bigint compared with a double is rounded) and every value fits."""
    from pyspark.sql import functions as F
    k = ctype.kind
    if k == "unixtime_micros":
        return F.timestamp_micros(F.lit(int(value)))
    if k == "date":
        return F.date_from_unix_date(F.lit(int(value)))
    if k == "decimal":
        return F.lit(format(value, "f")).cast(spark_type(ctype))
    if k in ("int8", "int16", "int32", "int64"):
        return F.lit(int(value)).cast(spark_type(ctype))
    if k in ("float", "double"):
        return F.lit(float(value))                  # a double: a float32 column is compared as double
    if k == "binary":
        return F.lit(bytearray(value))
    return F.lit(value)


def _beyond_python(ctype, value) -> bool:
    """A timestamp or date Python's datetime cannot hold: compared as a number (unix_micros,
    unix_date), which Spark does not push down, so the value never has to become a datetime."""
    lo, hi = _PY_MICROS if ctype.kind == "unixtime_micros" else _PY_DAYS if ctype.kind == "date" else (None, None)
    return lo is not None and not lo <= value <= hi


def _operands(c, ctype, value):
    """(column side, value side) of one comparison, exact (`literal`, `_beyond_python`)."""
    from pyspark.sql import functions as F
    if _beyond_python(ctype, value):
        return (F.unix_micros(c) if ctype.kind == "unixtime_micros" else F.unix_date(c)), F.lit(int(value))
    return c, literal(ctype, value)


def _in(c, ctype, values):
    """`in`: members Python can hold as one isin (pushed down), the others compared as numbers."""
    from pyspark.sql import functions as F
    far = [v for v in values if _beyond_python(ctype, v)]
    near = [literal(ctype, v) for v in values if not _beyond_python(ctype, v)]
    e = c.isin(*near) if near else None
    if far:
        col = F.unix_micros(c) if ctype.kind == "unixtime_micros" else F.unix_date(c)
        e2 = col.isin(*[F.lit(int(v)) for v in far])
        e = e2 if e is None else e | e2
    return e


def _float_term(c, op: str, v):
    """A normalized term on a float column. Parquet statistics leave NaN out, so a pushed-down
    `>`, `>=` or `!=` could skip a row group holding only matching NaN rows: those terms are
    written so Spark keeps them out of the scan (`OR isnan`); NaN values become isnan; `in`
    is one `=` per member (-0.0 = 0.0 by comparison, not by a hash set)."""
    from pyspark.sql import functions as F
    nan = F.isnan(c)
    if op == "in":
        e = None
        for x in v:
            m = nan if x != x else c == _literal_double(x)
            e = m if e is None else e | m
        return e
    if v != v:          # the engine left =, !=, <, <= with NaN (>= is = NaN, > is none)
        return {"=": nan, "!=": c.isNotNull() & ~nan, "<": c.isNotNull() & ~nan, "<=": c.isNotNull()}[op]
    lit = _literal_double(v)
    if op in (">", ">=", "!="):
        return ((c > lit) if op == ">" else (c >= lit) if op == ">=" else (c != lit)) | nan
    return {"=": c == lit, "<": c < lit, "<=": c <= lit}[op]


def _literal_double(v):
    from pyspark.sql import functions as F
    return F.lit(float(v) + 0.0)


def spark_filter(predicates: list):
    """The engine's normalized filter terms (`Scanner.predicates`: each value already placed in
    the column's domain by the engine, §13, so nothing is left to round) as one Spark
    condition. Spark compares as the engine does (NULL matches nothing; NaN = NaN and above
    every number; -0.0 = 0.0), specs/format.md §13."""
    from pyspark.sql import functions as F
    cond = None
    for p in predicates:
        c, op = column(p.column), p.op
        if op == "is null":
            e = c.isNull()
        elif op == "is not null":
            e = c.isNotNull()
        elif op == "none":
            e = F.lit(False)
        elif p.ctype.kind in ("float", "double"):
            e = _float_term(c, op, p.value)
        elif op == "in":
            e = _in(c, p.ctype, p.value)
        else:
            c, v = _operands(c, p.ctype, p.value)
            e = {"=": c == v, "!=": c != v, "<": c < v, "<=": c <= v, ">": c > v, ">=": c >= v}[op]
        cond = e if cond is None else cond & e
    return cond
