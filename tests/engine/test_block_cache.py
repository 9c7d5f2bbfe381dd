"""The block cache (cfile_set.FileCache) and the PK index blocks it holds: what an adversarial
review of the two-tier cache (issue 26) found wrong, each fixed."""
import pyarrow as pa

from tableformat.cfile_set import FILE_CACHE, FileCache

from helpers import kv


def _row_group_reads(monkeypatch) -> list:
    """The paths every ParquetFile.read_row_groups call decodes from now on."""
    import pyarrow.parquet as pq
    read = []
    orig = pq.ParquetFile.read_row_groups

    def spy(self, row_groups, *a, **kw):
        read.append(list(row_groups))
        return orig(self, row_groups, *a, **kw)
    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    return read


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
    reads = _row_group_reads(monkeypatch)
    for _ in range(3):                                  # only B from now on: A is cold
        assert b.lookup({"key": ["b01000"]}).column("val").to_pylist() == [1000]
    # the first lookup decodes the row group of b01000; the next two should find it cached
    assert len(reads) == 1, f"B's row group decoded {len(reads)} times: A's cold key files never leave"


def test_a_pk_index_is_not_cached_twice_by_blocks_and_whole(tmp_path):
    """An index cached whole (`#all`) after some of its blocks were cached alone (`#blk`) drops
    them: the same keys are never cached twice."""
    t = kv(tmp_path / "t", row_group_rows=128, pk_index_block_rows=64)
    keys = [f"k{i:05d}" for i in range(2000)]
    t.insert(pa.table({"key": keys, "val": list(range(2000))}))
    (rs,) = t.state.rowsets.values()
    FILE_CACHE.clear()
    assert t.lookup({"key": keys[::50]}).column("val").to_pylist() == list(range(0, 2000, 50))
    FILE_CACHE.drop(t.storage, [rs.pk_index.path + "#all"])
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
    t = kv(tmp_path / "t", row_group_rows=128, pk_index_block_rows=64)
    keys = [f"k{i:05d}" for i in range(2000)]
    t.insert(pa.table({"key": keys, "val": list(range(2000))}))
    (rs,) = t.state.rowsets.values()
    FILE_CACHE.clear()
    t.lookup({"key": keys[:1]})                                           # verified once
    FILE_CACHE.drop(t.storage, [rs.pk_index.path + "#all"])
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
