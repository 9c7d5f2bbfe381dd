"""memcmp-comparable composite key encoding, after Kudu's `key_encoder.h`.

Comparing two encoded keys byte-wise gives the same order as comparing the key
tuples. Encoded keys are rowset min/max bounds, bloom filter keys, PK index
entries and hash input. Everything here is whole-column (numpy / Arrow compute).
See `specs/format.md`, section "Key encoding".
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .types import ColumnType


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
    n, w = m.shape
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(w), n, [None, pa.py_buffer(np.ascontiguousarray(m))])
    return fixed.cast(pa.binary())


def encode_keys(columns: Sequence[pa.Array], ctypes: Sequence[ColumnType], terminal: bool = True) -> pa.Array:
    """Encode non-null key columns into one binary array.

    `terminal` says whether the last column given is the last column of the full
    key (raw string bytes) or a prefix of it (escaped and terminated).
    """
    columns = [(c.chunk(0) if c.num_chunks == 1 else c.combine_chunks()) if isinstance(c, pa.ChunkedArray) else c
               for c in columns]
    n = len(columns[0]) if columns else 0
    parts: list[pa.Array] = []
    pending: list[np.ndarray] = []

    def flush():
        if pending:
            parts.append(_matrix_to_binary(np.hstack(pending) if len(pending) > 1 else pending[0]))
            pending.clear()

    for i, (arr, ctype) in enumerate(zip(columns, ctypes)):
        last = terminal and i == len(columns) - 1
        if ctype.is_variable_width:
            flush()
            b = arr.cast(pa.binary())
            if last:
                parts.append(b)
                continue
            if _has_nul(b):
                b = pc.replace_substring(b, b"\x00", b"\x00\x01")
            parts.append(b)
            pending.append(np.zeros((n, 2), dtype=np.uint8))  # the 00 00 terminator
        else:
            pending.append(_fixed_matrix(arr, ctype))
    flush()
    if not parts:
        return pa.array([b""] * n, pa.binary())
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, b"")


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
