"""Properties of the block cache: random lookups against a dict
model under a tiny, randomly sized block cache, and random FileCache operation sequences
checked against the cache's own invariants."""
import random

import pyarrow as pa
import pytest

from tableformat.format import cfile_set
from tableformat.format.cfile_set import FILE_CACHE, FileCache

from helpers import int_keyed, kv


def _invariants(c: FileCache):
    assert set(c._items) == set(c._data) | set(c._index)
    assert not (set(c._data) & set(c._index)), "an entry in both tiers"
    assert set(c._first_out) <= set(c._data)
    assert c._bytes == sum(n for _, n in c._items.values())
    assert c._index_bytes == sum(c._items[k][1] for k in c._index)
    assert c._bytes >= 0 and c._index_bytes >= 0


@pytest.mark.parametrize("seed", range(40))
def test_random_file_cache_operations_keep_the_books(tmp_path, seed, monkeypatch):
    rng = random.Random(seed)
    t = kv(tmp_path / "t")
    monkeypatch.setattr(cfile_set, "INDEX_SHARE", rng.choice([0.5, 0.9, 1.0]))
    c = FileCache(max_bytes=rng.randint(20, 300))
    paths = [f"f{i}/x{j}" for i in range(4) for j in range(6)]
    for _ in range(400):
        op = rng.random()
        p = rng.choice(paths)
        key = (t.storage.protocol, t.storage.path(p), None)
        inserted = False
        if op < 0.55:
            index = rng.random() < 0.5
            had = key in c._items
            c.put(t.storage, p, p, rng.randint(1, 120), index=index,
                  first_out=not index and rng.random() < 0.2)
            inserted = not had and key in c._items
        elif op < 0.8:
            c.get(t.storage, p)
        elif op < 0.9:
            c.drop(t.storage, [p.split("/")[0] + "/"])
        elif op < 0.95:
            c.max_bytes = rng.randint(20, 300)
        else:
            c.clear()
        _invariants(c)
        # after an entry goes in, the cap holds unless one key file alone is larger
        if inserted and len(c._index) > 1:
            assert c._bytes <= c.max_bytes, (seed, c._bytes, c.max_bytes)


def _key(i):
    # keys of several lengths, so byte order is not numeric order
    return f"k{i % 7}" + "x" * (i % 3) + f"{i:05d}"


@pytest.mark.parametrize("seed", range(12))
def test_random_lookups_under_a_tiny_block_cache_match_a_model(tmp_path, seed, monkeypatch):
    rng = random.Random(seed)
    t = kv(tmp_path / "t", pk_index_block_rows=16, row_group_rows=128)
    universe = [_key(i) for i in range(1500)]
    model = {}
    # a rowset of 1 row, a rowset of exactly one block, one of one block + 1, then random loads
    sizes = [1, 16, 17] + [rng.randint(1, 400) for _ in range(4)]
    free = list(universe)
    rng.shuffle(free)
    loads = []
    for n in sizes:
        ks, free = free[:n], free[n:]
        loads.append(ks)
        vals = [rng.randint(0, 10**6) for _ in ks]
        t.insert(pa.table({"key": ks, "val": vals, "s": [f"s{v}" for v in vals]}))
        model.update(zip(ks, vals))
    # deletes and updates
    dels = rng.sample(sorted(model), 40)
    t.delete(pa.table({"key": dels}))
    for k in dels:
        model.pop(k)
    upd = rng.sample(sorted(model), 40)
    vals = [rng.randint(0, 10**6) for _ in upd]
    t.update(pa.table({"key": upd, "val": vals}))
    model.update(zip(upd, vals))

    # each load's block first keys (every 16th in key order) and last keys: block edges
    edges = sorted({k for ks in loads for k in sorted(ks)[::16] + sorted(ks)[-2:]})

    for step in range(60):
        monkeypatch.setattr(FILE_CACHE, "max_bytes", rng.choice([2_000, 8_000, 30_000, 200_000, 1 << 30]))
        r = rng.random()
        if r < 0.2:
            FILE_CACHE.clear()
        elif r < 0.5:
            for rs in t.state.rowsets.values():
                FILE_CACHE.drop(t.storage, [rs.pk_index.path + "#all"])
        n = rng.choice([1, 2, 5, 17, 40, 300])
        probe = [rng.choice(universe if rng.random() < 0.6 else edges) for _ in range(n)]
        probe += rng.sample(probe, min(len(probe), 3))                       # duplicates
        probe += [rng.choice(["", "a", "k", "k0", "zzz", _key(99999)]) for _ in range(2)]   # outside
        rng.shuffle(probe)
        missing = rng.choice(["omit", "null"])
        got = t.lookup({"key": probe}, missing=missing)
        want = [(k, model.get(k)) for k in probe if missing == "null" or k in model]
        assert list(zip(got.column("key").to_pylist(), got.column("val").to_pylist())) == want, \
            f"seed {seed} step {step}"
        s = got.column("s").to_pylist()
        for (k, v), sv in zip(want, s):
            if v is not None and k not in upd:
                assert sv == f"s{v}"
        _invariants(FILE_CACHE)


@pytest.mark.parametrize("seed", range(6))
def test_random_lookups_of_int_and_composite_keys_through_merges_match_a_model(tmp_path, seed, monkeypatch):
    from helpers import merge_all
    rng = random.Random(1000 + seed)
    composite = seed % 2 == 1
    t, tbl = int_keyed(tmp_path / "t", composite, seed % 3 == 0,
                       {"pk_index_block_rows": 16, "row_group_rows": 128})

    universe = list(range(-300, 1200))
    model = {}
    for _ in range(8):
        ks = sorted(rng.sample(universe, rng.choice([1, 16, 17, 100, 300])))
        ks = [k for k in ks if k not in model]
        if not ks:
            continue
        vs = [rng.randint(0, 999) for _ in ks]
        t.insert(tbl(ks, vs))
        model.update(zip(ks, vs))
        if rng.random() < 0.3:
            d = rng.sample(sorted(model), min(len(model), 20))
            t.delete(tbl(d))
            for k in d:
                model.pop(k)
        if rng.random() < 0.3:
            merge_all(t)
    for step in range(40):
        monkeypatch.setattr(FILE_CACHE, "max_bytes", rng.choice([1_000, 5_000, 20_000, 1 << 30]))
        if rng.random() < 0.4:
            for rs in t.state.rowsets.values():
                FILE_CACHE.drop(t.storage, [rs.pk_index.path + "#all"])
        probe = [rng.choice(universe) for _ in range(rng.choice([1, 3, 20, 200]))]
        probe += probe[:2] + [-10**9, 10**9]
        missing = rng.choice(["omit", "null"])
        got = t.lookup(tbl(probe), missing=missing)
        want = [(k, model.get(k)) for k in probe if missing == "null" or k in model]
        assert list(zip(got.column("k").to_pylist(), got.column("a").to_pylist())) == want, f"seed {seed} step {step}"
        _invariants(FILE_CACHE)


@pytest.mark.parametrize("seed", range(6))
def test_random_writes_under_a_tiny_block_cache_match_a_model(tmp_path, seed, monkeypatch):
    """Writes find existing rows through rowids_in_rowset's block path (probe): upserts,
    updates, deletes and inserts of deleted keys with the whole indexes kept out of the cache."""
    import tableformat as tf
    rng = random.Random(2000 + seed)
    t = kv(tmp_path / "t", pk_index_block_rows=16, row_group_rows=128)
    universe = [_key(i) for i in range(800)]
    model = {}
    for _ in range(30):
        monkeypatch.setattr(FILE_CACHE, "max_bytes", rng.choice([1_000, 5_000, 20_000, 1 << 30]))
        for rs in t.state.rowsets.values():
            if rng.random() < 0.7:
                FILE_CACHE.drop(t.storage, [rs.pk_index.path + "#all"])
        ks = sorted(set(rng.sample(universe, rng.choice([1, 3, 30, 200]))))
        vs = [rng.randint(0, 999) for _ in ks]
        op = rng.choice(["upsert", "upsert", "update", "delete", "insert"])
        if op == "upsert":
            t.upsert(pa.table({"key": ks, "val": vs}))
            model.update(zip(ks, vs))
        elif op == "update":
            ks2 = [k for k in ks if k in model]
            if ks2:
                t.update(pa.table({"key": ks2, "val": [model[k] + 1 for k in ks2]}))
                for k in ks2:
                    model[k] += 1
        elif op == "delete":
            ks2 = [k for k in ks if k in model]
            if ks2:
                t.delete(pa.table({"key": ks2}))
                for k in ks2:
                    model.pop(k)
        else:
            new = [(k, v) for k, v in zip(ks, vs) if k not in model]
            if new:
                t.insert(pa.table({"key": [k for k, _ in new], "val": [v for _, v in new]}))
                model.update(new)
            dup = [k for k in ks if k in model][:1]
            if dup:
                with pytest.raises(tf.TableFormatError):
                    t.insert(pa.table({"key": dup, "val": [0]}))
        _invariants(FILE_CACHE)
    got = {r["key"]: r["val"] for r in t.scan().to_arrow().to_pylist()}
    assert got == model
    assert t.check().ok
