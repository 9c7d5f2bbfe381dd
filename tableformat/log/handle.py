"""The table handle: the one owner of what a process has read of one table's log.

It holds the storage, the log, the latest state and history it has seen, and an
LRU of older states (time travel). Commits move it forward: `advance` with
winners it learns of, `landed` with its own commit (plus a checkpoint every N
versions). `Table` (the facade), `Transaction` and `run` all work through its
methods; no other module touches its fields. specs/format.md §8.

Threads share a handle (a `Table` is safe to share for reads): the LRU of older states and the
move to a newer state happen under one lock, and the cached state only moves forward.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from . import mvcc
from .actions import Commit, apply_commit
from ..format.errors import TableReplacedError
from ..format.metadata import CommitInfo, TableState
from ..format.storage import Storage
from .txlog import TransactionLog

# old states kept for time travel; each holds a table's rowset map
STATE_CACHE_SIZE = 16


class TableHandle:
    """Storage, log and the cached latest state of one table. `optimistic`: the next write plans
    on the cached state without asking the log (`note_contention` turns it off when a write
    finds the log moved, and on again when it does not)."""

    def __init__(self, storage: Storage, state: TableState, history: list[CommitInfo],
                 log: TransactionLog | None = None):
        self.storage = storage
        self.log = log or TransactionLog(storage)
        self._state = state
        self._history = history
        self._states: OrderedDict[int, TableState] = OrderedDict()
        self._lock = threading.Lock()
        self._optimistic = True

    def __getstate__(self) -> dict:
        """A handle pickles without its lock (a Table captured by a Spark function, say): the copy
        gets a lock of its own."""
        d = self.__dict__.copy()
        del d["_lock"]
        return d

    def __setstate__(self, d: dict) -> None:
        self.__dict__.update(d)
        self._lock = threading.Lock()

    @property
    def optimistic(self) -> bool:
        return self._optimistic

    def note_contention(self, contended: bool) -> None:
        """A write found the log ahead of this handle (or lost a race): plan the next one on the
        latest state; False when a look at the log found nothing new (specs/format.md §10)."""
        self._optimistic = not contended

    @property
    def state(self) -> TableState:
        """The latest state this handle knows, without a read."""
        return self._state

    @property
    def history(self) -> list[CommitInfo]:
        """Commit infos up to the known state, without a read."""
        return self._history

    @property
    def uri(self) -> str:
        return self.storage.uri

    def _pair(self) -> tuple[TableState, list[CommitInfo]]:
        """The state and its history, read together under the lock (never one from each of two
        threads' refreshes)."""
        with self._lock:
            return self._state, self._history

    def _refreshed(self) -> tuple[TableState, list[CommitInfo]]:
        state, history = self.log.load(None, self._pair())
        with self._lock:
            # a slower thread's older read never wins (a table replaced at the path does)
            if state.version >= self._state.version or state.table_id != self._state.table_id:
                self._state, self._history = state, history
            return self._state, self._history

    def refresh(self) -> TableState:
        """Catch up with commits made since this handle last looked (one read when there are none)."""
        return self._refreshed()[0]

    def load(self, version: int) -> TableState:
        """The state at an older `version`, read once and kept in a small LRU."""
        if version == self._state.version:
            return self._state
        with self._lock:
            state = self._states.get(version)
            if state is not None:
                self._states.move_to_end(version)
                return state
        state = self.log.load(version)[0]                   # read outside the lock
        if state.table_id != self._state.table_id:
            raise TableReplacedError(f"the table at {self.uri!r} was replaced: version {version} belongs to "
                                     f"table {state.table_id}, this handle to {self._state.table_id}; "
                                     "open it again")
        with self._lock:
            self._states[version] = state
            while len(self._states) > STATE_CACHE_SIZE:
                self._states.popitem(last=False)
        return state

    def state_at(self, as_of: Any = None) -> TableState:
        """The latest state (refreshed), or the state as of a version / Timestamp / datetime /
        ISO string / tag; HistoryExpiredError where the history it needs is gone."""
        as_of = mvcc.parse_as_of(as_of, tags=True)
        latest, history = self._refreshed()
        if as_of is None:
            return latest
        v = mvcc.resolve_version(history, as_of, latest.tags)
        mvcc.check_history(latest, history, v, as_of)
        if v == latest.version:
            return latest
        return mvcc.state_at(latest, history, v, self.load)

    def advance(self, base: TableState, commits: list[Commit]) -> TableState:
        """Apply commits to `base`, and move the cached state forward with them."""
        for c in commits:
            base = apply_commit(base, c)
            with self._lock:
                if base.version == self._state.version + 1:
                    self._history = self._history + [CommitInfo(c.version, c.timestamp, c.operation,
                                                                dict(c.counts), c.read_version)]
                    self._state = base
        return base

    def landed(self, base: TableState, commit: Commit, checkpoint_interval: int | None = None) -> None:
        """Our commit landed on `base`: cache it, and write a checkpoint every N versions."""
        new = self.advance(base, [commit])
        every = checkpoint_interval or new.properties["checkpoint_interval"]
        state, history = self._pair()
        if state.version == commit.version and commit.version % every == 0:
            self.log.write_checkpoint(state, history)

    def __repr__(self) -> str:
        return f"TableHandle({self.storage!r}, version={self._state.version})"
