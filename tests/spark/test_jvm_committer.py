"""The JVM committer (`tableformat.commit.Committer`, issue #45 item 4) against the engine's.

Fragments are made by the code production runs (`insert_task`, the Spark insert task; the
engine's `write_insert`; `write_alter`) and committed by the JVM committer through py4j, by the
engine's `commit_fragments`, or by both racing for one version:
- a log of JVM and Python commits (and checkpoints from both) reads the same through the
  engine, its every version, `check()`, and the JVM reader (the connector's scan);
- a table created by the JVM is the engine's ordinary table; a second create is TableExistsError;
- racing committers: disjoint keys both land (rebase), one key lands once (the loser gets the
  matrix's cell: restart for a Spark insert, DuplicateKeyError for an insert), an alter against an
  insert restarts; nothing is lost and no key is duplicated; a txn lands once;
- put-if-absent on HDFS (the MiniDFSCluster) through the JVM committer.
"""
import json
import threading

import pyarrow as pa
import pytest

import tableformat as tf
from tableformat.log.txlog import TransactionLog, checkpoint_path

pytest.importorskip("pyspark")
from spark_jobs.errors import typed_error  # noqa: E402
from spark_jobs.writes import commit_fragments, insert_task  # noqa: E402

pytestmark = pytest.mark.usefixtures("jvm_connector")


def schema():
    return tf.Schema([tf.Column("key", "int64"), tf.Column("val", "double", nullable=True),
                      tf.Column("s", "string", nullable=True)], primary_key="key")


def rows(keys, salt=0.0):
    return pa.table({"key": pa.array(keys, pa.int64()), "val": [k * 0.5 + salt for k in keys],
                     "s": [f"é{k}" for k in keys]})


def make(uri, interval=3, opts=None):
    return tf.create_table(uri, schema(), tf.PartitionSchema(hash=[tf.HashPartition(["key"], 2)]),
                           properties={"checkpoint_interval": interval}, storage_options=opts)


def committer(spark, uri):
    jvm = spark.sparkContext._jvm
    return jvm.tableformat.commit.Committer(uri, spark._jsc.hadoopConfiguration())


def spark_fragment(t, keys, version=None, opts=None):
    """What one Spark insert task yields for these rows (its fragment's JSON text)."""
    version = t.refresh().version if version is None else version
    data = rows(sorted(keys)).to_batches()
    (batch,) = insert_task(t.uri, opts, version, t.table_id, "fail", None)(iter(data))
    return batch.to_pylist()[0]["fragment"]


def jvm_commit(spark, uri, fragments, operation="INSERT", txn=None):
    jvm = spark.sparkContext._jvm
    lst = jvm.java.util.ArrayList()
    for f in fragments:
        lst.add(f if isinstance(f, str) else json.dumps(f))
    app, version = txn if txn else (None, 0)
    try:
        return committer(spark, uri).commit(lst, operation, None, app, version)
    except Exception as e:  # noqa: BLE001 - re-raised as the engine's class
        typed = typed_error(e)
        if typed is None:
            raise
        raise typed from e


def read_all(t):
    t.refresh()
    return t.to_arrow().sort_by("key")


def test_jvm_and_python_commits_make_one_log_both_sides_read(spark, tmp_path):
    uri = str(tmp_path / "t")
    t = make(uri)
    expect = []
    for i in range(8):                                # versions 1..8; checkpoints at 3 and 6 by either side
        keys = list(range(i * 10, i * 10 + 7))
        frag = spark_fragment(t, keys)
        if i % 2 == 0:
            r = jvm_commit(spark, uri, [frag])
            assert r.version() == i + 1 and r.attempts() == 1
        else:
            commit_fragments(uri, None, [json.loads(frag)], "INSERT", {"inserted": len(keys), "ignored": 0})
        expect += keys
    t = tf.open_table(uri)
    assert t.version == 8
    got = read_all(t)
    assert got.column("key").to_pylist() == sorted(expect)
    assert got.equals(rows(sorted(expect)).cast(got.schema))
    assert t.check().ok
    h = t.history()
    assert [e.operation for e in h] == ["CREATE TABLE"] + ["INSERT"] * 8
    assert [e.counts.get("inserted") for e in h[1:]] == [7] * 8
    # every version the same through the engine and the JVM reader (the connector's scan)
    for v in range(9):
        eng = t.to_arrow(as_of=v).sort_by("key")
        jv = spark.read.format("tableformat-jvm").option("versionAsOf", v).load(uri).toArrow().sort_by("key")
        assert jv.column("key").to_pylist() == eng.column("key").to_pylist(), v
        assert jv.column("s").to_pylist() == eng.column("s").to_pylist(), v
    # checkpoints: 3 (Python: version 3 is odd-indexed i=2 -> JVM), 6: both verify, and state equals replay
    log = TransactionLog(t.storage)
    for v in (3, 6):
        state, history = log.read_checkpoint(v)
        replayed, rh = _replay(t.storage, v)
        assert state.to_json() == replayed.to_json()
        assert [x.to_json() for x in history] == [x.to_json() for x in rh]
    assert t.storage.exists(checkpoint_path(3)) and t.storage.exists(checkpoint_path(6))


def _replay(storage, v):
    """The state at v replayed from version 0 (no checkpoint used)."""
    log = TransactionLog(storage)
    state, history = None, []
    for i in range(v + 1):
        state = log._apply(state, history, log.read_commit(i), i)
    return state, history


def test_jvm_commit_files_are_canonical_and_checksummed(spark, tmp_path):
    uri = str(tmp_path / "t")
    t = make(uri)
    jvm_commit(spark, uri, [spark_fragment(t, [1, 2, 3])])
    raw = t.storage.read("_log/00000000000000000001.json")
    d = json.loads(raw)
    from tableformat.log.txlog import canonical_json, commit_checksum
    assert raw == canonical_json(d)                   # the file is its own canonical form
    assert d["checksum"] == commit_checksum(d)
    assert d["format_version"] == 5 and d["read_version"] == 0 and d["table_id"] == t.table_id
    assert d["timestamp"] > t.snapshot(0).timestamp
    assert {k for a in d["actions"] for k in a} == {"add_rowset"}      # one rowset per tablet written


def test_a_table_created_by_the_jvm_is_the_engines(spark, tmp_path):
    uri = str(tmp_path / "made")
    proto = make(str(tmp_path / "proto"))
    meta = dict(proto.snapshot(0).state.to_json())
    meta = {k: meta[k] for k in ("format_version", "table_id", "name", "schema", "partitioning", "properties")}
    meta["table_id"] = "a" * 32
    meta["name"] = "made"
    assert committer(spark, uri).create(json.dumps({"metadata": meta}), "CREATE TABLE") == 0
    t = tf.open_table(uri)
    assert t.table_id == "a" * 32 and t.schema == proto.schema
    t.insert(rows([5, 6]))
    assert read_all(t).column("key").to_pylist() == [5, 6]
    with pytest.raises(Exception) as e:
        committer(spark, uri).create(json.dumps(meta), "CREATE TABLE")
    assert isinstance(typed_error(e.value), tf.TableExistsError)
    assert tf.open_table(uri).version == 1


def test_racing_jvm_and_python_committers_lose_nothing(spark, tmp_path):
    """Threads: half commit through the JVM, half through the engine, all planned on version 0
    with disjoint keys: every one lands (rebase over the others), in some order."""
    uri = str(tmp_path / "t")
    t = make(uri, interval=4)
    n = 8
    frags = [spark_fragment(t, list(range(i * 100, i * 100 + 20)), version=0) for i in range(n)]
    errors, results = [], []

    def run(i):
        try:
            if i % 2:
                results.append(("jvm", jvm_commit(spark, uri, [frags[i]]).version()))
            else:
                results.append(("py", commit_fragments(uri, None, [json.loads(frags[i])], "INSERT",
                                                       {"inserted": 20, "ignored": 0}).version))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert sorted(v for _, v in results) == list(range(1, n + 1))
    t = tf.open_table(uri)
    assert read_all(t).column("key").to_pylist() == sorted(k for i in range(n) for k in range(i * 100, i * 100 + 20))
    assert t.check().ok


@pytest.mark.parametrize("jvm_first", [True, False])
def test_one_key_lands_once_the_loser_gets_the_matrix_cell(spark, tmp_path, jvm_first):
    """The same new key from a JVM commit and an engine commit, both planned on version 0: the
    first lands; a Spark insert losing to it restarts (spark_insert x insert/spark_insert), an
    insert fails with DuplicateKeyError (insert x spark_insert) and its files are deleted."""
    uri = str(tmp_path / "t")
    t = make(uri)
    a = spark_fragment(t, [1, 2, 3], version=0)
    b = spark_fragment(t, [3, 4], version=0)
    first, second = (lambda f: jvm_commit(spark, uri, [f])), (lambda f: commit_fragments(
        uri, None, [json.loads(f)], "INSERT", {"inserted": 2, "ignored": 0}))
    if not jvm_first:
        first, second = second, first
    first(a)
    with pytest.raises(tf.RestartRequired):
        second(b)
    files = json.loads(b)["files"]
    assert files and not any(t.storage.exists(p) for p in files)
    # an engine insert fragment (kind insert, its keys in keys_absent) losing to a JVM commit: fails
    ins = t.snapshot(1).write_insert(rows([4, 5]))
    assert ins.kind == "insert"
    jvm_commit(spark, uri, [spark_fragment(t, [5, 9], version=1)])
    with pytest.raises(tf.DuplicateKeyError, match=r"^1 key\(s\) were inserted concurrently"):
        jvm_commit(spark, uri, [ins.to_json()])
    assert not any(t.storage.exists(p) for p in ins.files)
    t = tf.open_table(uri)
    assert read_all(t).column("key").to_pylist() == [1, 2, 3, 5, 9]
    assert t.check().ok


def test_an_insert_losing_to_an_alter_restarts_and_an_alter_losing_to_an_insert_in_a_dropped_range(spark, tmp_path):
    uri = str(tmp_path / "t")
    t = tf.create_table(uri, schema(), tf.PartitionSchema(range=tf.RangePartition("key", bounds=[(0, 100), (100, 200)])))
    t.insert(rows([1, 150]))
    frag = spark_fragment(t, [2, 3], version=1)
    with t.alter() as a:
        a.add_column("extra", "int32")
    with pytest.raises(tf.RestartRequired):
        jvm_commit(spark, uri, [frag])
    # a JVM alter dropping range [100, 200) planned on version 2, while an insert lands there: restart
    st = tf.open_table(uri).state
    part = st.partitioning.to_json(st.schema)
    part["ranges"] = [r for r in part["ranges"] if r["lower_values"] != [100]]
    body = {"name": st.name, "schema": st.schema.to_json(), "partitioning": part}
    tf.open_table(uri).insert(rows([160]))
    jc = committer(spark, uri)
    with pytest.raises(Exception) as e:
        jc.alter(json.dumps({"alter": body}), 2)
    assert isinstance(typed_error(e.value), tf.RestartRequired)
    v = jc.alter(json.dumps({"alter": body}), 3)     # planned again on the latest: drops the range's rows
    t = tf.open_table(uri)
    assert v == 4 and t.version == 4
    assert read_all(t).column("key").to_pylist() == [1]
    assert t.history()[-1].operation == "ALTER TABLE" and t.history()[-1].counts == {"rowsets_dropped": 2}
    assert t.check().ok


def test_a_txn_lands_once(spark, tmp_path):
    uri = str(tmp_path / "t")
    t = make(uri)
    jvm_commit(spark, uri, [spark_fragment(t, [1])], txn=("query-1", 7))
    assert tf.open_table(uri).snapshot().txn_version("query-1") == 7
    f = spark_fragment(t, [2])
    with pytest.raises(tf.TxnAlreadyCommittedError):
        jvm_commit(spark, uri, [f], txn=("query-1", 7))
    assert not any(t.storage.exists(p) for p in json.loads(f)["files"])
    assert tf.open_table(uri).version == 1


def test_a_fragment_of_another_table_is_refused(spark, tmp_path):
    uri = str(tmp_path / "t")
    t = make(uri)
    f = json.loads(spark_fragment(t, [1]))
    f["table_id"] = "f" * 32
    with pytest.raises(tf.TableReplacedError):
        jvm_commit(spark, uri, [f])
    assert tf.open_table(uri).version == 0


def test_put_if_absent_on_hdfs(spark, hdfs_table_root):
    root, opts = hdfs_table_root
    t = make(root, interval=2, opts=opts)
    frags = [spark_fragment(t, list(range(i * 10, i * 10 + 5)), version=0, opts=opts) for i in range(4)]
    for f in frags:                                   # each after the first loses version 1.. and rebases
        jvm_commit(spark, root, [f])
    t = tf.open_table(root, storage_options=opts)
    assert t.version == 4 and len(read_all(t)) == 20 and t.check().ok
    assert t.storage.exists(checkpoint_path(2)) and t.storage.exists(checkpoint_path(4))
    assert not [n for n in t.storage.list("_log") if n.startswith(".tmp-")]
