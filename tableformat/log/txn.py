"""Application transactions (Delta's `txn`: appId, version): a write that records one lands once.

A streaming sink commits each micro-batch with a `SetTransaction(app id, batch id)` action and a
`TxnUnseen` requirement. The requirement is asked before the first commit attempt (the snapshot
the write planned on already has the batch) and against every commit that won a race (a
concurrent writer, or the same batch replayed by a restarted query, landed it first): either way
the write FAILs with TxnAlreadyCommittedError and deletes its files, so a batch replayed after a
crash commits nothing even when the query's checkpoint lost the record. specs/format.md §8.2,
§10.1.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from .actions import Commit, SetTransaction
from .conflicts import REBASE, Context, Requirement, Verdict
from .matrix import Outcome
from ..format import arguments as arg
from ..format.errors import InvalidOptionError, TxnAlreadyCommittedError
from ..format.metadata import TableState


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


def checked_txn(txn) -> tuple[str, int]:
    """An (app_id, version) pair as a write takes it: a non-empty app id, a version >= 0."""
    if not isinstance(txn, (tuple, list)) or len(txn) != 2:
        raise InvalidOptionError(f"txn must be an (app_id, version) pair, got {arg.given(txn)}")
    app_id, version = txn
    arg.string(app_id, "txn app_id")
    if not app_id:
        raise InvalidOptionError("txn app_id must not be empty")
    return app_id, arg.integer(version, "txn version", 0, 2 ** 63 - 1)


def with_txn(fragment: Any, app_id: str, version: int) -> Any:
    """The WriteFragment, committed as transaction `version` of `app_id`: a `txn` action and the
    requirement that no commit has it yet. (fragment imports this module: no import back.)"""
    return replace(fragment, actions=(*fragment.actions, SetTransaction(app_id, version)),
                   requirements=(*fragment.requirements, TxnUnseen(app_id, version)))
