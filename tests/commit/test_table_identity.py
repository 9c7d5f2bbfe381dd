"""A table is its table_id, not its path: a handle or cache on a table that was deleted and
re-created at the same path never mixes the two."""
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
    assert {t._log.read_commit(v).table_id for v in range(t.version + 1)} == {t.table_id}


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
    with pytest.raises(tf.TableReplacedError):
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
    with pytest.raises(tf.TableReplacedError):
        open_snapshot(uri, None, 1, old_id)                                 # a task of the old job
