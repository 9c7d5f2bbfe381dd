"""A table is its table_id, not its path: a handle or cache on a table that was deleted and
re-created at the same path never mixes the two, and neither does a fragment written for it."""
import shutil

import pyarrow as pa
import pytest

import tableformat as tf


def old_table(uri):
    s = tf.Schema([tf.Column("key", "int64"), tf.Column("name", "string", nullable=True)], primary_key="key")
    t = tf.create_table(uri, s)
    t.insert(pa.table({"key": [1, 2], "name": ["one", "two"]}))
    return t


def new_table(uri, commits):
    s = tf.Schema([tf.Column("id", "int64"), tf.Column("price", "double", nullable=True)], primary_key="id")
    t = tf.create_table(uri, s)
    for i in range(commits):
        t.insert(pa.table({"id": [100 + i], "price": [1.5 * i]}))
    return t


def test_every_commit_names_its_table(tmp_path):
    t = old_table(str(tmp_path / "t"))
    assert {t.log.read_commit(v).table_id for v in range(t.version + 1)} == {t.table_id}


@pytest.mark.parametrize("op", ["scan", "insert", "snapshot", "history"])
def test_a_stale_handle_refuses_the_new_table(tmp_path, op):
    uri = str(tmp_path / "t")
    old = old_table(uri)
    shutil.rmtree(uri)
    new = new_table(uri, commits=4)               # more commits than the old handle saw
    with pytest.raises(tf.TableReplacedError, match="replaced"):
        {"scan": lambda: old.scan().to_arrow(),
         "insert": lambda: old.insert(pa.table({"key": [3], "name": ["three"]})),
         "snapshot": lambda: old.snapshot(),
         "history": lambda: old.history()}[op]()
    assert new.version == 4 and tf.open_table(uri).to_arrow().num_rows == 4   # nothing was written to it
    assert tf.open_table(uri).check().ok


def test_a_write_racing_a_re_creation_does_not_land_in_the_new_table(tmp_path):
    uri = str(tmp_path / "t")
    old = old_table(uri)
    frag = old.snapshot().write_insert(pa.table({"key": [3], "name": ["three"]}))
    shutil.rmtree(uri)
    new_table(uri, commits=3)
    with pytest.raises(tf.TableReplacedError,
                       match=r"INSERT: the table at this path was replaced \(version 1 is not table \w+'s any more\)"):
        old.commit_fragments([frag])
    t = tf.open_table(uri)
    assert t.version == 3 and t.schema.names == ["id", "price"] and t.check().ok


def test_the_spark_snapshot_cache_notices_a_new_table(tmp_path):
    """The per-process cache of the Spark jobs: after a re-creation (with a shorter log than the
    old table's), a new read gets the new table, and tasks never mix the two."""
    pytest.importorskip("pyspark")
    from spark_jobs.snapshots import open_snapshot
    uri = str(tmp_path / "t")
    old = old_table(uri)
    old.insert(pa.table({"key": [5], "name": ["five"]}))
    old_id = old.table_id
    assert open_snapshot(uri, None, None).state.table_id == old_id
    assert open_snapshot(uri, None, old.version, old_id).version == 2        # cached in this process
    shutil.rmtree(uri)
    new = new_table(uri, commits=1)                                          # version 1 < the old 2
    snap = open_snapshot(uri, None, None)                                   # a driver planning a new job
    assert snap.state.table_id == new.table_id and snap.schema.names == ["id", "price"]
    assert open_snapshot(uri, None, 1, new.table_id).scan().to_arrow().num_rows == 1
    with pytest.raises(tf.TableReplacedError, match="the table at '.*' was replaced during the job"):
        open_snapshot(uri, None, 1, old_id)                                 # a task of the old job


# --- a stale handle, cache or fragment never lands in a table re-created at the same path -----

def test_stale_handle_lands_in_shorter_recreated_table(tmp_path):
    uri = str(tmp_path / "t")
    s_old = tf.Schema([tf.Column("key", "int64"), tf.Column("name", "string", nullable=True)], primary_key="key")
    old = tf.create_table(uri, s_old)
    old.insert(pa.table({"key": [1], "name": ["one"]}))
    old.insert(pa.table({"key": [2], "name": ["two"]}))          # old handle at version 2
    shutil.rmtree(uri)
    s_new = tf.Schema([tf.Column("id", "int64"), tf.Column("price", "double", nullable=True)], primary_key="id")
    new = tf.create_table(uri, s_new)                             # new table at version 0
    landed = None
    try:
        landed = old.insert(pa.table({"key": [3], "name": ["three"]}))   # must raise TableReplacedError
    except tf.TableReplacedError:
        pass
    import os
    log = sorted(os.listdir(os.path.join(uri, "_log")))
    assert landed is None, f"old handle committed version {landed.version} into the new table; log={log}"
    # (and then the new table's writers break:) new.insert at that version raises TableReplacedError
    new.insert(pa.table({"id": [100], "price": [1.0]}))
    new.insert(pa.table({"id": [101], "price": [2.0]}))
    new.insert(pa.table({"id": [102], "price": [3.0]}))


def test_version_read_after_recreation_returns_the_old_table(tmp_path):
    pytest.importorskip("pyspark")
    from spark_jobs.snapshots import open_snapshot
    uri = str(tmp_path / "t")
    old = tf.create_table(uri, tf.Schema([tf.Column("key", "int64")], primary_key="key"))
    old.insert(pa.table({"key": [1]}))
    old.insert(pa.table({"key": [2]}))
    open_snapshot(uri, None, 2, old.table_id)          # a job of the old table cached a handle here
    shutil.rmtree(uri)
    new = tf.create_table(uri, tf.Schema([tf.Column("id", "int64")], primary_key="id"))
    new.insert(pa.table({"id": [100]}))
    new.insert(pa.table({"id": [101]}))                # same length as the old log (version 2)
    snap = open_snapshot(uri, None, 2)                 # spark.read...option("as_of", "2").load(uri)
    assert snap.state.table_id == new.table_id, (snap.schema.names, "old table's state returned")


def test_fragment_of_old_table_committed_by_fresh_handle(tmp_path):
    uri = str(tmp_path / "t")
    s_old = tf.Schema([tf.Column("key", "int64"), tf.Column("name", "string", nullable=True)], primary_key="key")
    old = tf.create_table(uri, s_old)
    old.insert(pa.table({"key": [1], "name": ["one"]}))
    frag = old.snapshot().write_insert(pa.table({"key": [3], "name": ["three"]}), distributed=True).to_json()
    # the executors' files are written; now the table is dropped and re-created
    shutil.rmtree(uri)
    s_new = tf.Schema([tf.Column("id", "int64"), tf.Column("price", "double", nullable=True)], primary_key="id")
    new = tf.create_table(uri, s_new)
    new.insert(pa.table({"id": [100], "price": [1.0]}))
    new.insert(pa.table({"id": [101], "price": [2.0]}))
    # the files of the old fragment were deleted with the directory? re-create them is not needed:
    # the commit does not look at them (own_rowsets precheck probes only when two rowsets overlap)
    landed = None
    try:
        landed = tf.open_table(uri).commit_fragments([frag], "INSERT")     # the Spark driver's path
    except tf.TableFormatError as e:
        print("refused:", type(e).__name__, e)
        return
    t = tf.open_table(uri)
    rep = t.check()
    assert landed is None, (f"fragment of table {old.table_id} landed in table {t.table_id} as version "
                            f"{landed.version}; check ok={rep.ok}")


def test_new_table_unreadable_after_foreign_fragment(tmp_path):
    uri = str(tmp_path / "t")
    old = tf.create_table(uri, tf.Schema([tf.Column("key", "int64")], primary_key="key"))
    frag = old.snapshot().write_insert(pa.table({"key": [3]}), distributed=True).to_json()
    shutil.rmtree(uri)
    new = tf.create_table(uri, tf.Schema([tf.Column("id", "int64")], primary_key="id"))
    new.insert(pa.table({"id": [100]}))
    # the fragment names the table it was planned on, so the commit refuses it before writing
    with pytest.raises(tf.TableReplacedError, match=r"the fragment was written for table " + old.table_id):
        tf.open_table(uri).commit_fragments([frag], "INSERT")
    fresh = tf.open_table(uri)
    assert fresh.version == 1 and fresh.table_id == new.table_id
    assert fresh.to_arrow().to_pylist() == [{"id": 100}]      # the new table reads as before
    assert fresh.check().ok
