"""Delta files on disk (specs/format.md §9): each field typed by its Parquet type alone, no
ARROW:schema and no column statistics in the footer (most of a small REDO file's bytes), `op`
and the key columns dictionary-encoded, and every key type read back as its column's type; records in (rowid, ts) order."""
import datetime as dt
import decimal
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tableformat as tf
from tableformat.format.deltafile import read_delta, record_order

UTC = dt.timezone.utc
KEYS = [("s", "string"), ("i8", "int8"), ("i32", "int32"), ("d", "date"), ("ts", "unixtime_micros"),
        ("dec", "decimal(20,2)"), ("b", "binary")]


@pytest.fixture
def table(tmp_path):
    sch = tf.Schema([tf.Column(n, typ) for n, typ in KEYS] + [tf.Column("v", "double", nullable=True),
                                                               tf.Column("w", "string", nullable=True)],
                    primary_key=[n for n, _ in KEYS])
    t = tf.create_table(str(tmp_path / "t"), sch)
    n = 300
    t.insert(pa.table({
        "s": [f"host-{i % 7}" for i in range(n)], "i8": pa.array([i % 100 for i in range(n)], pa.int8()),
        "i32": pa.array(range(n), pa.int32()), "d": [dt.date(2024, 1, 1 + i % 28) for i in range(n)],
        "ts": [dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i) for i in range(n)],
        "dec": [decimal.Decimal(i).scaleb(-2) for i in range(n)], "b": [bytes([i % 256, 1]) for i in range(n)],
        "v": [float(i) for i in range(n)], "w": [None] * n}))
    return t


def _redo_files(t):
    return [os.path.join(t.uri, d.path) for ds in t.state.deltas.values() for d in ds if d.kind == "redo"]


def test_redo_footer_has_no_arrow_schema_nor_statistics_and_dictionary_keys(table):
    t = table
    before = t.scan().to_arrow()
    upd = before.filter(pa.compute.equal(pa.compute.bit_wise_and(before["i32"], 3), 0))
    t.update(upd.select([n for n, _ in KEYS]).append_column("v", pa.array([-1.0] * upd.num_rows)))
    (path,) = _redo_files(t)
    md = pq.ParquetFile(path).metadata
    assert b"ARROW:schema" not in (md.metadata or {})
    rg = md.row_group(0)
    chunks = {rg.column(i).path_in_schema: rg.column(i) for i in range(rg.num_columns)}
    assert not any(c.is_stats_set for c in chunks.values())
    keyed = ["op"] + [f"c{t.schema.column(n).id}" for n, _ in KEYS]
    assert all("RLE_DICTIONARY" in chunks[c].encodings for c in keyed), {c: chunks[c].encodings for c in keyed}
    assert chunks["rowid"].encodings and "DELTA_BINARY_PACKED" in chunks["rowid"].encodings


def test_every_key_type_reads_back_as_its_column_type(table):
    t = table
    keys = t.scan().to_arrow().select([n for n, _ in KEYS]).slice(10, 40)
    t.update(keys.append_column("w", pa.array(["x"] * keys.num_rows)))
    t.delete(keys.slice(0, 5))
    (rs_id, (d1, d2)), = [(k, v) for k, v in t.state.deltas.items()]
    rec = read_delta(t.storage, d1, [t.schema.column("w").id], t.schema.key_columns)
    for n, _ in KEYS:
        c = t.schema.column(n)
        assert rec.schema.field(f"c{c.id}").type == c.arrow_type, n
    assert rec.schema.field("rowid").type == pa.uint32() and rec.schema.field("op").type == pa.int8()
    got = t.scan(ordered=True).to_arrow()
    assert got.num_rows == 295 and pa.compute.sum(pa.compute.equal(got["w"], "x")).as_py() == 35
    ch = t.changes(t.version - 2, t.version)
    assert ch.num_rows == 45
    assert [ch.schema.field(n).type for n, _ in KEYS] == [keys.schema.field(n).type for n, _ in KEYS]


@pytest.mark.parametrize("shape", ["sorted", "two_runs", "ties_out_of_ts_order", "random", "no_ts"])
def test_records_are_ordered_by_rowid_then_time_as_lexsort_orders_them(shape):
    """Delta records are written by (rowid, ts), stable. Input that is in order already (or in
    sorted runs, as a merge's UNDO is) takes the cheap ways; every way gives lexsort's order."""
    rng = np.random.default_rng(len(shape))
    n = 5000
    rowids = np.sort(rng.integers(0, 2000, n))
    ts = rng.integers(0, 5, n)
    if shape == "sorted":
        o = np.lexsort((ts, rowids))
        rowids, ts = rowids[o], ts[o]
    elif shape == "two_runs":
        rowids = np.r_[np.sort(rng.integers(0, 2000, n - n // 2)), np.sort(rng.integers(0, 2000, n // 2))]
        ts = np.r_[np.full(n - n // 2, 3), np.full(n // 2, 7)]
    elif shape == "random":
        rowids = rng.integers(0, 2000, n)
    ts_arg = None if shape == "no_ts" else ts
    got = record_order(rowids, ts_arg)
    want = np.argsort(rowids, kind="stable") if ts_arg is None else np.lexsort((ts_arg, rowids))
    assert (np.arange(n) if got is None else got).tolist() == want.tolist()
    assert (got is None) == (shape in ("sorted", "no_ts"))
