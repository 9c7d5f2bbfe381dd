"""Requirements on tags and the history they keep (specs/format.md §10.1, §12).

A tag relies on its name being free (`TagAbsent`) or taken (`TagPresent`, an
untag) and on the history of its version surviving (`HistoryKept`); a write that
garbage-collects history relies on no tag created meanwhile needing it
(`TagsRetained`). As every requirement, each finds the clash and the conflict
matrix decides the outcome.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..actions import AddTag, Commit, RemoveTag, SetHistory
from ...format.errors import CommitConflictError, HistoryExpiredError, TagExistsError, TagNotFoundError
from .base import REBASE, Context, Requirement, Verdict, strictest


def _tag_after_winners(ctx: Context, name: str) -> tuple[bool | None, Commit | None]:
    """Whether the winners leave tag `name` present (True) or absent (False), and the winner
    that did it; (None, None): untouched."""
    last, by = None, None
    for c in ctx.winners:
        for a in c.actions:
            if isinstance(a, (AddTag, RemoveTag)) and a.name == name:
                last, by = isinstance(a, AddTag), c
    return last, by


def _tag_verdict(ctx: Context, name: str, clash: bool, what: str, error: Exception) -> Verdict:
    """The matrix's outcome when the winners leave tag `name` present (clash=True) or removed (False)."""
    present, by = _tag_after_winners(ctx, name)
    return Verdict(ctx.decide(by), f"tag {name!r} was {what} concurrently", error) if present is clash else REBASE


@dataclass(frozen=True)
class TagAbsent(Requirement):
    """The winners did not leave a tag of this name (a tag)."""

    name: str = ""
    kind: ClassVar[str] = "tag_absent"

    def check(self, ctx: Context) -> Verdict:
        return _tag_verdict(ctx, self.name, True, "created",
                            TagExistsError(f"tag {self.name!r} was created concurrently; untag it first"))


@dataclass(frozen=True)
class TagPresent(Requirement):
    """The winners did not leave the tag removed (an untag; a tag moved meanwhile is still there)."""

    name: str = ""
    kind: ClassVar[str] = "tag_present"

    def check(self, ctx: Context) -> Verdict:
        return _tag_verdict(ctx, self.name, False, "removed",
                            TagNotFoundError(f"tag {self.name!r} was removed concurrently"))


@dataclass(frozen=True)
class HistoryKept(Requirement):
    """The history a new tag needs is still there: no winner garbage-collected history (a
    compaction's UNDO GC, a vacuum passing an aged-out ALTER) at or after the time until which
    the tagged version was valid (-1: it was the newest when planned, valid until the first winner)."""

    valid_until: int = -1
    kind: ClassVar[str] = "history_kept"

    def check(self, ctx: Context) -> Verdict:
        # a tagged version that was the newest stopped being valid at the first winner's commit
        until = self.valid_until if self.valid_until >= 0 else \
            min((c.timestamp for c in ctx.winners), default=-1)
        if until < 0:
            return REBASE
        return strictest(Verdict(ctx.decide(c), "the history the tag needs was garbage-collected concurrently",
                                 HistoryExpiredError("the history the tagged version needs was garbage-collected "
                                                     "concurrently (history_max_age passed it)"))
                         for c in ctx.winners
                         if max((a.gc_before_ts or 0 for a in c.of(SetHistory)), default=0) >= until)


@dataclass(frozen=True)
class TagsRetained(Requirement):
    """A write that garbage-collects history before `gc_before_ts` (compaction, vacuum) planned
    without the tags added since: it gives up if one of them is a time it may have dropped."""

    gc_before_ts: int = 0
    kind: ClassVar[str] = "tags_retained"

    def check(self, ctx: Context) -> Verdict:
        return strictest(Verdict(ctx.decide(c), "a tag needing the history it drops was created concurrently",
                                 CommitConflictError("a tag needing the history this drops was created "
                                                     "concurrently"))
                         for c in ctx.winners if any(a.timestamp < self.gc_before_ts for a in c.of(AddTag)))
