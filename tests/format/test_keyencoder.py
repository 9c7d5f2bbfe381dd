"""Composite key encoding is memcmp-ordered exactly like the key tuples (Kudu's key_encoder)."""
import datetime as dt
import decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from tableformat.format.keyencoder import decode_key, encode_key, encode_keys, prefix_successor
from tableformat.format.types import parse_type

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


def _spec_encode(values, kinds, terminal=True):
    """Spec §3 for one tuple, scalar: ints big-endian with the sign bit flipped; a string or
    binary raw when it is the last column of the key, else 00 escaped as 00 01 and 00 00 after."""
    out = b""
    for i, (v, k) in enumerate(zip(values, kinds)):
        if k in ("string", "binary"):
            raw = v.encode() if k == "string" else v
            out += raw if terminal and i == len(values) - 1 else raw.replace(b"\x00", b"\x00\x01") + b"\x00\x00"
        else:
            w = {"int8": 1, "int32": 4, "int64": 8}[k]
            out += ((v + (1 << (8 * w - 1))) % (1 << (8 * w))).to_bytes(w, "big")
    return out


@settings(max_examples=40, deadline=None)
@pytest.mark.parametrize("kinds", [["string", "binary", "int64"], ["string", "string"], ["binary"],
                                   ["int8", "string", "int32"], ["int32", "binary"], ["int8", "int64"],
                                   ["string", "int32", "string", "int8"]])
@pytest.mark.parametrize("terminal", [True, False])
@given(data=st.data())
def test_every_column_layout_encodes_as_the_spec_says(kinds, terminal, data):
    """Whichever way the encoder joins the columns (one separator, or terminators as parts),
    each key is the spec's bytes, with and without a terminal last column."""
    gen = {"string": TEXT, "binary": BIN, "int8": I8, "int32": st.integers(-(2**31), 2**31 - 1), "int64": I64}
    rows = data.draw(st.lists(st.tuples(*[gen[k] for k in kinds]), min_size=1, max_size=20))
    ctypes = [parse_type(k) for k in kinds]
    cols = [pa.array([r[i] for r in rows], ct.arrow()) for i, ct in enumerate(ctypes)]
    got = encode_keys(cols, ctypes, terminal).to_pylist()
    assert got == [_spec_encode(r, kinds, terminal) for r in rows]


@pytest.mark.parametrize("kinds,count", [(["string", "string", "int64"], 2), (["string", "string", "int64"], 1),
                                         (["string", "string", "int64"], 3), (["int32", "string", "binary"], 2),
                                         (["binary", "int8"], 2), (["int64", "int8"], 1)])
def test_prefix_lengths_give_the_encoding_of_a_key_prefix(kinds, count):
    """The first prefix_lengths[i] bytes of key i are the encoding of its first `count` columns
    as a list of their own (the last of them raw): what a hash level on them hashes."""
    from tableformat.format.keyencoder import prefix_lengths
    vals = {"string": ["", "a", "host-1", "zz\u00e9"], "binary": [b"", b"\x01", b"ab\xff", b"q"],
            "int8": [-128, 0, 5, 127], "int32": [-7, 0, 1, 2**31 - 1], "int64": [-(2**63), 3, 0, 9]}
    rows = [[vals[k][(i * (j + 1)) % 4] for j, k in enumerate(kinds)] for i in range(12)]
    ctypes = [parse_type(k) for k in kinds]
    cols = [pa.array([r[j] for r in rows], ct.arrow()) for j, ct in enumerate(ctypes)]
    keys = encode_keys(cols, ctypes).to_pylist()
    lengths = prefix_lengths(cols, ctypes, count)
    want = encode_keys(cols[:count], ctypes[:count]).to_pylist()
    assert [k[:n] for k, n in zip(keys, lengths.tolist())] == want


def test_prefix_lengths_refuse_a_string_with_a_nul_before_the_last_column():
    """A 00 byte is escaped in the key but raw in the prefix's own encoding: no prefix then."""
    from tableformat.format.keyencoder import prefix_lengths
    ctypes = [parse_type("string"), parse_type("string")]
    cols = [pa.array(["a", "b\x00c"]), pa.array(["x\x00", "y"])]
    assert prefix_lengths(cols, ctypes, 1) is None
    assert prefix_lengths(cols, ctypes, 2) is None
    # in the key's last column a 00 byte is raw in both: still a prefix
    last_nul = [pa.array(["a", "b"]), pa.array(["x\x00", "y"])]
    assert prefix_lengths(last_nul, ctypes, 2).tolist() == [1 + 2 + 2, 1 + 2 + 1]
    assert prefix_lengths(last_nul, ctypes, 1).tolist() == [1, 1]
