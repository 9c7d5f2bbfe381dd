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


# --- footer statistics on float columns (§5) ------------------------------------------------------
NAN = float("nan")


def nan_table(root, **props):
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("f", "double", nullable=True),
                        tf.Column("g", "float", nullable=True, encoding="plain")], "k")
    return tf.create_table(str(root), schema, properties={"row_group_rows": 1024, **props})


def nan_rows(keys, f):
    return pa.table({"k": pa.array(keys, pa.int64()), "f": pa.array(f, pa.float64()),
                     "g": pa.array(f, pa.float32())})


def base_paths(t):
    return [f"{t.uri}/{b.path}" for rs in t.refresh().rowsets.values() for b in rs.base]


def pruning_readers_agree(path):
    """`f > 0.0` through the readers that prune row groups by footer statistics equals the
    count of the file's rows above 0 or NaN (NaN ranks above every number there, as in §13)."""
    for c in ("c1", "c2"):
        col = pq.read_table(path, columns=[c]).column(c)
        want = pa.compute.sum(pa.compute.or_(pa.compute.greater(col, 0.0), pa.compute.is_nan(col))).as_py() or 0
        assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{path}') WHERE {c} > 0.0").fetchall()[0][0] == want
        assert pl.scan_parquet(path).filter(pl.col(c) > 0.0).select(pl.len()).collect().item() == want


def float_min_max(path):
    md = pq.read_metadata(path)
    return {md.row_group(g).column(i).path_in_schema: md.row_group(g).column(i).statistics.has_min_max
            for g in range(md.num_row_groups) for i in range(md.num_columns)
            if md.row_group(g).column(i).statistics is not None}


def test_a_float_column_holding_nan_has_no_footer_min_max(tmp_path):
    """#34.2: pyarrow's float min/max leave NaN out, so DuckDB (and Spark, the Delta mirror's
    readers) pruned the row group of [-1.0, NaN, -2.0] for `f > 0.0` and lost the NaN row. A
    column without NaN keeps its statistics (readers still prune by them: 2.0 -> 8.2 ms for
    DuckDB on a time-correlated double, 2M rows); the key's are always there."""
    t = nan_table(tmp_path / "t")
    t.insert(nan_rows([1, 2, 3], [-1.0, NAN, -2.0]))
    t.insert(nan_rows([4, 5], [-1.0, -2.0]))
    with_nan, without = base_paths(t)
    assert float_min_max(with_nan) == {"c0": True}
    assert float_min_max(without) == {"c0": True, "c1": True, "c2": True}
    for p in (with_nan, without):
        pruning_readers_agree(p)


def test_rewritten_and_streamed_base_files_follow_the_same_rule(tmp_path):
    """One owner decides (diskrowset.base_file_layout): a merge's and a major delta compaction's
    outputs, and the streaming writer (Spark's insert), whose encodings come from its first
    65,536 rows, so a NaN after them is unknown when the file is opened: there no float column
    gets min/max, unless the whole rowset fits in those rows."""
    from helpers import force, merge_all
    t = nan_table(tmp_path / "t")
    t.insert(nan_rows(range(100), [-1.0] * 100))
    t.insert(nan_rows(range(100, 200), [-2.0] * 100))
    t.update(pa.table({"k": pa.array([150], pa.int64()), "f": [NAN], "g": pa.array([NAN], pa.float32())}))
    merge_all(t)
    (merged,) = [p for p in base_paths(t) if 150 in pq.read_table(p, columns=["c0"]).column("c0").to_pylist()]
    assert float_min_max(merged) == {"c0": True}
    pruning_readers_agree(merged)
    t.update(pa.table({"k": pa.array([150, 151], pa.int64()), "f": [-3.0, NAN],
                       "g": pa.array([-3.0, NAN], pa.float32())}))
    (rs,) = [r.id for r in t.state.rowsets.values() if r.base[0].path in merged]
    force(t, "major_delta", [rs], [c.id for c in t.schema.columns if c.name != "k"])
    rewritten = f"{t.uri}/{t.state.rowsets[rs].base[-1].path}"      # the new column group
    assert float_min_max(rewritten) == {}                                 # 151 is NaN now
    pruning_readers_agree(rewritten)

    s = nan_table(tmp_path / "s")
    snap = s.snapshot()
    (tablet,) = snap.tablet_ids
    n = 70_000
    f = pa.array([-1.0] * (n - 1000) + [NAN] + [-1.0] * 999, pa.float64())
    w = snap.rowset_writer(tablet)
    w.write(pa.table({"k": pa.array(range(n), pa.int64()), "f": f, "g": f.cast(pa.float32())}))
    s.commit_fragments([w.finish()], "INSERT")
    w = s.snapshot().rowset_writer(tablet)
    w.write(nan_rows(range(n, n + 10), [-1.0] * 10))
    s.commit_fragments([w.finish()], "INSERT")
    streamed, small = sorted(base_paths(s), key=lambda p: -pq.read_metadata(p).num_rows)
    assert all(v is False for c, v in float_min_max(streamed).items() if c != "c0")
    assert float_min_max(small) == {"c0": True, "c1": True, "c2": True}
    for p in (streamed, small):
        pruning_readers_agree(p)
