"""The JVM's deletes (issue #46): its REDO DELETE file (`tableformat.write.DeltaFileWriter`) and
the JVM committer's mutation kind (`rows_live`, specs/format.md §10.1).

The JVM writes the delete records of some rows of a table; the engine's own delete of the same
keys runs on a copy. The engine's `read_delta` finds the same records in both files, and the
JVM's file committed as a mutation, by the engine or by the JVM committer, reads as the engine's
delete: same rows, same `changes()`, `check()` clean, no base file added or removed. Racing the
engine's writes and compactions, the matrix (§10.2) decides: a concurrent delete of one of its rows
restarts it, an update of one or a disjoint delete rebases, a major delta compaction rebases
(rowids kept), a merging compaction is refused (CommitConflictError: the JVM committer does not
remap REDO records by key); two fragments deleting one row are contradictory. Whatever fails
leaves the table as the winners left it and deletes the delete's files.
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
from spark_jobs.errors import typed_error  # noqa: E402
from spark_jobs.writes import commit_fragments  # noqa: E402

pytestmark = pytest.mark.usefixtures("jvm_connector")


def make(uri, interval=10):
    schema = tf.Schema([tf.Column("host", "string"), tf.Column("t", "int64"),
                        tf.Column("v", "double", nullable=True)], primary_key=["host", "t"])
    t = tf.create_table(uri, schema, tf.PartitionSchema(hash=[tf.HashPartition(["host"], 2)]),
                        properties={"checkpoint_interval": interval})
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


def jvm_commit(spark, uri, fragments, operation="DELETE"):
    jvm = spark.sparkContext._jvm
    lst = jvm.java.util.ArrayList()
    for f in fragments:
        lst.add(json.dumps(f))
    try:
        return jvm.tableformat.commit.Committer(uri, spark._jsc.hadoopConfiguration()).commit(
            lst, operation, None, None, 0)
    except Exception as e:  # noqa: BLE001 - re-raised as the engine's class
        typed = typed_error(e)
        if typed is None:
            raise
        raise typed from e


def ordered(t):
    t.refresh()
    return t.to_arrow().sort_by([("host", "ascending"), ("t", "ascending")])


def keys_table(keys):
    return pa.table({"host": [h for h, _ in keys], "t": pa.array([x for _, x in keys], pa.int64())})


def test_the_jvm_committer_commits_a_delete_as_the_engine_does(spark, tmp_path):
    t = make(str(tmp_path / "jvm"), interval=2)            # the JVM writes version 2's checkpoint
    shutil.copytree(tmp_path / "jvm", tmp_path / "engine")
    twin = tf.open_table(str(tmp_path / "engine"))
    doomed = doomed_rows(t, pick)
    frag = jvm_delete_fragment(spark, t, doomed)
    keys = [k for v in doomed.values() for k in v[2]]
    twin.delete(keys_table(keys))
    r = jvm_commit(spark, t.uri, [frag])
    assert r.version() == 2 and r.attempts() == 1
    h = t.history()[-1]
    assert (h.operation, h.counts) == ("DELETE", {"deleted": len(keys)})
    assert ordered(t).equals(ordered(twin))
    assert t.changes(1, 2).drop(["_timestamp"]).equals(twin.changes(1, 2).drop(["_timestamp"]))
    assert t.storage.exists("_log/00000000000000000002.checkpoint.json")
    fresh = tf.open_table(t.uri)                           # opened from the JVM's checkpoint
    assert fresh.state.deltas == t.state.deltas and ordered(fresh).equals(ordered(twin))
    assert t.check().ok


def doomed_rowset(doomed):
    rid = max(doomed, key=lambda r: len(doomed[r][1]))
    return rid, doomed[rid][0], doomed[rid][2]


def spared_key(t, rid):
    """A live key of rowset `rid` that the delete spares."""
    base = pq.read_table(f"{t.uri}/{t.state.rowsets[rid].base[0].path}", columns=["c0", "c1"])
    return next((h, int(x)) for h, x in zip(base.column("c0").to_pylist(), base.column("c1").to_pylist())
                if not pick(h, int(x)))


@pytest.mark.parametrize("race", ["disjoint_delete", "update_of_its_row", "major_delta"])
def test_a_delete_rebases_over_writes_that_leave_its_rows_live(spark, tmp_path, race):
    t = make(str(tmp_path / "t"))
    doomed = doomed_rows(t, pick)
    frag = jvm_delete_fragment(spark, t, doomed)          # planned on version 1
    keys = [k for v in doomed.values() for k in v[2]]
    rid, tablet, rs_keys = doomed_rowset(doomed)
    spared = spared_key(t, rid)
    expect = {k: v for k, v in zip(zip(*[ordered(t).column(c).to_pylist() for c in ("host", "t")]),
                                    ordered(t).column("v").to_pylist())}
    if race == "disjoint_delete":
        t.delete(keys_table([spared]))
        del expect[spared]
    elif race == "update_of_its_row":                      # §10.3: delete K after update K: the delete applies
        h, x = rs_keys[0]
        t.update(pa.table({"host": [h], "t": pa.array([x], pa.int64()), "v": [-1.0]}))
    else:                                                  # rowids kept: the REDO file applies as planned
        h, x = spared
        t.update(pa.table({"host": [h], "t": pa.array([x], pa.int64()), "v": [-2.0]}))
        expect[spared] = -2.0
        v_id = t.schema.column("v").id
        assert t.compact_action(tf.CompactionAction("major_delta", tablet, (rid,), 1.0, "test", 0, (v_id,)))
        assert rid in t.state.rowsets
    before = t.version
    r = jvm_commit(spark, t.uri, [frag])
    assert r.version() == before + 1 and r.attempts() == 2
    for k in keys:
        del expect[k]
    got = ordered(t)
    assert dict(zip(zip(got.column("host").to_pylist(), got.column("t").to_pylist()), got.column("v").to_pylist())) \
        == expect
    ch = t.changes(before, before + 1)
    assert ch.column("_op").to_pylist() == ["delete"] * len(keys)
    assert t.check().ok


@pytest.mark.parametrize("race", ["delete_of_its_row", "merge"])
def test_a_delete_whose_rows_moved_or_went_commits_nothing(spark, tmp_path, race):
    t = make(str(tmp_path / "t"))
    doomed = doomed_rows(t, pick)
    frag = jvm_delete_fragment(spark, t, doomed)
    rid, tablet, rs_keys = doomed_rowset(doomed)
    if race == "delete_of_its_row":
        t.delete(keys_table(rs_keys[:1]))
        err = tf.RestartRequired
    else:
        assert t.compact_action(tf.CompactionAction("merge", tablet, (rid,), 1.0, "test", 0))
        assert rid not in t.state.rowsets
        err = tf.CommitConflictError
    before, rows_before = t.version, ordered(t)
    with pytest.raises(err) as e:
        jvm_commit(spark, t.uri, [frag])
    if race == "merge":
        assert "compaction rewrote rowset" in str(e.value) and "run the statement again" in str(e.value)
    assert t.version == before and ordered(t).equals(rows_before)
    for path in frag["files"]:
        assert not t.storage.exists(path), path
    assert t.check().ok


def test_two_fragments_deleting_one_row_are_contradictory(spark, tmp_path):
    t = make(str(tmp_path / "t"))
    doomed = doomed_rows(t, pick)
    rid = next(iter(doomed))
    tablet, rowids, keys = doomed[rid]
    one = jvm_delete_fragment(spark, t, {rid: (tablet, rowids[:3], keys[:3])})
    other = jvm_delete_fragment(spark, t, {rid: (tablet, rowids[2:5], keys[2:5])})
    with pytest.raises(tf.ContradictoryFragmentsError):
        jvm_commit(spark, t.uri, [one, other])
    assert t.version == 1
    for path in one["files"] + other["files"]:               # nothing of it lands, its files go (§10.3)
        assert not t.storage.exists(path), path
    one = jvm_delete_fragment(spark, t, {rid: (tablet, rowids[:3], keys[:3])})
    apart = jvm_delete_fragment(spark, t, {rid: (tablet, rowids[3:5], keys[3:5])})
    r = jvm_commit(spark, t.uri, [one, apart])              # disjoint rows of one rowset: one commit
    assert r.version() == 2 and t.history()[-1].counts == {"deleted": 5}
    assert len(ordered(t)) == 300 - 5 and t.check().ok
