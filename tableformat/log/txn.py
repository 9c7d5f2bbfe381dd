"""Application transactions (Delta's `txn`: appId, version): a write that records one lands once.

A streaming sink commits each micro-batch with a `SetTransaction(app id, batch id)` action and a
`TxnUnseen` requirement (log/requirements/txn.py), so a batch replayed after a crash commits
nothing even when the query's checkpoint lost the record. specs/format.md §8.2, §10.1.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from .actions import SetTransaction
from .requirements.txn import TxnUnseen, txn_version
from ..format import arguments as arg
from ..format.errors import InvalidOptionError

__all__ = ["checked_txn", "txn_version", "with_txn"]


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
    requirement that no commit has it yet, asked first: a replayed batch whose rows are now
    duplicates is a TxnAlreadyCommittedError, not the duplicates' error (check_all returns the first
    FAIL). (fragment imports this module: no import back.)"""
    return replace(fragment, actions=(*fragment.actions, SetTransaction(app_id, version)),
                   requirements=(TxnUnseen(app_id, version), *fragment.requirements))
