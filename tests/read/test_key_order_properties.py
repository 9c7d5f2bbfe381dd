"""Properties of the key order a load and a merge compute as numbers (`writer.tail_order`) and of
the binary search of a PK index in memory (`keyprobe.bisect_left`), over adversarial keys: every
key type in composite keys of one to four columns, strings with NUL and 0x01 bytes, empty
strings, over-long varchars, negative and 38-digit decimals, pre-epoch dates and timestamps,
repeats, sliced arrays."""
import bisect
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings, strategies as st

from tableformat.format.keyencoder import encode_keys
from tableformat.read.keyprobe import bisect_left, bisect_sorted
from tableformat.format.types import parse_type
from tableformat.write.insert import key_tail_width, sorted_tablet_keys, tail_order

KEY_TYPES = ["int8", "int16", "int32", "int64", "string", "varchar(3)", "binary", "decimal(38,3)", "decimal(9,2)",
             "decimal(18,0)", "date", "unixtime_micros"]
_CTX = decimal.Context(prec=60)


def _values(t):
    if t == "string" or t.startswith("varchar"):
        return st.text(alphabet=st.sampled_from(["\x00", "\x01", "a", "b", "é"]), max_size=5)
    if t == "binary":
        return st.binary(max_size=4)
    if t.startswith("int"):
        b = int(t[3:])
        return st.integers(-(2 ** (b - 1)), 2 ** (b - 1) - 1)
    if t.startswith("decimal"):
        p, s = map(int, t[8:-1].split(","))
        return st.integers(-(10 ** p - 1), 10 ** p - 1).map(lambda x: decimal.Decimal(x).scaleb(-s, _CTX))
    if t == "date":
        return st.integers(-800000, 800000)
    return st.integers(-(2 ** 62), 2 ** 62)          # unixtime_micros


def _column(t, vals):
    if t == "date":
        return pa.array(vals, pa.int32()).cast(pa.date32())
    if t == "unixtime_micros":
        return pa.array(vals, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    return pa.array(vals, parse_type(t).arrow())


@st.composite
def _key_batches(draw):
    """A tablet's encoded keys as a time-major load has them: a few series (the leading
    columns), each at a few values of the last column, in any order, repeats allowed."""
    types = draw(st.lists(st.sampled_from(KEY_TYPES), min_size=1, max_size=4))
    series = draw(st.lists(st.tuples(*[_values(t) for t in types[:-1]]), min_size=1, max_size=6))
    lasts = draw(st.lists(_values(types[-1]), min_size=1, max_size=8))
    # at least 4 rows a series, so the prefixes repeat enough for the numbers' way to be taken
    picks = draw(st.lists(st.tuples(st.integers(0, len(series) - 1), st.integers(0, len(lasts) - 1)),
                          min_size=4 * len(series), max_size=80))
    off = draw(st.integers(0, 2))
    picks = picks[:1] * off + picks
    cols = [_column(t, [series[s][j] if j < len(types) - 1 else lasts[v] for s, v in picks])
            for j, t in enumerate(types)]
    ctypes = [parse_type(t) for t in types]
    return ctypes, encode_keys(cols, ctypes).slice(off)


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(_key_batches())
def test_the_key_order_as_numbers_is_the_stable_byte_order_for_every_key_shape(batch):
    ctypes, k = batch
    tail = key_tail_width(ctypes)
    want = pc.array_sort_indices(k).to_numpy()
    order = tail_order(k, tail)
    if order is not None:
        assert order.tolist() == want.tolist()
    rows = np.arange(len(k)) * 3 + 1
    got_rows, got_keys, dup = sorted_tablet_keys(k, rows, None, tail)
    assert got_rows.tolist() == rows[want].tolist()
    assert got_keys.to_pylist() == k.take(pa.array(want)).to_pylist()
    keys = k.to_pylist()
    assert dup.tolist() == [i > 0 and keys[want[i]] == keys[want[i - 1]] for i in range(len(k))]


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.binary(max_size=4), max_size=70), st.lists(st.binary(max_size=5), max_size=50))
def test_the_binary_search_of_a_pk_index_is_the_left_insertion_point(hay, needles):
    hay = sorted(set(hay))
    got = bisect_left(pa.array(hay, pa.binary()), pa.array(needles, pa.binary()))
    assert got.tolist() == [bisect.bisect_left(hay, x) for x in needles]


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.binary(max_size=4), max_size=70), st.lists(st.binary(max_size=5), max_size=50))
def test_the_binary_search_of_block_first_keys_is_the_right_insertion_point(hay, needles):
    """The same search on the right side finds a key's PK index block among the blocks' first keys."""
    hay = sorted(set(hay))
    got = bisect_sorted(pa.array(hay, pa.binary()), pa.array(needles, pa.binary()), side="right")
    assert got.tolist() == [bisect.bisect_right(hay, x) for x in needles]
