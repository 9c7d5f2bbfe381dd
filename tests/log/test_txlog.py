"""The transaction log: exclusive commits, MVCC timestamps, checkpoints, format versions, bad tables,
a commit whose acknowledgement was lost."""
import json
import os

import pyarrow as pa
import pytest

import tableformat as tf
from tableformat.log import txlog
from tableformat.log.txlog import TransactionLog, checkpoint_path, commit_path

from helpers import int_string_schema, metrics_rows, metrics_schema
from tableformat.format.metadata import WRITE_FORMAT_FLOOR
from tableformat.format.storage import Storage


def test_commit_files_record_what_they_did(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), metrics_schema())
    t.insert(metrics_rows(50))
    d = json.loads((tmp_path / "t" / "_log" / "00000000000000000001.json").read_text())
    assert d["format_version"] == WRITE_FORMAT_FLOOR and d["version"] == 1 and d["operation"] == "INSERT"
    assert d["counts"] == {"inserted": 50, "ignored": 0}
    (add,) = [a["add_rowset"] for a in d["actions"]]
    for f in [*add["base"], add["pk_index"], add["bloom"]]:
        assert os.path.getsize(tmp_path / "t" / f["path"]) == f["size"]
    assert add["num_rows"] == 50
    assert d["timestamp"] > json.loads((tmp_path / "t" / "_log" / "00000000000000000000.json").read_text())["timestamp"]


def test_timestamps_increase_strictly_even_if_the_clock_does_not(tmp_path, monkeypatch):
    monkeypatch.setattr(txlog, "now_micros", lambda: 1_000)
    t = tf.create_table(str(tmp_path / "t"), int_string_schema())
    for i in range(5):
        t.insert(pa.table({"k": [i]}))
    ts = [h.timestamp for h in t.history()]
    assert ts == sorted(ts) and len(set(ts)) == len(ts) == 6


def test_a_version_can_be_taken_only_once(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), int_string_schema())
    log = TransactionLog(t.storage)
    state = t.state
    assert log.try_commit(state, "X", [], {}, 0) is not None
    assert log.try_commit(state, "Y", [], {}, 0) is None   # version 1 is taken
    assert json.loads((tmp_path / "t" / "_log" / "00000000000000000001.json").read_text())["operation"] == "X"
    assert not [f for f in os.listdir(tmp_path / "t" / "_log") if f.startswith(".tmp")]


def test_open_reads_one_checkpoint_plus_later_commits(tmp_path):
    uri = str(tmp_path / "t")
    t = tf.create_table(uri, int_string_schema(), properties={"checkpoint_interval": 10})
    for i in range(1000):
        t.insert(pa.table({"k": [i]}))
    t2 = tf.open_table(uri)
    assert t2.version == 1000
    assert t2.log.reads <= 1 + 9
    assert t2.scan().count() == 1000
    assert len(t2.history()) == 1001
    # time travel to the distant past still works
    assert t2.scan(as_of=5).count() == 5
    assert t2.scan(as_of=t2.history()[500].timestamp if False else 500).count() == 500


def test_broken_checkpoint_falls_back_to_an_older_one(tmp_path):
    uri = str(tmp_path / "t")
    t = tf.create_table(uri, int_string_schema(), properties={"checkpoint_interval": 5})
    for i in range(12):
        t.insert(pa.table({"k": [i]}))
    p = tmp_path / "t" / checkpoint_path(10)
    p.write_bytes(p.read_bytes()[:100])
    t2 = tf.open_table(uri)
    assert t2.scan().count() == 12
    assert t2.log.reads <= 2 + 7  # the broken one, the older one, 7 commits


def test_corrupt_commit_is_detected_and_named(tmp_path):
    uri = str(tmp_path / "t")
    t = tf.create_table(uri, int_string_schema())
    t.insert(pa.table({"k": [1]}))
    p = tmp_path / "t" / commit_path(1)
    p.write_bytes(p.read_bytes()[:-20])
    with pytest.raises(tf.CorruptFileError, match="00000000000000000001.json"):
        tf.open_table(uri)


def test_tampered_commit_fails_its_checksum(tmp_path):
    uri = str(tmp_path / "t")
    t = tf.create_table(uri, int_string_schema())
    t.insert(pa.table({"k": [1]}))
    p = tmp_path / "t" / commit_path(1)
    d = json.loads(p.read_text())
    d["actions"][0]["add_rowset"]["num_rows"] = 2
    p.write_text(json.dumps(d))
    with pytest.raises(tf.CorruptFileError, match="checksum"):
        tf.open_table(uri)


def test_newer_format_version_is_refused(tmp_path):
    uri = str(tmp_path / "t")
    t = tf.create_table(uri, int_string_schema())
    d = {"format_version": tf.FORMAT_VERSION + 1, "version": 1, "timestamp": 1, "operation": "FUTURE",
         "actions": [{"something_new": {}}]}
    (tmp_path / "t" / commit_path(1)).write_text(json.dumps(d))
    with pytest.raises(tf.UnsupportedFormatVersionError,
                       match=f"format version {tf.FORMAT_VERSION + 1}.*supports up to {tf.FORMAT_VERSION}"):
        tf.open_table(uri)
    with pytest.raises(tf.UnsupportedFormatVersionError,
                       match=f"was written with format version {tf.FORMAT_VERSION + 1}; this reader supports up to {tf.FORMAT_VERSION}"):
        t.scan()


def test_not_a_table(tmp_path):
    with pytest.raises(tf.TableNotFoundError, match=r"no table at '.*missing' \(no _log/ commits\)"):
        tf.open_table(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(tf.TableNotFoundError, match=r"no table at '.*empty' \(no _log/ commits\)"):
        tf.open_table(str(tmp_path / "empty"))
    (tmp_path / "file.txt").write_text("hello")
    with pytest.raises(tf.TableNotFoundError, match=r"no table at '.*file\.txt' \(no _log/ commits\)"):
        tf.open_table(str(tmp_path / "file.txt"))


def test_create_twice(tmp_path):
    tf.create_table(str(tmp_path / "t"), int_string_schema())
    with pytest.raises(tf.TableExistsError, match="a table already exists at"):
        tf.create_table(str(tmp_path / "t"), int_string_schema())


# --- a commit whose acknowledgement was lost is reported as landed ----------------------------

def test_own_commit_reported_as_not_done(tmp_path):
    uri = str(tmp_path / "t")
    t = tf.create_table(uri, tf.Schema([tf.Column("key", "string"), tf.Column("val", "int64", nullable=True)],
                                       primary_key="key"))
    st = t.storage
    real = st.put_if_absent
    state = {"n": 0}

    def flaky(rel, data):
        ok = real(rel, data)
        if "_log/" in rel and not rel.endswith("checkpoint.json") and state["n"] == 0:
            state["n"] += 1
            return False          # the write happened; the acknowledgement was lost and the retry saw 412
        return ok
    st.put_if_absent = flaky
    err = None
    try:
        t.insert(pa.table({"key": ["a"], "val": [1]}))
    except tf.TableFormatError as e:
        err = e
    st.put_if_absent = real
    landed = tf.open_table(uri).to_arrow().to_pylist()
    assert landed == [{"key": "a", "val": 1}]
    assert err is None, f"insert raised {type(err).__name__}: {err} although its commit landed"


def _gap_table(tmp_path, hint):
    """Checkpoints at 10 and 20, commits to 25, commit 15 missing, `_last_checkpoint` naming `hint`
    (None: no hint file); k = 0..24 inserted one per version."""
    uri = str(tmp_path / "t")
    t = tf.create_table(uri, int_string_schema(), properties={"checkpoint_interval": 10})
    for i in range(25):
        t.insert(pa.table({"k": [i]}))
    (tmp_path / "t" / commit_path(15)).unlink()
    hint_file = tmp_path / "t" / txlog.LAST_CHECKPOINT
    hint_file.unlink()
    if hint is not None:
        hint_file.write_text(hint)
    return uri


@pytest.mark.parametrize("hint", ['{"version": 10}', '{"version": 20}', '{"version": 99}', "junk", None])
def test_the_state_opened_never_depends_on_the_checkpoint_hint(tmp_path, hint):
    """§8.3: opening lists `_log/`; the newest usable checkpoint (20) and every commit after it."""
    t = tf.open_table(_gap_table(tmp_path, hint))
    assert t.version == 25 and t.scan().count() == 25
    assert t.snapshot(12).scan().count() == 12            # checkpoint 10, commits 11 and 12
    assert t.snapshot(22).scan().count() == 22            # checkpoint 20, commits 21 and 22


def test_a_missing_commit_is_a_damaged_log_never_its_end(tmp_path):
    """A read that must replay a missing commit fails naming it, even with later commits listed."""
    uri = _gap_table(tmp_path, '{"version": 10}')
    t = tf.open_table(uri)
    for v in (15, 17, 19):
        with pytest.raises(tf.CorruptFileError, match=f"{commit_path(15)} is missing.*restore"):
            t.snapshot(v)
    (tmp_path / "t" / checkpoint_path(20)).unlink()       # nothing covers commit 15 any more
    with pytest.raises(tf.CorruptFileError, match=f"{commit_path(15)} is missing.*go on to version 25"):
        tf.open_table(uri)
    assert TransactionLog(Storage(uri)).load(14)[0].version == 14      # before the gap: read


def test_a_missing_first_commit_is_a_damaged_log(tmp_path):
    uri = str(tmp_path / "t")
    t = tf.create_table(uri, int_string_schema())
    t.insert(pa.table({"k": [1]}))
    (tmp_path / "t" / commit_path(0)).unlink()
    with pytest.raises(tf.CorruptFileError, match=commit_path(0)):
        tf.open_table(uri)


def test_only_canonical_names_are_commits_or_checkpoints(tmp_path):
    """A stray `5.json` or `.tmp-*` beside the commits is no version (§8.3)."""
    uri = str(tmp_path / "t")
    t = tf.create_table(uri, int_string_schema())
    t.insert(pa.table({"k": [1]}))
    log_dir = tmp_path / "t" / "_log"
    (log_dir / commit_path(1)[len("_log/"):]).rename(log_dir / "2.json")
    (log_dir / ".tmp-abc").write_text("x")
    (log_dir / "3.checkpoint.json").write_text("{}")
    assert TransactionLog(t.storage).listing() == txlog.Listing((0,), ())
    assert tf.open_table(uri).version == 0
