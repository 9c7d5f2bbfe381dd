"""memcmp-comparable composite key encoding, after Kudu's `key_encoder.h`.

Comparing two encoded keys byte-wise gives the same order as comparing the key
tuples. Encoded keys are rowset min/max bounds, bloom filter keys, PK index
entries and hash input. Everything here is whole-column (numpy / Arrow compute).
See `specs/format.md`, section "Key encoding".
"""
from __future__ import annotations

import datetime as _dt
import decimal as _decimal
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .batch import one_array
from .errors import CellTooLargeError
from .types import MAX_ENCODED_KEY_BYTES, ColumnType

if TYPE_CHECKING:
    from .schema import Schema


def _fixed_matrix(arr: pa.Array, ctype: ColumnType) -> np.ndarray:
    """(n, width) uint8 matrix: big-endian two's complement with the sign bit flipped."""
    n = len(arr)
    w = ctype.key_width
    if ctype.kind == "decimal":
        arr = arr.cast(pa.decimal128(ctype.precision, ctype.scale)) if arr.type.bit_width != 128 else arr
        buf = arr.buffers()[1]
        le = np.frombuffer(buf, dtype=np.uint8, count=(arr.offset + n) * 16)[arr.offset * 16:].reshape(n, 16)
        m = np.ascontiguousarray(le[:, ::-1][:, 16 - w:])
        m[:, 0] ^= 0x80
        return m
    signed = np.dtype(f"int{w * 8}")
    if ctype.kind in ("date", "unixtime_micros"):
        arr = arr.cast(pa.int32() if ctype.kind == "date" else pa.int64())
    values = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=signed)
    flipped = values.view(f"uint{w * 8}") ^ np.array(1 << (w * 8 - 1), dtype=f"uint{w * 8}")
    return flipped.astype(f">u{w}").view(np.uint8).reshape(n, w)


def _has_nul(b: pa.Array) -> bool:
    offsets = np.frombuffer(b.buffers()[1], dtype=np.int32, count=b.offset + len(b) + 1)[b.offset:]
    data = b.buffers()[2]
    if data is None or offsets[-1] == offsets[0]:
        return False
    return int(np.frombuffer(data, dtype=np.uint8)[offsets[0]:offsets[-1]].min()) == 0


def _matrix_to_binary(m: np.ndarray) -> pa.Array:
    """Rows of a (n, w) byte matrix as a binary array, sharing the matrix's memory."""
    n, w = m.shape
    if n * w >= 1 << 31:
        fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(w), n, [None, pa.py_buffer(np.ascontiguousarray(m))])
        return fixed.cast(pa.binary())
    offsets = np.arange(0, n * w + 1, w, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(m))])


def encode_keys(columns: Sequence[pa.Array], ctypes: Sequence[ColumnType], terminal: bool = True) -> pa.Array:
    """Encode non-null key columns into one binary array.

    `terminal` says whether the last column given is the last column of the full
    key (raw string bytes) or a prefix of it (escaped and terminated).
    """
    columns = [one_array(c) for c in columns]
    n = len(columns[0]) if columns else 0
    # Segments: each string column (escaped and terminated unless last), each run of fixed-width
    # columns (one byte matrix); `terminated` says a 00 00 follows the segment.
    segments: list[pa.Array] = []
    terminated: list[bool] = []
    pending: list[np.ndarray] = []

    def flush():
        if pending:
            segments.append(_matrix_to_binary(np.hstack(pending) if len(pending) > 1 else pending[0]))
            terminated.append(False)
            pending.clear()

    for i, (arr, ctype) in enumerate(zip(columns, ctypes)):
        last = terminal and i == len(columns) - 1
        if ctype.is_variable_width:
            flush()
            b = arr.cast(pa.binary())
            if not last and _has_nul(b):
                b = pc.replace_substring(b, b"\x00", b"\x00\x01")
            segments.append(b)
            terminated.append(not last)
        else:
            pending.append(_fixed_matrix(arr, ctype))
    flush()
    if not segments:
        return pa.array([b""] * n, pa.binary())
    if not any(terminated):
        return segments[0] if len(segments) == 1 else pc.binary_join_element_wise(*segments, b"")
    if all(terminated[:-1]):
        # Every segment but perhaps the last is terminated: the terminator is the separator of
        # one join (an empty last part puts it after a terminated last segment too).
        if terminated[-1]:
            segments.append(pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(np.zeros(n + 1, np.int32)),
                                                                    pa.py_buffer(b"")]))
        return pc.binary_join_element_wise(*segments, b"\x00\x00")
    # Mixed: each terminator is a 00 00 part of its own.
    parts: list[pa.Array] = []
    for seg, term in zip(segments, terminated):
        parts.append(seg)
        if term:
            parts.append(_matrix_to_binary(np.zeros((n, 2), dtype=np.uint8)))
    return pc.binary_join_element_wise(*parts, b"")


def fixed_key_numbers(columns: Sequence[pa.Array], ctypes: Sequence[ColumnType]) -> np.ndarray | None:
    """The encoding of fixed-width columns of at most 8 bytes in all (a timestamp, an int, a
    date and an int16...) as big-endian uint64 numbers, zero-padded on the right: numbers
    compare as the keys do, with no binary array. None for other columns."""
    if not columns or any(ct.is_variable_width for ct in ctypes) or sum(ct.key_width for ct in ctypes) > 8:
        return None
    columns = [one_array(c) for c in columns]
    n = len(columns[0])
    m = np.zeros((n, 8), dtype=np.uint8)
    at = 0
    for arr, ctype in zip(columns, ctypes):
        m[:, at:at + ctype.key_width] = _fixed_matrix(arr, ctype)
        at += ctype.key_width
    return m.view(">u8").ravel().astype(np.uint64)


def prefix_lengths(columns: Sequence[pa.Array], ctypes: Sequence[ColumnType], count: int) -> np.ndarray | None:
    """Per row, the length of the leading bytes of its full key (`columns` are all the key
    columns) that are the encoding of its first `count` columns as a list of their own, as a
    hash level on a key prefix encodes them; None when that is not a prefix of the key.

    It is one but for the list's last column: raw there, escaped and terminated in the key.
    Both agree when a string column before the key's last holds no 00 byte (the usual case);
    otherwise None, and the caller encodes the list itself. So a key encoded once also
    gives the hash input of a level on a prefix of the key, with no second encoding."""
    n = len(columns[0]) if columns else 0
    total = np.zeros(n, dtype=np.int64)
    for i in range(count):
        arr, ctype = columns[i], ctypes[i]
        if not ctype.is_variable_width:
            total += ctype.key_width
            continue
        arr = one_array(arr)
        b = arr.cast(pa.binary())
        if i < len(columns) - 1 and _has_nul(b):
            return None
        offsets = np.frombuffer(b.buffers()[1], dtype=np.int32, count=b.offset + n + 1)[b.offset:]
        total += np.diff(offsets)
        if i < count - 1:
            total += 2                                          # the 00 00 terminator
    return total


def encode_key(values: Sequence, ctypes: Sequence[ColumnType], terminal: bool = True) -> bytes:
    """Encode one key tuple (or a key prefix when terminal=False)."""
    arrays = [pa.array([v], type=ct.arrow()) for v, ct in zip(values, ctypes)]
    return encode_keys(arrays, ctypes, terminal)[0].as_py()


def prefix_successor(prefix: bytes) -> bytes | None:
    """Smallest byte string greater than every string starting with `prefix` (None: no bound)."""
    b = bytearray(prefix)
    while b and b[-1] == 0xFF:
        b.pop()
    if not b:
        return None
    b[-1] += 1
    return bytes(b)


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def _unescape(key: bytes, i: int) -> tuple[bytes, int]:
    """A non-last variable-width column from `i`: its bytes, and where the next column starts."""
    z = i
    while True:
        z = key.find(b"\x00", z)
        if z < 0 or z + 1 >= len(key) or key[z + 1] > 1:
            raise ValueError(f"key {key.hex()}: a string column is not terminated by 00 00")
        if key[z + 1] == 0:
            return key[i:z].replace(b"\x00\x01", b"\x00"), z + 2
        z += 2


def decode_key(key: bytes, types: Sequence[ColumnType]) -> tuple:
    """The key tuple `encode_key(values, types)` encoded; ValueError if `key` is not such a key.

    One key at a time, for people: `describe` shows rowset bounds as values, not hex.
    Values are those Arrow gives for the column type (timestamps as UTC datetimes).
    """
    out: list = []
    i = 0
    for j, ct in enumerate(types):
        if ct.is_variable_width:
            if j == len(types) - 1:
                raw, i = key[i:], len(key)
            else:
                raw, i = _unescape(key, i)
            out.append(raw if ct.kind == "binary" else raw.decode("utf-8"))
            continue
        if not ct.is_keyable:
            raise ValueError(f"{ct.name} is not a key type")
        w = ct.key_width
        if i + w > len(key):
            raise ValueError(f"key {key.hex()} ends inside column {j + 1} ({ct.name})")
        x = int.from_bytes(key[i:i + w], "big") - (1 << (8 * w - 1))     # the sign bit flipped back
        i += w
        try:
            if ct.kind == "date":
                out.append(_dt.date(1970, 1, 1) + _dt.timedelta(days=x))
            elif ct.kind == "unixtime_micros":
                out.append(_EPOCH + _dt.timedelta(microseconds=x))
            elif ct.kind == "decimal":
                out.append(_decimal.Decimal(f"{x}e-{ct.scale}"))       # exact, unlike scaleb
            else:
                out.append(x)
        except OverflowError:
            raise ValueError(f"key {key.hex()}: {x} is out of Python's range for {ct.name}") from None
    if i != len(key):
        raise ValueError(f"key {key.hex()} has {len(key) - i} byte(s) after the last column")
    return tuple(out)


def encoded_keys(schema: Schema, batch: pa.Table) -> pa.Array:
    """The rows' encoded primary keys (the batch holds the key columns by name); a key longer
    than Kudu's 16 KiB is a CellTooLargeError (specs/format.md "Key encoding")."""
    kcols = schema.key_columns
    keys = encode_keys([batch.column(c.name) for c in kcols], [c.type for c in kcols])
    if len(keys):
        longest = pc.max(pc.binary_length(keys)).as_py()
        if longest > MAX_ENCODED_KEY_BYTES:
            raise CellTooLargeError(f"an encoded primary key is {longest} bytes; the limit is "
                                    f"{MAX_ENCODED_KEY_BYTES} bytes (16 KiB)")
    return keys
