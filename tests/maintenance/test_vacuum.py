"""Vacuum (`maintenance/vacuum.py`): it removes only what no retained snapshot needs, and moves the history horizon."""
import pyarrow as pa
import pytest

import tableformat as tf

from helpers import every_version, kv, seed_key_history


def test_vacuum_keeps_what_retained_snapshots_need(tmp_path):
    t = kv(tmp_path / "kv")
    seed_key_history(t)
    t.insert(pa.table({"key": ["z"], "val": [0]}))
    t.compact(t.compaction_plan())
    old = every_version(t)
    dry = t.vacuum(dry_run=True, grace_seconds=0)                 # history_max_age is 7 days: keep all
    assert dry.files == []
    stray = tmp_path / "kv" / "tablets" / "r0" / "orphan.parquet"
    stray.write_bytes(b"x" * 10)                                  # a file no commit references
    res = t.vacuum(dry_run=True, grace_seconds=0)
    assert res.files == ["tablets/r0/orphan.parquet"] and stray.exists()
    assert t.vacuum(grace_seconds=3600).files == []              # too young: a writer may still commit it
    assert t.vacuum(grace_seconds=0).files == ["tablets/r0/orphan.parquet"] and not stray.exists()
    assert every_version(t) == old
    head = t.version
    res = t.vacuum(retain_seconds=0, grace_seconds=0)             # every superseded file goes
    assert res.files and t.history()[-1].operation == "VACUUM" and t.state.history_horizon == head
    assert not any((tmp_path / "kv" / p).exists() for p in res.files)
    now = every_version(t)                   # older versions: the horizon's files, rolled back by UNDO
    assert {v: now[v] for v in old} == old
    with pytest.raises(tf.HistoryExpiredError,  # change history needs the old files
                       match="change history from version 0 is no longer kept: vacuum moved the history horizon"):
        t.changes(0)
    assert t.changes(head).num_rows == 0 and t.check().ok
