"""The requirement of an application transaction (Delta's `txn`: appId, version): a streaming
sink's batch lands once (specs/format.md §8.2, §10.1).

`TxnUnseen` is asked before the first commit attempt (the snapshot the write planned on already
has the batch) and against every commit that won a race (a concurrent writer, or the same batch
replayed by a restarted query, landed it first): either way the write FAILs with
TxnAlreadyCommittedError and deletes its files."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..actions import Commit, SetTransaction
from ..matrix import Outcome
from ...format.errors import TxnAlreadyCommittedError
from ...format.metadata import TableState
from .base import REBASE, Context, Requirement, Verdict


def txn_version(state: TableState, app_id: str) -> int:
    """The newest transaction version recorded for `app_id` at this state; -1 if none."""
    return int(state.txns.get(app_id, -1))


def _committed(app_id: str, version: int, committed: int, where: str) -> Verdict:
    err = TxnAlreadyCommittedError(f"transaction {version} of application {app_id!r} is already committed "
                                   f"({where} records version {committed}); nothing was written",
                                   app_id, version, committed)
    return Verdict(Outcome.FAIL, f"txn {app_id!r} {version} already committed", err)


@dataclass(frozen=True)
class TxnUnseen(Requirement):
    """No commit of the table records transaction `version` (or a newer one) of `app_id`."""

    app_id: str = ""
    version: int = 0
    kind: ClassVar[str] = "txn_unseen"

    def precheck(self, ctx: Context) -> Verdict:
        seen = txn_version(ctx.base, self.app_id)
        return _committed(self.app_id, self.version, seen, f"version {ctx.base.version}") \
            if seen >= self.version else REBASE

    def check(self, ctx: Context) -> Verdict:
        for c in ctx.winners:
            seen = _newest(c, self.app_id)
            if seen >= self.version:
                return _committed(self.app_id, self.version, seen, f"the concurrent commit {c.version}")
        return REBASE


def _newest(c: Commit, app_id: str) -> int:
    return max((a.version for a in c.of(SetTransaction) if a.app_id == app_id), default=-1)
