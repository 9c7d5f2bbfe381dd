"""Application transactions (the `txn` action, format 6): a write recording (app id, version) lands
once, whether the table has it already or a concurrent commit lands it first; the record survives
checkpoints and is read through Snapshot.txn_version."""
import json
import os

import pyarrow as pa
import pytest

import tableformat as tf
from tableformat.log.txlog import LAST_CHECKPOINT, checkpoint_path, commit_path


def small_schema():
    return tf.Schema([tf.Column("k", "int64"), tf.Column("v", "string", nullable=True)], primary_key="k")


def rows(keys, v="a"):
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"{v}{k}" for k in keys]})


def upsert_fragment(t, keys, v="a"):
    return t.snapshot().write_mutation(rows(keys, v), "upsert", operation="STREAM UPSERT")


def live(t, files):
    return [p for p in files if os.path.exists(os.path.join(t.uri, p))]


def test_a_txn_is_recorded_and_read_back(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    assert t.snapshot().txn_version("q") == -1
    t.commit_fragments([upsert_fragment(t, [1, 2])], txn=("q", 0))
    t.commit_fragments([upsert_fragment(t, [3])], txn=("q", 1))
    t.commit_fragments([upsert_fragment(t, [4])], txn=("other", 7))
    s = tf.open_table(t.uri).snapshot()
    assert (s.txn_version("q"), s.txn_version("other"), s.txn_version("none")) == (1, 7, -1)
    d = json.loads(t.storage.read(commit_path(2)))
    assert d["format_version"] == tf.FORMAT_VERSION == 6
    assert {"txn": {"app_id": "q", "version": 1}} in d["actions"]
    assert t.snapshot(as_of=1).txn_version("q") == 0       # time travel reads the txn of its version


def test_a_replayed_txn_commits_nothing_and_deletes_its_files(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    t.commit_fragments([upsert_fragment(t, [1, 2])], txn=("q", 5))
    for version in (5, 4):          # the same batch, or an older one, replayed
        frag = upsert_fragment(t, [1, 9], v="z")
        assert live(t, frag.files)
        with pytest.raises(tf.TxnAlreadyCommittedError, match="transaction .* of application 'q' is already "
                           "committed") as e:
            t.commit_fragments([frag], txn=("q", version))
        assert (e.value.app_id, e.value.version, e.value.committed) == ("q", version, 5)
        assert live(t, frag.files) == []
    assert tf.open_table(t.uri).version == 1
    assert t.to_arrow().sort_by("k").column("v").to_pylist() == ["a1", "a2"]


def test_a_concurrent_commit_of_the_same_txn_makes_the_second_commit_nothing(tmp_path):
    t1 = tf.create_table(str(tmp_path / "t"), small_schema())
    t2 = tf.open_table(t1.uri)
    f1, f2 = upsert_fragment(t1, [1]), upsert_fragment(t2, [1], v="b")   # both planned on version 0
    t1.commit_fragments([f1], txn=("q", 0))
    with pytest.raises(tf.TxnAlreadyCommittedError, match="the concurrent commit 1 records version 0"):
        t2.commit_fragments([f2], txn=("q", 0))
    assert live(t2, f2.files) == [] and tf.open_table(t1.uri).version == 1
    # another app id, or the next batch, rebases over the same winner
    f3, f4 = upsert_fragment(t2, [2]), upsert_fragment(t2, [3])
    t1.commit_fragments([upsert_fragment(t1, [4])], txn=("q", 1))
    assert t2.commit_fragments([f3], txn=("other", 0)).version == 3
    assert t2.commit_fragments([f4], txn=("q", 2)).version == 4
    assert tf.open_table(t1.uri).snapshot().txn_version("q") == 2


def test_txns_survive_checkpoints(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema(), properties={"checkpoint_interval": 2})
    t.commit_fragments([upsert_fragment(t, [1])], txn=("q", 0))
    t.commit_fragments([upsert_fragment(t, [2])], txn=("r", 3))
    assert json.loads(t.storage.read(checkpoint_path(2)))["state"]["txns"] == {"q": 0, "r": 3}
    os.remove(os.path.join(t.uri, commit_path(1)))     # only the checkpoint still knows q's batch
    s = tf.open_table(t.uri).snapshot()
    assert (s.version, s.txn_version("q"), s.txn_version("r")) == (2, 0, 3)
    with pytest.raises(tf.TxnAlreadyCommittedError):
        tf.open_table(t.uri).commit_fragments([upsert_fragment(t, [5])], txn=("q", 0))


@pytest.mark.parametrize("txn", [("q",), ("", 1), (1, 1), ("q", -1), ("q", 1.5), "q1", ("q", True)])
def test_a_bad_txn_is_a_typed_error_and_changes_nothing(tmp_path, txn):
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    frag = upsert_fragment(t, [1])
    with pytest.raises(tf.InvalidOptionError, match="txn"):
        t.commit_fragments([frag], txn=txn)
    assert tf.open_table(t.uri).version == 0 and live(t, frag.files) == list(frag.files)
    with pytest.raises(tf.InvalidOptionError, match="app_id"):
        t.snapshot().txn_version(3)


def test_a_format_5_engine_refuses_a_table_with_txns(tmp_path, monkeypatch):
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    t.commit_fragments([upsert_fragment(t, [1])], txn=("q", 0))
    import tableformat.log.txlog as tl
    monkeypatch.setattr(tl, "FORMAT_VERSION", 5)
    with pytest.raises(tf.UnsupportedFormatVersionError, match="format version 6"):
        tf.open_table(t.uri)


def test_a_racing_insert_of_the_same_txn_is_already_committed_not_a_duplicate(tmp_path):
    """Two runs of one insert batch race: the loser's rows are now duplicates, yet it is told the
    batch is done (TxnAlreadyCommittedError, which a sink takes as done), not DuplicateKeyError:
    the txn requirement is asked first."""
    t1 = tf.create_table(str(tmp_path / "t"), small_schema())
    t2 = tf.open_table(t1.uri)
    f1, f2 = t1.snapshot().write_insert(rows([1, 2]), "fail"), t2.snapshot().write_insert(rows([1, 2]), "fail")
    t1.commit_fragments([f1], txn=("q", 0))
    with pytest.raises(tf.TxnAlreadyCommittedError):
        t2.commit_fragments([f2], txn=("q", 0))
    assert live(t2, f2.files) == [] and tf.open_table(t1.uri).version == 1


def test_time_travel_behind_the_history_horizon_reads_the_txns_of_its_version(tmp_path):
    """A version read behind vacuum's horizon (its rows through UNDO from the horizon's files) keeps
    its own txns, not the horizon's: before, as_of=1 reported a batch committed at version 2."""
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    t.insert(rows([1]))
    t.commit_fragments([upsert_fragment(t, [2])], txn=("q", 5))
    for k in range(3):
        t.insert(rows([10 + k]))
    t.compact()
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert t.snapshot().history_horizon > 2
    assert (t.snapshot(as_of=1).txn_version("q"), t.snapshot(as_of=2).txn_version("q")) == (-1, 5)


# --- the format version each commit declares (specs/format.md, "Format versions of commits") ----

def declared(t, path_of, versions):
    return [json.loads(t.storage.read(path_of(v)))["format_version"] for v in versions]


def test_a_table_that_never_recorded_a_txn_is_read_by_a_format_5_reader(tmp_path, monkeypatch):
    t = tf.create_table(str(tmp_path / "t"), small_schema(), properties={"checkpoint_interval": 2})
    for i in range(3):
        t.upsert(rows([i, i + 10], v=str(i)))
    t.delete(pa.table({"k": pa.array([0], pa.int64())}))
    t.tag("nightly")
    want = {v: t.scan(as_of=v).to_arrow().sort_by("k") for v in range(t.version + 1)}
    assert declared(t, commit_path, range(t.version + 1)) == [5] * (t.version + 1)
    assert declared(t, checkpoint_path, [2, 4]) == [5, 5]
    import tableformat.log.txlog as tl
    monkeypatch.setattr(tl, "FORMAT_VERSION", 5)           # a reader that knows formats 1-5 only
    old = tf.open_table(t.uri)
    assert {v: old.scan(as_of=v).to_arrow().sort_by("k") for v in range(old.version + 1)} == want
    assert old.tags() == {"nightly": 4} and old.check().ok


def test_the_commit_recording_a_txn_is_format_6_and_so_is_every_later_one(tmp_path, monkeypatch):
    t = tf.create_table(str(tmp_path / "t"), small_schema(), properties={"checkpoint_interval": 3})
    t.upsert(rows([1]))
    t.commit_fragments([upsert_fragment(t, [2])], txn=("q", 0))
    t.upsert(rows([3]))                                     # no txn, but after one: never a downgrade (§8.1)
    assert declared(t, commit_path, range(4)) == [5, 5, 6, 6]
    cp = json.loads(t.storage.read(checkpoint_path(3)))
    assert cp["format_version"] == 6 and cp["state"]["txns"] == {"q": 0}
    assert cp["state"]["format_version"] == 5               # the format the table was created in
    t2 = tf.open_table(t.uri)                               # from the checkpoint
    t2.upsert(rows([4]))
    assert declared(t2, commit_path, [4]) == [6] and tf.open_table(t.uri).check().ok
    import tableformat.log.txlog as tl
    monkeypatch.setattr(tl, "FORMAT_VERSION", 5)
    with pytest.raises(tf.UnsupportedFormatVersionError, match="format version 6"):
        tf.open_table(t.uri)


def test_a_checkpoint_after_a_txn_is_format_6(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema(), properties={"checkpoint_interval": 2})
    t.commit_fragments([upsert_fragment(t, [1])], txn=("q", 0))
    t.upsert(rows([2]))
    assert declared(t, checkpoint_path, [2]) == [6]
    assert tf.open_table(t.uri).snapshot().txn_version("q") == 0


def test_a_log_an_older_engine_wrote_in_format_6_goes_on_in_format_6(tmp_path, monkeypatch):
    """The engine before this rule wrote every commit as 6: a later commit never declares less
    (readers refuse a downgrade along the log, §8.1), whether the writer replayed or read a checkpoint."""
    import tableformat.format.metadata as md
    t = tf.create_table(str(tmp_path / "t"), small_schema(), properties={"checkpoint_interval": 2})
    monkeypatch.setattr(md, "WRITE_FORMAT_FLOOR", 6)
    t.upsert(rows([1]))
    t.upsert(rows([2]))
    monkeypatch.undo()
    assert declared(t, commit_path, range(3)) == [5, 6, 6] and declared(t, checkpoint_path, [2]) == [6]
    tf.open_table(t.uri).upsert(rows([3]))                  # opened from the checkpoint
    t.storage.delete_quietly([checkpoint_path(2), LAST_CHECKPOINT])
    tf.open_table(t.uri).upsert(rows([4]))                  # opened by replay
    assert declared(t, commit_path, [3, 4]) == [6, 6]
    t3 = tf.open_table(t.uri)
    assert t3.scan().count() == 4 and t3.check().ok
