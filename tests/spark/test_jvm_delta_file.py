"""The JVM's REDO DELETE file (`tableformat.write.DeltaFileWriter`, issue #46) read by the engine.

The JVM writes the delete records of some rows of a table; the engine's own delete of the same
keys runs on a copy. The engine's `read_delta` finds the same records in both files, and the
JVM's file committed as a mutation (`rows_live`, §10.1) reads as the engine's delete: same rows,
same `changes()`, `check()` clean, no base file added or removed.
"""
import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tableformat as tf
from tableformat.format.deltafile import read_delta
from tableformat.format.metadata import DeltaFileMeta
from tableformat.log.requirements.base import pack_rowids

pytest.importorskip("pyspark")
from spark_jobs.writes import commit_fragments  # noqa: E402

pytestmark = pytest.mark.usefixtures("jvm_connector")


def make(uri):
    schema = tf.Schema([tf.Column("host", "string"), tf.Column("t", "int64"),
                        tf.Column("v", "double", nullable=True)], primary_key=["host", "t"])
    t = tf.create_table(uri, schema, tf.PartitionSchema(hash=[tf.HashPartition(["host"], 2)]))
    hosts = [f"h{i % 5}" for i in range(300)]
    t.insert(pa.table({"host": hosts, "t": pa.array(range(300), pa.int64()), "v": [i / 3 for i in range(300)]}))
    return t


def doomed_rows(t, pick):
    """rowset -> (tablet, rowids, keys) of the live rows whose key `pick` chooses (rowid: the
    row's ordinal in its rowset's base file, §9)."""
    out = {}
    for rs in t.state.rowsets.values():
        base = pq.read_table(f"{t.uri}/{rs.base[0].path}", columns=["c0", "c1"])
        hosts, ts = base.column("c0").to_pylist(), base.column("c1").to_numpy()
        rowids = np.flatnonzero([pick(h, int(x)) for h, x in zip(hosts, ts)])
        if len(rowids):
            out[rs.id] = (rs.tablet, rowids, [(hosts[i], int(ts[i])) for i in rowids])
    return out


def jvm_delete_fragment(spark, t, doomed):
    """The add_delta actions the JVM writes for these rows, as one mutation fragment."""
    jvm = spark.sparkContext._jvm
    files = jvm.tableformat.write.TableFiles(t.uri, spark._jsc.hadoopConfiguration())
    schema = jvm.tableformat.write.WriteSchema.of(json.dumps(t.schema.to_json()))
    actions, paths, n = [], [], 0
    for rid, (tablet, rowids, keys) in doomed.items():
        w = jvm.tableformat.write.DeltaFileWriter(files, schema, tablet, rid)
        # the keys as Spark's own rows (UnsafeRow, what a Spark writer gets), in reverse rowid order
        df = spark.createDataFrame(list(reversed(keys)), "host string, t bigint")
        for rowid, row in zip(reversed(rowids), df._jdf.queryExecution().executedPlan().executeCollect()):
            w.delete(int(rowid), row)
        d = json.loads(jvm.tableformat.log.Json.MAPPER.writeValueAsString(w.finish()))
        actions.append({"add_delta": d})
        paths.append(d["path"])
        n += len(rowids)
    return {"operation": "DELETE", "read_version": t.version, "actions": actions, "files": paths,
            "counts": {"deleted": n}, "data_change": True, "table_id": t.table_id, "kind": "mutation",
            "requirements": [{"kind": "definition_unchanged"},
                             {"kind": "rows_live", "rows": {r: pack_rowids(v[1]) for r, v in doomed.items()}}]}


def pick(host, x):
    return x % 7 == 0 or host == "h3" and x > 250


def test_the_engine_reads_a_jvm_delete_file_as_its_own(spark, tmp_path):
    t = make(str(tmp_path / "jvm"))
    shutil.copytree(tmp_path / "jvm", tmp_path / "engine")
    twin = tf.open_table(str(tmp_path / "engine"))
    doomed = doomed_rows(t, pick)
    frag = jvm_delete_fragment(spark, t, doomed)
    keys = [k for v in doomed.values() for k in v[2]]
    twin.delete(pa.table({"host": [h for h, _ in keys], "t": pa.array([x for _, x in keys], pa.int64())}))

    ours = [DeltaFileMeta.from_json(a["add_delta"]) for a in frag["actions"]]
    by_rowset = {rid: ds[-1] for rid, ds in twin.state.deltas.items()}
    assert len(ours) == len(by_rowset) == len(doomed)
    key_cols = t.schema.key_columns
    for d in ours:
        e = by_rowset[d.rowset]
        mine, engine = read_delta(t.storage, d, (), key_cols), read_delta(twin.storage, e, (), key_cols)
        assert mine.equals(engine), (mine, engine)
        assert (d.num_records, d.delete_count, d.reinsert_count, d.update_counts) == \
            (e.num_records, e.delete_count, e.reinsert_count, e.update_counts)

    files_before = set(t.inspect("files").column("path").to_pylist())
    r = commit_fragments(t.uri, None, [frag], "DELETE", frag["counts"])
    assert r.version == 2 and r.deleted == len(keys)
    t.refresh()
    assert t.to_arrow().sort_by([("host", "ascending"), ("t", "ascending")]).equals(
        twin.to_arrow().sort_by([("host", "ascending"), ("t", "ascending")]))
    drop = ["_timestamp"]
    assert t.changes(1, 2).drop(drop).equals(twin.changes(1, 2).drop(drop))
    bases = {p for p in t.inspect("files").column("path").to_pylist() if "/base-" in p}
    assert bases == {p for p in files_before if "/base-" in p}
    assert t.check().ok
