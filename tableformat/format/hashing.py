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


def _gather_words(padded: np.ndarray, pos: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The little-endian uint64 starting at each byte position: the two aligned words around it,
    shifted together (a few whole-array passes, whatever the mix of alignments). `padded` has
    at least 16 bytes after the last position."""
    aligned = padded[: 8 * (len(padded) // 8)].view("<u8")
    q = pos >> 3
    lo_shift = ((pos & 7) << 3).astype(np.uint64)
    np.take(aligned, q, out=out)
    np.right_shift(out, lo_shift, out=out)
    q += 1
    hi = np.take(aligned, q)
    # hi << (64 - lo_shift), as (hi << 1) << (63 - lo_shift): 0 for an aligned position, and
    # every shift count stays below 64
    np.left_shift(hi, np.uint64(1), out=hi)
    np.subtract(np.uint64(63), lo_shift, out=lo_shift)
    np.left_shift(hi, lo_shift, out=hi)
    np.bitwise_or(out, hi, out=out)
    return out


def _mix_into(h: np.ndarray, k: np.ndarray, tmp: np.ndarray) -> None:
    """h = (h ^ mix(k)) * m, in place: this machine pays heavily for fresh temporaries."""
    np.multiply(k, M, out=k)
    np.right_shift(k, R, out=tmp)
    np.bitwise_xor(k, tmp, out=k)
    np.multiply(k, M, out=k)
    np.bitwise_xor(h, k, out=h)
    np.multiply(h, M, out=h)


_CHUNK = 1 << 16


def murmur2_64(arr: pa.Array, seed: int = 0, lengths: np.ndarray | None = None) -> np.ndarray:
    """Hash every value of a binary array; returns uint64 per value. With `lengths`, hash
    only the first lengths[i] bytes of value i (a key prefix, without slicing the array).

    Works in chunks so temporaries stay small and are reused rather than faulted in.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if len(arr) == 1 and arr.null_count == 0:   # a point lookup: the array set-up costs 40x the hash
        value = arr[0].as_py()
        return np.array([murmur2_64_bytes(value if lengths is None else value[:int(lengths[0])], seed)],
                        dtype=np.uint64)
    if len(arr) <= _CHUNK:
        return _murmur2_64(arr, seed, lengths)
    out = np.empty(len(arr), dtype=np.uint64)
    for start in range(0, len(arr), _CHUNK):
        out[start:start + _CHUNK] = _murmur2_64(arr.slice(start, _CHUNK), seed,
                                                None if lengths is None else lengths[start:start + _CHUNK])
    return out


def _murmur2_64(arr: pa.Array, seed: int, lengths: np.ndarray | None = None) -> np.ndarray:
    """MurmurHash64A of every value at once: the reference's loop over one value's words becomes
    a loop over word positions, each step a whole-array pass over the values that still have one.

    The loop stays inline: dropping finished values must free the whole-array shifts, and fresh
    memory costs more than the hashing here.
    """
    data, starts, lens = _binary_buffers(arr)
    if lengths is not None:
        lens = np.minimum(lens, lengths)
    n = len(lens)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    padded, aligned, starts = _padded(data, starts, lens)
    h = lens.astype(np.uint64)
    np.multiply(h, M, out=h)
    np.bitwise_xor(h, np.uint64(seed), out=h)
    nwords = lens >> 3
    q, lo_shift, hi_shift = _word_shifts(starts)
    rows = None                                  # None: every value still has words to mix
    cur = np.take(aligned, q)
    k = np.empty(n, dtype=np.uint64)
    tmp = np.empty(n, dtype=np.uint64)
    for j in range(int(nwords.max())):
        if rows is None and int(nwords.min()) <= j:
            rows = np.flatnonzero(nwords > j)
            q, lo_shift, hi_shift, cur = q[rows], lo_shift[rows], hi_shift[rows], cur[rows]
        elif rows is not None:
            keep = np.flatnonzero(nwords[rows] > j)
            if len(keep) < len(rows):
                rows, q, lo_shift, hi_shift, cur = rows[keep], q[keep], lo_shift[keep], hi_shift[keep], cur[keep]
        m = len(cur)
        nxt = np.take(aligned, q + (j + 1))
        word = np.right_shift(cur, lo_shift, out=k[:m])
        np.left_shift(nxt, np.uint64(1), out=tmp[:m])
        np.left_shift(tmp[:m], hi_shift, out=tmp[:m])
        np.bitwise_or(word, tmp[:m], out=word)
        if rows is None:
            _mix_into(h, word, tmp)
        else:
            hs = h[rows]
            _mix_into(hs, word, tmp[:m])
            h[rows] = hs
        cur = nxt
    tail = (lens & 7).astype(np.uint64)
    if tail.any():
        if rows is None:            # every value had all its words mixed: the tail starts in `cur`
            word = np.right_shift(cur, lo_shift, out=k)
            nxt = np.take(aligned, q + (int(nwords[0]) + 1))
            np.left_shift(nxt, np.uint64(1), out=nxt)
            np.left_shift(nxt, hi_shift, out=nxt)
            np.bitwise_or(word, nxt, out=word)
        else:
            word = _gather_words(padded, starts + (nwords << 3), k)
        _mix_tail(h, word, tail, tmp)
    _finalize(h, tmp)
    return h


def _padded(data: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The values' bytes with 16 zero bytes after, so that reading the two aligned words around any
    position stays inside: (bytes, the same as little-endian uint64 words, starts within them)."""
    first, last = int(starts[0]), int(starts[-1] + lens[-1])
    padded = np.zeros(last - first + 16, dtype=np.uint8)
    padded[: last - first] = data[first:last]
    aligned = padded[: 8 * (len(padded) // 8)].view("<u8")
    return padded, aligned, starts - first


def _word_shifts(starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, lo_shift, hi_shift) per value, for reading its words from the aligned words.

    A value's word j straddles aligned words q + j and q + j + 1 (q = start // 8), shifted by the
    same amount for every j: each aligned word is read once, as the high part of word j and
    then the low part of word j + 1.
    """
    q = starts >> 3
    lo_shift = ((starts & 7) << 3).astype(np.uint64)
    hi_shift = np.uint64(63) - lo_shift          # hi << (64 - lo) as (hi << 1) << (63 - lo): no 64-bit shift
    return q, lo_shift, hi_shift


def _mix_tail(h: np.ndarray, word: np.ndarray, tail: np.ndarray, tmp: np.ndarray) -> None:
    """XOR in each value's 1-7 tail bytes and multiply, in place (values without a tail are left alone).

    The tail bytes XORed in at shifts 0..48 are exactly their masked little-endian word.
    """
    np.multiply(tail, np.uint64(8), out=tail)
    mask = np.left_shift(np.uint64(1), tail, out=tmp)
    np.subtract(mask, np.uint64(1), out=mask)
    np.bitwise_and(word, mask, out=word)
    has_tail = tail > 0
    np.bitwise_xor(h, word, out=h)
    np.multiply(h, M, out=h, where=has_tail)


def _finalize(h: np.ndarray, tmp: np.ndarray) -> None:
    """The final avalanche, in place: h ^= h >> r; h *= m; h ^= h >> r."""
    np.right_shift(h, R, out=tmp)
    np.bitwise_xor(h, tmp, out=h)
    np.multiply(h, M, out=h)
    np.right_shift(h, R, out=tmp)
    np.bitwise_xor(h, tmp, out=h)


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
