"""Hash and range partitioning into tablets."""
import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf
from tableformat.format.hashing import murmur2_64_bytes
from tableformat.format.keyencoder import encode_key
from tableformat.format.partition import resolve

from helpers import metrics_rows


def schema():
    return tf.Schema([tf.Column("a", "string"), tf.Column("b", "int32"), tf.Column("c", "int64"),
                      tf.Column("v", "double", nullable=True)], primary_key=["a", "b", "c"])


@pytest.mark.parametrize("spec,msg", [
    (tf.PartitionSchema(hash=[tf.HashPartition(["v"], 4)]), "not a primary key"),
    (tf.PartitionSchema(hash=[tf.HashPartition(["a"], 1)]), "buckets"),
    (tf.PartitionSchema(hash=[tf.HashPartition(["a"], "4")]), "buckets"),
    (tf.PartitionSchema(hash=[tf.HashPartition(["a"], 2), tf.HashPartition(["a", "b"], 2)]), "two hash levels"),
    (tf.PartitionSchema(hash=[tf.HashPartition([], 2)]), "at least one"),
    (tf.PartitionSchema(range=tf.RangePartition(["v"])), "not a primary key"),
    (tf.PartitionSchema(range=tf.RangePartition(["b"], bounds=[(0, 10), (5, 20)])), "overlap"),
    (tf.PartitionSchema(range=tf.RangePartition(["b"], bounds=[(10, 0)])), "lower must be below"),
    (tf.PartitionSchema(range=tf.RangePartition(["b"], bounds=[(0, 10)], splits=[10])), "not strictly inside"),
    (tf.PartitionSchema(range=tf.RangePartition(["b"], bounds=[(0, 10)], splits=[0])), "not strictly inside"),
    (tf.PartitionSchema(range=tf.RangePartition(["b"], bounds=[(0, "x")])), "not a valid int32"),
    (tf.PartitionSchema(range=tf.RangePartition(["b", "c"], bounds=[(0, 5)])), "2 value"),
])
def test_bad_partitioning(spec, msg, tmp_path):
    with pytest.raises(tf.PartitionSchemaError, match=msg):
        resolve(spec, schema())
    with pytest.raises(tf.PartitionSchemaError,
                       match=("hash column|hash buckets must be|two hash levels|hash level needs|range column|"
                              "range bounds overlap|lower must be below upper|is not strictly inside any range bound|"
                              "upper bound for|lower bound 0 must give")):
        tf.create_table(str(tmp_path / "t"), schema(), partitioning=spec)
    assert not (tmp_path / "t" / "_log").exists()


def test_tablets_are_product_of_levels():
    p = resolve(tf.PartitionSchema(hash=[tf.HashPartition(["a"], 3), tf.HashPartition(["b"], 2)],
                                   range=tf.RangePartition(["c"], bounds=[(0, 100), (200, None)], splits=[50])),
                schema())
    assert len(p.ranges) == 3
    assert len(p.tablet_ids()) == 3 * 3 * 2
    assert len(set(p.tablet_ids())) == 18


def test_default_is_one_unbounded_range_on_the_key():
    p = resolve(None, schema())
    assert len(p.tablet_ids()) == 1
    assert p.range_column_ids == (0, 1, 2)


def test_assignment_matches_scalar_hash_and_bounds():
    s = schema()
    p = resolve(tf.PartitionSchema(hash=[tf.HashPartition(["a", "b"], 5, seed=7)],
                                   range=tf.RangePartition(["c"], bounds=[(None, 0), (0, None)], splits=[100])), s)
    rng = np.random.default_rng(3)
    t = pa.table({"a": [f"k{x}" for x in rng.integers(0, 50, 300)],
                  "b": pa.array(rng.integers(-5, 5, 300), pa.int32()),
                  "c": pa.array(rng.integers(-500, 500, 300), pa.int64()), "v": pa.nulls(300, pa.float64())})
    ordinal, ids = p.assign(s, t)
    at, bt = s.column("a").type, s.column("b").type
    for i in range(300):
        a, b, c = t["a"][i].as_py(), t["b"][i].as_py(), t["c"][i].as_py()
        bucket = murmur2_64_bytes(encode_key([a, b], [at, bt]), 7) % 5
        rng_pos = 0 if c < 0 else (1 if c < 100 else 2)
        assert ordinal[i] == rng_pos * 5 + bucket


def test_rows_outside_every_range_are_rejected_and_nothing_commits(tmp_path):
    s = schema()
    t = tf.create_table(str(tmp_path / "t"), s, partitioning=tf.PartitionSchema(
        range=tf.RangePartition(["c"], bounds=[(0, 10), (20, 30)])))
    bad = pa.table({"a": ["x", "y", "z"], "b": pa.array([1, 1, 1], pa.int32()),
                    "c": pa.array([5, 15, 25], pa.int64())})
    with pytest.raises(tf.NoRangePartitionError, match="1 rows fall in no range partition.*15"):
        t.insert(bad)
    assert t.version == 0
    assert t.scan().to_arrow().num_rows == 0
    assert not (tmp_path / "t" / "tablets").exists()


def test_metrics_table_spreads_rows_over_tablets(metrics_table):
    metrics_table.insert(metrics_rows(3000))
    st = metrics_table.state
    tablets = {r.tablet for r in st.rowsets.values()}
    assert len(tablets) == 8  # 4 buckets x 2 ranges
    # each tablet's rows really belong there
    for r in st.rowsets.values():
        assert r.tablet.startswith("r")


@pytest.mark.parametrize("distinct", [40, 30_000])
def test_buckets_of_repeating_and_distinct_values_match_the_scalar_hash(distinct):
    """Large batches whose hash columns repeat hash each distinct value once; the buckets are the same."""
    s = schema()
    p = resolve(tf.PartitionSchema(hash=[tf.HashPartition(["a", "b"], 7, seed=3)]), s)
    rng = np.random.default_rng(5)
    n = 20_000
    t = pa.table({"a": [f"k{x}" for x in rng.integers(0, distinct, n)],
                  "b": pa.array(rng.integers(-3, 3, n), pa.int32()),
                  "c": pa.array(np.arange(n), pa.int64()), "v": pa.nulls(n, pa.float64())})
    got = p.bucket_of(s, t, p.hash_levels[0])
    at, bt = s.column("a").type, s.column("b").type
    pairs = {(a, b) for a, b in zip(t["a"].to_pylist(), t["b"].to_pylist())}
    want = {k: murmur2_64_bytes(encode_key(list(k), [at, bt]), 3) % 7 for k in pairs}
    assert got.tolist() == [want[(a, b)] for a, b in zip(t["a"].to_pylist(), t["b"].to_pylist())]


@pytest.mark.parametrize("hash_cols,a_values", [(["a", "b"], ["k1", "k22", "host-3"]), (["a"], ["k1", "k22"]),
                                                (["a", "b", "c"], ["x", "yy"]), (["b"], ["k1"]),
                                                (["a", "b"], ["k\x001", "k2"])])
def test_buckets_from_encoded_keys_match_the_scalar_hash(hash_cols, a_values):
    """Given the rows' encoded keys, a level on a key prefix hashes a prefix of each key (no
    second encoding); a level on other columns, or a string with a 00 byte, encodes its own.
    Either way every bucket is the spec's: MurmurHash2_64 of the level's own encoding."""
    from tableformat.format.keyencoder import encode_keys
    s = schema()
    p = resolve(tf.PartitionSchema(hash=[tf.HashPartition(hash_cols, 5, seed=11)],
                                   range=tf.RangePartition(["a", "b", "c"], splits=[("k2", 0, 0)])), s)
    rng = np.random.default_rng(9)
    n = 3000
    t = pa.table({"a": np.array(a_values, dtype=object)[rng.integers(0, len(a_values), n)].tolist(),
                  "b": pa.array(rng.integers(-3, 3, n), pa.int32()),
                  "c": pa.array(rng.integers(-10**12, 10**12, n), pa.int64()), "v": pa.nulls(n, pa.float64())})
    kc = s.key_columns
    keys = encode_keys([t.column(c.name) for c in kc], [c.type for c in kc])
    ordinal, _ = p.assign(s, t, keys=keys)
    assert ordinal.tolist() == p.assign(s, t)[0].tolist()
    types = [s.column(c).type for c in hash_cols]
    for i in range(0, n, 97):
        row = [t[c][i].as_py() for c in hash_cols]
        range_pos = 0 if (t["a"][i].as_py(), t["b"][i].as_py(), t["c"][i].as_py()) < ("k2", 0, 0) else 1
        assert ordinal[i] == range_pos * 5 + murmur2_64_bytes(encode_key(row, types), 11) % 5


@pytest.mark.parametrize("run", [1, 3, 50])
def test_buckets_of_rows_in_runs_match_the_scalar_hash(run):
    """Rows in runs of equal hash-column values (a time series' rows together) hash each run
    once; short runs hash every row. The buckets are the spec's either way."""
    from tableformat.format.keyencoder import encode_keys
    s = schema()
    p = resolve(tf.PartitionSchema(hash=[tf.HashPartition(["a", "b"], 7, seed=3)]), s)
    rng = np.random.default_rng(6)
    n = 30_000
    series = np.arange(n) // run
    t = pa.table({"a": [f"h{x % 101}" for x in series], "b": pa.array(series % 13 - 6, pa.int32()),
                  "c": pa.array(rng.integers(0, 10**9, n), pa.int64()), "v": pa.nulls(n, pa.float64())})
    kc = s.key_columns
    keys = encode_keys([t.column(c.name) for c in kc], [c.type for c in kc])
    got = p.bucket_of(s, t, p.hash_levels[0], keys)
    from tableformat.format.partition import _run_starts
    assert (_run_starts([t["a"], t["b"]]) is None) == (run < 4)        # which way it went
    at, bt = s.column("a").type, s.column("b").type
    pairs = set(zip(t["a"].to_pylist(), t["b"].to_pylist()))
    want = {k: murmur2_64_bytes(encode_key(list(k), [at, bt]), 3) % 7 for k in pairs}
    assert got.tolist() == [want[(a, b)] for a, b in zip(t["a"].to_pylist(), t["b"].to_pylist())]


@pytest.mark.parametrize("types,values", [
    (["int8", "int32"], lambda rng, n: [rng.integers(-128, 128, n), rng.integers(-2**31, 2**31, n)]),
    (["int64"], lambda rng, n: [rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64)]),
    (["int16", "int16", "int16"], lambda rng, n: [rng.integers(-3, 3, n) for _ in range(3)]),
])
def test_fixed_width_range_keys_compare_as_numbers_like_the_encoding(types, values):
    """A range key of fixed-width columns up to 8 bytes is compared as a number; every row
    lands in the partition its encoded key (bytewise) falls in."""
    cols = [tf.Column(f"k{i}", t) for i, t in enumerate(types)]
    s = tf.Schema(cols + [tf.Column("v", "int8", nullable=True)], primary_key=[c.name for c in cols])
    rng = np.random.default_rng(len(types))
    n = 5000
    vals = values(rng, n)
    t = pa.table({c.name: pa.array(v, s.column(c.name).type.arrow()) for c, v in zip(cols, vals)})
    t = t.append_column("v", pa.nulls(n, pa.int8()))
    splits = sorted({tuple(int(v[i]) for v in vals) for i in rng.integers(0, n, 6)})
    p = resolve(tf.PartitionSchema(range=tf.RangePartition([c.name for c in cols],
                                                           bounds=[(splits[0], None)], splits=splits[1:])), s)
    pos, _ = p.assign(s, t, strict=False)
    ctypes = [c.type for c in s.key_columns]
    bounds = [encode_key(list(b), ctypes) for b in splits]
    for i in range(n):
        key = encode_key([int(v[i]) for v in vals], ctypes)
        want = -1 if key < bounds[0] else sum(key >= b for b in bounds) - 1
        assert pos[i] == want


@pytest.mark.parametrize("n", [5000, 20_000])
@pytest.mark.parametrize("run", [1, 3, 50])
@pytest.mark.parametrize("hash_cols", [["a"], ["a", "b"]])
def test_buckets_from_the_key_prefix_runs_match_the_scalar_hash(run, hash_cols, n):
    """A level on a key prefix hashes each run of the key's leading columns once when insert
    routing has numbered those runs (writer.series_ids): the same buckets as hashing every row.
    Many rows whose first rows come in short runs get no numbers (and hash as before)."""
    from tableformat.format.keyencoder import encode_keys
    from tableformat.format.partition import _series_starts
    from tableformat.write.insert import series_ids
    s = schema()
    p = resolve(tf.PartitionSchema(hash=[tf.HashPartition(hash_cols, 7, seed=3)]), s)
    rng = np.random.default_rng(8)
    series = np.arange(n) // run
    t = pa.table({"a": [f"h{x % 7}" for x in series], "b": pa.array(series % 13 - 6, pa.int32()),
                  "c": pa.array(rng.integers(0, 10**9, n), pa.int64()), "v": pa.nulls(n, pa.float64())})
    kc = s.key_columns
    keys = encode_keys([t.column(c.name) for c in kc], [c.type for c in kc])
    ids = series_ids([t["a"], t["b"]], 40)
    assert (ids is None) == (run < 4 and n > 8192)                  # which way it went
    assert ids is None or (_series_starts(ids) is None) == (run < 4)
    got = p.bucket_of(s, t, p.hash_levels[0], keys, ids)
    types = [s.column(c).type for c in hash_cols]
    rows = list(zip(*[t[c].to_pylist() for c in hash_cols]))
    want = {r: murmur2_64_bytes(encode_key(list(r), types), 3) % 7 for r in set(rows)}
    assert got.tolist() == [want[r] for r in rows]
    assert p.assign(s, t, keys=keys, series=ids)[0].tolist() == got.tolist()


def test_interleaved_series_are_hashed_once_per_value_combination():
    """Series interleaved row by row (metrics in time order) have no runs, but their hash-column
    values repeat: one row per combination is hashed, the same buckets as every row hashed."""
    from tableformat.format.keyencoder import encode_keys
    from tableformat.format.partition import _run_starts, _value_combinations
    s = schema()
    p = resolve(tf.PartitionSchema(hash=[tf.HashPartition(["a", "b"], 7, seed=3)]), s)
    n = 40_000
    x = np.arange(n)
    t = pa.table({"a": [f"h{v % 101}" for v in x], "b": pa.array(x % 13 - 6, pa.int32()),
                  "c": pa.array(x // 1313, pa.int64()), "v": pa.nulls(n, pa.float64())})
    assert _run_starts([t["a"], t["b"]]) is None                 # no runs to hash once each
    rows, of_row = _value_combinations([t["a"], t["b"]])
    assert len(rows) == 101 * 13 and of_row.max() == len(rows) - 1
    pairs = list(zip(t["a"].to_pylist(), t["b"].to_pylist()))
    assert len({pairs[r] for r in rows}) == len(rows)            # one row per combination
    assert all(pairs[rows[of_row[i]]] == pairs[i] for i in range(0, n, 7))
    kc = s.key_columns
    keys = encode_keys([t.column(c.name) for c in kc], [c.type for c in kc])
    at, bt = s.column("a").type, s.column("b").type
    want = {k: murmur2_64_bytes(encode_key(list(k), [at, bt]), 3) % 7 for k in set(pairs)}
    for got in (p.bucket_of(s, t, p.hash_levels[0], keys), p.bucket_of(s, t, p.hash_levels[0])):
        assert got.tolist() == [want[k] for k in pairs]
    floats = pa.chunked_array([np.tile([0.0, -0.0, 1.5], n // 3)])
    assert _value_combinations([floats]) is None                 # 0.0 and -0.0 encode apart
