"""Composite key encoding is memcmp-ordered exactly like the key tuples (Kudu's key_encoder)."""
import datetime as dt
import decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from tableformat.keyencoder import decode_key, encode_key, encode_keys, prefix_successor
from tableformat.types import parse_type

I64 = st.integers(-(2**63), 2**63 - 1)
I8 = st.integers(-128, 127)
TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x2FF), max_size=6)
BIN = st.binary(max_size=6)
DEC = st.integers(-(10**9 - 1), 10**9 - 1).map(lambda x: decimal.Decimal(x).scaleb(-2))


def _check_order(rows, types):
    ctypes = [parse_type(t) for t in types]
    cols = [pa.array([r[i] for r in rows], ct.arrow()) for i, ct in enumerate(ctypes)]
    enc = encode_keys(cols, ctypes).to_pylist()
    by_tuple = sorted(range(len(rows)), key=lambda i: rows[i])
    by_bytes = sorted(range(len(rows)), key=lambda i: enc[i])
    assert [rows[i] for i in by_tuple] == [rows[i] for i in by_bytes]
    # equal tuples <=> equal encodings
    assert len(set(map(tuple, rows))) == len(set(enc))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(TEXT, I64, BIN), min_size=1, max_size=40))
def test_string_int_binary_order(rows):
    # Python compares str by code point, which matches UTF-8 byte order.
    _check_order([list(r) for r in rows], ["string", "int64", "binary"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(I8, BIN, TEXT), min_size=1, max_size=40))
def test_binary_with_nul_bytes_in_the_middle(rows):
    _check_order([list(r) for r in rows], ["int8", "binary", "string"])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(DEC, st.dates(), st.integers(-(2**31), 2**31 - 1)), min_size=1, max_size=40))
def test_decimal_date_int32_order(rows):
    _check_order([list(r) for r in rows], ["decimal(11,2)", "date", "int32"])


def test_wide_decimal_and_timestamp():
    rows = [[decimal.Decimal("-1e20"), dt.datetime(1960, 1, 1, tzinfo=dt.timezone.utc)],
            [decimal.Decimal("3"), dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)],
            [decimal.Decimal("-3"), dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)],
            [decimal.Decimal("1e30"), dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)]]
    _check_order(rows, ["decimal(38,0)", "unixtime_micros"])


def test_encoding_matches_kudu_bytes():
    types = [parse_type("int32"), parse_type("string"), parse_type("string")]
    assert encode_key([1, "a\x00b", "zz"], types) == b"\x80\x00\x00\x01" + b"a\x00\x01b\x00\x00" + b"zz"
    assert encode_key([-1], [parse_type("int64")]) == b"\x7f" + b"\xff" * 7
    # a prefix is escaped and terminated even when it ends on a string
    assert encode_key(["a"], [parse_type("string")], terminal=False) == b"a\x00\x00"


def test_prefix_successor():
    assert prefix_successor(b"ab") == b"ac"
    assert prefix_successor(b"a\xff\xff") == b"b"
    assert prefix_successor(b"\xff") is None


def test_sliced_and_chunked_input():
    ct = [parse_type("string"), parse_type("int16")]
    a = pa.chunked_array([pa.array(["x", "y"]), pa.array(["z"])])
    b = pa.array([5, 6, 7, 8], pa.int16()).slice(1)
    assert encode_keys([a, b], ct).to_pylist() == [encode_key(["x", 6], ct), encode_key(["y", 7], ct),
                                                   encode_key(["z", 8], ct)]


# --- decode_key: the inverse, for display --------------------------------------------------------

UTC = dt.timezone.utc
NUL_TEXT = st.text(alphabet=st.sampled_from(["\x00", "\x01", "a", "\xff", "é", "\U0001f600"]), max_size=5)
NUL_BIN = st.binary(max_size=5) | st.sampled_from([b"\x00", b"\x00\x00", b"\x00\x01", b"\x01\x00"])
DEC38 = st.integers(-(10**38 - 1), 10**38 - 1).map(lambda x: decimal.Decimal(f"{x}e-10"))
TS = st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999), timezones=st.just(UTC))
ROUND_TRIP = [      # key types, and a strategy for one key tuple of them
    (("int8", "int16", "int32", "int64"),
     st.tuples(I8, st.integers(-(2**15), 2**15 - 1), st.integers(-(2**31), 2**31 - 1), I64)),
    (("string", "int64", "binary"), st.tuples(NUL_TEXT, I64, NUL_BIN)),
    (("binary", "varchar(8)", "string"), st.tuples(NUL_BIN, NUL_TEXT, NUL_TEXT)),
    (("decimal(38,10)", "decimal(11,2)", "decimal(18,0)"),
     st.tuples(DEC38, DEC, st.integers(-(10**18 - 1), 10**18 - 1).map(decimal.Decimal))),
    (("date", "unixtime_micros", "string"), st.tuples(st.dates(), TS, NUL_TEXT)),
    (("unixtime_micros",), st.tuples(TS)),
    (("binary",), st.tuples(NUL_BIN)),
]


@pytest.mark.parametrize("types,rows", ROUND_TRIP, ids=["-".join(t) for t, _ in ROUND_TRIP])
def test_decode_key_inverts_the_encoder(types, rows):
    ctypes = [parse_type(t) for t in types]

    @settings(max_examples=50, deadline=None)
    @given(st.lists(rows, min_size=1, max_size=20))
    def check(rows):
        cols = [pa.array([r[i] for r in rows], ct.arrow()) for i, ct in enumerate(ctypes)]
        for row, key in zip(rows, encode_keys(cols, ctypes).to_pylist()):
            got = decode_key(key, ctypes)
            assert got == row and [type(v) for v in got] == [type(v) for v in row]
            assert encode_key(got, ctypes) == key
    check()


def test_decode_key_is_exact_at_the_edges():
    types = [parse_type(t) for t in ("string", "decimal(38,0)", "int64", "binary")]
    row = ("a\x00\x00b\x00", decimal.Decimal(10**38 - 1), -(2**63), b"\x00\x01\x00")
    assert decode_key(encode_key(row, types), types) == row
    assert decode_key(b"", []) == ()


@pytest.mark.parametrize("key,types,words", [
    (b"\x80\x00", ["int32"], "ends inside column 1"),
    (b"\x80\x00\x00\x01\x00", ["int32"], "after the last column"),
    (b"ab", ["string", "int8"], "not terminated"),
    (b"a\x00\x02\x00\x00\x80", ["string", "int8"], "not terminated"),
    (b"\xff\xfe", ["string"], "utf-8"),
    (b"\x01", ["bool"], "not a key type"),
    (b"\xff" * 4, ["date"], "out of Python's range"),
])
def test_decode_key_refuses_what_is_not_a_key(key, types, words):
    with pytest.raises(ValueError, match=words):
        decode_key(key, [parse_type(t) for t in types])
