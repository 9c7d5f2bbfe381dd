"""MurmurHash2_64 (Kudu's partition hash) and the PK bloom filter."""
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

import tableformat as tf
from tableformat.format.bloom import BloomFilter
from tableformat.format.hashing import murmur2_64, murmur2_64_bytes


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


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=50), st.integers(0, 2**32 - 1), st.data())
def test_hash_of_value_prefixes_equals_scalar(values, seed, data):
    """lengths=... hashes the first lengths[i] bytes of each value, the array unsliced."""
    lengths = np.array([data.draw(st.integers(0, len(v))) for v in values], np.int64)
    got = murmur2_64(pa.array(values, pa.binary()), seed, lengths)
    assert got.tolist() == [murmur2_64_bytes(v[:n], seed) for v, n in zip(values, lengths.tolist())]


def test_hash_of_prefixes_over_chunks():
    rng = np.random.default_rng(4)
    values = [rng.bytes(int(n)) for n in rng.integers(0, 30, 140_000)]        # over two hash chunks
    lengths = np.array([rng.integers(0, len(v) + 1) for v in values], np.int64)
    got = murmur2_64(pa.array(values, pa.binary()), 5, lengths)
    picks = rng.integers(0, len(values), 300)
    assert [int(got[i]) for i in picks] == [murmur2_64_bytes(values[i][:int(lengths[i])], 5) for i in picks]


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
    with pytest.raises(tf.CorruptFileError, match=r"bloom filter file x\.bin is corrupt or truncated"):
        BloomFilter.from_bytes(b"garbage" * 10, "x.bin")


# --- split-block bloom filter (format version 4, spec §7) -------------------------------------

from tableformat.format.bloom import (SBBF_SALT, SEED, SplitBlockBloomFilter, read_bloom,  # noqa: E402
                                      sbbf_expected_fp_rate)


def _spec_bits(key: bytes, num_blocks: int) -> set[int]:
    """The bits spec §7 says a key sets, from its text alone (scalar, no numpy)."""
    h = murmur2_64_bytes(key, 0x2B7E151628AED2A6)
    block = ((h >> 32) * num_blocks) >> 32
    salts = [0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31]
    return {block * 256 + i * 32 + (((h & 0xFFFFFFFF) * s) % 2**32 >> 27) for i, s in enumerate(salts)}


def test_split_block_layout_is_the_spec():
    keys = [b"k%d" % i for i in range(40)]
    bf = SplitBlockBloomFilter.build(pa.array(keys, pa.binary()))
    assert bf.num_blocks == -(-40 * 27 // 256) == 5
    data = bf.to_bytes()
    assert data[:8] == b"TFBLOOM2" and int.from_bytes(data[8:16], "little") == 5
    assert int.from_bytes(data[16:24], "little") == SEED and len(data) == 24 + 32 * 5
    words = np.frombuffer(data, "<u4", offset=24)
    on = {w * 32 + b for w in range(len(words)) for b in range(32) if int(words[w]) >> b & 1}
    assert on == set().union(*(_spec_bits(k, 5) for k in keys))
    assert SBBF_SALT.tolist()[0] == 0x47B6137B


def test_split_block_no_false_negatives_and_fp_within_the_spec_bound():
    rng = np.random.default_rng(3)
    keys = pa.array([rng.bytes(int(n)) for n in rng.integers(1, 40, 100_000)], pa.binary())
    bf = SplitBlockBloomFilter.build(keys)
    assert bf.may_contain(keys).all()                     # every inserted key, one vectorized probe
    assert bf.num_blocks == -(-100_000 * 27 // 256)
    others = pa.array([b"\xff" + rng.bytes(24) for _ in range(1_000_000)], pa.binary())
    fp = bf.may_contain(others).mean()
    expected = sbbf_expected_fp_rate()
    assert 8.7e-5 < expected < 8.9e-5 < 1e-4                 # spec §7: about 8.8e-5, under Kudu's 0.0001
    assert fp <= 1.5e-4                                    # 1M probes: expected ~88, this allows ~150


def test_split_block_over_several_build_chunks_and_empty():
    keys = pa.array([b"x%06d" % i for i in range(150_000)], pa.binary())   # over two build chunks
    bf = SplitBlockBloomFilter.build(keys)
    assert bf.may_contain(keys).all() and bf.num_blocks == -(-150_000 * 27 // 256)
    assert SplitBlockBloomFilter.build(pa.array([], pa.binary())).num_blocks == 1
    assert not SplitBlockBloomFilter.build(pa.array([], pa.binary())).may_contain(keys).any()


def test_split_block_round_trip_and_corruption():
    bf = SplitBlockBloomFilter.build(pa.array([b"a", b"b"]))
    data = bf.to_bytes()
    again = read_bloom(data)
    assert isinstance(again, SplitBlockBloomFilter) and again.may_contain(pa.array([b"a", b"b"])).all()
    with pytest.raises(tf.CorruptFileError, match="truncated"):
        read_bloom(data[:-3], "x.bin")
    with pytest.raises(tf.CorruptFileError, match="truncated"):
        read_bloom(data[:20], "x.bin")
    with pytest.raises(tf.CorruptFileError, match="x.bin"):
        read_bloom(data[:16] + (1).to_bytes(8, "little") + data[24:], "x.bin")      # wrong seed
    with pytest.raises(tf.CorruptFileError, match="x.bin"):
        read_bloom(data[:8] + (0).to_bytes(8, "little") + data[16:24], "x.bin")     # no blocks
    classic = BloomFilter.build(pa.array([b"a", b"b"]))
    assert isinstance(read_bloom(classic.to_bytes()), BloomFilter)                  # told apart by the magic


def _kv(root):
    s = tf.Schema([tf.Column("k", "string"), tf.Column("v", "int64", nullable=True)], ["k"])
    return tf.create_table(str(root), s)


def _rows(ids):
    return pa.table({"k": [f"k{i:05d}" for i in ids], "v": list(ids)})


def test_tables_write_split_block_filters(tmp_path):
    t = _kv(tmp_path / "t")
    t.insert(_rows(range(1000)))
    (rs,) = t.state.rowsets.values()
    assert (tmp_path / "t" / rs.bloom.path).read_bytes()[:8] == b"TFBLOOM2"
    assert rs.bloom.size == 24 + 32 * -(-1000 * 27 // 256)


def test_version_3_classic_blooms_still_read(tmp_path, monkeypatch):
    """Rowsets written by the classic (format 1-3) filter keep answering key checks and check()."""
    import tableformat.format.diskrowset as drs
    from tableformat.format.cfile_set import FILE_CACHE
    root = tmp_path / "t"
    t = _kv(root)
    class Classic:                                                # the version-3 writer's filter
        @staticmethod
        def build(keys):
            return BloomFilter.build(keys)
    with monkeypatch.context() as m:
        m.setattr(drs, "SplitBlockBloomFilter", Classic)
        t.insert(_rows(range(0, 2000, 2)))
    (rs,) = t.state.rowsets.values()
    assert (root / rs.bloom.path).read_bytes()[:8] == b"TFBLOOM1"
    FILE_CACHE.clear()
    t2 = tf.open_table(str(root))
    with pytest.raises(tf.DuplicateKeyError,
                       match=r"1 key\(s\) already exist in table 't' \(first: 'k00010'\); use insert_ignore or"):
        t2.insert(_rows([10, 11]))
    assert t2.insert(_rows([11, 13])).inserted == 2                # absent keys pass the classic filter
    assert t2.insert_ignore(_rows([12, 15])).inserted == 1
    assert t2.check().ok and t2.scan().count() == 1003


def test_single_value_fast_path_equals_the_vectorized_hash():
    """A one-value array (a point lookup) is hashed by the scalar path: same hash as in a batch,
    for every length around the 8-byte words and for a slice of a longer array."""
    rng = np.random.default_rng(5)
    values = [bytes(rng.integers(0, 256, size=n, dtype=np.uint8)) for n in range(0, 40)]
    batch = murmur2_64(pa.array(values, pa.binary()), 7)
    for i, v in enumerate(values):
        assert murmur2_64(pa.array([v], pa.binary()), 7)[0] == batch[i]
        assert murmur2_64(pa.array(values, pa.binary()).slice(i, 1), 7)[0] == batch[i]


@pytest.mark.parametrize("length", [0, 3, 8, 13, 16, 26, 40])
def test_values_of_one_length_at_every_alignment_equal_scalar(length):
    """Values all of one length (fixed-width keys, a series' keys) take the path where each
    value's tail continues from its last word; every alignment of the values in the buffer."""
    rng = np.random.default_rng(length)
    for lead in range(8):
        values = [rng.bytes(length) for _ in range(37)]
        arr = pa.array([b"x" * lead] + values, pa.binary()).slice(1)
        assert murmur2_64(arr, 99).tolist() == [murmur2_64_bytes(v, 99) for v in values], lead
        cut = np.full(len(values), max(0, length - 5), np.int64)        # uniform prefixes too
        assert murmur2_64(arr, 7, cut).tolist() == [murmur2_64_bytes(v[:int(n)], 7) for v, n in zip(values, cut)]
