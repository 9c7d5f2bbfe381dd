"""Snapshot.rowset_writer: a streaming insert of key-sorted batches into one tablet, rolled at
the target rowset size, with the engine's key checks; its fragment commits like any insert."""
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tableformat as tf

from helpers import assert_same_rows


def _table(uri, target=None, **props):
    schema = tf.Schema([tf.Column("key", "int64"), tf.Column("val", "string", nullable=True)], primary_key="key")
    props = {**props, "rowset_target_bytes": target} if target else props or None
    return tf.create_table(uri, schema, tf.PartitionSchema(hash=[tf.HashPartition(["key"], buckets=2)]),
                           properties=props)


def _rows(keys):
    keys = np.asarray(keys, np.int64)
    return pa.table({"key": keys, "val": pa.array([f"v{k:08d}" for k in keys])})


def _sorted_batches(t, rows, size):
    """Rows of each tablet, sorted by encoded key, in batches of `size`: what a Spark task sees."""
    snap = t.snapshot()
    ordinal, keys = snap.route_keys(rows)
    out = {}
    for o, tablet in enumerate(snap.tablet_ids):
        sel = np.flatnonzero(ordinal == o)
        part, k = rows.take(pa.array(sel)), keys.take(pa.array(sel))
        order = pa.array(np.argsort(np.array(k.to_pylist(), dtype=object), kind="stable"))
        part, k = part.take(order), k.take(order)
        out[tablet] = [(part.slice(s, size), k.slice(s, size)) for s in range(0, part.num_rows, size)]
    return snap, out


def _write_all(snap, batches, on_duplicate="fail", pass_keys=True):
    frags, rejected = [], 0
    for tablet, bs in batches.items():
        w = snap.rowset_writer(tablet, on_duplicate=on_duplicate)
        for b, k in bs:
            rejected += len(w.write(b, k if pass_keys else None))
            assert w.buffered_bytes <= w.target + b.nbytes
        frags.append(w.finish())
    return frags, rejected


def test_streamed_insert_equals_engine_insert_and_rolls_rowsets(tmp_path):
    """A 64 KiB target: many rowsets per tablet, each near the target, none holding the input."""
    t = _table(str(tmp_path / "a"), target=1 << 16)
    rows = _rows(np.random.default_rng(1).permutation(20000))
    snap, batches = _sorted_batches(t, rows, 1000)
    frags, rejected = _write_all(snap, batches)
    assert rejected == 0
    res = t.commit_fragments(frags, "INSERT")
    assert res.inserted == 20000
    assert_same_rows(t.to_arrow(), rows, keys=("key",))
    rs = list(t.state.rowsets.values())
    assert len(rs) >= 2 * (rows.nbytes // (1 << 16)) // 2       # rolled: about input bytes / target
    assert max(r.num_rows for r in rs) < 20000 // 4
    # rowsets of one tablet are disjoint, sorted key ranges
    for tablet in snap.tablet_ids:
        mine = sorted((r.min_key, r.max_key) for r in rs if r.tablet == tablet)
        assert all(a[1] < b[0] for a, b in zip(mine, mine[1:]))
    ref = _table(str(tmp_path / "b"))
    ref.insert(rows)
    assert_same_rows(t.to_arrow(), ref.to_arrow(), keys=("key",))
    assert t.check().ok


def test_duplicates_in_input_and_table(tmp_path):
    t = _table(str(tmp_path / "a"))
    t.insert(_rows([5, 6]))
    before = t.version
    rows = _rows([1, 2, 2, 3, 5, 7, 7, 7])          # 2 and 7 repeat, 5 exists
    snap, batches = _sorted_batches(t, rows, 2)     # repeats straddle batch boundaries
    with pytest.raises(tf.DuplicateKeyError,
                       match=r"1 key\(s\) appear more than once in the input in table 'a' \(first: 2\); use"):
        _write_all(snap, batches, "fail")
    assert t.version == before
    frags, rejected = _write_all(snap, batches, "ignore", pass_keys=False)
    assert rejected == 4
    res = t.commit_fragments(frags, "INSERT_IGNORE")
    assert (res.inserted, res.ignored) == (4, 4)
    assert sorted(t.to_arrow().column("key").to_pylist()) == [1, 2, 3, 5, 6, 7]
    assert t.check().ok


def test_a_failed_writer_leaves_no_files(tmp_path):
    from helpers import table_files
    t = _table(str(tmp_path / "a"), target=1 << 16)
    files = table_files(t.uri)
    snap = t.snapshot()
    tablet = snap.tablet_ids[0]
    w = snap.rowset_writer(tablet)
    ordinal, keys = snap.route_keys(_rows(np.arange(20000)))
    sel = pa.array(np.flatnonzero(ordinal == 0))
    part = _rows(np.arange(20000)).take(sel)
    order = pa.array(np.argsort(np.array(keys.take(sel).to_pylist(), dtype=object)))
    part = part.take(order)
    w.write(part.slice(0, 5000))
    assert table_files(t.uri) != files                  # rolled rowsets are on disk
    with pytest.raises(tf.DuplicateKeyError,
                       match=r"1 key\(s\) appear more than once in the input in table 'a' \(first: 10029\); use"):
        w.write(part.slice(4999, 10))
    assert table_files(t.uri) == files
    assert w.finish().empty


@pytest.mark.parametrize("bad", ["unsorted", "backwards", "keys"])
def test_bad_input_is_a_typed_error(tmp_path, bad):
    t = _table(str(tmp_path / "a"))
    snap = t.snapshot()
    w = snap.rowset_writer(snap.tablet_ids[0])
    rows = _rows([1, 2, 3])
    _, keys = snap.route_keys(rows)
    with pytest.raises(tf.InvalidDataError,
                       match=("must be sorted by primary key|starts below the previous batch's last key|"
                              "are not the rows' encoded primary keys")):
        if bad == "unsorted":
            w.write(rows.take(pa.array([1, 0, 2])))
        elif bad == "backwards":
            w.write(rows.slice(2))
            w.write(rows.slice(0, 1))
        else:
            w.write(rows, keys.take(pa.array([1, 0, 2])))
    with pytest.raises(tf.InvalidOptionError, match="table 'a' has no tablet 'no-such-tablet'"):
        snap.rowset_writer("no-such-tablet")
    with pytest.raises(tf.InvalidOptionError, match=r"on_duplicate must be one of \('fail', 'ignore'\), got 'collect'"):
        snap.rowset_writer(snap.tablet_ids[0], on_duplicate="collect")


def test_rows_stream_to_storage_row_group_by_row_group(tmp_path):
    """A rowset far above the input: its base file grows on storage while rows arrive, the writer
    holding under the encoding sample plus a batch, never the rowset (which is all the input)."""
    t = _table(str(tmp_path / "a"), target=1 << 30, row_group_rows=1024, pk_index_block_rows=256)
    rows = _rows(np.random.default_rng(2).permutation(400_000))
    snap, batches = _sorted_batches(t, rows, 5000)
    frags = []
    for tablet, bs in batches.items():
        w = snap.rowset_writer(tablet)
        tablet_bytes = sum(b.nbytes for b, _ in bs)
        peak = 0
        for b, k in bs:
            w.write(b, k)
            peak = max(peak, w.buffered_bytes)
        base = next(p for p in w.written if "/base-" in p)
        on_disk = os.path.getsize(os.path.join(t.uri, base))
        frags.append(w.finish())
        assert peak < tablet_bytes / 2
        assert on_disk > os.path.getsize(os.path.join(t.uri, base)) / 2     # written before finish
    t.commit_fragments(frags, "INSERT")

    ref = _table(str(tmp_path / "b"), target=1 << 30, row_group_rows=1024, pk_index_block_rows=256)
    ref.insert(rows)
    assert_same_rows(t.to_arrow(), rows, keys=("key",))
    assert t.check().ok
    from tableformat.format.diskrowset import pk_block_first_keys, read_pk_index
    mine = sorted(t.state.rowsets.values(), key=lambda r: r.tablet)
    theirs = sorted(ref.state.rowsets.values(), key=lambda r: r.tablet)
    assert len(mine) == len(theirs) == 2
    for a, b in zip(mine, theirs):             # the same rowset as the engine's one-shot write
        assert (a.num_rows, a.min_key, a.max_key, a.stats) == (b.num_rows, b.min_key, b.max_key, b.stats)
        assert t.storage.read(a.bloom.path) == ref.storage.read(b.bloom.path)
        assert read_pk_index(t.storage, a).equals(read_pk_index(ref.storage, b))
        assert pk_block_first_keys(t.storage, a) == pk_block_first_keys(ref.storage, b)
        meta_a = pq.ParquetFile(os.path.join(t.uri, a.base[0].path)).metadata
        meta_b = pq.ParquetFile(os.path.join(ref.uri, b.base[0].path)).metadata
        assert [meta_a.row_group(i).num_rows for i in range(meta_a.num_row_groups)] == \
            [meta_b.row_group(i).num_rows for i in range(meta_b.num_row_groups)]
        assert meta_a.num_row_groups == -(-a.num_rows // 1024)


def test_float_statistics_over_row_groups(tmp_path):
    """Column statistics gathered row group by row group equal the one-shot ones: NaN-only and
    null-only row groups, NaN counted, min and max over the rest."""
    schema = tf.Schema([tf.Column("key", "int64"), tf.Column("x", "double", nullable=True),
                        tf.Column("s", "string", nullable=True)], primary_key="key")
    n = 140_000                                 # past the encoding sample: many row groups streamed
    x = np.full(n, np.nan)
    x[90_000:100_000] = np.linspace(-5, 7, 10_000)
    nulls = (np.arange(n) >= 70_000) & (np.arange(n) < 75_000)
    rows = pa.table({"key": np.arange(n, dtype=np.int64), "x": pa.array(x, mask=nulls),
                     "s": pa.array([None] * 100_000 + [f"s{i:06d}" for i in range(40_000)])})
    tables = []
    for name in ("a", "b"):
        t = tf.create_table(str(tmp_path / name), schema, properties={"row_group_rows": 128})
        tables.append(t)
    snap = tables[0].snapshot()
    w = snap.rowset_writer(snap.tablet_ids[0])
    for start in range(0, n, 10_000):
        w.write(rows.slice(start, 10_000))
    tables[0].commit_fragments([w.finish()], "INSERT")
    tables[1].insert(rows)
    (a,), (b,) = tables[0].state.rowsets.values(), tables[1].state.rowsets.values()
    assert a.stats == b.stats
    assert a.stats[schema.column("x").id]["nan"] == n - 15_000
    assert a.stats[schema.column("x").id]["nulls"] == 5_000


def test_streamed_rowsets_on_s3_and_a_failure_leaves_no_object(s3_table_root):
    """On S3 each file streams as a multipart upload: a committed write reads back (sizes and
    CRC-32s checked), and a duplicate mid-rowset drops the open uploads and the written files."""
    root, opts = s3_table_root
    schema = tf.Schema([tf.Column("key", "int64"), tf.Column("val", "string", nullable=True)], primary_key="key")
    t = tf.create_table(f"{root}/t", schema, storage_options=opts,
                        properties={"row_group_rows": 1024, "rowset_target_bytes": 1 << 20})
    rows = _rows(np.arange(150_000))
    snap = t.snapshot()
    w = snap.rowset_writer(snap.tablet_ids[0])
    for start in range(0, rows.num_rows, 10_000):
        w.write(rows.slice(start, 10_000))
    t.commit_fragments([w.finish()], "INSERT")
    t = tf.open_table(f"{root}/t", storage_options=opts)
    assert len(t.state.rowsets) >= 2 and t.check().ok
    assert_same_rows(t.to_arrow(), rows, keys=("key",))
    assert t.lookup(pa.table({"key": [7, 149_999]})).num_rows == 2

    listed = set(t.storage.fs.find(t.storage.root))
    snap = t.snapshot()
    w = snap.rowset_writer(snap.tablet_ids[0])
    more = _rows(np.arange(200_000, 300_000))
    w.write(more.slice(0, 80_000))                  # past the encoding sample: uploads are open
    with pytest.raises(tf.DuplicateKeyError,
                       match=r"1 key\(s\) appear more than once in the input in table 't' \(first: 299999\)"):
        w.write(_rows([299_999, 299_999]))
    assert set(t.storage.fs.find(t.storage.root)) == listed


def test_an_all_nan_column_keeps_its_nan_count(tmp_path):
    """A column of NaN only has no extremes; the streamed stats still count its NaNs, as the
    one-shot write does (found by the adversarial review)."""
    schema = tf.Schema([tf.Column("key", "int64"), tf.Column("x", "double")], primary_key="key")
    n = 3000
    rows = pa.table({"key": np.arange(n, dtype=np.int64), "x": np.full(n, np.nan)})
    tables = [tf.create_table(str(tmp_path / name), schema) for name in ("a", "b")]
    snap = tables[0].snapshot()
    w = snap.rowset_writer(snap.tablet_ids[0])
    w.write(rows)
    tables[0].commit_fragments([w.finish()], "INSERT")
    tables[1].insert(rows)
    (a,), (b,) = tables[0].state.rowsets.values(), tables[1].state.rowsets.values()
    assert a.stats == b.stats and a.stats[schema.column("x").id]["nan"] == n
