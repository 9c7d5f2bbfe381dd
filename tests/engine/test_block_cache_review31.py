"""What a second adversarial review of the block cache (issue 26) found wrong, each fixed: the
tests state the case and what the cache must do."""
import pyarrow as pa

from tableformat import cfile_set
from tableformat.cfile_set import FILE_CACHE, FileCache

from helpers import kv


def test_a_demoted_key_file_that_is_read_again_is_not_evicted_before_a_cold_one(tmp_path, monkeypatch):
    """INDEX_SHARE demotes the least recently used key files when the tier overflows; a demoted
    key file read again goes back to its tier (it stayed a data entry for good: get() only moved
    it within the data tier). So a key file in use (B's index, loaded before A's)
    is evicted by B's own row group, while A's index, never read again, stays protected in the
    key-file tier: the inversion the share was added to prevent (issue 26: a PK index re-read
    and re-verified whole). RocksDB re-inserts a high-priority entry into its pool on a hit."""
    monkeypatch.setattr(cfile_set, "INDEX_SHARE", 0.9)
    t = kv(tmp_path / "t")
    c = FileCache(max_bytes=100)
    c.put(t.storage, "b/pkindex", "B's index", 45, index=True)
    c.put(t.storage, "a/pkindex", "A's index", 46, index=True)     # 91 > 90: B's (the LRU) demoted
    rereads = 0
    for i in range(3):                                             # from now on only B is read
        if c.get(t.storage, "b/pkindex") is None:                  # a lookup re-reads it whole
            rereads += 1
            c.put(t.storage, "b/pkindex", "B's index", 45, index=True)
        c.put(t.storage, f"b/rg{i}", "B's row group", 10)          # fits beside the key files (54)
    assert rereads == 0, "B's index, read by every lookup, was evicted by B's row group " \
                         "while A's, never read again, stayed in the key-file tier"


def test_blocks_read_while_another_thread_caches_the_index_whole_are_not_cached_beside_it(tmp_path, monkeypatch):
    """An index cached whole while another lookup reads its blocks ends with #all alone (it
    dropped #blk, then cached #all, while read_pk_blocks checked #all only before its read). A lookup reading blocks while
    another (pmap threads, or another query) loads the same index whole leaves both cached:
    the same keys twice, which the commit says never happens. Run here deterministically: the
    whole index is loaded while the blocks' row groups are being decoded."""
    import pyarrow.parquet as pq
    from tableformat import diskrowset
    t = kv(tmp_path / "t", row_group_rows=128, pk_index_block_rows=64)
    keys = [f"k{i:05d}" for i in range(2000)]
    t.insert(pa.table({"key": keys, "val": list(range(2000))}))
    (rs,) = t.state.rowsets.values()
    FILE_CACHE.clear()
    t.lookup({"key": keys[:1]})                                   # verified once
    FILE_CACHE.drop(t.storage, [rs.pk_index.path + "#all"])
    orig = pq.ParquetFile.read_row_groups
    fired = []

    def racing(self, row_groups, *a, **kw):
        out = orig(self, row_groups, *a, **kw)
        if not fired:
            fired.append(1)
            diskrowset.read_pk_index(t.storage, rs)                # the other thread: index whole
        return out
    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", racing)
    got = diskrowset.read_pk_blocks(t.storage, rs, [3, 7])
    assert len(got) == 128
    cached = [k[1] for k in FILE_CACHE._items if rs.pk_index.path in k[1]]
    assert any(p.endswith("#all") for p in cached)
    dup = [p for p in cached if "#blk" in p]
    assert not dup, f"PK index keys cached twice: #all and {dup}"


def test_a_verified_index_whose_layout_entries_left_is_not_read_whole_again(tmp_path, monkeypatch):
    """read_pk_blocks' promise: once verified, an index pushed out of the cache costs a lookup
    the blocks it hits, not a read and a check of the whole file. But the block layout comes
    from `#firsts`, else `#layout`, else _load_verified_pk_index (whole read + CRC) even when
    `#verified` is cached. With INDEX_SHARE, `#layout` (never read while `#firsts` is cached)
    is the first key file demoted and evicted, and `#firsts` (read before `#verified` on every
    lookup) leaves before `#verified`: a cold rowset's next lookup then re-reads its index whole.
    The footer (cached, or one ranged read) holds the layout of a verified file."""
    from tableformat import diskrowset
    t = kv(tmp_path / "t", row_group_rows=128, pk_index_block_rows=64)
    keys = [f"k{i:05d}" for i in range(2000)]
    t.insert(pa.table({"key": keys, "val": list(range(2000))}))
    (rs,) = t.state.rowsets.values()
    FILE_CACHE.clear()
    t.lookup({"key": keys[:1]})                                    # read and verified whole once
    p = rs.pk_index.path
    FILE_CACHE.drop(t.storage, [p + "#all", p + "#firsts", p + "#layout"])
    assert FILE_CACHE.get(t.storage, p + "#verified", rs.pk_index.size) is True
    whole = []
    orig = diskrowset._load_verified_pk_index
    monkeypatch.setattr(diskrowset, "_load_verified_pk_index", lambda s, r: whole.append(r.id) or orig(s, r))
    assert t.lookup({"key": ["k01000"]}).column("val").to_pylist() == [1000]
    assert not whole, "a verified PK index read and checked whole again for one key's block layout"
