"""The JVM insert (tableformat.write: KeyCheck, InsertTask, SparkInsert): its key check finds
exactly the live rows the engine's probe finds (deleted and re-inserted keys, history-only
rowsets, several tablets); inserts through the JVM equal the engine's, Python and JVM inserts
taking turns in one history; duplicates in the input and against the table fail or are skipped
as in the Python job."""
import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import tableformat as tf  # noqa: E402
from tableformat.read.keyprobe import probe  # noqa: E402

from helpers import table_files  # noqa: E402

pytestmark = pytest.mark.usefixtures("jvm_connector")

KV = tf.Schema([tf.Column("k", "int64"), tf.Column("s", "string"), tf.Column("v", "double", nullable=True)],
               primary_key=["k", "s"])


def _rows(keys):
    keys = np.asarray(keys, np.int64)
    return pa.table({"k": keys, "s": pa.array([f"s{x % 7}" for x in keys]), "v": keys * 0.5})


def _table(uri, **props):
    part = tf.PartitionSchema(hash=[tf.HashPartition(["s"], buckets=3)])
    return tf.create_table(uri, KV, part, properties={"row_group_rows": 128, "pk_index_block_rows": 128, **props})


def _engine_live(table, rows):
    """(rowset id, rowid) of each row's live copy by the engine's probe ('' where none)."""
    snap = table.snapshot()
    st = snap.state
    ordinal, keys = snap.route_keys(rows)
    out = [""] * rows.num_rows
    for o in np.unique(ordinal):
        at = np.flatnonzero(ordinal == o)
        rowsets = st.rowsets_in(snap.tablet_ids[o])
        which, rowid = probe(table.storage, rowsets, keys.take(pa.array(at)), st.deltas_of)
        for i, w, r in zip(at, which, rowid):
            if w >= 0:
                out[i] = f"{rowsets[w].id}:{r}"
    return out, [snap.tablet_ids[o] for o in ordinal], [k.hex() for k in keys.to_pylist()]


def test_key_check_finds_the_live_rows_the_engine_probe_finds(spark, tmp_path):
    uri = str(tmp_path / "t")
    t = _table(uri)
    rng = np.random.default_rng(3)
    for lo in (0, 300, 150):                     # overlapping key intervals: several rowsets per tablet
        t.insert(_rows(np.arange(lo, lo + 200, 2) + (lo % 4 == 2)))
    live = np.unique(t.to_arrow()["k"].to_numpy())
    gone = rng.choice(live, 60, replace=False)
    t.delete(_rows(gone).select(["k", "s"]))
    t.insert(_rows(gone[:20]))                   # deleted, then inserted again: the newer rowset's row
    t.compact()                                  # merged: the inputs stay as history-only rowsets
    t.delete(_rows(live[~np.isin(live, gone)][:15]).select(["k", "s"]))    # a REDO delete over the merged rowset
    st = t.snapshot().state
    assert any(r.history_only for r in st.rowsets.values()), "the history must hold a history-only rowset"
    probe_keys = np.arange(-5, 520)              # live, deleted, re-inserted, absent inside and outside intervals
    rows = _rows(probe_keys)
    expect, tablets, hexkeys = _engine_live(t, rows)
    jvm = spark._jvm.tableformat.write.SparkInsert
    got = list(jvm.liveKeys(spark._jsparkSession, uri, t.version, tablets, hexkeys))
    assert got == expect
    assert sum(1 for e in expect if e) == len(np.unique(t.to_arrow()["k"].to_numpy()))


@pytest.fixture
def jvm_writer(spark):
    if not spark._jvm.tableformat.write.SparkInsert.available():
        pytest.skip("the connector's JVM rowset writer is not in this build")


def _df(spark, t, parts=3):
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType
    schema = StructType([StructField("k", LongType(), False), StructField("s", StringType(), False),
                         StructField("v", DoubleType(), True)])
    return spark.createDataFrame(t.to_pandas(), schema).repartition(parts)


def _as_set(t):
    return sorted(zip(t["k"].to_pylist(), t["s"].to_pylist(), t["v"].to_pylist()))


def test_python_and_jvm_inserts_take_turns(spark, tmp_path, jvm_writer, caplog):
    """A random history: inserts by the JVM and by Python in turn, ignore and fail, with deletes
    between them (a key deleted in the snapshot may be inserted again); each version equals the
    model, check() is ok, and changes() between versions are exactly the rows each step made."""
    import logging
    from spark_jobs.insert import partitioned_insert
    uri = str(tmp_path / "t")
    t = _table(uri, rowset_target_bytes=65536)
    rng = np.random.default_rng(11)
    model: dict = {}
    caplog.set_level(logging.INFO, logger="spark_jobs.insert")
    for step in range(8):
        path = "jvm" if step % 2 == 0 else "python"
        keys = rng.choice(600, 120, replace=False)
        rows = _rows(keys)
        before = t.version
        if step % 3 == 2:                        # ignore: keys live now are skipped
            res = partitioned_insert(spark, _df(spark, rows), uri, on_duplicate="ignore", path=path)
            fresh = [k for k in keys if int(k) not in model]
            assert (res.inserted, res.ignored) == (len(fresh), len(keys) - len(fresh))
        else:
            keys = np.array([k for k in keys if int(k) not in model])
            rows = _rows(keys)
            res = partitioned_insert(spark, _df(spark, rows), uri, path=path)
            assert res.inserted == len(keys)
            fresh = keys
        for k in fresh:
            model[int(k)] = (int(k), f"s{int(k) % 7}", int(k) * 0.5)
        t = tf.open_table(uri)
        got = t.changes(before, t.version)
        assert sorted(got["k"].to_pylist()) == sorted(int(k) for k in fresh)
        assert set(got["_op"].to_pylist()) <= {"insert"}
        gone = rng.choice(sorted(model), 25, replace=False)          # deleted: insertable again
        t.delete(_rows(gone).select(["k", "s"]))
        for k in gone:
            del model[int(k)]
        assert _as_set(tf.open_table(uri).to_arrow()) == sorted(model.values())
        assert tf.open_table(uri).check().ok
    lines = [r.getMessage() for r in caplog.records if "partitioned_insert" in r.getMessage()]
    assert sum("JVM path" in m for m in lines) == 4 and sum("Python path" in m for m in lines) == 4


@pytest.mark.parametrize("mode", ["fail", "ignore"])
def test_jvm_duplicates_in_the_input_and_against_the_table(spark, tmp_path, jvm_writer, mode):
    """A key twice in the input, a key live in the table, and a key deleted in the snapshot (which
    is inserted again): fail commits nothing and leaves no file; ignore skips exactly the two."""
    from spark_jobs.insert import partitioned_insert
    uri = str(tmp_path / "t")
    t = _table(uri)
    t.insert(_rows(np.arange(0, 50)))
    t.delete(_rows([7]).select(["k", "s"]))
    files = table_files(uri)
    rows = _rows(np.array([7, 100, 100, 20, 101]))
    if mode == "fail":
        with pytest.raises(tf.DuplicateKeyError):
            partitioned_insert(spark, _df(spark, rows), uri, path="jvm")
        assert tf.open_table(uri).version == t.version
        assert tf.open_table(uri).check().ok
        assert table_files(uri) == files         # the tasks' files deleted
    else:
        res = partitioned_insert(spark, _df(spark, rows), uri, on_duplicate="ignore", path="jvm")
        assert (res.inserted, res.ignored) == (3, 2)
        ks = sorted(tf.open_table(uri).to_arrow()["k"].to_pylist())
        assert ks == sorted([k for k in range(50) if k != 7] + [7, 100, 101])
        assert tf.open_table(uri).check().ok


def test_jvm_bad_input_is_typed_and_commits_nothing(spark, tmp_path, jvm_writer):
    """A NULL key and a cell over 64 KiB: the engine's error classes from the JVM tasks; the
    table keeps its version and files."""
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType
    from spark_jobs.insert import partitioned_insert
    uri = str(tmp_path / "t")
    t = _table(uri)
    t.insert(_rows(np.arange(10)))
    files = table_files(uri)
    schema = StructType([StructField("k", LongType(), True), StructField("s", StringType(), True),
                         StructField("v", DoubleType(), True)])
    for rows, err in (([(100, "a", 1.0), (None, "b", 2.0)], tf.NullValueError),
                      ([(100, "a", 1.0), (101, "x" * (64 * 1024 + 1), 2.0)], tf.CellTooLargeError)):
        with pytest.raises(err):
            partitioned_insert(spark, spark.createDataFrame(rows, schema), uri, path="jvm")
        assert tf.open_table(uri).version == t.version and table_files(uri) == files


def test_jvm_cuts_varchar_as_the_engine(spark, tmp_path, jvm_writer):
    """A varchar(n) value longer than n characters is cut to n characters (Kudu's rule), multi-byte
    characters counted as one (a value of more than n bytes but at most n characters is kept whole),
    exactly as the Python path stores it."""
    from spark_jobs.insert import partitioned_insert
    schema = tf.Schema([tf.Column("k", "int64"), tf.Column("c", "varchar(3)", nullable=True)], primary_key="k")
    rows = pa.table({"k": pa.array([1, 2, 3, 4, 5], pa.int64()), "c": ["abcdef", "ab", None, "éé€€x", "é€"]})
    got = {}
    for path in ("jvm", "python"):
        uri = str(tmp_path / path)
        tf.create_table(uri, schema)
        df = spark.createDataFrame(rows.to_pylist(), "k long, c string")
        partitioned_insert(spark, df, uri, path=path)
        got[path] = tf.open_table(uri).to_arrow().sort_by("k").to_pylist()
        assert tf.open_table(uri).check().ok
    assert got["jvm"] == got["python"] == [{"k": 1, "c": "abc"}, {"k": 2, "c": "ab"}, {"k": 3, "c": None},
                                            {"k": 4, "c": "éé€"}, {"k": 5, "c": "é€"}]
