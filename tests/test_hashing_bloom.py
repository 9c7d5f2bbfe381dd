"""MurmurHash2_64 (Kudu's partition hash) and the PK bloom filter."""
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

import tableformat as tf
from tableformat.bloom import BloomFilter
from tableformat.hashing import murmur2_64, murmur2_64_bytes


def test_kudu_test_vectors():
    # From Kudu's hash_util-test.cc
    assert murmur2_64_bytes(b"ab", 0) == 7115271465109541368
    assert murmur2_64_bytes(b"abcdefg", 0) == 2601573339036254301
    assert murmur2_64_bytes(b"quick brown fox", 42) == 3575930248840144026
    got = murmur2_64(pa.array([b"ab", b"abcdefg"], pa.binary()), 0)
    assert got.tolist() == [7115271465109541368, 2601573339036254301]
    assert murmur2_64(pa.array([b"quick brown fox"]), 42).tolist() == [3575930248840144026]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=50), st.integers(0, 2**32 - 1),
       st.integers(0, 5))
def test_vectorized_equals_scalar(values, seed, offset):
    arr = pa.array([b"pad"] * offset + values, pa.binary()).slice(offset)
    assert murmur2_64(arr, seed).tolist() == [murmur2_64_bytes(v, seed) for v in values]


def test_long_and_mixed_lengths_over_chunks():
    rng = np.random.default_rng(0)
    values = [rng.bytes(int(n)) for n in rng.integers(0, 300, 70_000)]
    got = murmur2_64(pa.array(values, pa.binary()))
    idx = rng.integers(0, len(values), 300)
    assert all(int(got[i]) == murmur2_64_bytes(values[i]) for i in idx)


def test_bloom_has_no_false_negatives_and_low_fp():
    keys = pa.array([b"key-%08d" % i for i in range(50_000)])
    bf = BloomFilter.build(keys)
    assert bf.may_contain(keys).all()
    others = pa.array([b"other-%08d" % i for i in range(200_000)])
    fp = bf.may_contain(others).mean()
    assert fp < 0.001  # target 0.0001
    assert bf.num_hashes == 13
    assert 19 <= bf.num_bits / 50_000 <= 19.5


def test_bloom_round_trip_and_corruption():
    bf = BloomFilter.build(pa.array([b"a", b"b"]))
    data = bf.to_bytes()
    again = BloomFilter.from_bytes(data)
    assert again.may_contain(pa.array([b"a", b"b"])).all()
    with pytest.raises(tf.CorruptFileError, match="truncated"):
        BloomFilter.from_bytes(data[:-3], "x.bin")
    with pytest.raises(tf.CorruptFileError):
        BloomFilter.from_bytes(b"garbage" * 10, "x.bin")
