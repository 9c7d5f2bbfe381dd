"""Snapshot.rowset_writer: a streaming insert of key-sorted batches into one tablet, rolled at
the target rowset size, with the engine's key checks; its fragment commits like any insert."""
import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf

from conftest import assert_same_rows


def _table(uri, target=None):
    schema = tf.Schema([tf.Column("key", "int64"), tf.Column("val", "string", nullable=True)], primary_key="key")
    props = {"rowset_target_bytes": target} if target else None
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
    with pytest.raises(tf.DuplicateKeyError):
        _write_all(snap, batches, "fail")
    assert t.version == before
    frags, rejected = _write_all(snap, batches, "ignore", pass_keys=False)
    assert rejected == 4
    res = t.commit_fragments(frags, "INSERT_IGNORE")
    assert (res.inserted, res.ignored) == (4, 4)
    assert sorted(t.to_arrow().column("key").to_pylist()) == [1, 2, 3, 5, 6, 7]
    assert t.check().ok


def test_a_failed_writer_leaves_no_files(tmp_path):
    from conftest import table_files
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
    with pytest.raises(tf.DuplicateKeyError):
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
    with pytest.raises(tf.InvalidDataError):
        if bad == "unsorted":
            w.write(rows.take(pa.array([1, 0, 2])))
        elif bad == "backwards":
            w.write(rows.slice(2))
            w.write(rows.slice(0, 1))
        else:
            w.write(rows, keys.take(pa.array([1, 0, 2])))
    with pytest.raises(tf.InvalidOptionError):
        snap.rowset_writer("no-such-tablet")
    with pytest.raises(tf.InvalidOptionError):
        snap.rowset_writer(snap.tablet_ids[0], on_duplicate="collect")
