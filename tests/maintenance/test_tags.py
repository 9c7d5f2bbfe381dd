"""Tags: named versions that `as_of` accepts everywhere, and whose history outlives history_max_age."""
import json
import time

import pyarrow as pa
import pytest

import tableformat as tf
from tableformat.format.metadata import WRITE_FORMAT_FLOOR

from helpers import during_next_commit, kv, merge_all


def rows(t, as_of=None):
    return t.scan(as_of=as_of, ordered=True).to_arrow().to_pylist()


def undo_records(t):
    return sum(d.num_records for ds in t.state.deltas.values() for d in ds if d.kind == "undo")


def test_tag_untag_and_as_of_by_name(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    r = t.tag("first")
    assert r.operation == "TAG" and t.tags() == {"first": 1}
    t.update(pa.table({"key": ["a"], "val": [10]}))
    t.tag("v2-release.1")                                   # version 3 (2 is the first tag's commit)
    t.tag("_old", as_of=tf.Timestamp(t.history()[1].timestamp))
    assert t.tags() == {"_old": 1, "first": 1, "v2-release.1": 3}
    want = [{"key": "a", "val": 1, "s": None}, {"key": "b", "val": 2, "s": None}]
    assert rows(t, "first") == want and rows(t, "tag:first") == want
    assert t.snapshot("first").version == 1
    assert t.lookup({"key": ["a"]}, as_of="first").column("val").to_pylist() == [1]
    assert t.changes("first", "v2-release.1").column("_op").to_pylist() == ["update"]
    t.untag("first")
    assert "first" not in t.tags()
    with pytest.raises(tf.TagNotFoundError, match=r"no tag 'first' in this table \(tags: _old, v2-release\.1\)"):
        t.scan(as_of="tag:first")
    with pytest.raises(tf.TagNotFoundError, match="nor a tag: no tag"):   # a bare word: one class for an unknown tag
        t.scan(as_of="first")
    # a tag survives reopening (log replay) and a checkpoint
    assert tf.open_table(t.uri).tags() == {"_old": 1, "v2-release.1": 3}
    for i in range(12):
        t.update(pa.table({"key": ["b"], "val": [i]}))
    assert any(n.endswith(".checkpoint.json") or "checkpoint" in n for n in t.storage.list("_log"))
    assert tf.open_table(t.uri).tags() == {"_old": 1, "v2-release.1": 3}


def test_tag_actions_in_the_log(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.tag("nightly")
    t.untag("nightly")
    from tableformat.log.txlog import commit_path
    tag = json.loads(t.storage.read(commit_path(2)))
    untag = json.loads(t.storage.read(commit_path(3)))
    assert tag["format_version"] == WRITE_FORMAT_FLOOR >= 4 and tag["data_change"] is False
    assert tag["actions"] == [{"tag": {"name": "nightly", "version": 1, "timestamp": t.history()[1].timestamp}}]
    assert untag["actions"] == [{"untag": {"name": "nightly"}}]
    assert [h.operation for h in t.history()[2:]] == ["TAG", "UNTAG"]


@pytest.mark.parametrize("name", ["", "1abc", "12", "has space", "a/b", "ts:5", "é", "x" * 129, None, 5])
def test_invalid_tag_names(tmp_path, name):
    t = kv(tmp_path / "t")
    with pytest.raises(tf.InvalidTagNameError, match="tag name must start with a letter or underscore"):
        t.tag(name)
    assert t.version == 0 and t.tags() == {}


def test_tag_errors_leave_the_table_unchanged(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.tag("x")
    v = t.version
    with pytest.raises(tf.TagExistsError, match="tag 'x' already names version 1; untag it first or pick another name"):
        t.tag("x", as_of=0)
    with pytest.raises(tf.TagNotFoundError, match=r"no tag 'nope' in table 't' \(tags: x\)"):
        t.untag("nope")
    with pytest.raises(tf.TagNotFoundError, match=r"no tag 'nope' in this table \(tags: x\)"):
        t.scan(as_of="tag:nope")
    with pytest.raises(tf.TagNotFoundError,
                       match="as_of 'nope' is not a version number, ts:<microseconds>, an ISO date-time nor a"):
        t.scan(as_of="nope")
    with pytest.raises(tf.VersionNotFoundError, match=r"version 99 does not exist; versions are 0\.\.2"):
        t.tag("y", as_of=99)
    with pytest.raises(tf.InvalidOptionError,
                       match="as_of 'not a tag' is not a version number, ts:<microseconds>, an ISO date-time"):
        t.scan(as_of="not a tag")
    assert t.version == v and t.tags() == {"x": 1}


def test_tag_of_expired_history_is_refused(tmp_path):
    t = kv(tmp_path / "t", history_max_age=1)
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.update(pa.table({"key": ["a"], "val": [2]}))
    time.sleep(1.2)
    with pytest.raises(tf.HistoryExpiredError,
                       match="version 1 is earlier than the ancient history mark: history older than"):
        t.tag("old", as_of=1)
    assert t.tags() == {}
    t.tag("latest")          # the newest version is always there
    assert t.tags() == {"latest": 2}


def test_tagged_version_outlives_history_max_age_through_compaction_and_vacuum(tmp_path):
    """Tagged history is kept past the mark; untagged history of the same age is dropped."""
    t = kv(tmp_path / "t", history_max_age=2, reclaim_deleted_pct=1)
    t.insert(pa.table({"key": [f"k{i}" for i in range(10)], "val": list(range(10))}))
    t.update(pa.table({"key": ["k1"], "val": [100]}))
    t.tag("keep")
    tagged = rows(t, "keep")
    t.update(pa.table({"key": ["k1", "k3"], "val": [200, 300]}))
    untagged = t.version
    t.update(pa.table({"key": ["k1"], "val": [400]}))
    t.delete(pa.table({"key": ["k2"]}))                      # deleted after the tag: a ghost it needs
    t.insert(pa.table({"key": ["new"], "val": [7]}))
    t.delete(pa.table({"key": ["new"]}))                     # inserted and deleted after it: not needed
    time.sleep(2.3)                                          # all of it is now older than the mark
    merge_all(t)
    t.compact(t.compaction_plan())
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert t.state.history_horizon == t.version - 1         # every file of older versions may go
    assert rows(t, "keep") == tagged
    assert t.lookup({"key": ["k1", "k2", "k3"]}, as_of="keep").column("val").to_pylist() == [100, 2, 3]
    with pytest.raises(tf.HistoryExpiredError,
                       match="version 4 is earlier than the ancient history mark: history older than"):
        t.scan(as_of=untagged)
    # exactly what the tag needs: the before-images of k1's and k3's first change after it (not of
    # k1's second), k2 as a ghost row (its DELETE stays a REDO record), and nothing of "new"
    st = t.state
    assert sum(r.num_rows for r in st.rowsets.values()) == 10          # 9 live rows and k2's ghost
    assert undo_records(t) == 2
    assert t.check().ok
    # once untagged, the next compaction drops it all
    t.untag("keep")
    t.compact(t.compaction_plan())
    merge_all(t)
    assert undo_records(t) == 0
    assert sum(r.num_rows for r in t.state.rowsets.values()) == 9
    assert rows(t) == [{"key": k, "val": v, "s": None} for k, v in
                       sorted({"k0": 0, "k1": 400, "k3": 300, **{f"k{i}": i for i in range(4, 10)}}.items())]


def test_tag_keeps_history_behind_an_alter(tmp_path):
    """The horizon never passes an ALTER after a tagged version, however old the ALTER."""
    t = kv(tmp_path / "t", history_max_age=1)
    t.insert(pa.table({"key": ["a"], "val": [1], "s": ["x"]}))
    t.tag("before")
    with t.alter() as a:
        a.drop_column("s")
    t.update(pa.table({"key": ["a"], "val": [2]}))
    time.sleep(1.2)
    merge_all(t)
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert rows(t, "before") == [{"key": "a", "val": 1, "s": "x"}]
    assert t.state.history_horizon == 2                        # the version before the ALTER


@pytest.mark.parametrize("first", ["tag", "vacuum"])
def test_tag_against_concurrent_vacuum(tmp_path, first):
    """Whichever commits first, the vacuum deletes nothing the tagged version needs."""
    t = kv(tmp_path / "t", history_max_age=2)
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    t.update(pa.table({"key": ["a"], "val": [10]}))
    t.update(pa.table({"key": ["b"], "val": [20]}))
    target = 2
    want = rows(t, target)
    other = tf.open_table(t.uri)
    if first == "tag":      # the tag lands while the vacuum is about to commit its horizon
        fired = during_next_commit(t, lambda: other.tag("pin", as_of=target))
        t.vacuum(retain_seconds=0, grace_seconds=0)
    else:                   # the vacuum runs to its end while the tag is about to commit
        fired = during_next_commit(t, lambda: other.vacuum(retain_seconds=0, grace_seconds=0))
        t.tag("pin", as_of=target)
    t.storage.fault_hook = None
    assert fired
    assert t.tags() == {"pin": target} and t.state.history_horizon > target
    t.update(pa.table({"key": ["a"], "val": [99]}))
    time.sleep(2.2)
    merge_all(t)
    t.vacuum(retain_seconds=0, grace_seconds=0)
    assert rows(t, "pin") == want
    assert tf.open_table(t.uri).scan(as_of="pin", ordered=True).to_arrow().to_pylist() == want


def test_concurrent_tags_of_one_name(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    other = tf.open_table(t.uri)
    during_next_commit(t, lambda: other.tag("x", as_of=0))
    with pytest.raises(tf.TagExistsError, match="tag 'x' already names version 0; untag it first or pick another name"):
        t.tag("x")
    t.storage.fault_hook = None
    assert t.tags() == {"x": 0}


def test_compaction_planned_before_a_tag_gives_up(tmp_path):
    """A merge planned without a tag created meanwhile must not drop history it may need."""
    t = kv(tmp_path / "t", history_max_age=1)
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    time.sleep(1.2)                       # version 1 committed before the mark, valid until after it
    t.update(pa.table({"key": ["a"], "val": [2]}))
    other = tf.open_table(t.uri)
    (rs,) = t.state.rowsets
    frag = t.snapshot().write_compaction(
        tf.CompactionAction("merge", t.state.rowsets[rs].tablet, (rs,), 1.0, "test", 0, ()))
    other.tag("late", as_of=1)
    with pytest.raises(tf.CommitConflictError, match="a tag needing the history this drops was created concurrently"):
        t.commit_fragments([frag])
    time.sleep(1.2)
    merge_all(t)                          # planned with the tag: keeps what it needs
    assert rows(t, "late") == [{"key": "a", "val": 1, "s": None}]


def test_spark_as_of_option_reads_a_tag(spark, tmp_path):
    """The Spark read option goes through the engine's parser: a tag name reads the tagged version."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    t.tag("pinned")
    t.update(pa.table({"key": ["a"], "val": [10]}))
    for opt in ("pinned", "tag:pinned"):
        df = spark.read.format("tableformat").option("as_of", opt).load(t.uri)
        assert sorted(r.val for r in df.collect()) == [1, 2]
    with pytest.raises(Exception, match="no tag"):
        spark.read.format("tableformat").option("as_of", "nope").load(t.uri).collect()


def test_check_reports_a_tag_that_does_not_match_the_log(tmp_path):
    """A tag whose recorded timestamp is not its version's (a hand-edited log) is a violation."""
    from tableformat.log.actions import AddTag
    from tableformat.log.fragment import WriteFragment
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.tag("good")
    assert t.check().ok
    bad = WriteFragment("TAG", t.version, [AddTag("bad", 1, 12345)], data_change=False, table_id=t.table_id)
    t.commit_fragments([bad])
    rep = t.check()
    assert not rep.ok and any("tag 'bad'" in v for v in rep.violations)


def test_tag_races_are_judged_by_where_the_winners_leave_the_tag(tmp_path):
    """An untag racing a move of the tag (untag + tag) still finds it; a tag racing a tag of the
    name created and removed again finds none: the requirements read the winners in order."""
    from tableformat.log.matrix import Outcome
    from tableformat.log.requirements import Context, TagAbsent, TagPresent
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.tag("release")
    base = t.version
    t.untag("release")
    t.tag("release")
    t.tag("x")
    t.untag("x")

    def verdict(req, start, end):
        winners = [t.log.read_commit(v) for v in range(start + 1, end + 1)]
        kind = "untag" if isinstance(req, TagPresent) else "tag"
        return req.check(Context(t.storage, t.state, t.state, winners, [], [], kind)).outcome
    assert verdict(TagPresent(name="release"), base, base + 2) is Outcome.REBASE      # moved: still there
    assert verdict(TagPresent(name="release"), base, base + 1) is Outcome.FAIL        # removed
    assert verdict(TagAbsent(name="x"), base + 2, base + 4) is Outcome.REBASE         # created and removed
    assert verdict(TagAbsent(name="x"), base + 2, base + 3) is Outcome.FAIL           # created


# --- a tag racing a writer --------------------------------------------------------------------

def test_tag_of_latest_racing_an_update_and_its_undo_gc(tmp_path):
    """A tag of the latest version, while another writer updates it and a compaction garbage-
    collects the update's before-image (history_max_age=0): the tag must fail or read exactly."""
    t = kv(tmp_path / "t", history_max_age=0)
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    want = rows(t)
    other = tf.open_table(t.uri)

    def race():
        other.update(pa.table({"key": ["a"], "val": [10]}))
        merge_all(other)

    fired = during_next_commit(t, race)
    try:
        t.tag("pin")
    except tf.HistoryExpiredError:
        pass
    t.storage.fault_hook = None
    assert fired
    if "pin" in t.tags():
        t.vacuum(retain_seconds=0, grace_seconds=0)
        assert rows(t, "pin") == want
        assert t.lookup({"key": ["a", "b"]}, as_of="pin").to_pylist() == want
