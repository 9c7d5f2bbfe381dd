"""Base files open in every common Parquet reader (specs/format.md §5): each type × encoding × codec
the schema accepts, read in full by DuckDB, Polars and pyarrow, values equal to the engine's."""
import datetime as dt
import decimal
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tableformat as tf
from tableformat.format.types import COMPRESSIONS, parse_type

duckdb = pytest.importorskip("duckdb")
pl = pytest.importorskip("polars")

UTC = dt.timezone.utc
D = decimal.Decimal
TYPES = {
    "bool": [True, False, None, True],
    "int8": [0, -128, 127, None],
    "int16": [0, -2**15, 2**15 - 1, None],
    "int32": [0, -2**31, 2**31 - 1, None],
    "int64": [0, -2**63, 2**63 - 1, None],
    "float": [0.0, -0.0, 1.5, float("nan"), float("inf"), -3.25e30, None],
    "double": [0.0, -0.0, 1e-300, float("nan"), float("-inf"), 1.7976931348623157e308, None],
    "date": [dt.date(1970, 1, 1), dt.date(1, 1, 1), dt.date(9999, 12, 31), None],
    "unixtime_micros": [dt.datetime(1970, 1, 1, tzinfo=UTC), dt.datetime(1, 1, 1, tzinfo=UTC),
                        dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), None],
    "string": ["", "héllo", "x" * 300, None],
    "varchar(8)": ["", "abcdefgh", "é", None],
    "binary": [b"", b"\x00\xff", b"y" * 300, None],
    "decimal(9,2)": [D("0.00"), D("-9999999.99"), D("9999999.99"), None],
    "decimal(18,4)": [D("0.0000"), D("-99999999999999.9999"), D("12.3456"), None],
    "decimal(38,10)": [D("0E-10"), D("-" + "9" * 28 + ".9999999999"), D("1.5000000000"), None],
}
COMBOS = [(t, e, c) for t in TYPES for e in parse_type(t).encodings for c in COMPRESSIONS]


@pytest.fixture(scope="module")
def base_files(tmp_path_factory):
    """One single-rowset table per combination: (base file path, engine rows, Parquet field name)."""
    root = tmp_path_factory.mktemp("readers")
    out = {}
    for i, (typ, enc, codec) in enumerate(COMBOS):
        schema = tf.Schema([tf.Column("k", "int32"),
                            tf.Column("v", typ, nullable=True, encoding=enc, compression=codec)], "k")
        t = tf.create_table(str(root / f"t{i}"), schema)
        vals = TYPES[typ] * 20      # enough rows for dictionary and RLE runs
        t.insert(pa.table({"k": pa.array(range(len(vals)), pa.int32()),
                           "v": pa.array(vals, schema.column("v").arrow_type)}))
        (rs,) = t.state.rowsets.values()
        out[(typ, enc, codec)] = (str(root / f"t{i}" / rs.base[0].path), t.scan(ordered=True).to_arrow(),
                                  f"c{schema.column('v').id}", f"c{schema.column('k').id}")
    return out


def norm_value(v):
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else ("-0.0" if v == 0 and math.copysign(1, v) < 0 else v)
    return v


def _read(reader: str, path: str) -> pa.Table:
    if reader == "duckdb":
        return duckdb.sql(f"SELECT * FROM read_parquet('{path}')").to_arrow_table()
    if reader == "polars":
        return pl.read_parquet(path).to_arrow()
    return pq.read_table(path)


def test_the_matrix_covers_every_accepted_combination():
    kinds = {parse_type(t).kind for t in TYPES}
    assert kinds == {"bool", "int8", "int16", "int32", "int64", "float", "double", "date", "unixtime_micros",
                     "string", "varchar", "binary", "decimal"}
    assert {p for t in TYPES if t.startswith("decimal") for p in [parse_type(t).precision]} == {9, 18, 38}


@pytest.mark.parametrize("reader", ["duckdb", "polars", "pyarrow"])
@pytest.mark.parametrize("combo", COMBOS, ids=["-".join(c) for c in COMBOS])
def test_every_reader_reads_every_base_file(base_files, combo, reader):
    path, rows, vname, kname = base_files[combo]
    got = _read(reader, path)
    assert got.num_rows == rows.num_rows
    got = got.sort_by(kname)
    col = got.column(vname)
    want = rows.column("v")
    if col.type != want.type:
        col = col.cast(want.type)
    assert [norm_value(v) for v in col.to_pylist()] == [norm_value(v) for v in want.to_pylist()]


def test_wide_decimals_are_not_byte_stream_split(base_files):
    path = base_files[("decimal(38,10)", "bitshuffle", "lz4")][0]
    md = pq.ParquetFile(path).metadata
    encs = md.row_group(0).column(1).encodings
    assert "BYTE_STREAM_SPLIT" not in encs
    narrow = pq.ParquetFile(base_files[("decimal(18,4)", "bitshuffle", "lz4")][0]).metadata
    assert "BYTE_STREAM_SPLIT" in narrow.row_group(0).column(1).encodings
