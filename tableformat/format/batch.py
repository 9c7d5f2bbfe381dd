"""Turning user input into a validated Arrow table of the schema's types.

Every check is whole-column, and every failure raises a typed InvalidDataError
before anything is written. Kudu's rules: keys and non-null columns have no
NULLs, cells are at most 64 KiB, varchar values are truncated to their length,
decimals must fit their precision, missing columns take their default.
"""
from __future__ import annotations

import decimal
import itertools
from collections.abc import Iterable, Mapping
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat

from .errors import (CellTooLargeError, DecimalOutOfRangeError, InvalidDataError, MissingColumnError,
                     NullValueError, TypeMismatchError, UnknownColumnError)
from .parallel import pmap
from .schema import Column, Schema
from .types import MAX_CELL_BYTES


def to_arrow_table(data: Any) -> pa.Table:
    """Accept a pyarrow Table/RecordBatch/RecordBatchReader, a pandas DataFrame, a list of dicts
    (rows) or a dict of columns: the one path every input takes, so every input gets the same
    typed errors. A value Arrow cannot hold (an int beyond 64 bits, a column mixing types) is
    a TypeMismatchError naming its column; column names must be distinct strings."""
    if isinstance(data, pa.Table):
        t = data
    elif isinstance(data, pa.RecordBatch):
        t = pa.Table.from_batches([data])
    elif isinstance(data, pa.RecordBatchReader):
        unique_names(data.schema.names)
        try:
            t = data.read_all()
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:       # a batch that breaks the stream's schema
            raise InvalidDataError(f"cannot read the RecordBatchReader: {' '.join(str(e).split())}") from None
    elif type(data).__module__.startswith("pandas") and type(data).__name__ == "DataFrame":
        t = _from_pandas(data)
    elif isinstance(data, dict):
        t = _from_columns(data)
    elif isinstance(data, list) and all(isinstance(r, dict) for r in data):
        t = _from_rows(data)
    else:
        raise InvalidDataError(f"{_INPUT_KINDS}, got {type(data).__name__}")
    unique_names(t.column_names)
    return t


_INPUT_KINDS = ("input must be a pyarrow Table, RecordBatch, RecordBatchReader, pandas DataFrame, list of dicts "
                "(rows) or dict of columns (lists)")


def unique_names(names: Sequence[Any]) -> list[str]:
    """The input's column names, each a string given once: a name given twice would match a
    column ambiguously (whichever reader looked it up would pick one, or fail untyped)."""
    names = list(names)
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise InvalidDataError(f"input column names must be strings, got {bad[0]!r} ({type(bad[0]).__name__})")
    if len(set(names)) != len(names):
        dups = sorted({n for n in names if names.count(n) > 1})
        raise InvalidDataError(f"input has duplicate column names {dups}: each column may be given once "
                               f"(columns: {names})")
    return names


# What converting Python values to Arrow raises for a value it cannot hold.
_CONVERSION_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError,
                      TypeError, ValueError)


def unconvertible(name: str, e: BaseException, target: pa.DataType | None = None) -> InvalidDataError:
    """The typed error for input column `name` whose values Arrow cannot hold (as `target`)."""
    msg = " ".join(str(e).split())
    if isinstance(e, OverflowError):
        msg = f"an integer is beyond the 64-bit range ({msg}; a decimal column takes decimal.Decimal values)"
    if target is not None and pat.is_decimal(target) and isinstance(e, (pa.ArrowInvalid, OverflowError)):
        return DecimalOutOfRangeError(f"column {name!r}: a value does not fit {target}: {msg}")
    into = f" as {target}" if target is not None else ""
    return TypeMismatchError(f"column {name!r}: a value cannot be converted to Arrow{into}: {msg}")


def python_array(name: str, values: Any, to: pa.DataType | None = None) -> pa.Array:
    """Python values (a list, a numpy array, an Arrow array) as one Arrow array, of type `to`
    when given; a value Arrow cannot hold raises `unconvertible` for column `name`."""
    if not _list_like(values):
        raise InvalidDataError(f"column {name!r} must be a list of values, got {type(values).__name__}")
    try:
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            values = one_array(values)
            return values if to is None or values.type == to else values.cast(to)
        return pa.array(values, to)
    except _CONVERSION_ERRORS as e:
        raise unconvertible(name, e, to) from None


def _list_like(values: Any) -> bool:
    """A column's values: any iterable (a list, an array, a generator), as pa.table takes them,
    or an object Arrow converts by protocol; not a string, bytes or a mapping, which iterate
    as something else."""
    if isinstance(values, (str, bytes, bytearray, memoryview, dict, Mapping)):
        return False
    return isinstance(values, Iterable) or any(hasattr(values, p) for p in _ARROW_PROTOCOLS)


_ARROW_PROTOCOLS = ("__arrow_array__", "__arrow_c_array__", "__arrow_c_stream__")


def _from_columns(data: dict) -> pa.Table:
    names = unique_names(data.keys())
    scalar = next((n for n in names if not _list_like(data[n])), None)
    if scalar is not None:
        raise InvalidDataError(f"{_INPUT_KINDS}, got a dict whose {scalar!r} is a {type(data[scalar]).__name__}, "
                               "not a list of values")
    arrays = [python_array(n, data[n]) for n in names]
    lengths = {len(a) for a in arrays}
    if len(lengths) > 1:
        raise InvalidDataError("the columns have different lengths: "
                               + ", ".join(f"{n!r}: {len(a)}" for n, a in zip(names, arrays)))
    return pa.Table.from_arrays(arrays, names=names) if names else pa.table({})


def _from_rows(rows: list[dict]) -> pa.Table:
    """Rows to columns; a key any row has is a column (NULL in the rows without it), where
    Arrow's from_pylist takes the first row's keys and drops the others' extra keys silently."""
    names = unique_names(dict.fromkeys(itertools.chain.from_iterable(rows)))   # every row's keys, in order
    return pa.Table.from_arrays([python_array(n, [r.get(n) for r in rows]) for n in names], names=names) \
        if names else pa.table({})


def _from_pandas(df) -> pa.Table:
    unique_names([c if isinstance(c, str) else str(c) for c in df.columns])   # Arrow names them str(c)
    try:
        return pa.Table.from_pandas(df, preserve_index=False)
    except _CONVERSION_ERRORS as e:
        for c in df.columns:        # name the column that failed
            try:
                pa.Array.from_pandas(df[c])
            except _CONVERSION_ERRORS as ce:
                raise unconvertible(str(c), ce) from None
        raise TypeMismatchError(f"cannot convert the DataFrame to Arrow: {' '.join(str(e).split())}") from None


def _compatible(src: pa.DataType, col: Column) -> bool:
    k = col.type.kind
    if pat.is_null(src):
        return True
    if k == "bool":
        return pat.is_boolean(src)
    if k in ("int8", "int16", "int32", "int64"):
        return pat.is_integer(src)
    if k in ("float", "double"):
        return pat.is_integer(src) or pat.is_floating(src)
    if k == "date":
        return pat.is_date(src)
    if k == "unixtime_micros":
        return pat.is_timestamp(src)
    if k == "decimal":
        return pat.is_decimal(src) or pat.is_integer(src)
    if k in ("string", "varchar"):
        return pat.is_string(src) or pat.is_large_string(src) or src == pa.string_view()
    if k == "binary":
        return pat.is_binary(src) or pat.is_large_binary(src) or pat.is_fixed_size_binary(src) \
            or src == pa.binary_view()
    return False


def one_array(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The column as one array; a single chunk as it is (combine_chunks would copy it)."""
    if not isinstance(a, pa.ChunkedArray):
        return a
    return a.chunk(0) if a.num_chunks == 1 else a.combine_chunks()


def convert_column(arr: pa.ChunkedArray | pa.Array, col: Column, check_nulls: bool = True) -> pa.Array:
    """Cast one input column to the column's type, applying Kudu's value rules."""
    arr = one_array(arr)
    if pat.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    target = col.arrow_type
    if not _compatible(arr.type, col):
        raise TypeMismatchError(f"column {col.name!r} is {col.type.name}; input has type {arr.type}")
    if arr.type != target:
        try:
            if col.type.kind == "decimal" and pat.is_integer(arr.type):
                arr = arr.cast(pa.decimal128(38, 0)).cast(target, safe=True)
            else:
                src, arr = arr, arr.cast(target, safe=True)
                if col.type.kind == "float" and pat.is_floating(src.type) and src.type.bit_width > 32:
                    _check_float_range(src, arr, col)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            if col.type.kind == "decimal":
                raise DecimalOutOfRangeError(
                    f"column {col.name!r} ({col.type.name}): a value does not fit the precision ({e})") from None
            raise TypeMismatchError(f"column {col.name!r} ({col.type.name}): cannot convert {arr.type} "
                                    f"without loss ({e})") from None
    if col.type.kind == "decimal" and arr.null_count < len(arr):
        # Arrow does not check that decimal128(p, s) values really have at most p digits.
        if not _decimal_digits_fit(arr, col):
            raise DecimalOutOfRangeError(f"column {col.name!r}: a value needs more than {col.type.precision} "
                                         f"digits ({col.type.name})")
    if col.type.is_variable_width and len(arr):
        longest = pc.max(pc.binary_length(arr)).as_py() or 0
        if col.type.kind == "varchar" and longest > col.type.length:
            # Kudu truncates varchar values to n characters; bytes <= n means nothing to cut.
            arr = pc.utf8_slice_codeunits(arr, 0, col.type.length)
            longest = pc.max(pc.binary_length(arr)).as_py() or 0
        if longest > MAX_CELL_BYTES:
            raise CellTooLargeError(f"column {col.name!r}: a cell is {longest} bytes; the limit is "
                                    f"{MAX_CELL_BYTES} bytes (64 KiB)")
    if check_nulls and not col.nullable and arr.null_count:
        raise NullValueError(f"column {col.name!r} is not nullable but has {arr.null_count} NULL value(s)")
    return arr


def _check_float_range(src: pa.Array, arr: pa.Array, col: Column) -> None:
    """Arrow casts a finite double beyond float's range to +-inf without a word; such a value
    is one the column cannot hold, like an int beyond int32 (NaN and +-inf stay themselves)."""
    overflow = pc.and_(pc.is_finite(src), pc.is_inf(arr))
    if pc.any(overflow).as_py():
        bad = src.filter(overflow)[0].as_py()
        raise TypeMismatchError(f"column {col.name!r} ({col.type.name}): {bad!r} is beyond the range of a 32-bit "
                                "float")


def _decimal_digits_fit(arr: pa.Array, col: Column) -> bool:
    """Every value of a decimal128 array has at most the column's precision in digits.

    Up to 18 digits, a value fits when its 128 bits are a sign-extended int64 within
    +-(10^p - 1): two numpy passes over the buffer, where pc.abs allocates a copy."""
    p = col.type.precision
    if p > 18 or arr.type.bit_width != 128:
        return pc.all(pc.less_equal(pc.abs(arr), _max_decimal(col))).as_py()
    n, off = len(arr), arr.offset
    words = np.frombuffer(arr.buffers()[1], dtype="<i8", count=2 * (off + n))[2 * off:].reshape(n, 2)
    valid = np.asarray(arr.is_valid()) if arr.null_count else None     # a NULL slot's bytes are anything
    bound = np.uint64(10 ** p - 1)
    for a in range(0, n, _DECIMAL_BLOCK):                   # blocks: the temporaries stay in cache
        lo, hi = words[a:a + _DECIMAL_BLOCK, 0], words[a:a + _DECIMAL_BLOCK, 1]
        ok = (lo.view(np.uint64) + bound) <= bound * np.uint64(2)   # -bound <= lo <= bound, one compare
        ok &= hi == (lo >> 63)                                      # and the high word only extends its sign
        if valid is not None:
            ok |= ~valid[a:a + _DECIMAL_BLOCK]
        if not ok.all():
            return False
    return True


_DECIMAL_BLOCK = 1 << 17


def _max_decimal(col: Column) -> pa.Scalar:
    p, s = col.type.precision, col.type.scale
    # built from its digits: Decimal arithmetic would round to the default 28-digit context
    return pa.scalar(decimal.Decimal((0, (9,) * p, -s)), pa.decimal128(38, s))


def prepare(schema: Schema, data: Any, columns: Iterable[str] | None = None) -> pa.Table:
    """Validate input for an insert: every schema column present, converted and checked."""
    t = to_arrow_table(data)
    names = list(t.column_names)
    unknown = [n for n in names if not schema.has_column(n)]
    if unknown:
        raise UnknownColumnError(f"input has column(s) {unknown} that table does not have; "
                                 f"columns are {schema.names}")
    n = t.num_rows

    def one(col: Column) -> pa.Array:
        if col.name in names:
            return convert_column(t.column(col.name), col)
        if col.default is not None:
            return pa.nulls(n, col.arrow_type).fill_null(pa.scalar(col.default, col.arrow_type))
        if col.nullable:
            return pa.nulls(n, col.arrow_type)
        raise MissingColumnError(f"input lacks column {col.name!r}, which is not nullable and has no default")
    # Columns are checked side by side on the worker pool when there are enough rows to pay for
    # it; a bad column raises as it would alone (the first in schema order).
    arrays = (pmap if n >= _PARALLEL_ROWS else lambda f, xs: list(map(f, xs)))(one, schema.columns)
    fields = [pa.field(col.name, col.arrow_type, nullable=col.nullable) for col in schema.columns]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


_PARALLEL_ROWS = 1 << 16


def is_run(rows: np.ndarray) -> bool:
    """Whether `rows` are consecutive batch rows (then a slice of the batch, in the caller's memory)."""
    n = len(rows)
    return bool(n) and int(rows[-1]) - int(rows[0]) == n - 1 and (n == 1 or bool((np.diff(rows) == 1).all()))
