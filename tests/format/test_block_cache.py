"""The block cache (cfile_set.FileCache) and the PK index blocks it holds: what reviews of the
two-tier cache found wrong, each fixed."""
import pyarrow as pa

from tableformat.format import cfile_set
from tableformat.format.cfile_set import FILE_CACHE, FileCache

from helpers import kv, row_group_reads

KEYS = [f"k{i:05d}" for i in range(2000)]


def _index_out_of_cache(tmp_path, drop=("#all",), first=KEYS[:1]):
    """A 2,000-key rowset (blocks of 64 keys, row groups of 128 rows) whose PK index was read and
    verified whole once, by a lookup of `first`, then left the cache (`drop`: its entries gone,
    by suffix)."""
    t = kv(tmp_path / "t", row_group_rows=128, pk_index_block_rows=64)
    t.insert(pa.table({"key": KEYS, "val": list(range(2000))}))
    (rs,) = t.state.rowsets.values()
    FILE_CACHE.clear()
    assert t.lookup({"key": first}).column("val").to_pylist() == [int(k[1:]) for k in first]
    FILE_CACHE.drop(t.storage, [rs.pk_index.path + d for d in drop])
    return t, rs


def test_a_data_entry_that_cannot_fit_does_not_flush_the_data_entries_that_do(tmp_path):
    """A data entry larger than the room the key files leave is not cached, and evicts nothing
    (it evicted every older row group, then itself)."""
    t = kv(tmp_path / "t")
    cache = FileCache(max_bytes=100)
    cache.put(t.storage, "pk", "index", 70, index=True)
    cache.put(t.storage, "rg0", "row group 0", 10)
    cache.put(t.storage, "rg1", "row group 1", 10)
    cache.put(t.storage, "rg-big", "a row group larger than the room left", 40)
    assert cache.get(t.storage, "rg-big") is None                  # it cannot fit: not kept (fine)
    assert cache.get(t.storage, "pk") == "index"
    # but the two row groups that did fit were thrown away for it
    assert cache.get(t.storage, "rg0") == "row group 0", "rg0 evicted by an entry that was not kept"
    assert cache.get(t.storage, "rg1") == "row group 1", "rg1 evicted by an entry that was not kept"
    assert cache._bytes == 90


def test_cold_key_files_of_a_table_no_longer_read_starve_the_row_groups_of_the_one_in_use(tmp_path, monkeypatch):
    """The key-file tier holds at most its share of the cache (RocksDB's high_pri_pool_ratio):
    key files a process read once (another table, rowsets a merge replaced, a lookup as of an
    old version) do not stay ahead of every decoded row group for ever. Table A is read once,
    then only table B: B's row group, decoded once, stays cached."""
    a = kv(tmp_path / "a", row_group_rows=128, pk_index_block_rows=64)
    b = kv(tmp_path / "b", row_group_rows=128, pk_index_block_rows=64)
    a.insert(pa.table({"key": [f"a{i:06d}" for i in range(20000)], "val": list(range(20000))}))
    b.insert(pa.table({"key": [f"b{i:05d}" for i in range(2000)], "val": list(range(2000))}))
    FILE_CACHE.clear()
    assert a.lookup({"key": ["a000007"]}).column("val").to_pylist() == [7]
    assert b.lookup({"key": ["b00007"]}).column("val").to_pylist() == [7]
    index_bytes = sum(FILE_CACHE._items[k][1] for k in FILE_CACHE._index)
    # room for every key file read so far and a little (less than one decoded row group)
    monkeypatch.setattr(FILE_CACHE, "max_bytes", index_bytes + 64)
    reads = row_group_reads(monkeypatch)
    for _ in range(3):                                  # only B from now on: A is cold
        assert b.lookup({"key": ["b01000"]}).column("val").to_pylist() == [1000]
    # the first lookup decodes the row group of b01000; the next two should find it cached
    assert len(reads) == 1, f"B's row group decoded {len(reads)} times: A's cold key files never leave"


def test_a_pk_index_is_not_cached_twice_by_blocks_and_whole(tmp_path):
    """An index cached whole (`#all`) after some of its blocks were cached alone (`#blk`) drops
    them: the same keys are never cached twice."""
    keys = KEYS
    t, rs = _index_out_of_cache(tmp_path, first=keys[::50])
    assert t.lookup({"key": ["k01000", "k00003"]}).column("val").to_pylist() == [1000, 3]   # by block
    assert t.lookup({"key": keys[::20]}).column("val").to_pylist() == list(range(0, 2000, 20))  # whole
    cached = [k[1] for k in FILE_CACHE._items if rs.pk_index.path in k[1]]
    assert any(p.endswith("#all") for p in cached)
    dup = [p for p in cached if "#blk" in p]
    assert not dup, f"PK index keys cached twice: #all and {dup}"


def test_a_cached_pk_block_holds_only_its_own_keys(tmp_path):
    """Blocks read together (read_row_groups returns them as one chunk, pyarrow 26) are cached
    as copies of their own: a zero-copy slice kept the whole read alive while the cache counted
    the slice."""
    t, rs = _index_out_of_cache(tmp_path)
    t.lookup({"key": ["k00003", "k00700", "k01400", "k01999"]})           # four blocks, one read
    blk = {k: v for k, v in FILE_CACHE._items.items() if "#blk" in k[1]}
    assert len(blk) == 4
    for k, (arr, nbytes) in blk.items():
        held = arr.get_total_buffer_size()
        assert held <= 2 * nbytes, f"{k[1]}: charged {nbytes} bytes, keeps {held} alive"


def test_row_groups_decoded_together_are_cached_as_their_own_copies(tmp_path):
    """A lookup's row groups decoded in one read are cached each as its own copy (the `#rg`
    entries), so an entry keeps alive only what the cache counts for it."""
    t = kv(tmp_path / "t", row_group_rows=128)
    t.insert(pa.table({"key": [f"k{i:05d}" for i in range(2000)], "val": list(range(2000)),
                       "s": [f"s{i}" for i in range(2000)]}))
    FILE_CACHE.clear()
    assert t.lookup({"key": ["k00003", "k00700", "k01999"]}).column("val").to_pylist() == [3, 700, 1999]
    rg = {k: v for k, v in FILE_CACHE._items.items() if "#rg" in k[1] and "#rg_bounds" not in k[1]}
    assert len(rg) == 6                                           # 3 row groups x 2 columns
    for k, (arr, nbytes) in rg.items():
        assert arr.get_total_buffer_size() <= 2 * nbytes, k[1]


def test_a_demoted_key_file_that_is_read_again_is_not_evicted_before_a_cold_one(tmp_path, monkeypatch):
    """A key file demoted by INDEX_SHARE and read again goes back to its tier, as RocksDB
    re-inserts a high-priority entry on a hit: B's index, read by every lookup, is never evicted
    by B's own row groups while A's, never read again, stays protected (it stayed a data entry
    for good: get() only moved it within the data tier)."""
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
    """An index cached whole while another lookup reads its blocks ends with #all alone, never
    the same keys twice (both stayed: _cache_whole_index dropped #blk before caching #all, and
    read_pk_blocks checked #all only before its read). Run deterministically: the whole index
    is loaded while the blocks' row groups are being decoded."""
    import pyarrow.parquet as pq
    from tableformat.format import diskrowset
    t, rs = _index_out_of_cache(tmp_path)
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
    """Once verified, an index out of the cache costs a lookup the blocks it hits, even when its
    block layout entries (`#firsts`, `#layout`, the first key files demoted) left too: the
    layout comes from the footer, not a whole read and CRC check of the index."""
    from tableformat.format import diskrowset
    t, rs = _index_out_of_cache(tmp_path, drop=("#all", "#firsts", "#layout"))
    p = rs.pk_index.path
    assert FILE_CACHE.get(t.storage, p + "#verified", rs.pk_index.size) is True
    whole = []
    orig = diskrowset._load_verified_pk_index
    monkeypatch.setattr(diskrowset, "_load_verified_pk_index", lambda s, r: whole.append(r.id) or orig(s, r))
    assert t.lookup({"key": ["k01000"]}).column("val").to_pylist() == [1000]
    assert not whole, "a verified PK index read and checked whole again for one key's block layout"


def test_within_an_operation_a_data_entry_never_evicts_an_entry_the_operation_used(tmp_path):
    """Scan resistance: a lookup whose working set is larger than the cache keeps the part that
    fits (a data entry that would evict one of the lookup's own is not cached), where LRU under
    a cyclic pattern evicted each entry before its next use. Outside an operation: LRU."""
    t = kv(tmp_path / "t")
    cache = FileCache(max_bytes=100)
    cache.put(t.storage, "a", "A", 40)
    cache.put(t.storage, "b", "B", 40)
    with cache.operation():
        assert cache.get(t.storage, "a") == "A"
        cache.put(t.storage, "c", "C", 40)            # evicts b, unused by this operation
        cache.put(t.storage, "d", "D", 40)            # would evict a or c, both used: refused
        assert cache.get(t.storage, "d") is None
        assert (cache.get(t.storage, "a"), cache.get(t.storage, "b"), cache.get(t.storage, "c")) == ("A", None, "C")
    cache.put(t.storage, "d", "D", 40)                # the operation over: LRU again
    assert (cache.get(t.storage, "a"), cache.get(t.storage, "d")) == (None, "D")


def test_key_files_an_operation_uses_are_not_demoted_under_it(tmp_path, monkeypatch):
    """Within an operation the key files it used stay in their tier beyond its share, so its own
    decoded row groups never push them out (issue 39: at 16M rows the PK indexes filled the
    tier's share, and each warm lookup evicted and re-read one)."""
    monkeypatch.setattr(cfile_set, "INDEX_SHARE", 0.5)
    t = kv(tmp_path / "t")
    cache = FileCache(max_bytes=100)
    cache.put(t.storage, "pk1", "index 1", 30, index=True)
    cache.put(t.storage, "pk2", "index 2", 30, index=True)     # beyond the share: pk1 demoted
    with cache.operation():
        assert cache.get(t.storage, "pk1") == "index 1"
        assert cache.get(t.storage, "pk2") == "index 2"
        for i in range(4):
            cache.put(t.storage, f"rg{i}", f"row group {i}", 15)
        assert cache.get(t.storage, "pk1") == "index 1" and cache.get(t.storage, "pk2") == "index 2"
