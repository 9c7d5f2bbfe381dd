"""Inserts: primary key enforcement, defaults, Kudu's value rules, rowset files."""
import decimal
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import tableformat as tf
from tableformat.format.diskrowset import read_pk_index, load_bloom

from helpers import T0, metrics_partitioning, assert_same_rows, metrics_rows, metrics_schema, sort_rows, table_files


def test_insert_then_scan_round_trips(metrics_table):
    data = metrics_rows(3000)
    res = metrics_table.insert(data)
    assert (res.version, res.inserted, res.ignored, res.operation) == (1, 3000, 0, "INSERT")
    assert isinstance(res.timestamp, tf.Timestamp) and res.timestamp > 0
    assert res.rowsets_added == 8 and res.bytes_written > 0
    assert_same_rows(metrics_table.scan().to_arrow(), data)
    h = metrics_table.history()
    assert [(x.version, x.operation) for x in h] == [(0, "CREATE TABLE"), (1, "INSERT")]
    assert h[1].counts["inserted"] == 3000


def test_defaults_and_varchar_truncation(metrics_table):
    data = pa.table({"host": ["a", "b"], "metric": ["m", "m"],
                     "time": pa.array([T0, T0 + 1], pa.timestamp("us", tz="UTC"))})
    metrics_table.insert(data)
    got = sort_rows(metrics_table.scan().to_arrow())
    assert got["tag"].to_pylist() == ["none", "none"]          # default
    assert got["value"].to_pylist() == [None, None]            # nullable, no default
    metrics_table.insert(pa.table({"host": ["c"], "metric": ["m"], "time": pa.array([T0], pa.timestamp("us")),
                                   "tag": ["ééééééééééééééééééééé"]}))   # 21 two-byte characters
    tag = metrics_table.scan(columns=["tag"], filter=[("host", "=", "c")]).to_arrow()["tag"][0].as_py()
    assert tag == "é" * 16


@pytest.mark.parametrize("make", [
    lambda d: d.to_pandas(),
    lambda d: pa.RecordBatchReader.from_batches(d.schema, d.to_batches(max_chunksize=100)),
    lambda d: d.to_batches()[0],
    lambda d: d.to_pylist(),
])
def test_input_kinds(metrics_table, make):
    data = metrics_rows(300)
    assert metrics_table.insert(make(data)).inserted == 300
    assert metrics_table.scan().count() == 300


def test_duplicate_in_batch_rejected_and_nothing_written(metrics_table, table_uri):
    data = metrics_rows(100)
    dup = pa.concat_tables([data, data.slice(10, 3)])
    before = table_files(table_uri)
    with pytest.raises(tf.DuplicateKeyError, match="3 key.*more than once") as e:
        metrics_table.insert(dup)
    assert e.value.count == 3
    assert metrics_table.version == 0
    assert table_files(table_uri) == before


def test_existing_key_rejected_with_count_and_first_keys(metrics_table, table_uri):
    data = metrics_rows(200)
    metrics_table.insert(data)
    before = table_files(table_uri)
    again = pa.concat_tables([data.slice(0, 5), metrics_rows(5, start=1000)])
    with pytest.raises(tf.DuplicateKeyError, match=r"5 key\(s\) already exist in table 'metrics' \(first: \(") as e:
        metrics_table.insert(again)
    assert e.value.count == 5
    assert "use insert_ignore or upsert" in str(e.value)
    assert metrics_table.version == 1
    assert table_files(table_uri) == before
    assert metrics_table.scan().count() == 200


def test_insert_ignore_skips_existing_and_repeated(metrics_table):
    data = metrics_rows(200)
    metrics_table.insert(data.slice(0, 100))
    first = data.slice(150, 1).set_column(3, "value", pa.array([111.0]))
    second = data.slice(150, 1).set_column(3, "value", pa.array([222.0]))
    res = metrics_table.insert_ignore(pa.concat_tables([data.slice(50, 100), first, second]))
    assert (res.inserted, res.ignored) == (51, 51)
    got = metrics_table.scan(filter=[("host", "=", data["host"][150].as_py()), ("metric", "=", data["metric"][150].as_py()),
                                     ("time", "=", data["time"][150])]).to_arrow()
    assert got["value"].to_pylist() == [111.0]   # batch order: the first wins
    res = metrics_table.insert_ignore(data.slice(0, 10))
    assert (res.inserted, res.ignored, res.version) == (0, 10, 2)  # nothing new: no commit


def test_empty_insert_commits_nothing(metrics_table):
    res = metrics_table.insert(metrics_rows(0))
    assert res.inserted == 0 and res.version == 0


BAD_INPUTS = [
    ("null key", lambda d: d.set_column(0, "host", pa.array([None] + d["host"].to_pylist()[1:])),
     tf.NullValueError, "host.*not nullable"),
    ("null in non-null column", None, tf.NullValueError, "not nullable"),
    ("type mismatch", lambda d: d.set_column(3, "value", pa.array(["x"] * len(d))), tf.TypeMismatchError,
     "value.*double.*string"),
    ("lossy time", lambda d: d.set_column(2, "time", pa.array(["2020-01-01"] * len(d))), tf.TypeMismatchError, "time"),
    ("unknown column", lambda d: d.append_column("nope", pa.array([1] * len(d))), tf.UnknownColumnError, "nope"),
    ("missing column", lambda d: d.drop(["metric"]), tf.MissingColumnError, "metric"),
    ("oversized cell", lambda d: d.set_column(5, "tag", pa.array(["x"] * (len(d) - 1) + ["y" * 70000])),
     None, None),  # varchar(16) truncates: not an error
    ("oversized key cell", lambda d: d.set_column(1, "metric", pa.array(["m" * 70000] + ["m"] * (len(d) - 1))),
     tf.CellTooLargeError, "64 KiB"),
    ("oversized key", lambda d: d.set_column(1, "metric", pa.array(["m" * 9000] + ["m"] * (len(d) - 1)))
     .set_column(0, "host", pa.array(["h" * 9000] + ["h"] * (len(d) - 1))), tf.CellTooLargeError, "16 KiB"),
    ("decimal too wide", lambda d: d.set_column(4, "price", pa.array([decimal.Decimal("1e20")] + [None] * (len(d) - 1),
                                                                    pa.decimal128(38, 2))),
     tf.DecimalOutOfRangeError, "precision"),
    ("decimal digits", lambda d: d.set_column(4, "price", pa.array([10**17] + [None] * (len(d) - 1), pa.int64())),
     tf.DecimalOutOfRangeError, "price"),
    ("not a table", lambda d: {"host": 1}, tf.InvalidDataError, "input must be"),
    ("out of range partition", lambda d: d.set_column(2, "time", pa.array([T0 - 1] * len(d), pa.timestamp("us"))),
     tf.NoRangePartitionError, "no range partition"),
]


@pytest.mark.parametrize("name,mutate,err,msg", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_rejected_and_changes_nothing(tmp_path, name, mutate, err, msg):
    schema = metrics_schema()
    if name == "null in non-null column":
        schema = tf.Schema([*schema.columns[:3], tf.Column("value", "double")], primary_key=schema.primary_key)
        mutate = lambda d: d.select(["host", "metric", "time", "value"]).set_column(  # noqa: E731
            3, "value", pa.array([None] * len(d), pa.float64()))
    t = tf.create_table(str(tmp_path / "t"), schema, partitioning=metrics_partitioning())
    t.insert(metrics_rows(10, start=500).select(schema.names))
    before = table_files(tmp_path / "t")
    data = mutate(metrics_rows(20).select(schema.names))
    if err is None:
        t.insert(data)
        return
    with pytest.raises(err, match=msg):
        t.insert(data)
    assert t.version == 1
    assert table_files(tmp_path / "t") == before
    assert tf.open_table(str(tmp_path / "t")).scan().count() == 10


def test_safe_casts_are_accepted(tmp_path):
    s = tf.Schema([tf.Column("k", "int64"), tf.Column("d", "decimal(10,2)", nullable=True),
                   tf.Column("f", "double", nullable=True), tf.Column("b", "binary", nullable=True)], primary_key="k")
    t = tf.create_table(str(tmp_path / "t"), s)
    t.insert(pa.table({"k": pa.array([1, 2], pa.int8()), "d": pa.array([3, 4], pa.int32()),
                       "f": pa.array([1, 2], pa.int32()), "b": pa.array([b"x", b"y"], pa.large_binary())}))
    got = t.scan(ordered=True).to_arrow()
    assert got["d"].to_pylist() == [decimal.Decimal("3.00"), decimal.Decimal("4.00")]
    with pytest.raises(tf.TypeMismatchError, match="without loss"):
        t.insert(pa.table({"k": pa.array([2**64 - 1], pa.uint64())}))


def test_rowsets_roll_at_target_size(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), metrics_schema(), properties={"rowset_target_bytes": 1 << 16})
    data = metrics_rows(5000)
    t.insert(data)
    rowsets = sorted(t.state.rowsets.values(), key=lambda r: r.min_key)
    assert len(rowsets) > 3
    for a, b in zip(rowsets, rowsets[1:]):
        assert a.max_key < b.min_key  # one insert writes non-overlapping rowsets
    assert sum(r.num_rows for r in rowsets) == 5000
    assert t.scan().count() == 5000


@pytest.mark.parametrize("props", [{"rowset_target_bytes": -1}, {"row_group_rows": 0}, {"nope": 1},
                                   {"checkpoint_interval": 1.5}, {"rowset_target_bytes": 1 << 60}])
def test_bad_properties(tmp_path, props):
    with pytest.raises(tf.InvalidOptionError,
                       match=("table property (rowset_target_bytes|row_group_rows|"
                              "checkpoint_interval) must be an integer|unknown table property 'nope'")):
        tf.create_table(str(tmp_path / "t"), metrics_schema(), properties=props)


def test_rowset_files_are_plain_parquet_with_field_ids_and_kudu_encodings(tmp_path):
    s = tf.Schema([
        tf.Column("k", "int64"), tf.Column("bs", "int32", encoding="bitshuffle", compression="zstd"),
        tf.Column("pl", "double", encoding="plain", compression="none"),
        tf.Column("rl", "bool", encoding="run_length", compression="snappy"),
        tf.Column("dict_low", "string"), tf.Column("dict_high", "string"),
        tf.Column("pre", "string", encoding="prefix", compression="zlib"),
        tf.Column("dec", "decimal(18,2)"), tf.Column("dec4", "decimal(9,2)"),
    ], primary_key="k")
    t = tf.create_table(str(tmp_path / "t"), s)
    n = 5000
    t.insert(pa.table({"k": pa.array(np.arange(n)), "bs": pa.array(np.arange(n) % 100, pa.int32()),
                       "pl": np.random.default_rng(0).random(n), "rl": pa.array(np.arange(n) < 10),
                       "dict_low": [f"v{i % 5}" for i in range(n)], "dict_high": [f"u{i}" for i in range(n)],
                       "pre": [f"prefix/{i:06d}" for i in range(n)],
                       "dec": pa.array(np.arange(n)).cast(pa.decimal128(38, 0)).cast(pa.decimal128(18, 2)),
                       "dec4": pa.array(np.arange(n)).cast(pa.decimal128(38, 0)).cast(pa.decimal128(9, 2))}))
    (rs,) = t.state.rowsets.values()
    path = os.path.join(str(tmp_path / "t"), rs.base[0].path)
    pf = pq.ParquetFile(path)
    plain = pq.read_table(path)
    assert plain.num_rows == n
    ids = {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in pf.schema_arrow}
    assert ids == {f"c{c.id}": c.id for c in s.columns}
    md = pf.metadata.row_group(0)
    cols = {md.column(i).path_in_schema: md.column(i) for i in range(md.num_columns)}
    enc = {c.name: set(cols[f"c{c.id}"].encodings) for c in s.columns}
    comp = {c.name: cols[f"c{c.id}"].compression for c in s.columns}
    assert "BYTE_STREAM_SPLIT" in enc["bs"] and comp["bs"] == "ZSTD"
    assert enc["pl"] <= {"PLAIN", "RLE"} and comp["pl"] == "UNCOMPRESSED"
    assert "RLE" in enc["rl"] and comp["rl"] == "SNAPPY"
    assert "RLE_DICTIONARY" in enc["dict_low"]
    assert "RLE_DICTIONARY" not in enc["dict_high"]          # high cardinality falls back to plain
    assert "DELTA_BYTE_ARRAY" in enc["pre"] and comp["pre"] == "GZIP"
    assert cols[f"c{s.column('dec').id}"].physical_type == "INT64"   # 8 bytes for p <= 18
    assert cols[f"c{s.column('dec4').id}"].physical_type == "INT32"  # 4 bytes for p <= 9


def test_pk_index_and_bloom_describe_the_rowset(metrics_table):
    metrics_table.insert(metrics_rows(2000))
    from tableformat.format.keyencoder import encode_keys
    st = metrics_table.state
    for rs in st.rowsets.values():
        idx = read_pk_index(metrics_table.storage, rs)
        keys = idx.to_pylist()
        assert keys == sorted(keys) and len(set(keys)) == len(keys) == rs.num_rows
        assert (keys[0], keys[-1]) == (rs.min_key, rs.max_key)
        assert load_bloom(metrics_table.storage, rs).may_contain(idx).all()
    base = metrics_table.scan().to_arrow()
    kc = st.schema.key_columns
    enc = encode_keys([base[c.name] for c in kc], [c.type for c in kc]).to_pylist()
    all_idx = sorted(k for rs in st.rowsets.values() for k in read_pk_index(metrics_table.storage, rs).to_pylist())
    assert sorted(enc) == all_idx


@pytest.mark.parametrize("precision,scale", [(38, 10), (38, 0), (29, 3), (9, 9)])
def test_decimal_of_every_precision_round_trips_and_is_range_checked(tmp_path, precision, scale):
    t = tf.create_table(str(tmp_path / "d"), tf.Schema([tf.Column("k", "int32"),
                                                        tf.Column("d", f"decimal({precision},{scale})")],
                                                       primary_key="k"))
    top = decimal.Decimal((0, (9,) * precision, -scale))
    vals = [top, decimal.Decimal((1, (9,) * precision, -scale)), decimal.Decimal(0)]     # exact: no 28-digit context
    t.insert(pa.table({"k": [1, 2, 3], "d": pa.array(vals, pa.decimal128(38, scale))}))
    assert t.scan(ordered=True).to_arrow().column("d").to_pylist() == vals
    if precision < 38:
        too_big = decimal.Decimal((0, (1,) + (0,) * precision, -scale))      # precision + 1 digits
        with pytest.raises(tf.DecimalOutOfRangeError,
                           match=r"column 'd' \(decimal\(\d+,\d+\)\): a value does not fit the precision"):
            t.insert(pa.table({"k": [4], "d": pa.array([too_big], pa.decimal128(38, scale))}))
    assert t.version == 1


def test_key_ordered_input_with_and_without_repeats(tmp_path):
    """Input already in key order skips the sort; a repeated key in it is still caught, the first kept."""
    s = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "string", nullable=True)], ["k"])
    t = tf.create_table(str(tmp_path / "t"), s)
    t.insert(pa.table({"k": pa.array(np.arange(0, 5000, 2)), "v": [f"a{i}" for i in range(2500)]}))
    ordered = pa.table({"k": pa.array([1, 3, 3, 5], pa.int64()), "v": ["x", "first", "second", "y"]})
    with pytest.raises(tf.DuplicateKeyError, match=r"1 key\(s\) appear more than once") as e:
        t.insert(ordered)
    assert e.value.count == 1 and t.version == 1
    res = t.insert_ignore(ordered)
    assert (res.inserted, res.ignored) == (3, 1)
    got = t.scan(filter=[("k", "<", 7)]).to_arrow().sort_by("k").to_pylist()
    assert got == [{"k": 0, "v": "a0"}, {"k": 1, "v": "x"}, {"k": 2, "v": "a1"}, {"k": 3, "v": "first"},
                   {"k": 4, "v": "a2"}, {"k": 5, "v": "y"}, {"k": 6, "v": "a3"}]
    with pytest.raises(tf.DuplicateKeyError, match=r"2 key\(s\) already exist"):
        t.insert(pa.table({"k": pa.array([7, 8, 9, 10], pa.int64()), "v": ["p", "q", "r", "s"]}))
    assert t.check().ok and t.scan().count() == 2503


def _load_orders(n_hosts=40, per_series=60):
    """Rows of a metrics table in three load orders: one series after another (each in time
    order), all series at each time point, shuffled."""
    hosts = [f"h{h:03d}" for h in range(n_hosts)]
    rows = [(h, m, t) for m in ["mem", "cpu", "disk"] for h in hosts for t in range(per_series)]
    series = pa.table({"host": [r[0] for r in rows], "metric": [r[1] for r in rows],
                       "time": pa.array([T0 + r[2] * 1_000_000 for r in rows], pa.timestamp("us", tz="UTC")),
                       "value": pa.array(np.arange(len(rows), dtype=np.float64))})
    by_time = series.take(pa.array(sorted(range(len(rows)), key=lambda i: (rows[i][2], i))))
    shuffled = series.take(pa.array(np.random.default_rng(2).permutation(len(rows))))
    return {"series": series, "time": by_time, "random": shuffled}


def test_every_load_order_writes_the_same_rowsets(tmp_path):
    """Series one after another are laid out by first key rather than sorted: the rowsets of a
    load are the same, key for key and row for row, whatever the input order."""
    got = {}
    for name, data in _load_orders().items():
        t = tf.create_table(str(tmp_path / name), metrics_schema(), partitioning=metrics_partitioning())
        t.insert(data)
        assert t.check().ok
        by_tablet = {}
        for rs in t.state.rowsets.values():
            keys = read_pk_index(t.storage, rs)
            assert pc.all(pc.less(keys.slice(0, len(keys) - 1), keys.slice(1))).as_py()
            by_tablet[rs.tablet] = keys.to_pylist()
        got[name] = (by_tablet, t.scan(ordered=True).to_arrow().to_pylist())
    assert got["series"] == got["time"] == got["random"]
    assert len(got["series"][1]) == 40 * 3 * 60


@pytest.mark.parametrize("order", ["series", "time", "random"])
def test_a_repeated_key_is_found_whatever_the_load_order(tmp_path, order):
    """A key repeated across series (a series sent twice in part) fails the insert with the same
    count and first key in every order; insert_ignore keeps its first occurrence in the batch."""
    data = _load_orders(n_hosts=10, per_series=50)[order]
    again = data.filter(pc.and_(pc.equal(data["host"], "h004"), pc.equal(data["metric"], "cpu"))).slice(0, 7)
    again = again.set_column(3, "value", pa.array(np.full(7, -1.0)))
    batch = pa.concat_tables([data, again])
    t = tf.create_table(str(tmp_path / "t"), metrics_schema(), partitioning=metrics_partitioning())
    with pytest.raises(tf.DuplicateKeyError, match=r"7 key\(s\) appear more than once") as e:
        t.insert(batch)
    assert e.value.count == 7 and t.version == 0
    assert [k["time"] for k in e.value.keys] == sorted(again["time"].to_pylist())[:3]
    res = t.insert_ignore(batch)
    assert (res.inserted, res.ignored) == (data.num_rows, 7)
    got = t.scan(columns=["value"], filter=[("value", "<", 0)]).to_arrow()
    assert got.num_rows == 0                       # batch order: the first occurrence wins


@pytest.mark.parametrize("n", [10, 70_000])
def test_of_two_bad_columns_the_first_in_schema_order_is_reported(tmp_path, n):
    """Input columns are checked side by side when there are many rows; the error is still the
    one a check column by column would raise first, and nothing is written."""
    t = tf.create_table(str(tmp_path / "t"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(n)
    bad_metric = data.set_column(1, "metric", pa.array([None] + data["metric"].to_pylist()[1:], pa.string()))
    bad_both = bad_metric.set_column(4, "price", pa.array([decimal.Decimal("1e20")] * n, pa.decimal128(38, 2)))
    with pytest.raises(tf.NullValueError, match="'metric'"):
        t.insert(bad_both)
    with pytest.raises(tf.DecimalOutOfRangeError, match="'price'"):
        t.insert(bad_both.set_column(1, "metric", data["metric"]))
    with pytest.raises(tf.MissingColumnError, match="'time'"):
        t.insert(bad_both.drop_columns(["time"]).set_column(1, "metric", data["metric"]))
    with pytest.raises(tf.NullValueError, match="'metric'"):
        t.insert(bad_both.drop_columns(["time"]))
    assert t.version == 0 and t.scan().count() == 0


@pytest.mark.parametrize("precision", [1, 9, 10, 18])
def test_decimal_digit_check_agrees_with_the_exact_comparison(precision):
    """The int64 check of decimal(p <= 18) values agrees with comparing |value| to 10^p - 1,
    at the bounds, beyond int64, behind NULLs (whose bytes are anything), in a slice and in
    a later block of a long array."""
    from tableformat.format.batch import _decimal_digits_fit, _max_decimal
    col = tf.Column("d", f"decimal({precision},0)", nullable=True)
    top = 10 ** precision - 1
    edge = [top, -top, top + 1, -top - 1, 2 ** 63 - 1, -2 ** 63, 2 ** 64, -2 ** 64, 2 ** 100, -2 ** 100, 0, -1]

    def exact(arr):
        return pc.all(pc.less_equal(pc.abs(arr), _max_decimal(col))).as_py() is not False
    for v in edge:
        for lead in (0, 200_000):                  # the value alone, or in the second block of a long array
            arr = pa.array([0] * lead + [v], pa.decimal128(38, 0))
            assert _decimal_digits_fit(arr, col) == exact(arr) == (abs(v) <= top), (v, lead)
    wide = pa.array([2 ** 100, 5, -5, 2 ** 70], pa.decimal128(38, 0))
    assert _decimal_digits_fit(wide.slice(1, 2), col)                   # a slice sees its own values only
    hidden = pa.Array.from_buffers(wide.type, 4, [pa.py_buffer(np.packbits([0, 1, 1, 0], bitorder="little")),
                                                  wide.buffers()[1]])
    assert hidden.null_count == 2 and _decimal_digits_fit(hidden, col)    # too wide only behind NULLs


def test_a_batch_whose_chunks_differ_in_series_order_loads_like_any_other(tmp_path, monkeypatch):
    """Routing numbers series chunk by chunk; a chunk whose rows interleave series gets none,
    and then its tablets have none: their rows are still sorted exactly."""
    from tableformat.write import insert as insert_module
    monkeypatch.setattr(insert_module, "_ROUTE_CHUNK", 9000)
    orders = _load_orders(n_hosts=50, per_series=60)                    # 9000 rows each
    shifted = pc.add(orders["time"]["time"], pa.scalar(10**9, pa.duration("us")))
    later = orders["time"].set_column(2, "time", shifted)
    batch = pa.concat_tables([orders["series"], later])
    t = tf.create_table(str(tmp_path / "t"), metrics_schema(), partitioning=metrics_partitioning())
    routed = insert_module.route(t.state, insert_module.prepare(t.state.schema, batch))
    assert routed and all(r.breaks is None for r in routed)
    t.insert(batch)
    u = tf.create_table(str(tmp_path / "u"), metrics_schema(), partitioning=metrics_partitioning())
    u.insert(batch.take(pa.array(np.random.default_rng(1).permutation(batch.num_rows))))
    for a, b in zip(sorted(t.state.rowsets.values(), key=lambda r: r.tablet),
                    sorted(u.state.rowsets.values(), key=lambda r: r.tablet)):
        assert read_pk_index(t.storage, a).equals(read_pk_index(u.storage, b))
    assert t.scan(ordered=True).to_arrow().equals(u.scan(ordered=True).to_arrow())


# --- a key-ordered load over many rowsets -----------------------------------------------------

def test_key_ordered_multi_chunk_insert_finds_every_existing_key(tmp_path):
    """A key-ordered load (no sort) over many rowsets with small PK index blocks: a later batch
    repeating any one stored key (first, middle, last rowset) fails; lookups (cold, then through
    the hash index) find every key; an empty string key is a key like any other."""
    sch = tf.Schema([tf.Column("s", "string"), tf.Column("i", "int64"), tf.Column("a", "int64", nullable=True)],
                    primary_key=["s", "i"])
    t = tf.create_table(str(tmp_path / "t"), sch, properties={"rowset_target_bytes": 1 << 16,
                                                               "pk_index_block_rows": 64})
    n = 50000
    tb = pa.table({"s": np.array([f"pfx{j // 7:08d}" for j in range(n)], dtype=object),
                   "i": np.arange(n) % 7 - 3, "a": np.arange(n)})
    t.insert(pa.concat_tables([tb.slice(0, 17000), tb.slice(17000)]))
    assert len(t.state.rowsets) > 3
    extra = pa.table({"s": ["pfx99999999", "pfx99999999"], "i": [0, 1], "a": [1, 2]})
    for j in (0, 12345, n - 1):
        with pytest.raises(tf.DuplicateKeyError,
                           match=r"1 key\(s\) already exist in table 't' \(first: \('pfx\d+', -?\d\)\)"):
            t.insert(pa.concat_tables([tb.slice(j, 1), extra]))
    t.insert(pa.table({"s": [""], "i": [0], "a": [-1]}))
    with pytest.raises(tf.DuplicateKeyError,
                       match=r"1 key\(s\) already exist in table 't' \(first: \('', 0\)\); use insert_ignore or"):
        t.insert(pa.table({"s": ["", "zz"], "i": [0, 0], "a": [0, 0]}))
    q = tb.take(pa.array(np.random.default_rng(0).choice(n, 3000, replace=False)))
    for _ in range(2):
        assert t.lookup(q.select(["s", "i"])).to_pylist() == q.to_pylist()
    assert t.lookup(pa.table({"s": [""], "i": [0]})).to_pylist() == [{"s": "", "i": 0, "a": -1}]
    assert t.scan().count() == n + 1 and t.check().ok
