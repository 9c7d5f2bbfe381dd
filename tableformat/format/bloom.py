"""Bloom filters over a rowset's encoded primary keys (Kudu's PK bloom filter).

A key check probes the filter before the PK index, so most absent keys cost no
index read. Two kinds exist on disk, told apart by their magic (`specs/format.md` §7):

- `SplitBlockBloomFilter` (format version 4, magic `TFBLOOM2`), what writers write:
  Parquet's split-block filter. Each key touches one 32-byte block, one bit in
  each of its eight 32-bit words, so a build is one vectorized scatter and a
  probe one cache line per key.
- `BloomFilter` (versions 1-3, magic `TFBLOOM1`): the classic filter with 13
  probes spread over the whole bitmap; still read, no longer written.
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
    """The classic filter of format versions 1-3 (read; written only by old writers and tests)."""

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


# --- split-block bloom filter (format version 4) ---------------------------------------------

SBBF_MAGIC = b"TFBLOOM2"
SBBF_BITS_PER_KEY = 27   # expected false-positive rate 8.8e-5 (spec §7), under Kudu's 0.0001
SBBF_SALT = np.array([0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D,
                      0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31], dtype=np.uint32)  # Parquet's
_SBBF_HEADER = struct.Struct("<8sQQ")  # magic, num_blocks, seed


def sbbf_expected_fp_rate(bits_per_key: float = SBBF_BITS_PER_KEY) -> float:
    """Expected false-positive rate of a split-block filter: blocks hold Poisson(256 / bits_per_key)
    keys, and a block with j keys answers yes to an absent key with probability (1 - (31/32)^j)^8."""
    lam = 256.0 / bits_per_key
    p, total = math.exp(-lam), 0.0
    for j in range(0, 1024):
        if j:
            p *= lam / j
        total += p * (1.0 - (31.0 / 32.0) ** j) ** 8
    return total


def _sbbf_block_and_bits(h: np.ndarray, num_blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """Block index ((h >> 32) * num_blocks) >> 32, and the bit (0-31) of each of its 8 words:
    ((h mod 2^32) * salt[i] mod 2^32) >> 27."""
    block = ((h >> np.uint64(32)) * np.uint64(num_blocks)) >> np.uint64(32)
    bits = np.multiply.outer(h.astype(np.uint32), SBBF_SALT)
    bits >>= np.uint32(27)
    return block.astype(np.int64), bits


@dataclass(frozen=True)
class SplitBlockBloomFilter:
    """Parquet's split-block bloom filter over MurmurHash2_64 of the encoded key (spec §7)."""

    num_blocks: int
    words: np.ndarray  # uint32, num_blocks * 8, little-endian on disk

    @staticmethod
    def build(keys: pa.Array) -> "SplitBlockBloomFilter":
        return SplitBlockBloomFilter.from_hashes(murmur2_64(keys, SEED))

    @staticmethod
    def from_hashes(h: np.ndarray) -> "SplitBlockBloomFilter":
        """The filter of keys given by their MurmurHash2_64 (seed `SEED`): a streaming writer
        hashes each batch as it passes and keeps 8 bytes a key, not the keys.

        One word lane at a time: lane i's bits of every block are a bitmap of num_blocks * 32
        bits, set by one scatter and packed; eight scatters into a bitmap an eighth of the whole
        filter's stay in cache, where one scatter over the whole filter misses on every bit."""
        n = len(h)
        num_blocks = max(1, -(-n * SBBF_BITS_PER_KEY // 256))
        words = np.zeros((num_blocks, 8), dtype="<u4")
        if n:
            # positions as intp, what numpy indexes with: narrower ones are converted on every scatter
            base = h >> np.uint64(32)                       # in place from here: one array, not four
            base *= np.uint64(num_blocks)
            base >>= np.uint64(32)
            base <<= np.uint64(5)                           # bit 0 of the block's word in the lane
            base = base.view(np.intp)                       # under 2^37: the same numbers
            low = h.astype(np.uint32)
            lane = np.empty(num_blocks * 32, dtype=bool)    # one byte per bit: a plain scatter
            bit, pos = np.empty(n, np.uint32), np.empty(n, np.intp)
            for i in range(8):
                np.multiply(low, SBBF_SALT[i], out=bit)
                bit >>= np.uint32(27)
                np.add(base, bit, out=pos, casting="unsafe")
                lane[:] = False
                lane[pos] = True
                words[:, i] = np.packbits(lane, bitorder="little").view("<u4")
        return SplitBlockBloomFilter(num_blocks, words.ravel())

    def may_contain(self, keys: pa.Array) -> np.ndarray:
        """Vectorized probe: False means certainly absent."""
        out = np.empty(len(keys), dtype=bool)
        blocks = self.words.reshape(self.num_blocks, 8)
        for start in range(0, len(keys), _CHUNK):
            h = murmur2_64(keys.slice(start, _CHUNK), SEED)
            block, bits = _sbbf_block_and_bits(h, self.num_blocks)
            got = blocks[block]
            got >>= bits
            got &= np.uint32(1)
            out[start:start + len(h)] = got.min(axis=1).astype(bool)
        return out

    def to_bytes(self) -> bytes:
        return _SBBF_HEADER.pack(SBBF_MAGIC, self.num_blocks, SEED) + self.words.astype("<u4", copy=False).tobytes()

    @staticmethod
    def from_bytes(data: bytes, path: str = "<bloom>") -> "SplitBlockBloomFilter":
        if len(data) < _SBBF_HEADER.size:
            raise CorruptFileError(f"bloom filter file {path} is truncated ({len(data)} bytes)")
        magic, num_blocks, seed = _SBBF_HEADER.unpack_from(data)
        if magic != SBBF_MAGIC or seed != SEED or num_blocks < 1 or num_blocks >= 1 << 32 \
                or len(data) != _SBBF_HEADER.size + 32 * num_blocks:
            raise CorruptFileError(f"bloom filter file {path} is corrupt or truncated")
        return SplitBlockBloomFilter(num_blocks, np.frombuffer(data, dtype="<u4", offset=_SBBF_HEADER.size))

    @property
    def nbytes(self) -> int:
        return int(self.words.nbytes)


def read_bloom(data: bytes, path: str = "<bloom>") -> BloomFilter | SplitBlockBloomFilter:
    """Either kind, by its magic: version-4 writers write split-block filters, older ones classic."""
    if data[:8] == SBBF_MAGIC:
        return SplitBlockBloomFilter.from_bytes(data, path)
    return BloomFilter.from_bytes(data, path)
