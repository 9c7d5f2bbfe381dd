"""The search of a rowset by key (`read/keyprobe.py`): the PK index search and its vectorized binary search."""
import bisect

import numpy as np
import pyarrow as pa

from tableformat.format.cfile_set import FILE_CACHE

from helpers import kv


def test_pk_index_search_agrees_with_the_pk_index(tmp_path):
    from tableformat.read.keyprobe import rowids_by_bisection, rowids_in_rowset
    from tableformat.format.keyencoder import encode_keys
    t = kv(tmp_path / "t", pk_index_block_rows=64)
    t.insert(pa.table({"key": [f"k{i:05d}" for i in range(0, 6000, 2)], "val": list(range(3000))}))
    (rs,) = t.state.rowsets.values()
    probe_keys = encode_keys([pa.array([f"k{i:05d}" for i in range(0, 6000, 7)])], [t.schema.column("key").type])
    FILE_CACHE.clear()
    cold = rowids_by_bisection(t.storage, rs, probe_keys)     # first touch: the PK index path
    warm = rowids_by_bisection(t.storage, rs, probe_keys)     # then a binary search of it
    want = rowids_in_rowset(t.storage, rs, probe_keys)
    assert (cold == want).all() and (warm == want).all()
    assert (want >= 0).sum() == len(range(0, 6000, 14)) and (want[1::2] == -1).all()


def test_bisect_left_is_searchsorted_for_binary_keys():
    """The vectorized binary search of a sorted binary array gives numpy's left insertion point
    for every needle: below, between, equal to and above the haystack's keys, repeats, empty."""
    from tableformat.read.keyprobe import bisect_left
    rng = np.random.default_rng(4)
    for n in (0, 1, 2, 7, 300):
        hay = sorted({bytes(rng.integers(0, 4, int(rng.integers(0, 4))).astype(np.uint8)) for _ in range(n)})
        needles = [bytes(rng.integers(0, 4, int(rng.integers(0, 5))).astype(np.uint8)) for _ in range(200)] + hay[:3]
        for m in (1, 5, len(needles)):                   # a few keys (one by one) and many (vectorized)
            got = bisect_left(pa.array(hay, pa.binary()), pa.array(needles[:m], pa.binary()))
            assert got.tolist() == [bisect.bisect_left(hay, x) for x in needles[:m]]
