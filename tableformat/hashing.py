"""MurmurHash2_64 (MurmurHash64A), vectorized over an Arrow binary array.

Kudu hashes encoded key columns with this function for hash partitioning; we
use it for partitioning (seed 0 by default) and, with another seed, for bloom
filters. Results are identical on every platform: the 8-byte chunks are read
little-endian explicitly. See `specs/format.md`, section "Hash function".
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

M = np.uint64(0xC6A4A7935BD1E995)
R = np.uint64(47)
_BYTE_SHIFTS = np.arange(8, dtype=np.int64)


def _binary_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.type != pa.binary():
        arr = arr.cast(pa.binary())
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=arr.offset + n + 1)[arr.offset:]
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1].astype(np.int64)
    lens = np.diff(offsets).astype(np.int64)
    return data, starts, lens


def murmur2_64(arr: pa.Array, seed: int = 0) -> np.ndarray:
    """Hash every value of a binary array; returns uint64 per value."""
    data, starts, lens = _binary_buffers(arr)
    n = len(lens)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    h = np.uint64(seed) ^ (lens.astype(np.uint64) * M)
    nwords = lens >> 3
    # Process rows with the most words first, so each word step is a prefix slice.
    order = np.argsort(-nwords, kind="stable")
    words_sorted = nwords[order]
    starts_sorted = starts[order]
    hs = h[order]
    max_words = int(words_sorted[0]) if n else 0
    # counts[j] = number of rows having more than j words
    counts = np.searchsorted(-words_sorted, -np.arange(max_words), side="left")
    for j in range(max_words):
        c = int(counts[j])
        pos = starts_sorted[:c, None] + (8 * j + _BYTE_SHIFTS)
        k = np.ascontiguousarray(data[pos]).view("<u8").ravel().astype(np.uint64)
        k *= M
        k ^= k >> R
        k *= M
        hv = hs[:c]
        hv ^= k
        hv *= M
        hs[:c] = hv
    h[order] = hs
    tail = lens & 7
    tail_start = starts + (nwords << 3)
    for b in range(6, -1, -1):
        rows = np.nonzero(tail > b)[0]
        if len(rows):
            h[rows] ^= data[tail_start[rows] + b].astype(np.uint64) << np.uint64(8 * b)
    rows = np.nonzero(tail > 0)[0]
    h[rows] *= M
    h ^= h >> R
    h *= M
    h ^= h >> R
    return h


def murmur2_64_bytes(data: bytes, seed: int = 0) -> int:
    """Scalar reference implementation (for tests and single values)."""
    mask = (1 << 64) - 1
    m, r = 0xC6A4A7935BD1E995, 47
    h = (seed ^ (len(data) * m)) & mask
    nblocks = len(data) // 8
    for i in range(nblocks):
        k = int.from_bytes(data[8 * i: 8 * i + 8], "little")
        k = (k * m) & mask
        k ^= k >> r
        k = (k * m) & mask
        h ^= k
        h = (h * m) & mask
    tail = data[8 * nblocks:]
    if tail:
        for i in range(len(tail) - 1, -1, -1):
            h ^= tail[i] << (8 * i)
        h = (h * m) & mask
    h ^= h >> r
    h = (h * m) & mask
    h ^= h >> r
    return h
