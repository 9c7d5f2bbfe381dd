"""Tags: names for versions, committed like any write (specs/format.md §12).

A tag is read with `as_of=name`, and compaction and vacuum keep the history it
needs past history_max_age. Tagging and untagging plan on a snapshot and rely
on requirements (`TagAbsent`, `TagPresent`, `HistoryKept`), so a concurrent
tag, untag or history GC is decided by the conflict matrix like any write.
"""
from __future__ import annotations

from typing import Any

from ..log import mvcc
from ..log.actions import AddTag, RemoveTag
from ..log.requirements import HistoryKept, TagAbsent, TagPresent
from ..format.errors import HistoryExpiredError, TagExistsError, TagNotFoundError
from ..format.metadata import TableState
from ..log.fragment import WriteFragment
from ..log.handle import TableHandle


def plan_tag(handle: TableHandle, name: str, as_of: Any = None):
    """The plan of a tag naming the version `as_of` resolves to now (the latest if None)."""
    mvcc.validate_tag_name(name)
    v = handle.state_at(as_of).version          # refuses a version whose history has expired
    ts = handle.history[v].timestamp

    def plan(s: TableState) -> WriteFragment:
        if name in s.tags:
            raise TagExistsError(f"tag {name!r} already names version {s.tags[name][0]}; untag it "
                                 "first or pick another name")
        # when the version stopped being the newest (-1: it still is); history GC since then
        # may have dropped what a read of it needs
        valid_until = handle.history[v + 1].timestamp if v < s.version else -1
        if 0 <= valid_until <= s.history_gc_ts:
            raise HistoryExpiredError(f"version {v} can no longer be tagged: the history it needs was "
                                      "garbage-collected (history_max_age passed it)")
        return WriteFragment("TAG", s.version, [AddTag(name, v, ts)], [], {"version": v},
                             [TagAbsent(name), HistoryKept(valid_until)], data_change=False,
                             table_id=s.table_id, kind="tag")
    return plan


def plan_untag(name: str):
    """The plan of removing a tag; the history only it needed goes at the next compactions and vacuum."""
    mvcc.validate_tag_name(name)

    def plan(s: TableState) -> WriteFragment:
        if name not in s.tags:
            raise TagNotFoundError(f"no tag {name!r} in table {s.name!r} (tags: "
                                   f"{', '.join(sorted(s.tags)) or 'none'})")
        return WriteFragment("UNTAG", s.version, [RemoveTag(name)], [], {}, [TagPresent(name)],
                             data_change=False, table_id=s.table_id, kind="untag")
    return plan


def tags(handle: TableHandle) -> dict[str, int]:
    """Tag name -> version, oldest version first."""
    st = handle.refresh()
    return {k: v for k, (v, _) in sorted(st.tags.items(), key=lambda kv: (kv[1][0], kv[0]))}
