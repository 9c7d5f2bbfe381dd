"""Writing a rowset's files (base data, PK index, bloom filter): what a bulk load does."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import tableformat as tf
from tableformat.format.cfile_set import _footer_min_max, column_stats, footer_chunks
from tableformat.format.base_writer import write_base_file
from tableformat.format.storage import Storage


def _strings(rng, n, alphabet):
    return [None if rng.random() < 0.2 else "".join(rng.choice(alphabet, int(rng.integers(0, 6))))
            for _ in range(n)]


@pytest.mark.parametrize("kind", ["string", "varchar(8)", "binary"])
def test_string_stats_from_the_footer_equal_a_pass_over_the_values(tmp_path, kind):
    """String and binary min/max come from the Parquet footer the writer computed: the same
    as Arrow's min_max over the values (bytes compared unsigned: 00, 7f, 80, ff, non-ASCII),
    with NULLs, row groups that are all NULL, and a column all NULL."""
    rng = np.random.default_rng(1)
    alphabet = ["\x00", "a", "z", "\x7f", "\x80", "\u00e9", "\u4e2d", "\U0001f600"]
    n, rg = 4000, 256
    values = _strings(rng, n, alphabet)
    values[512:1024] = [None] * 512                         # two row groups all NULL
    if kind == "binary":
        values = [None if v is None else v.encode("utf-8") + bytes([0xFF, 0x00][len(v) % 2:]) for v in values]
    cols = [tf.Column("s", kind, nullable=True, id=0), tf.Column("nothing", kind, nullable=True, id=1),
            tf.Column("i", "int64", nullable=True, id=2)]
    arr = pa.array(values, cols[0].arrow_type)
    arrays = [arr, pa.nulls(n, cols[1].arrow_type), pa.array(rng.integers(-5, 5, n))]
    ref, stats = write_base_file(Storage(str(tmp_path)), "r", cols, arrays, rg)
    assert stats == {c.id: column_stats(c, a) for c, a in zip(cols, arrays)}
    footer = pq.read_metadata(str(tmp_path / ref.path))               # the footer does hold them
    assert _footer_min_max(footer_chunks(footer, 0)) == (pc.min_max(arr)["min"].as_py(), pc.min_max(arr)["max"].as_py())
    assert stats[0]["min"] is not None and stats[0]["nulls"] == arr.null_count
    assert stats[1] == {"nulls": n}


def test_stats_of_very_long_strings_fall_back_to_the_values(tmp_path):
    """Parquet writes no min/max for a chunk with a value over 4 KiB: min and max are then
    computed from the values, and (over 256 bytes) left out as before."""
    col = tf.Column("s", "string", nullable=True, id=0)
    storage = Storage(str(tmp_path))
    arr = pa.array(["b", "m" * 5000, None, "a"] * 50)
    _, stats = write_base_file(storage, "r", [col], [arr], 64)
    assert stats == {0: column_stats(col, arr)} == {0: {"nulls": 50}}
    arr = pa.array(["b", "c", None, "a"] * 50)
    _, stats = write_base_file(storage, "r", [col], [arr], 64)
    assert stats == {0: {"nulls": 50, "min": "a", "max": "c"}}


def _schema():
    return tf.Schema([tf.Column("k", "string"), tf.Column("n", "int64"), tf.Column("v", "double", nullable=True)],
                     primary_key=["k", "n"])


def _rows(n, start=0):
    i = np.arange(start, start + n)
    return pa.table({"k": pa.array([f"key-{x % 97:03d}" for x in i]), "n": pa.array(i),
                     "v": pa.array(i * 0.5)})


def _files(root):
    import os
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
                  if "tablets" in d)


def test_a_failed_file_write_on_one_worker_leaves_no_file_of_any_worker(tmp_path):
    """One rowset's PK index fails to write while the other workers are still writing: the
    insert raises the storage's error only once every task has stopped, so the cleanup sees
    (and deletes) every file written, and the table is unchanged."""
    import threading
    import time
    root = str(tmp_path / "t")
    t = tf.create_table(root, _schema(), partitioning=tf.PartitionSchema(hash=[tf.HashPartition(["k"], 4)]))
    t.insert(_rows(1000))
    before = t.scan().to_arrow().sort_by("n")
    files_before = _files(root)
    failed = threading.Event()

    def hook(step, path):
        if step != "write":
            return
        if path.endswith("pkindex.parquet") and not failed.is_set():
            failed.set()
            raise OSError(28, "No space left on device")
        if failed.is_set() or "base-" in path:
            time.sleep(0.3)                       # the other workers are still busy writing

    t.storage.fault_hook = hook
    with pytest.raises(OSError, match="No space left"):
        t.insert(_rows(40_000, start=1000))
    t.storage.fault_hook = None
    time.sleep(1.0)                               # anything still running would have written by now
    assert failed.is_set()
    assert _files(root) == files_before
    fresh = tf.open_table(root)
    assert fresh.version == t.version and fresh.scan().to_arrow().sort_by("n").equals(before)
    assert fresh.check().ok


def test_bad_input_found_on_one_worker_raises_a_typed_error_and_changes_nothing(tmp_path):
    """A key over the 16 KiB limit in the last of many routing chunks (each on a worker)
    raises CellTooLargeError; nothing is written."""
    root = str(tmp_path / "t")
    t = tf.create_table(root, _schema(), partitioning=tf.PartitionSchema(hash=[tf.HashPartition(["k"], 4)]))
    t.insert(_rows(100))
    rows = _rows(300_000, start=100)
    k = rows.column("k").to_pylist()
    k[-1] = "x" * 20_000
    rows = rows.set_column(0, "k", pa.array(k))
    with pytest.raises(tf.CellTooLargeError, match="16 KiB"):
        t.insert(rows)
    assert tf.open_table(root).version == t.version and t.scan().count() == 100
    assert len(_files(root)) == 3 * len(t.inspect("rowsets"))


def _runs(rng, shape):
    """Keys in various orders: sorted, reversed, random, sorted runs in random order (apart,
    overlapping, or meeting at an equal key), repeats."""
    base = [b"k%05d" % i for i in range(4000)]
    if shape == "sorted":
        return base
    if shape == "reversed":
        return base[::-1]
    if shape == "random":
        return [base[i] for i in rng.permutation(len(base))]
    if shape == "repeats":
        return [base[i] for i in rng.integers(0, 500, 4000)]
    runs = [base[i:i + 100] for i in range(0, 4000, 100)]
    if shape == "runs":
        return [x for j in rng.permutation(len(runs)) for x in runs[j]]
    if shape == "overlapping":
        return [x for j in rng.permutation(len(runs)) for x in runs[j]] + base[50::200]
    if shape == "touching":          # a run's last key is the next run's first: a repeat across runs
        runs = [base[i:i + 101] for i in range(0, 4000, 100)]
        return [x for j in rng.permutation(len(runs)) for x in runs[j]]
    raise ValueError(shape)


@pytest.mark.parametrize("shape", ["sorted", "reversed", "random", "repeats", "runs", "overlapping", "touching"])
def test_tablet_keys_in_order_match_a_stable_sort(shape):
    """Whatever the input order (already sorted, a few sorted runs, anything), a tablet's rows
    come out as a stable sort by key puts them, repeats marked after their first."""
    from tableformat.write.insert import sorted_tablet_keys
    rng = np.random.default_rng(len(shape))
    keys = _runs(rng, shape)
    rows = np.arange(len(keys)) * 3 + 7                     # ascending batch row numbers
    got_rows, got_keys, dup = sorted_tablet_keys(pa.array(keys, pa.binary()), rows)
    order = sorted(range(len(keys)), key=lambda i: (keys[i], i))
    assert got_rows.tolist() == rows[order].tolist()
    assert got_keys.to_pylist() == [keys[i] for i in order]
    want_keys = [keys[i] for i in order]
    assert dup.tolist() == [i > 0 and want_keys[i] == want_keys[i - 1] for i in range(len(keys))]



def _series_keys(shape):
    """(keys, series column) of a composite key (series, time) in load orders: series one after
    another in an order that is not the key order (so the sorted runs overlap), and variants."""
    rng = np.random.default_rng(5)
    order = [(m, h) for m in range(4) for h in range(30)]      # metric-major: runs span all hosts
    pieces = [[(f"h{h:02d}m{m}", t) for t in range(40)] for m, h in order]
    if shape == "series":
        pass
    elif shape == "shuffled series":
        pieces = [pieces[i] for i in rng.permutation(len(pieces))]
    elif shape == "series split":         # a series in two parts, the later part first
        pieces = pieces[:5] + [pieces[5][20:]] + pieces[6:] + [pieces[5][:20]]
    elif shape == "series repeated":      # a series' last row comes again later: a repeat where they meet
        pieces = pieces + [pieces[7][-1:]]
    elif shape == "range repeated":       # a series' last rows come again later: they overlap
        pieces = pieces + [pieces[7][30:]]
    elif shape == "series interleaved":   # two parts of one series that interleave in time
        pieces = pieces + [[(pieces[3][0][0], t + 0.5) for t in range(0, 38, 2)]]
    elif shape == "one row each":
        pieces = [[row] for p in pieces for row in p[:2]]
    elif shape == "descending":
        pieces = [list(reversed(p)) for p in pieces[::-1]]
    elif shape == "single run":
        pieces = [[row for p in sorted(pieces) for row in p]]
    rows = [row for p in pieces for row in p]
    keys = [s.encode() + b"\x00\x00" + f"{t:08.1f}".encode() for s, t in rows]
    return keys, pa.array([s for s, _ in rows])


@pytest.mark.parametrize("shape,laid_out", [
    ("series", True), ("shuffled series", True), ("series split", True), ("series repeated", True),
    ("range repeated", False), ("series interleaved", False), ("one row each", False), ("descending", False),
    ("single run", True)])
def test_series_laid_out_by_first_key_match_a_stable_sort(shape, laid_out):
    """Series one after another are laid out by first key without a sort when their ranges do not
    interleave, else sorted; either way the result is a stable sort's, repeats marked after the first."""
    from tableformat.write.insert import run_order, series_breaks, series_ids, sorted_tablet_keys
    keys, series_col = _series_keys(shape)
    series = series_ids([series_col], 100)
    assert series[0] == 100 and (np.diff(series) == [a != b for a, b in zip(series_col.to_pylist()[1:],
                                                                            series_col.to_pylist()[:-1])]).all()
    breaks = series_breaks(series)
    assert breaks.tolist() == [True] + np.diff(series).astype(bool).tolist()
    k = pa.array(keys, pa.binary())
    assert (run_order(k, breaks) is not None) == laid_out               # which way it went
    rows = np.arange(len(keys)) * 2 + 1
    got_rows, got_keys, dup = sorted_tablet_keys(k, rows, breaks)
    order = sorted(range(len(keys)), key=lambda i: (keys[i], i))
    assert got_rows.tolist() == rows[order].tolist()
    assert got_keys.to_pylist() == [keys[i] for i in order]
    assert dup.tolist() == [i > 0 and keys[order[i]] == keys[order[i - 1]] for i in range(len(keys))]
    assert dup.any() == shape.endswith("repeated")


@pytest.mark.parametrize("earlier_first", [True, False])
def test_equal_keys_where_pieces_meet_keep_batch_order(earlier_first):
    """Two pieces meeting at an equal key: laid out only when the earlier piece in the batch comes
    first, so the first occurrence stays first (and is the one kept); else a stable sort."""
    from tableformat.write.insert import run_order, sorted_tablet_keys
    low, high = [b"k%04d" % i for i in range(0, 101)], [b"k%04d" % i for i in range(100, 200)]
    keys = low + high if earlier_first else high + low
    breaks = np.arange(len(keys)) == (101 if earlier_first else 100)     # the second piece's first row
    k = pa.array(keys, pa.binary())
    assert (run_order(k, breaks) is not None) == earlier_first
    got_rows, got_keys, dup = sorted_tablet_keys(k, np.arange(len(keys)), breaks)
    at = got_keys.to_pylist().index(b"k0100")
    first, second = (100, 101) if earlier_first else (0, 200)
    assert got_rows[at:at + 2].tolist() == [first, second]
    assert dup.tolist() == [i == at + 1 for i in range(len(keys))]


def test_consecutive_rows_of_a_batch_are_a_slice_not_a_copy():
    """A rowset's rows that are a run of consecutive batch rows (sorted input into one tablet)
    are written from a slice of the batch; any other rows are gathered, in their order."""
    from tableformat.write.insert import batch_rows
    batch = pa.table({"k": pa.array(np.arange(100)), "s": [f"v{i}" for i in range(100)]})
    run = batch_rows(batch, np.arange(20, 60))
    assert run.column("k").chunk(0).buffers()[1].address == \
        batch.column("k").chunk(0).buffers()[1].address                 # the batch's own memory
    assert run.to_pydict() == batch.slice(20, 40).to_pydict()
    for rows in ([5, 4, 6], [1, 2, 4], [0, 2, 1, 3], [9], [3, 2, 1, 0, 5]):
        got = batch_rows(batch, np.array(rows))
        assert got["k"].to_pylist() == rows and got["s"].to_pylist() == [f"v{i}" for i in rows]
    assert batch_rows(batch, np.array([7]))["k"].to_pylist() == [7]
    assert batch_rows(batch, np.zeros(0, np.int64)).num_rows == 0


@pytest.mark.parametrize("types", [["string", "string", "unixtime_micros"], ["unixtime_micros"],
                                   ["string", "int32", "int16"], ["int64", "int64"], ["binary", "int64"]])
def test_tail_order_matches_a_stable_sort_of_the_keys(types):
    """Keys sorted as numbers (the fixed-width tail, then the rank of the rest) come out exactly
    as a stable sort of the encoded keys: strings with NUL bytes, repeats, negative numbers, a
    sliced array; time-major input goes this way in a load."""
    import pyarrow.compute as pc
    from tableformat.format.keyencoder import encode_keys
    from tableformat.format.types import parse_type
    from tableformat.write.insert import key_tail_width, sorted_tablet_keys, tail_order
    rng = np.random.default_rng(len("".join(types)))
    n = 3000
    ctypes = [parse_type(t) for t in types]
    cols = []
    for t in types:
        if t in ("string", "binary"):
            vals = [("h\x00" if rng.random() < .2 else "h") + "x" * int(v % 3) + str(v) for v in rng.integers(0, 8, n)]
            cols.append(pa.array([v.encode() for v in vals] if t == "binary" else vals))
        else:
            arr = pa.array(rng.integers(-5, 5, n) * 10 ** int(rng.integers(0, 12)), pa.int64())
            cols.append(arr.cast(pa.timestamp("us", tz="UTC")) if t == "unixtime_micros" else
                        pa.array(rng.integers(-5, 5, n), pa.from_numpy_dtype(np.dtype(t))))
    k = encode_keys(cols, ctypes).slice(1)
    tail = key_tail_width(ctypes)
    assert tail == (0 if types[-1] in ("string", "binary") else min(8, sum(c.key_width for c in ctypes
                                                                             if not c.is_variable_width)))
    order = tail_order(k, tail)
    assert (order is None) == (tail == 0)
    want = pc.array_sort_indices(k).to_numpy()
    if order is not None:
        assert order.tolist() == want.tolist()
    rows = np.arange(len(k)) * 2
    got_rows, got_keys, dup = sorted_tablet_keys(k, rows, None, tail)
    assert got_rows.tolist() == rows[want].tolist()
    keys = k.to_pylist()
    assert dup.tolist() == [i > 0 and keys[want[i]] == keys[want[i - 1]] for i in range(len(k))]


@pytest.mark.parametrize("owned", [True, False])
def test_a_loads_own_arrays_go_to_the_block_cache_without_a_copy(tmp_path, owned):
    """A load's rows taken into key order are the engine's own: cached as they are. The caller's
    memory (a slice of its batch) is copied, since the caller may reuse it after the insert."""
    from tableformat.format.base_writer import write_base_file
    from tableformat.format.cfile_set import FILE_CACHE
    from tableformat.format.storage import Storage
    cols = [tf.Column("k", "int64"), tf.Column("v", "double")]
    schema = tf.Schema(cols, primary_key=["k"])
    arrays = [pa.array(np.arange(1000)), pa.array(np.random.default_rng(0).random(1000))]
    storage = Storage(str(tmp_path))
    FILE_CACHE.clear()
    ref, _ = write_base_file(storage, "rs", list(schema.columns), arrays, 128, warm=[schema.columns[1].id],
                             owned=owned)
    cached = FILE_CACHE.get(storage, ref.path + "#written", ref.size)
    (got,) = cached.values()
    assert got.equals(arrays[1])
    assert (got.buffers()[1].address == arrays[1].buffers()[1].address) is owned


def _time_major_keys(n: int):
    from tableformat.format.keyencoder import encode_keys
    from tableformat.format.types import parse_type
    rng = np.random.default_rng(0)
    hosts = pa.array([f"host-{h:04d}" for h in rng.integers(0, 1000, n)])
    times = pa.array(rng.integers(0, 10**12, n), pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    return encode_keys([hosts, times], [parse_type("string"), parse_type("unixtime_micros")])


def test_tail_order_encodes_the_prefixes_chunk_by_chunk(monkeypatch):
    """The key prefixes are cut and dictionary-encoded a chunk at a time, their dictionaries
    unified: the order is the stable sort's however the chunks fall."""
    import pyarrow.compute as pc
    from tableformat.write import insert
    monkeypatch.setattr(insert, "_PREFIX_CHUNK", 777)
    k = _time_major_keys(5000).slice(3)
    assert insert.tail_order(k, 8).tolist() == pc.array_sort_indices(k).to_numpy().tolist()


def test_tail_order_holds_at_most_20_bytes_a_key_of_numpy_arrays():
    """Memory of a load's sort (issue 39, the peak of a 16M-row load): the tails are built as
    numbers in place, and the final order is taken in place, so at most ~18 bytes a key of
    NumPy arrays are alive at once (26 before: a byte matrix, its big-endian copy, a third
    order array)."""
    import tracemalloc
    from tableformat.write.insert import tail_order
    n = 200_000
    k = _time_major_keys(n)
    tracemalloc.start()
    try:
        tail_order(k, 8)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 20 * n, f"{peak / n:.1f} bytes a key"


def test_string_columns_dictionary_encoded_on_disk_are_read_as_dictionaries_then_decoded(tmp_path):
    """A scan reads a dictionary-encoded string column as a dictionary and decodes it by one take
    (issue 39: 2x faster than Parquet's dense decode); a plain-encoded one (mostly distinct
    values) is read as it is. Whole and partial reads give the column's own type and values."""
    from tableformat.format.cfile_set import FILE_CACHE, field_name, parquet_file
    from tableformat.format.diskrowset import dictionary_columns, read_base_columns
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("few", "string", nullable=True),
                        tf.Column("many", "string"), tf.Column("b", "binary", nullable=True)], primary_key=["k"])
    n = 5000
    k = np.arange(n)
    data = pa.table({"k": k, "few": pa.array([None if i % 7 == 0 else f"h{i % 5}" for i in range(n)]),
                     "many": pa.array([f"u{i}" for i in range(n)]),
                     "b": pa.array([bytes([i % 3]) if i % 4 else None for i in range(n)], pa.binary())})
    t = tf.create_table(str(tmp_path / "t"), schema, properties={"row_group_rows": 1000})
    t.insert(data)
    (rs,) = t.state.rowsets.values()
    cols = [schema.column(c) for c in schema.names]
    names = [field_name(c.id) for c in cols]
    md = parquet_file(t.storage, rs.base[0]).metadata
    assert dictionary_columns(md, range(md.num_row_groups), names) == [field_name(schema.column(c).id)
                                                                        for c in ("few", "b")]
    FILE_CACHE.clear()
    for lo, hi in [(0, n), (0, n), (1500, 3700)]:        # cold, then with the footer cached; a part
        got = read_base_columns(t.storage, rs, cols, lo, hi)
        for c in cols:
            assert got[c.id].type == c.arrow_type, c.name
            assert got[c.id].to_pylist() == data.column(c.name).slice(lo, hi - lo).to_pylist(), c.name
