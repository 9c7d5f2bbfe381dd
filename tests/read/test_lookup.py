"""Table.lookup: rows by primary key through interval -> bloom -> PK index, the hit row groups only."""
import random

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf
from tableformat.format import cfile_set
from tableformat.format.cfile_set import FILE_CACHE

from helpers import kv, merge_all, metrics_partitioning, metrics_rows, metrics_schema, norm_value

KEY = ["host", "metric", "time"]


def rows(t):
    """Rows as dicts, NaN equal to NaN."""
    return [{k: norm_value(v) for k, v in r.items()} for r in (t if isinstance(t, list) else t.to_pylist())]


def by_scan(t, keys, as_of=None, columns=None):
    """What a lookup must return: the scan's rows for those keys, in key order of `keys`."""
    found = {tuple(r[k] for k in KEY): r for r in t.scan(as_of=as_of, columns=columns and
                                                       list(dict.fromkeys(KEY + list(columns)))).to_arrow()
            .to_pylist()}
    cols = columns or t.snapshot(as_of).schema.names
    return rows([{c: found[k][c] for c in cols} for k in (tuple(r[c] for c in KEY) for r in keys.to_pylist())
            if k in found])


@pytest.fixture
def loaded(metrics_table):
    t = metrics_table
    t.insert(metrics_rows(3000))
    return t


def test_lookup_returns_rows_in_input_order_and_omits_absent_keys(loaded):
    t = loaded
    data = metrics_rows(3000)
    pick = np.random.default_rng(1).permutation(3000)[:200]
    keys = data.select(KEY).take(pa.array(pick))
    absent = metrics_rows(20, start=5000).select(KEY)
    mixed = pa.concat_tables([keys.slice(0, 100), absent, keys.slice(100)])
    got = t.lookup(mixed)
    assert rows(got) == rows(data.take(pa.array(pick)))
    assert got.schema == t.scan().to_arrow().schema


def test_lookup_missing_null_gives_found_column(loaded):
    t = loaded
    data = metrics_rows(3000)
    absent = metrics_rows(2, start=7000).select(KEY)
    keys = pa.concat_tables([data.select(KEY).slice(10, 1), absent, data.select(KEY).slice(20, 1)])
    got = t.lookup(keys, columns=["host", "value"], missing="null")
    assert got.column_names == ["host", "value", "_found"]
    assert got.column("_found").to_pylist() == [True, False, False, True]
    assert got.column("host").to_pylist() == keys.column("host").to_pylist()   # the key is kept
    assert got.column("value").to_pylist()[1:3] == [None, None]
    assert got.column("value").to_pylist()[0] == data.column("value")[10].as_py() or \
        np.isnan(data.column("value")[10].as_py())


def test_duplicate_keys_come_back_twice(loaded):
    keys = metrics_rows(3000).select(KEY).take(pa.array([5, 9, 5]))
    got = loaded.lookup(keys, columns=["time"])
    assert got.column("time").to_pylist() == keys.column("time").to_pylist()


def test_keys_as_pandas_dict_and_list(loaded):
    data = metrics_rows(3000)
    keys = data.select(KEY).slice(40, 3)
    want = loaded.lookup(keys)
    assert want.num_rows == 3
    assert loaded.lookup(keys.to_pandas()).equals(want)
    assert loaded.lookup(keys.to_pydict()).equals(want)
    assert loaded.lookup(keys.to_pylist()).equals(want)
    assert loaded.lookup(keys.to_batches()[0]).equals(want)
    # extra columns in the keys are ignored
    assert loaded.lookup(data.slice(40, 3)).equals(want)


def test_lookup_sees_updates_deletes_and_reinserts_and_time_travel(tmp_path):
    """Model check against the scan at every version, before and after compaction and vacuum."""
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning(),
                        properties={"row_group_rows": 128})
    data = metrics_rows(2000)
    rng = np.random.default_rng(3)
    t.insert(data.slice(0, 1000))
    t.insert(data.slice(1000, 1000))
    t.update(data.slice(0, 300).select(KEY).append_column("value", pa.array(np.full(300, -1.0))))
    t.delete(data.slice(100, 50).select(KEY))
    t.insert(data.slice(100, 20))                                   # deleted, then inserted again
    t.update(data.slice(110, 5).select(KEY).append_column("tag", pa.array(["re"] * 5)))
    keys = data.select(KEY).take(pa.array(rng.permutation(2000)[:400]))
    keys = pa.concat_tables([keys, data.select(KEY).slice(95, 30)])
    expected = {v: by_scan(t, keys, v) for v in range(1, t.version + 1)}
    for v, want in expected.items():
        assert rows(t.lookup(keys, as_of=v)) == want, f"version {v}"
    t.compact(t.compaction_plan())
    by_tablet = {}
    for r in t.state.rowsets.values():
        by_tablet.setdefault(r.tablet, []).append(r.id)
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert t.state.history_horizon > 0
    FILE_CACHE.clear()
    for v, want in expected.items():
        assert rows(t.lookup(keys, as_of=v)) == want, f"version {v} after compaction and vacuum"
    assert rows(t.lookup(keys, columns=["value"])) == by_scan(t, keys, columns=["value"])


def test_random_history_lookup_matches_scan(tmp_path):
    rnd = random.Random(5)
    t = kv(tmp_path / "t", rowset_target_bytes=1 << 16, row_group_rows=128)
    keys = [f"k{i:03d}" for i in range(300)]
    live = {}
    for step in range(25):
        op = rnd.choice(["insert", "update", "delete", "merge"])
        if op == "insert":
            new = [k for k in rnd.sample(keys, 60) if k not in live]
            vals = [rnd.randint(0, 1000) for _ in new]
            t.insert(pa.table({"key": new, "val": vals}))
            live.update(zip(new, vals))
        elif op == "update" and live:
            ks = rnd.sample(sorted(live), min(30, len(live)))
            vals = [rnd.randint(0, 1000) for _ in ks]
            t.update(pa.table({"key": ks, "val": vals}))
            live.update(zip(ks, vals))
        elif op == "delete" and live:
            ks = rnd.sample(sorted(live), min(20, len(live)))
            t.delete(pa.table({"key": ks}))
            for k in ks:
                del live[k]
        elif op == "merge" and t.state.rowsets:
            merge_all(t)
        probe = rnd.sample(keys, 100)
        got = t.lookup({"key": probe}, columns=["key", "val"])
        assert got.to_pylist() == [{"key": k, "val": live[k]} for k in probe if k in live], f"step {step}"


def test_lookup_errors_leave_nothing_changed(loaded):
    t = loaded
    v = t.version
    with pytest.raises(tf.MissingColumnError, match="time"):
        t.lookup({"host": ["h001"], "metric": ["cpu"]})
    with pytest.raises(tf.TypeMismatchError, match="column 'time' is unixtime_micros; input has type string"):
        t.lookup({"host": ["h001"], "metric": ["cpu"], "time": ["not a time"]})
    with pytest.raises(tf.NullValueError,
                       match=r"lookup keys: key column 'host' has 1 NULL value\(s\); a primary key is never NULL"):
        t.lookup(pa.table({"host": pa.array([None], pa.string()), "metric": ["cpu"],
                           "time": pa.array([0], pa.timestamp("us", tz="UTC"))}))
    with pytest.raises(tf.UnknownScanColumnError,
                       match=r"lookup names unknown column\(s\) \['nope'\]; columns are \['host', 'metric', 'time'"):
        t.lookup(metrics_rows(1).select(KEY), columns=["nope"])
    with pytest.raises(tf.InvalidOptionError, match="missing must be one of 'omit', 'null', got str 'skip'"):
        t.lookup(metrics_rows(1).select(KEY), missing="skip")
    with pytest.raises(tf.InvalidDataError,
                       match="input must be a pyarrow Table, RecordBatch, RecordBatchReader, pandas"):
        t.lookup(42)
    with pytest.raises(tf.VersionNotFoundError, match=r"version 99 does not exist; versions are 0\.\.1"):
        t.lookup(metrics_rows(1).select(KEY), as_of=99)
    assert t.version == v


def test_empty_keys_and_empty_table(metrics_table, loaded):
    empty = metrics_rows(0).select(KEY)
    assert loaded.lookup(empty).num_rows == 0
    got = loaded.lookup(empty, missing="null")
    assert got.num_rows == 0 and "_found" in got.column_names
    assert metrics_table.lookup(metrics_rows(5).select(KEY), as_of=0).num_rows == 0


def _row_group_reads(monkeypatch) -> list:
    """The row groups every ParquetFile.read_row_groups call decodes from now on, in order."""
    import pyarrow.parquet as pq
    read = []
    orig = pq.ParquetFile.read_row_groups

    def spy(self, row_groups, *a, **kw):
        read.extend(row_groups)
        return orig(self, row_groups, *a, **kw)
    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    return read


def test_lookup_reads_only_the_row_groups_holding_hits(tmp_path, monkeypatch):
    t = kv(tmp_path / "t", row_group_rows=128)
    t.insert(pa.table({"key": [f"k{i:05d}" for i in range(5000)], "val": list(range(5000))}))
    FILE_CACHE.clear()
    read = _row_group_reads(monkeypatch)
    got = t.lookup({"key": ["k00007", "k04000", "k00009"]})
    assert got.column("val").to_pylist() == [7, 4000, 9]
    assert sorted(read) == [0, 4000 // 128]
    read.clear()
    t.lookup({"key": ["k00008"]})
    assert read == []                      # the block cache holds the decoded row group
    monkeypatch.setattr(tf.Table, "scan", lambda *a, **k: pytest.fail("lookup must not scan"))
    assert t.lookup({"key": ["k00010"]}).num_rows == 1


def test_snapshot_lookup_is_fixed(loaded):
    data = metrics_rows(3000)
    snap = loaded.snapshot()
    keys = data.select(KEY).slice(0, 5)
    loaded.delete(keys)
    assert snap.lookup(keys).num_rows == 5
    assert loaded.lookup(keys).num_rows == 0


def test_lookup_after_add_column_reads_defaults_and_old_versions_their_schema(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    with t.alter() as a:
        a.add_column("n", "int64", nullable=False, default=7)
    t.update(pa.table({"key": ["b"], "n": [8]}))
    assert t.lookup({"key": ["b", "a"]}, columns=["key", "n"]).to_pylist() == [{"key": "b", "n": 8},
                                                                               {"key": "a", "n": 7}]
    assert t.lookup({"key": ["a"]}, as_of=1).column_names == ["key", "val", "s"]


def test_lookup_of_no_columns_counts_the_keys_found(loaded):
    """columns=[] is an existence check: no columns, one row per key found (a key given twice counts twice)."""
    data = metrics_rows(3000)
    keys = pa.concat_tables([data.select(KEY).take(pa.array([3, 8, 3])), metrics_rows(2, start=9000).select(KEY)])
    got = loaded.lookup(keys, columns=[])
    assert got.num_columns == 0 and got.num_rows == 3
    got = loaded.lookup(keys, columns=[], missing="null")
    assert got.column_names == ["_found"] and got.column("_found").to_pylist() == [True, True, True, False, False]


def test_a_load_leaves_its_pk_index_as_a_lookup_reads_it(tmp_path):
    """The insert leaves each rowset's PK index in the process cache, equal to what reading the
    file gives (keys and block layout), so the first lookup after a load reads no index."""
    from tableformat.format.diskrowset import _block_layout, pk_block_first_keys, read_pk_index
    from tableformat.format.cfile_set import parquet_file
    t = kv(tmp_path / "t", pk_index_block_rows=64)
    FILE_CACHE.clear()
    t.insert(pa.table({"key": [f"k{i:05d}" for i in range(1000)], "val": list(range(1000))}))
    t.insert(pa.table({"key": ["z1", "z2"], "val": [1, 2]}))                 # fewer keys than a block
    for rs in t.state.rowsets.values():
        cached_keys, cached_layout = read_pk_index(t.storage, rs), pk_block_first_keys(t.storage, rs)
        FILE_CACHE.clear()
        assert read_pk_index(t.storage, rs).equals(cached_keys)
        assert _block_layout(parquet_file(t.storage, rs.pk_index)) == cached_layout
    assert t.lookup({"key": ["k00007", "z2"]}).column("val").to_pylist() == [7, 2]


def test_a_load_leaves_its_row_groups_as_a_lookup_reads_them(tmp_path, monkeypatch):
    """The insert leaves each rowset's non-key row groups in the block cache, equal to what
    decoding the base file gives, so the first lookup after a load decodes nothing; a rowset
    larger than its share of the cache is left out (it would push the PK indexes out)."""
    t = kv(tmp_path / "t", row_group_rows=128)
    FILE_CACHE.clear()
    data = pa.table({"key": [f"k{i:05d}" for i in range(1000)], "val": list(range(1000)),
                     "s": [None if i % 7 == 0 else f"s{i}" for i in range(1000)]})
    t.insert(data)
    read = _row_group_reads(monkeypatch)
    keys = {"key": ["k00999", "k00000", "k00500", "k00130"]}
    warm = t.lookup(keys)
    assert read == []
    FILE_CACHE.clear()
    cold = t.lookup(keys)
    assert sorted(read) == [0, 1, 3, 7]
    assert warm.equals(cold) and warm.column("val").to_pylist() == [999, 0, 500, 130]
    monkeypatch.setattr(FILE_CACHE, "max_bytes", 16)       # the rowset's data is over its share
    put = FILE_CACHE.put
    cached = []
    monkeypatch.setattr(FILE_CACHE, "put", lambda s, path, *a, **k: (cached.append(path), put(s, path, *a, **k)))
    t.insert(pa.table({"key": ["z1", "z2"], "val": [1, 2], "s": ["a", "b"]}))
    assert cached and not [p for p in cached if "#written" in p or "#rg" in p]
    read.clear()
    assert t.lookup({"key": ["z2"]}).column("val").to_pylist() == [2]
    assert read == [0]


def test_a_load_pushes_nothing_out_of_the_block_cache(tmp_path, monkeypatch):
    """A load's row groups go to the cache only into its free space: what is cached already
    (here another rowset's PK index and row groups) stays."""
    second = pa.table({"key": [f"b{i:04d}" for i in range(500)], "val": list(range(500))})
    FILE_CACHE.clear()
    kv(tmp_path / "scratch", row_group_rows=128).insert(second)
    key_files = sum(b for k, (_, b) in FILE_CACHE._items.items() if "#written" not in k[1])
    t = kv(tmp_path / "t", row_group_rows=128)
    t.insert(pa.table({"key": [f"a{i:04d}" for i in range(500)], "val": list(range(500))}))
    before = dict(FILE_CACHE._items)
    monkeypatch.setattr(FILE_CACHE, "max_bytes", FILE_CACHE._bytes + key_files)   # room for the key files only
    t.insert(second)
    assert set(before) <= set(FILE_CACHE._items)
    assert not [k for k in FILE_CACHE._items if k not in before and ("#written" in k[1] or "#rg" in k[1])]


LOOKUP_TYPES = ["bool", "int8", "int16", "int32", "int64", "float", "double", "date", "unixtime_micros",
                "string", "varchar(8)", "binary", "decimal(9,2)", "decimal(18,2)", "decimal(38,10)"]


def test_a_loads_cached_row_groups_read_as_the_files_do_for_every_type(tmp_path):
    """What a load leaves in the block cache is what decoding its base file gives, for every
    column type and with NULLs and NaN: the first (warm) lookup and one after the cache is
    emptied return equal rows of equal types."""
    import datetime as dt
    import decimal
    n = 600
    rng = np.random.default_rng(3)
    cols = [tf.Column("k", "int64")] + [tf.Column(f"c{i}", ty, nullable=True) for i, ty in enumerate(LOOKUP_TYPES)]
    t = tf.create_table(str(tmp_path / "t"), tf.Schema(cols, primary_key="k"), properties={"row_group_rows": 128})

    def values(ty):
        ints = rng.integers(-100, 100, n)
        if ty == "bool":
            return [bool(v % 2) for v in ints]
        if ty in ("float", "double"):
            return [float("nan") if v % 11 == 0 else -0.0 if v % 13 == 0 else v / 7 for v in ints]
        if ty == "date":
            return [dt.date(2020, 1, 1) + dt.timedelta(days=int(v)) for v in ints]
        if ty == "unixtime_micros":
            return [dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=int(v) * 999)
                    for v in ints]
        if ty in ("string", "varchar(8)"):
            return [f"s{v}" for v in ints]
        if ty == "binary":
            return [bytes([v % 256]) * (v % 5) for v in ints]
        if ty.startswith("decimal"):
            return [decimal.Decimal(int(v)).scaleb(-2) for v in ints]
        return [int(v) for v in ints]
    data = {"k": list(range(n))}
    for i, ty in enumerate(LOOKUP_TYPES):
        data[f"c{i}"] = [None if j % 9 == i % 9 else v for j, v in enumerate(values(ty))]
    FILE_CACHE.clear()
    t.insert(data)
    keys = {"k": [599, 0, 130, 131, 7, 300, 1000]}
    warm = t.lookup(keys, missing="null")
    FILE_CACHE.clear()
    cold = t.lookup(keys, missing="null")
    assert warm.schema == cold.schema
    assert rows(warm) == rows(cold)
    assert warm.column("_found").to_pylist() == [True] * 6 + [False]


def test_a_loads_cached_columns_leave_the_cache_first(tmp_path):
    """Past the cache's size a load's columns go before any other entry, even one used less
    recently (a PK index, a decoded row group): at sizes past the cache, caching them never
    costs lookups what they read."""
    from tableformat.format.cfile_set import FileCache
    t = kv(tmp_path / "t")
    cache = FileCache(max_bytes=100)
    cache.put(t.storage, "pk", "index", 40)
    cache.put(t.storage, "written", "columns", 40, first_out=True)
    assert cache.get(t.storage, "written") == "columns"     # used: still the first to go
    cache.put(t.storage, "rg", "row group", 40)
    assert cache.get(t.storage, "pk") == "index" and cache.get(t.storage, "rg") == "row group"
    assert cache.get(t.storage, "written") is None and cache._bytes == 80
    cache.put(t.storage, "rg2", "row group", 40)              # then least recently used, as before
    assert cache.get(t.storage, "pk") is None and cache.get(t.storage, "rg2") == "row group"


def test_a_loads_cached_columns_do_not_share_the_callers_memory(tmp_path):
    """Arrow wraps NumPy (and pandas) columns without a copy: the columns a load leaves in the
    block cache must be the engine's own, or a caller reusing its array after the insert changes
    what lookups return (the base file, and a scan, hold the inserted values)."""
    t = tf.create_table(str(tmp_path / "t"), tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double", nullable=True)],
                                                       primary_key="k"))
    FILE_CACHE.clear()
    v = np.arange(1000, dtype=np.float64)
    t.insert(pa.table({"k": np.arange(1000), "v": v}))
    v[:] = -1.0                                  # the caller reuses its buffer for the next batch
    assert t.lookup({"k": [5, 999]}).column("v").to_pylist() == [5.0, 999.0]
    assert t.scan().to_arrow().column("v").to_pylist()[5] == 5.0


def test_decoded_row_groups_never_push_a_pk_index_out(tmp_path, monkeypatch):
    """Key files outrank data in the block cache: lookups whose row groups overflow it evict
    other row groups, never a PK index or a bloom filter, so the next lookup reads no index
    (at 16M rows row groups once pushed the indexes out and every lookup re-read them)."""
    t = kv(tmp_path / "t", row_group_rows=128, pk_index_block_rows=64)
    FILE_CACHE.clear()
    keys = [f"k{i:05d}" for i in range(2000)]
    t.insert(pa.table({"key": keys, "val": list(range(2000))}))
    FILE_CACHE.drop(t.storage, [f.path + "#written" for rs in t.state.rowsets.values() for f in rs.base])
    assert t.lookup({"key": ["k00001"]}).column("val").to_pylist() == [1]     # reads the footer once
    index = {k for k in FILE_CACHE._items if "#rg" not in k[1] or "#rg_bounds" in k[1]}
    assert any("#all" in k[1] for k in index) and any(k[1].endswith("bloom.bin") for k in index)
    room = sum(FILE_CACHE._items[k][1] for k in index) + 4096                 # and ~2 row groups
    monkeypatch.setattr(FILE_CACHE, "max_bytes", room)
    monkeypatch.setattr(cfile_set, "INDEX_SHARE", 1.0)        # the key files' share: all they hold
    read = _row_group_reads(monkeypatch)
    for lo in list(range(0, 2000, 250)) * 2:                       # every row group, twice over
        got = t.lookup({"key": keys[lo:lo + 250:7]})
        assert got.column("val").to_pylist() == list(range(lo, min(lo + 250, 2000), 7))
        assert index <= set(FILE_CACHE._items)
    assert len(read) > 2000 // 128          # row groups did overflow the cache and were read again


def test_file_cache_evicts_data_before_key_files(tmp_path, monkeypatch):
    """A data entry (a decoded row group) never evicts a key file's entry; a key file's entry
    evicts data first, then the least recently used key file. Past their share of the cache
    the least recently used key files become data entries."""
    from tableformat.format.cfile_set import FileCache
    monkeypatch.setattr(cfile_set, "INDEX_SHARE", 1.0)
    t = kv(tmp_path / "t")
    cache = FileCache(max_bytes=100)
    cache.put(t.storage, "pk", "index", 40, index=True)
    cache.put(t.storage, "bloom", "filter", 40, index=True)
    cache.put(t.storage, "rg0", "row group", 40)              # no room: it goes, not a key file
    assert cache.get(t.storage, "rg0") is None and cache._bytes == 80
    assert cache.get(t.storage, "pk") == "index" and cache.get(t.storage, "bloom") == "filter"
    cache.put(t.storage, "rg1", "row group", 10)
    cache.put(t.storage, "pk2", "index", 40, index=True)      # evicts the row group, then the oldest key file
    assert cache.get(t.storage, "rg1") is None and cache.get(t.storage, "pk") is None
    assert cache.get(t.storage, "bloom") == "filter" and cache.get(t.storage, "pk2") == "index"
    assert cache._bytes == 80
    cache.put(t.storage, "huge", "index", 500, index=True)    # larger than the cache: kept alone
    assert cache.get(t.storage, "huge") == "index" and cache._bytes == 500
    monkeypatch.setattr(cfile_set, "INDEX_SHARE", 0.5)
    cache = FileCache(max_bytes=100)
    cache.put(t.storage, "pk", "index", 30, index=True)
    cache.put(t.storage, "bloom", "filter", 30, index=True)   # 60 > 50: the oldest key file is data now
    assert list(cache._index) == [(t.storage.protocol, t.storage.path("bloom"), None)]
    cache.put(t.storage, "rg", "row group", 45)                # so a row group may evict it
    assert cache.get(t.storage, "pk") is None and cache.get(t.storage, "rg") == "row group"
    assert cache.get(t.storage, "bloom") == "filter" and cache._bytes == 75


def test_a_verified_pk_index_is_read_by_block_once_out_of_the_cache(tmp_path, monkeypatch):
    """A format-3 PK index is checked whole once; after its keys leave the cache a lookup
    reads only the index blocks it needs (one row group each), with no second whole read."""
    import tableformat.format.diskrowset as drs
    t = kv(tmp_path / "t", row_group_rows=128, pk_index_block_rows=64)
    keys = [f"k{i:05d}" for i in range(2000)]
    t.insert(pa.table({"key": keys, "val": list(range(2000))}))
    (rs,) = t.state.rowsets.values()
    assert rs.pk_index.crc32 is not None
    FILE_CACHE.clear()
    whole = []
    orig = drs.verified_parquet_file
    monkeypatch.setattr(drs, "verified_parquet_file", lambda s, ref, kind: (whole.append(ref.path), orig(s, ref, kind))[1])
    assert t.lookup({"key": keys[::50]}).column("val").to_pylist() == list(range(0, 2000, 50))
    assert whole == [rs.pk_index.path]                          # checked whole, once
    FILE_CACHE.drop(t.storage, [rs.pk_index.path + "#all"])     # the index's keys leave the cache
    read = _row_group_reads(monkeypatch)
    assert t.lookup({"key": ["k01000", "k01999", "k00003"]}).column("val").to_pylist() == [1000, 1999, 3]
    assert whole == [rs.pk_index.path]                          # no second whole read
    assert read == [3 // 64, 1000 // 64, 1999 // 64]            # three index blocks (the rows are cached)
    assert t.lookup({"key": ["k01000", "k01999"]}).column("val").to_pylist() == [1000, 1999]
    assert read == [0, 15, 31]                                  # the blocks stayed cached
