"""Adversarial review of lookups, restore and tags: regressions for bugs found."""
import pyarrow as pa

import tableformat as tf

from helpers import read as rows
from helpers import during_next_commit, kv, merge_all


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
