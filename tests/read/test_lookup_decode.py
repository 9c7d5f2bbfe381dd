"""What a lookup decodes of the row groups holding its hits, and what it leaves cached (issue 39)."""
import pyarrow as pa
import pyarrow.parquet as pq

from tableformat.format.cfile_set import FILE_CACHE
from tableformat.format.constants import field_name

from helpers import kv, row_group_reads

KEYS = [f"k{i:05d}" for i in range(2000)]
COLORS = ["red", "green", "blue", None]


def _table(tmp_path):
    t = kv(tmp_path / "t", row_group_rows=128, pk_index_block_rows=64)
    t.insert(pa.table({"key": KEYS, "val": list(range(2000)), "s": [COLORS[i % 4] for i in range(2000)]}))
    return t


def test_a_dictionary_string_column_is_cached_encoded_and_decoded_at_the_hits(tmp_path):
    """A low-cardinality string column (dictionary-encoded in its base file) is read as its
    dictionary indices: the cached row group holds them, and only the hit rows are decoded."""
    t = _table(tmp_path)
    t.update(pa.table({"key": ["k00005"], "s": ["violet"]}))
    FILE_CACHE.clear()
    want = ["k00003", "k00005", "k00700", "k01999", "k00002"]
    got = t.lookup({"key": want}, columns=["key", "val", "s"])
    assert got.schema.field("s").type == pa.string()
    assert got.to_pylist() == [{"key": k, "val": int(k[1:]), "s": "violet" if k == "k00005" else COLORS[int(k[1:]) % 4]}
                               for k in want]
    (rs,) = t.state.rowsets.values()
    (ref,) = rs.base
    s_id = t.state.schema.column("s").id
    piece = FILE_CACHE.get(t.storage, f"{ref.path}#rg0#{field_name(s_id)}", ref.size)
    assert piece is not None and pa.types.is_dictionary(piece.type), \
        f"row group 0 of 's' cached as {None if piece is None else piece.type}, not as its dictionary indices"


def test_decoded_row_groups_do_not_evict_the_delta_files_every_lookup_reads(tmp_path, monkeypatch):
    """Row groups a lookup decodes past the cache's room evict one another first: the rowset's
    delta files, read by every lookup of it, stay (at 4M rows they were evicted by each warm
    lookup's row groups and read again: a quarter of its CPU)."""
    t = _table(tmp_path)
    t.update(pa.table({"key": KEYS[::50], "val": [-1] * len(KEYS[::50])}))
    FILE_CACHE.clear()
    assert t.lookup({"key": ["k00000"]}).column("val").to_pylist() == [-1]      # deltas cached
    used = FILE_CACHE.max_bytes - FILE_CACHE.free_bytes
    monkeypatch.setattr(FILE_CACHE, "max_bytes", used + 4096)        # room for about one more row group
    reads = []
    orig = pq.ParquetFile.read

    def spy(self, *a, **kw):
        reads.append(kw.get("columns"))
        return orig(self, *a, **kw)
    monkeypatch.setattr(pq.ParquetFile, "read", spy)
    want = [KEYS[i] for i in range(0, 2000, 128)]                      # sixteen row groups decoded
    got = t.lookup({"key": want}).column("val").to_pylist()
    assert got == [-1 if i % 50 == 0 else i for i in range(0, 2000, 128)]
    assert not reads, f"delta file evicted by the lookup's own row groups and read again: {reads}"


def test_a_warm_lookup_of_the_same_keys_decodes_no_row_group_the_block_cache_could_not_keep(tmp_path, monkeypatch):
    """The row cache: the hit rows of a lookup whose row groups evicted one another in the block
    cache are kept, so looking the same keys up again decodes nothing (issue 39: at 16M rows
    the warm 1,000-key lookup decoded ~635 row groups again, slower than the first)."""
    t = _table(tmp_path)
    t.update(pa.table({"key": ["k00256"], "val": [-7]}))
    FILE_CACHE.clear()
    want = [KEYS[i] for i in range(0, 2000, 128)]                      # one hit in each of 16 row groups
    expect = [{"key": k, "val": -7 if k == "k00256" else int(k[1:]), "s": COLORS[int(k[1:]) % 4]} for k in want]
    assert t.lookup({"key": want[:1]}).to_pylist() == expect[:1]       # the key files cached
    used = FILE_CACHE.max_bytes - FILE_CACHE.free_bytes
    monkeypatch.setattr(FILE_CACHE, "max_bytes", used + 4096)          # room for about one row group
    assert t.lookup({"key": want}).to_pylist() == expect
    reads = row_group_reads(monkeypatch)
    assert t.lookup({"key": want[::-1]}).to_pylist() == expect[::-1]
    assert not reads, f"the warm lookup decoded row groups {reads} again"


def test_a_lookup_partly_in_the_row_cache_and_after_an_update_reads_current_values(tmp_path):
    """Cached hit rows are base values: a later update's deltas still apply to them, and keys
    not cached yet are decoded beside them."""
    t = _table(tmp_path)
    FILE_CACHE.clear()
    assert t.lookup({"key": ["k00001", "k01500"]}).column("val").to_pylist() == [1, 1500]
    t.update(pa.table({"key": ["k01500"], "val": [-1]}))
    got = t.lookup({"key": ["k01500", "k00001", "k00777"]}).column("val").to_pylist()
    assert got == [-1, 1, 777]


def test_a_row_cache_entry_holds_at_most_hit_rows_rows(tmp_path, monkeypatch):
    """Past HIT_ROWS, a base file column's entry keeps the latest lookup's hits alone: the row
    cache of a long-running process does not grow with every key it was asked for."""
    from tableformat.format import base_rows
    monkeypatch.setattr(base_rows, "HIT_ROWS", 4)
    t = _table(tmp_path)
    FILE_CACHE.clear()
    t.lookup({"key": ["k00001", "k00002"]})
    t.lookup({"key": ["k00003"]})
    t.lookup({"key": ["k00010", "k00011"]})
    (rs,) = t.state.rowsets.values()
    (ref,) = rs.base
    rowids, values = FILE_CACHE.rows.get(t.storage, f"{ref.path}#hits#{field_name(t.state.schema.column('val').id)}",
                                         ref.size)
    assert rowids.tolist() == [10, 11] and values.to_pylist() == [10, 11]


def test_a_lookup_hitting_more_than_hit_rows_rows_is_not_remembered(tmp_path, monkeypatch):
    """One big lookup does not fill the row cache with one entry past HIT_ROWS (review of issue 39)."""
    from tableformat.format import base_rows
    monkeypatch.setattr(base_rows, "HIT_ROWS", 4)
    t = _table(tmp_path)
    FILE_CACHE.clear()
    t.lookup({"key": [f"k{i:05d}" for i in range(1, 7)]})
    (rs,) = t.state.rowsets.values()
    (ref,) = rs.base
    key = f"{ref.path}#hits#{field_name(t.state.schema.column('val').id)}"
    assert FILE_CACHE.rows.get(t.storage, key, ref.size) is None
    assert t.lookup({"key": ["k00001", "k00006"]})["val"].to_pylist() == [1, 6]
