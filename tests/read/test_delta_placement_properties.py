"""Properties of placing a rowset's changed cells into base columns and dropping its deleted rows
(`delta_tracker._place`, `_Drop.place`: the scan's, the lookup's and the merge's delta
application) over adversarial columns: every fixed-width type and bool, strings, NULLs in the base
and in the changes, all-NULL bases as Arrow makes them for columns added after a file was
written (`pa.nulls`, whose validity and values share one buffer), changes setting NULL given as
Arrow's null type, sliced and chunked bases, NaN and -0.0."""
import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings, strategies as st

from tableformat.format.cfile_set import bool_array
from tableformat.read.delta_tracker import _Drop, _place

TYPES = [pa.int8(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.decimal128(9, 2), pa.decimal128(18, 2),
         pa.decimal128(38, 5), pa.date32(), pa.timestamp("us", tz="UTC"), pa.bool_(), pa.string(), pa.binary()]
_CTX = decimal.Context(prec=60)


def _cell(t):
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_integer(t):
        return st.integers(-(2 ** (t.bit_width - 1)), 2 ** (t.bit_width - 1) - 1)
    if pa.types.is_floating(t):
        return st.floats(width=t.bit_width)
    if pa.types.is_decimal(t):
        return st.integers(-(10 ** t.precision - 1), 10 ** t.precision - 1).map(
            lambda x: decimal.Decimal(x).scaleb(-t.scale, _CTX))
    if pa.types.is_date(t):
        return st.integers(-100000, 100000).map(lambda d: dt.date(1970, 1, 1) + dt.timedelta(days=d))
    if pa.types.is_timestamp(t):
        return st.integers(-(2 ** 50), 2 ** 50).map(
            lambda x: dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=x))
    return st.text(max_size=3) if pa.types.is_string(t) else st.binary(max_size=3)


@st.composite
def _placements(draw):
    t = draw(st.sampled_from(TYPES))
    n = draw(st.integers(1, 40))
    off = draw(st.integers(0, 3))
    if draw(st.booleans()):
        base = pa.nulls(n + off, t)
    else:
        base = pa.array(draw(st.lists(st.none() | _cell(t), min_size=n + off, max_size=n + off)), t)
    base = base.slice(off)
    pos = np.array(sorted(draw(st.sets(st.integers(0, n - 1), max_size=n))), np.int64)
    kind = draw(st.sampled_from(["cells", "nulls", "null_type"]))
    values = pa.nulls(len(pos)) if kind == "null_type" else pa.nulls(len(pos), t) if kind == "nulls" else \
        pa.array(draw(st.lists(st.none() | _cell(t), min_size=len(pos), max_size=len(pos))), t)
    gone = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    if draw(st.booleans()) and n > 1:
        base = pa.chunked_array([base.slice(0, n // 2), base.slice(n // 2)])
    return base, pos, values, gone


def _same(got, want):
    norm = lambda v: ("nan" if v != v else v.hex()) if isinstance(v, float) else v      # noqa: E731
    return [norm(x) for x in got] == [norm(x) for x in want]


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(_placements())
def test_placing_changes_and_dropping_deleted_rows_gives_each_cell_its_newest_value(p):
    base, pos, values, gone = p
    before = base.to_pylist()
    want = list(before)
    for at, v in zip(pos.tolist(), values.to_pylist()):
        want[at] = v
    got = _place(base, pos, values)
    got.validate(full=True)
    assert _same(got.to_pylist(), want) and got.null_count == want.count(None)
    if gone.any():
        got = _Drop(gone, np.flatnonzero(gone), bool_array(~gone)).place(base, pos, values)
        got = got.combine_chunks() if isinstance(got, pa.ChunkedArray) else got
        got.validate(full=True)
        live = [x for x, g in zip(want, gone) if not g]
        assert _same(got.to_pylist(), live) and got.null_count == live.count(None)
    assert _same(base.to_pylist(), before)          # the base (perhaps cached) is not written to
