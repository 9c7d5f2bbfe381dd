"""One commit protocol: a write fragment's actions and requirements, committed once.

A writer plans on a Snapshot and writes immutable files; the result is a
WriteFragment (plain data: a Spark executor can make one, a driver commit it).
`Transaction.commit` races for the next log version with put-if-absent. On
losing, it reads exactly the commits that won and asks every requirement
(`requirements`): REBASE carries on at the next version, RESTART and FAIL give up.
`run` is the engine's loop around it: plan, commit, and plan again on RESTART.
Files of a write that does not land are deleted; never those of one that did.
See specs/format.md §8 and §10.
"""
from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass
from typing import Callable

from .actions import Action, AddDelta, AddRowSet, AddSkipped, Commit, SetTransaction
from .matrix import Outcome
from .requirements import Context, check_all
from ..format import arguments as arg
from ..format.errors import (CommitConflictError, RestartRequired, TableFormatError, TableReplacedError,
                             VersionNotFoundError)
from .fragment import WriteFragment
from .handle import TableHandle
from ..format.metadata import TableState
from .txlog import commit_path


@dataclass(frozen=True)
class CommitProperties:
    """How a commit behaves under contention (delta-rs's CommitProperties)."""

    max_attempts: int = 1000          # commit races lost in a row before CommitConflictError
    max_restarts: int = 1000          # plans thrown away (RESTART) before CommitConflictError
    backoff_after: int = 3            # races lost before jittered backoff starts
    max_backoff_seconds: float = 0.2
    checkpoint_interval: int | None = None     # None: the table property

    def __post_init__(self):
        for name in ("max_attempts", "max_restarts", "backoff_after"):
            arg.integer(getattr(self, name), f"CommitProperties.{name}", 0 if name == "backoff_after" else 1,
                        10 ** 9)
        arg.number(self.max_backoff_seconds, "CommitProperties.max_backoff_seconds", 0, 60)
        arg.integer(self.checkpoint_interval, "CommitProperties.checkpoint_interval", 1, 100_000, none=True)


# A compaction yields under heavy write contention (the next run re-plans) rather than starve.
COMPACTION_PROPERTIES = CommitProperties(max_attempts=30)


class Transaction:
    """Actions plus requirements on a read snapshot, committed with one retry loop."""

    def __init__(self, handle: TableHandle, fragment: WriteFragment, properties: CommitProperties | None = None,
                 latest_known: bool = True):
        self.handle = handle
        self.latest_known = latest_known     # False: planned on the handle's state unconfirmed (`run`)
        self.fragment = fragment
        self.properties = properties or CommitProperties()
        self.snapshot = handle.load(fragment.read_version)
        self.written = list(fragment.files)
        self.attempts = 0
        self.txn_id = uuid.uuid4().hex        # the same for every attempt: a commit is known as ours by it
        if fragment.table_id is not None and fragment.table_id != self.snapshot.table_id:
            raise TableReplacedError(f"{fragment.operation}: the fragment was written for table {fragment.table_id}; "
                                     f"the table at this path is now {self.snapshot.table_id}")

    def commit(self) -> Commit:
        """The landed commit; RestartRequired or a typed error (after deleting this write's files) if not."""
        f, handle = self.fragment, self.handle
        base = self.snapshot
        self.actions: list[Action] = list(f.actions)      # a rebase may replace some with remapped ones
        self.dropped: list[Action] = []
        try:
            v = check_all(f.requirements, self._context(base, []), True)
            if v.outcome is not Outcome.REBASE:
                raise v.error or CommitConflictError(f"{f.operation}: {v.reason}")
            self._same_table(base)
            behind = 0 if self.latest_known else 1     # finding the handle behind is no lost race
            for attempt in range(1, self.properties.max_attempts + behind + 1):
                self.attempts = attempt
                commit = handle.log.try_commit(base, f.operation, self.actions, f.counts, f.read_version,
                                               f.data_change, self.txn_id)
                if commit is not None:
                    self._record_landed(base, commit)
                    # files of actions a rebase replaced were never committed
                    handle.storage.delete_quietly([a.delta.path for a in self.dropped if isinstance(a, AddDelta)])
                    return commit
                winners = handle.log.read_new_commits(base.version)
                ours = self._ours_among(base, winners)
                if ours is not None:                  # our PUT landed; only its answer was lost
                    self._record_landed(handle.advance(base, winners[:winners.index(ours)]), ours)
                    return ours
                base = self._rebase(base, winners)
                if self.attempts - behind > self.properties.backoff_after:
                    # heavy contention: jittered backoff so a slow rebaser is not starved
                    time.sleep(random.uniform(0, min(self.properties.max_backoff_seconds,
                                                     0.002 * 2 ** min(self.attempts, 7))))
            raise CommitConflictError(f"{f.operation} lost {self.properties.max_attempts} commit races in a row; "
                                      "retry later")
        except BaseException as e:
            if not committed(e):
                handle.storage.delete_quietly(self.written)
            raise

    def _context(self, base: TableState, winners: list[Commit]) -> Context:
        return Context(self.handle.storage, self.snapshot, base, winners, self.actions, self.written,
                       self.fragment.kind)

    def _rebase(self, base: TableState, winners: list[Commit]) -> TableState:
        """After a lost race: the state to try again on, with this write's actions rebased over the
        winners, or RestartRequired / a typed error as the requirements and the matrix decide."""
        f, handle = self.fragment, self.handle
        if not self.latest_known:
            handle.note_contention(True)      # contention: look at the log before planning
            if not all(_adds_only(c) for c in winners):
                # the handle may have been far behind: its requirements are made for the
                # short race of a plan, not for compactions, vacuums or tags it never saw
                handle.advance(base, winners)
                raise RestartRequired(f"{f.operation}: planned on version {base.version}, "
                                      f"{len(winners)} newer commit(s) found; planning again")
        self.latest_known = True              # from here on, winners raced this commit
        v = check_all(f.requirements, self._context(base, winners))
        if v.outcome is Outcome.RESTART:
            raise RestartRequired(f"{f.operation}: {v.reason}; planning again")
        if v.outcome is Outcome.FAIL:
            raise v.error or CommitConflictError(f"{f.operation}: {v.reason}")
        gone = {id(a) for a in v.dropped}
        self.actions = [a for a in self.actions if id(a) not in gone] + v.extra
        self.dropped += v.dropped
        return handle.advance(base, winners)          # exactly the commits the requirements saw

    def _same_table(self, base) -> None:
        """The commit this write builds on still belongs to its table: a table deleted and created
        again at the path (with a log no longer than ours) must not receive our commit."""
        if base.version < 0:
            return
        try:
            c = self.handle.log.read_commit(base.version)
        except VersionNotFoundError:
            c = None
        if c is None or (c.table_id is not None and c.table_id != base.table_id):
            raise TableReplacedError(f"{self.fragment.operation}: the table at this path was replaced (version "
                                     f"{base.version} is not table {base.table_id}'s any more); open it again")

    def _ours_among(self, base: TableState, winners: list[Commit]) -> Commit | None:
        """Our own commit among the winners (a PUT that landed though its answer was lost), or
        an error if another transaction already committed these files (a driver retrying a
        fragment): it must not land twice, nor delete the files that commit made live. A winner
        of another table (the path re-created) is an error too."""
        replaced = [c for c in winners if c.table_id is not None and c.table_id != base.table_id]
        if replaced:
            raise TableReplacedError(f"{self.fragment.operation}: the table was replaced while it ran (version "
                                     f"{replaced[0].version} belongs to table {replaced[0].table_id})")
        mine = set(self.fragment.files)
        for c in winners:
            if c.txn_id == self.txn_id:
                return c
            if mine & c.files:
                self.written = [p for p in self.written if p not in c.files]
                raise CommitConflictError(f"{self.fragment.operation}: these files were already committed in "
                                          f"version {c.version}; nothing was done")
        return None

    def _record_landed(self, base, commit: Commit) -> None:
        """Cache our landed commit on the handle; any failure from here on leaves the commit live."""
        try:
            self.handle.storage.fault("after-commit", commit_path(commit.version))
            self.handle.landed(base, commit, self.properties.checkpoint_interval)
        except BaseException as e:
            e.tableformat_committed = commit.version   # durable: callers must not clean up
            raise


def committed(e: BaseException) -> bool:
    """Did the failure happen after the commit file was written? Then its files are live."""
    return getattr(e, "tableformat_committed", None) is not None


def run(handle: TableHandle, operation: str, plan: Callable[[TableState], WriteFragment | None],
        properties: CommitProperties | None = None) -> tuple[Commit | None, WriteFragment | None]:
    """Plan and commit; on RESTART plan again. (None, fragment) when the plan had nothing to commit.
    A plan is given a table state to plan on (the facade wraps it in a Snapshot).

    The first plan uses the handle's snapshot without asking the log for newer commits: the
    put-if-absent of the version after it lands only if that snapshot is still the latest. That
    saves one request per write (specs/format.md §10). A lost race is checked against winners
    that only added rows and deltas; any other winner (a compaction, vacuum, alter, tag), a
    typed error or nothing to do sends the write to the latest snapshot, to plan again. That
    first plan is not a restart. A handle that lost a race plans on the latest snapshot until a
    look at the log finds nothing new."""
    props = properties or CommitProperties()
    fresh, restarts = not handle.optimistic, 0
    while True:
        if fresh:
            known = handle.state.version
            snap = handle.refresh()
            # under contention the handle is usually behind: plan on the latest until a look at
            # the log finds nothing new again
            handle.note_contention(snap.version != known)
        else:
            snap = handle.state
        try:
            frag = plan(snap)
        except TableFormatError:
            if fresh or not _moved(handle, snap):
                raise
            fresh = True
            continue
        if frag is None or frag.empty:
            if fresh or not _moved(handle, snap):
                return None, frag
            fresh = True
            continue
        try:
            return Transaction(handle, frag, props, latest_known=fresh).commit(), frag
        except RestartRequired:
            restarts += fresh
            if restarts >= props.max_restarts:
                raise CommitConflictError(f"{operation} restarted {props.max_restarts} times; retry later") from None
            fresh = True


def _adds_only(c: Commit) -> bool:
    """A commit of rows and deltas only (inserts, mutations, a sink's batch with its `txn`): what
    every requirement checks exactly."""
    return all(isinstance(a, (AddRowSet, AddDelta, AddSkipped, SetTransaction)) for a in c.actions)


def _moved(handle: TableHandle, snap: TableState) -> bool:
    """Has the log moved past the snapshot a plan used?"""
    return handle.refresh().version != snap.version
