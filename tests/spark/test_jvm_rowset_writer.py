"""The JVM rowset writer (spark_jobs/connector .../tableformat/write) against the Python engine:
rowsets the JVM writes from random rows of every type are committed by the Python engine as a
Spark insert task's fragment (kind spark_insert, the same requirements), read back equal,
`check()` ok; their base files read in pyarrow with the schema's Arrow types, and their
descriptors (keys, statistics) and Parquet layout (encodings, codecs, field ids, page CRC
options) equal a Python insert's of the same rows."""
import decimal
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tableformat as tf
from tableformat.log.actions import AddRowSet
from tableformat.log.fragment import WriteFragment
from tableformat.log.requirements import DefinitionUnchanged, KeysAbsent
from tableformat.format.metadata import RowSetMeta

pytestmark = pytest.mark.usefixtures("jvm_connector")

T0 = 1_700_000_000_000_000


def _schema():
    C = tf.Column
    return tf.Schema([
        C("k1", "int32"), C("k2", "string"), C("k3", "unixtime_micros"),
        C("b", "bool", nullable=True, encoding="run_length"),
        C("i8", "int8", nullable=True), C("i16", "int16", nullable=True, encoding="bitshuffle", compression="zstd"),
        C("i32", "int32", nullable=True, encoding="run_length"), C("i64", "int64", nullable=True, compression="snappy"),
        C("d", "date", nullable=True), C("f", "float", nullable=True, encoding="bitshuffle"),
        C("g", "double", nullable=True, compression="zlib"),
        C("m9", "decimal(9,2)", nullable=True), C("m18", "decimal(18,4)", nullable=True, encoding="bitshuffle"),
        C("m38", "decimal(38,10)", nullable=True, encoding="bitshuffle", compression="none"),
        C("v", "varchar(20)", nullable=True, encoding="prefix"), C("s", "string", nullable=True),
        C("bin", "binary", nullable=True, encoding="plain"),
    ], primary_key=["k1", "k2", "k3"])


def _rows(n, seed):
    rng = np.random.default_rng(seed)
    nulls = lambda: rng.random(n) < 0.1     # noqa: E731
    def opt(arr):
        return pa.array([None if z else x for x, z in zip(arr.to_pylist(), nulls())], arr.type)
    f = rng.normal(size=n).astype(np.float32)
    f[rng.random(n) < 0.05] = np.nan
    g = rng.normal(size=n) * 1e6
    g[rng.random(n) < 0.05] = np.inf
    k1 = rng.integers(-50, 50, n).astype(np.int32)
    k2 = [("h\x00" if i % 5 == 0 else "h") + str(x) for i, x in enumerate(rng.integers(0, 30, n))]
    k3 = T0 + np.arange(n, dtype=np.int64) * 1_000_003
    return pa.table({
        "k1": pa.array(k1), "k2": pa.array(k2), "k3": pa.array(k3, pa.timestamp("us", tz="UTC")),
        "b": opt(pa.array(rng.random(n) < 0.5)),
        "i8": opt(pa.array(rng.integers(-128, 128, n).astype(np.int8))),
        "i16": opt(pa.array(rng.integers(-2**15, 2**15, n).astype(np.int16))),
        "i32": opt(pa.array(rng.integers(0, 10, n).astype(np.int32))),
        "i64": opt(pa.array(rng.integers(-2**62, 2**62, n))),
        "d": opt(pa.array(rng.integers(-1000, 30000, n).astype(np.int32)).cast(pa.date32())),
        "f": opt(pa.array(f)), "g": opt(pa.array(g)),
        "m9": opt(pa.array([decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-10**8, 10**8, n)],
                           pa.decimal128(9, 2))),
        "m18": opt(pa.array([decimal.Decimal(int(x)).scaleb(-4) for x in rng.integers(-10**17, 10**17, n)],
                            pa.decimal128(18, 4))),
        "m38": opt(pa.array([decimal.Decimal(int(x) * 10**18 + int(y)).scaleb(-10)
                             for x, y in zip(rng.integers(-10**18, 10**18, n), rng.integers(0, 10**18, n))],
                            pa.decimal128(38, 10))),
        "v": opt(pa.array([f"v{x % 97}é" for x in rng.integers(0, 10**6, n)])),
        "s": opt(pa.array([["red", "green", "blue"][x % 3] for x in rng.integers(0, 3, n)])),
        "bin": opt(pa.array([bytes(rng.integers(0, 256, int(x), dtype=np.uint8)) for x in rng.integers(0, 9, n)],
                            pa.binary())),
    })


def _jvm_write(spark, t: tf.Table, data: pa.Table, **props) -> tuple[list[dict], list[str]]:
    state = t.handle.state
    properties = {**state.properties, **props}
    df = spark.createDataFrame(data.select([c.name for c in state.schema.columns]))
    out = json.loads(spark._jvm.tableformat.write.RowSetWriters.write(
        t.handle.storage.root if hasattr(t.handle, "storage") else t.uri,
        json.dumps(state.schema.to_json()), json.dumps(state.partitioning.to_json(state.schema)),
        json.dumps(properties), df._jdf))
    return out["rowsets"], out["files"]


def _commit(t: tf.Table, rowsets: list[dict], files: list[str]):
    state = t.handle.state
    frag = WriteFragment("INSERT", state.version, [AddRowSet(RowSetMeta.from_json(r)) for r in rowsets], files,
                         {"inserted": sum(r["num_rows"] for r in rowsets), "ignored": 0},
                         [DefinitionUnchanged(), KeysAbsent(own_rowsets=True)], table_id=state.table_id,
                         kind="spark_insert")
    return t.commit_fragments([json.loads(json.dumps(frag.to_json()))])


def _values(col) -> list:
    return ["nan" if isinstance(v, float) and v != v else v for v in col.to_pylist()]


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by([("k1", "ascending"), ("k2", "ascending"), ("k3", "ascending")])


@pytest.mark.parametrize("partitioning", [
    None,
    tf.PartitionSchema(hash=[tf.HashPartition(["k2"], buckets=3)],
                       range=tf.RangePartition(["k1"], bounds=[(-100, 100)], splits=[0, 20])),
], ids=["one-tablet", "hash-and-ranges"])
def test_jvm_rowsets_commit_and_read_back_as_python_writes_them(spark, tmp_path, partitioning):
    data = _rows(3000, seed=7)
    jt = tf.create_table(str(tmp_path / "jvm"), _schema(), partitioning, properties={"row_group_rows": 512,
                                                                                  "pk_index_block_rows": 128})
    pt = tf.create_table(str(tmp_path / "py"), _schema(), partitioning, properties={"row_group_rows": 512,
                                                                                 "pk_index_block_rows": 128})
    rowsets, files = _jvm_write(spark, jt, data)
    _commit(jt, rowsets, files)
    pt.insert(data)
    got = _sorted(jt.to_arrow())
    expect = _sorted(data.cast(got.schema))
    for name in got.column_names:
        assert _values(got.column(name)) == _values(expect.column(name)), name
    assert jt.check().ok
    py = {r.tablet: r for r in pt.handle.state.rowsets.values()}
    assert sorted(py) == sorted(r["tablet"] for r in rowsets)
    schema = jt.handle.state.schema
    for r in rowsets:
        p = py[r["tablet"]].to_json()
        for k in ("num_rows", "min_key", "max_key"):
            assert r[k] == p[k], k
        assert r["stats"] == json.loads(json.dumps(p["stats"])), r["tablet"]
        jf = pq.ParquetFile(str(tmp_path / "jvm" / r["base"][0]["path"]))
        pf = pq.ParquetFile(str(tmp_path / "py" / p["base"][0]["path"]))
        assert jf.schema_arrow.remove_metadata() == pa.schema(
            [f.remove_metadata() for f in pf.schema_arrow]).remove_metadata()
        for c in schema.columns:
            assert jf.schema_arrow.field(f"c{c.id}").type == c.arrow_type
        assert [f.metadata[b"PARQUET:field_id"] for f in jf.schema_arrow] == \
            [str(c.id).encode() for c in schema.columns]
        assert jf.metadata.num_row_groups == pf.metadata.num_row_groups
        for i in range(jf.metadata.num_columns):
            jc, pc_ = jf.metadata.row_group(0).column(i), pf.metadata.row_group(0).column(i)
            assert jc.compression == pc_.compression, (i, jc.compression, pc_.compression)
            # the data pages' encodings (pyarrow also lists RLE for the levels of every column)
            assert set(jc.encodings) | {"RLE"} == set(pc_.encodings) | {"RLE"}, \
                (schema.columns[i].name, jc.encodings, pc_.encodings)
            if schema.columns[i].name == "b":
                assert "RLE" in jc.encodings
            assert jc.is_stats_set == pc_.is_stats_set, schema.columns[i].name
        assert json.loads(jf.schema_arrow.metadata[b"tableformat.column_names"]) == \
            {f"c{c.id}": c.name for c in schema.columns}
        ji = pq.ParquetFile(str(tmp_path / "jvm" / r["pk_index"]["path"]))
        pi = pq.ParquetFile(str(tmp_path / "py" / p["pk_index"]["path"]))
        assert ji.read().column(0).to_pylist() == pi.read().column(0).to_pylist()
        assert ji.metadata.num_row_groups == pi.metadata.num_row_groups
        assert ji.schema_arrow.metadata[b"tableformat.pk_block_first_keys"] == \
            pi.schema_arrow.metadata[b"tableformat.pk_block_first_keys"]
        assert (tmp_path / "jvm" / r["bloom"]["path"]).read_bytes() == (tmp_path / "py" / p["bloom"]["path"]).read_bytes()


def test_jvm_writer_rolls_rowsets_at_the_target_and_streams_past_the_dictionary_sample(spark, tmp_path):
    """100,000 rows of one tablet, rolled at 9 MB of Arrow input: several rowsets, key ranges in
    order and disjoint, each read back; the first rowset passes the 65,536-row sample, so its
    float columns carry no footer statistics (§5: opened before the whole file was seen)."""
    data = _rows(100_000, seed=3)
    t = tf.create_table(str(tmp_path / "t"), _schema(), properties={"row_group_rows": 4096})
    rowsets, files = _jvm_write(spark, t, data, rowset_target_bytes=9_000_000)
    assert len(rowsets) >= 2
    assert [r["min_key"] for r in rowsets] == sorted(r["min_key"] for r in rowsets)
    assert all(a["max_key"] < b["min_key"] for a, b in zip(rowsets, rowsets[1:]))
    assert sum(r["num_rows"] for r in rowsets) == data.num_rows
    big = max(rowsets, key=lambda r: r["num_rows"])
    assert big["num_rows"] > 65_536
    md = pq.ParquetFile(str(tmp_path / "t" / big["base"][0]["path"])).metadata
    names = [c.name for c in t.handle.state.schema.columns]
    assert not md.row_group(0).column(names.index("f")).is_stats_set
    assert md.row_group(0).column(names.index("i64")).is_stats_set
    assert md.num_row_groups == -(-big["num_rows"] // 4096)
    _commit(t, rowsets, files)
    got = _sorted(t.to_arrow())
    expect = _sorted(data.cast(got.schema))
    for name in got.column_names:
        assert _values(got.column(name)) == _values(expect.column(name)), name
    assert t.check().ok


def test_jvm_bytes_match_python_for_escaped_keys_hash_runs_and_stat_edges(spark, tmp_path):
    """review2 (perf45): keys holding 0x00 and 0xFF of every length 0..17 in a composite key whose
    first column is hashed (runs of one hash value across range partitions, prefixes of each other),
    a double with -0.0/0.0/NaN/NULL runs, strings in sorted runs broken by NULLs and one over 256
    bytes, varchar values of more bytes than characters (the rowset writer takes them as
    they come: SparkInsert cuts longer ones): the JVM's rowsets equal Python's."""
    C = tf.Column
    schema = tf.Schema([C("kb", "binary"), C("k", "int64"), C("g", "double", nullable=True),
                        C("s", "string", nullable=True), C("vc", "varchar(3)", nullable=True)],
                       primary_key=["kb", "k"])
    part = tf.PartitionSchema(hash=[tf.HashPartition(["kb"], buckets=5)],
                              range=tf.RangePartition(["k"], bounds=[(None, None)], splits=[2, 4]))
    kbs = []
    for n in range(18):
        kbs += [b"\x00" * n, b"\xff" * n, bytes((j * 0x7f) & 0xff for j in range(n)), b"a" * n + b"\x00",
                b"\x00\x01" * (n // 2)]
    kbs = sorted(set(kbs))
    kb, k, g, s, vc = [], [], [], [], []
    gs = [-0.0, 0.0, float("nan"), None, 0.0, -0.0, 1.5, None, float("nan"), -1.5]
    for i, b in enumerate(kbs):
        for j in range(6):                                 # six rows a key prefix: ranges 0, 1, 2
            kb.append(b)
            k.append(j)
            g.append(gs[(i + j) % len(gs)])
            s.append(None if (i + j) % 4 == 3 else ("x" * 300 if i % 7 == 0 else f"r{i // 3}"))
            vc.append(["é€", "abc", "€€€", None, "ab", "\x00\x00\x00"][(i + j) % 6])
    data = pa.table({"kb": pa.array(kb, pa.binary()), "k": pa.array(k, pa.int64()), "g": pa.array(g, pa.float64()),
                     "s": pa.array(s), "vc": pa.array(vc)})
    props = {"row_group_rows": 128, "pk_index_block_rows": 16}
    jt = tf.create_table(str(tmp_path / "jvm"), schema, part, properties=props)
    pt = tf.create_table(str(tmp_path / "py"), schema, part, properties=props)
    rowsets, files = _jvm_write(spark, jt, data)
    _commit(jt, rowsets, files)
    pt.insert(data)
    key = [("kb", "ascending"), ("k", "ascending")]
    got, expect = jt.to_arrow().sort_by(key), pt.to_arrow().sort_by(key)
    for name in got.column_names:
        assert _values(got.column(name)) == _values(expect.column(name)), name
    assert jt.check().ok
    py = {r.tablet: r for r in pt.handle.state.rowsets.values()}
    assert sorted(py) == sorted(r["tablet"] for r in rowsets)
    for r in rowsets:
        p = py[r["tablet"]].to_json()
        for f in ("num_rows", "min_key", "max_key"):
            assert r[f] == p[f], (r["tablet"], f)
        assert r["stats"] == json.loads(json.dumps(p["stats"])), r["tablet"]
        assert (tmp_path / "jvm" / r["bloom"]["path"]).read_bytes() == (tmp_path / "py" / p["bloom"]["path"]).read_bytes()
        ji = pq.ParquetFile(str(tmp_path / "jvm" / r["pk_index"]["path"]))
        pi = pq.ParquetFile(str(tmp_path / "py" / p["pk_index"]["path"]))
        assert ji.read().column(0).to_pylist() == pi.read().column(0).to_pylist()
