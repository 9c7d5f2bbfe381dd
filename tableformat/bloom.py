"""Bloom filter over a rowset's encoded primary keys (Kudu's PK bloom filter).

A key check probes the filter before the PK index, so most absent keys cost no
index read. Sizing follows Kudu's `--tablet_bloom_target_fp_rate` (0.0001):
about 19.2 bits per key and 13 probes. Probe i takes g = (h1 + i*h2) mod 2^32,
where h1/h2 are the low/high halves of a 64-bit hash of the encoded key, and
tests bit (g * nbits) >> 32. See `specs/format.md`, section "Bloom filter file".
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .errors import CorruptFileError
from .hashing import murmur2_64

MAGIC = b"TFBLOOM1"
SEED = 0x2B7E151628AED2A6   # fixed, distinct from the partition hash seed
DEFAULT_FP_RATE = 0.0001
_HEADER = struct.Struct("<8sIQQ")  # magic, num_hashes, num_bits, seed
_CHUNK = 1 << 16


def _positions(hashes: np.ndarray, num_hashes: int, num_bits: int) -> np.ndarray:
    """Bit positions: probe i maps g_i = (h1 + i*h2) mod 2^32 to (g_i * num_bits) >> 32.

    The multiply-shift range reduction (Lemire) replaces Kudu's `mod num_bits`,
    which costs a division per probe.
    """
    h1 = hashes & np.uint64(0xFFFFFFFF)
    h2 = hashes >> np.uint64(32)
    pos = np.multiply.outer(h2, np.arange(num_hashes, dtype=np.uint64))
    pos += h1[:, None]
    pos &= np.uint64(0xFFFFFFFF)
    pos *= np.uint64(num_bits)
    pos >>= np.uint64(32)
    return pos


@dataclass(frozen=True)
class BloomFilter:
    num_hashes: int
    num_bits: int
    bits: np.ndarray  # packed, little bit order

    @staticmethod
    def build(keys: pa.Array, fp_rate: float = DEFAULT_FP_RATE) -> "BloomFilter":
        n = max(1, len(keys))
        bits_per_key = -math.log(fp_rate) / (math.log(2) ** 2)
        num_bits = max(64, int(math.ceil(n * bits_per_key / 8.0)) * 8)
        num_hashes = max(1, int(round(bits_per_key * math.log(2))))
        bitmap = np.zeros(num_bits, dtype=bool)
        for start in range(0, len(keys), _CHUNK):
            h = murmur2_64(keys.slice(start, _CHUNK), SEED)
            bitmap[_positions(h, num_hashes, num_bits).ravel()] = True
        return BloomFilter(num_hashes, num_bits, np.packbits(bitmap, bitorder="little"))

    def may_contain(self, keys: pa.Array) -> np.ndarray:
        """Vectorized probe: False means certainly absent."""
        out = np.empty(len(keys), dtype=bool)
        for start in range(0, len(keys), _CHUNK):
            h = murmur2_64(keys.slice(start, _CHUNK), SEED)
            pos = _positions(h, self.num_hashes, self.num_bits)
            hit = (self.bits[pos >> np.uint64(3)] >> (pos & np.uint64(7)).astype(np.uint8)) & 1
            out[start:start + len(h)] = hit.all(axis=1)
        return out

    def to_bytes(self) -> bytes:
        return _HEADER.pack(MAGIC, self.num_hashes, self.num_bits, SEED) + self.bits.tobytes()

    @staticmethod
    def from_bytes(data: bytes, path: str = "<bloom>") -> "BloomFilter":
        if len(data) < _HEADER.size:
            raise CorruptFileError(f"bloom filter file {path} is truncated ({len(data)} bytes)")
        magic, k, nbits, seed = _HEADER.unpack_from(data)
        if magic != MAGIC or seed != SEED or len(data) != _HEADER.size + nbits // 8:
            raise CorruptFileError(f"bloom filter file {path} is corrupt or truncated")
        return BloomFilter(k, nbits, np.frombuffer(data, dtype=np.uint8, offset=_HEADER.size))

    @property
    def nbytes(self) -> int:
        return int(self.bits.nbytes)
