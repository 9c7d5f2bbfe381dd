"""The transaction log: ordered commit files plus periodic checkpoints.

Version v is the file `_log/<v:020d>.json`, created with put-if-absent: whoever
creates it first owns v. Its MVCC timestamp is chosen at commit time
(max(now_us, previous + 1)), so a retried commit never rewrites data files.
A checkpoint `_log/<v:020d>.checkpoint.json` holds the full state at v and the
history summary, so opening reads one checkpoint plus the commits after it.
See `specs/format.md`, section "Transaction log".
"""
from __future__ import annotations

import json
import time
import uuid
import zlib
from dataclasses import dataclass, replace

from ..format.errors import (CorruptFileError, TableNotFoundError, TableReplacedError, UnsupportedFormatVersionError,
                             VersionNotFoundError)
from .actions import ACTIONS, Action, Commit, apply_commit, decode_commit
from ..format.metadata import (FORMAT_VERSION, TXN_FORMAT_VERSION, CommitInfo, TableState,
                               written_format_version)
from ..format.constants import LOG_DIR
from ..format.storage import Storage

_COMMIT_SUFFIX = ".json"
_CHECKPOINT_SUFFIX = ".checkpoint.json"
LAST_CHECKPOINT = f"{LOG_DIR}/_last_checkpoint"


def commit_path(version: int) -> str:
    return f"{LOG_DIR}/{version:020d}{_COMMIT_SUFFIX}"


def checkpoint_path(version: int) -> str:
    return f"{LOG_DIR}/{version:020d}{_CHECKPOINT_SUFFIX}"


def now_micros() -> int:
    return time.time_ns() // 1000


def canonical_json(obj) -> bytes:
    """The bytes a checksum covers: compact JSON, keys sorted, ASCII (specs/format.md §8.1)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


# From format version 3 a log file's checksum covers every field but itself; before, only
# `actions` (commits) or `state` (checkpoints). The file's own format_version picks the rule.
WHOLE_FILE_CHECKSUM_FROM = 3


def commit_checksum(d: dict) -> int:
    """The checksum a commit of d's format version must carry (specs/format.md §8.1)."""
    if d.get("format_version", 1) >= WHOLE_FILE_CHECKSUM_FROM:
        return zlib.crc32(canonical_json({k: v for k, v in d.items() if k != "checksum"}))
    return zlib.crc32(canonical_json(d["actions"]))


def checkpoint_checksum(d: dict) -> int:
    """The checksum a checkpoint of d's format version must carry (specs/format.md §8.3)."""
    if d.get("format_version", 1) >= WHOLE_FILE_CHECKSUM_FROM:
        return zlib.crc32(canonical_json({k: v for k, v in d.items() if k != "checksum"}))
    return zlib.crc32(canonical_json(d["state"]))


def _check_format(d: dict, path: str) -> None:
    fv = d.get("format_version")
    if not isinstance(fv, int):
        raise CorruptFileError(f"{path}: no format_version")
    if fv > FORMAT_VERSION:
        raise UnsupportedFormatVersionError(
            f"{path} was written with format version {fv}; this reader supports up to {FORMAT_VERSION}. "
            "Upgrade tableformat to read this table")


def commit_format(prev: TableState | None, actions: list[dict]) -> int:
    """The lowest format version a commit of these actions on `prev` may declare (specs/format.md,
    "Format versions of commits and checkpoints"): its actions' features, and never below its
    table's format nor the commit before it, since readers refuse a downgrade along the log (§8.1)."""
    needed = [ACTIONS.lookup(k).needs_format for a in actions for k in a if k in ACTIONS]
    if prev is not None:
        needed += [prev.format_version, prev.log_format]
    else:
        needed += [a["metadata"]["format_version"] for a in actions if "metadata" in a]
    return written_format_version(*needed)


def checkpoint_format(state: TableState) -> int:
    """A checkpoint's format version: its state's features (`txns`: 6), its table's, and the
    commit it sums up (specs/format.md §8.3)."""
    return written_format_version(state.format_version, state.log_format,
                                  TXN_FORMAT_VERSION if state.txns else 0)


@dataclass(frozen=True)
class Listing:
    commits: tuple[int, ...]
    checkpoints: tuple[int, ...]

    @property
    def latest(self) -> int:
        return self.commits[-1] if self.commits else -1


class TransactionLog:
    """Reads and appends the log of one table."""

    def __init__(self, storage: Storage):
        self.storage = storage
        self.reads = 0  # log files read, for tests of the open cost
        self._format_of: dict[int, int] = {}  # version -> format version of its verified commit
        self._hint: int | None = None          # the newest _last_checkpoint this log wrote

    # --- reading ----------------------------------------------------------------------
    def listing(self) -> Listing:
        """Commits and checkpoints by version: only names of 20 ASCII digits count (`commit_path`), the
        names readers open; "5.json" or a stray file beside them is no version (§8.3)."""
        commits, checkpoints = [], []
        for name in self.storage.list(LOG_DIR):
            for suffix, out in ((_CHECKPOINT_SUFFIX, checkpoints), (_COMMIT_SUFFIX, commits)):
                stem = name[: -len(suffix)]
                if name.endswith(suffix) and len(stem) == 20 and stem.isascii() and stem.isdigit():
                    out.append(int(stem))
                    break
        return Listing(tuple(sorted(commits)), tuple(sorted(checkpoints)))

    def read_commit(self, version: int) -> Commit:
        """Version `version`'s commit, checked and decoded into typed actions."""
        return decode_commit(self.read_commit_json(version), commit_path(version))

    def read_commit_json(self, version: int) -> dict:
        """The commit file as written, after its format and checksum checks."""
        path = commit_path(version)
        try:
            raw = self.storage.read(path)
        except FileNotFoundError:
            raise VersionNotFoundError(f"commit {path} does not exist") from None
        self.reads += 1
        try:
            d = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            raise CorruptFileError(f"commit file {path} is corrupt or truncated: {e}") from None
        _check_format(d, path)
        if d.get("version") != version:
            raise CorruptFileError(f"commit file {path} says version {d.get('version')}")
        self._verify_commit(d, version, path)
        return d

    def _verify_commit(self, d: dict, version: int, path: str) -> None:
        fv = d["format_version"]
        if "checksum" not in d:
            if fv >= WHOLE_FILE_CHECKSUM_FROM:
                raise CorruptFileError(f"commit file {path} has no checksum, which format version {fv} "
                                       "requires: the file was altered; restore it from a backup")
        else:
            try:
                expect = commit_checksum(d)
            except (KeyError, TypeError, ValueError):
                expect = None
            if expect != d["checksum"]:
                raise CorruptFileError(f"commit file {path} fails its checksum: the file was altered or "
                                       "damaged; restore it from a backup")
        # Writers never go back to an older format (they refuse a log with newer commits), so a
        # commit older than its predecessor had its format_version edited: a checksum downgrade.
        prev = self._format_of.get(version - 1)
        if prev is not None and fv < prev:
            raise CorruptFileError(f"commit file {path} says format version {fv} after a commit of format "
                                   f"version {prev}: the file was altered; restore it from a backup")
        self._format_of[version] = fv

    def read_checkpoint(self, version: int) -> tuple[TableState, list[CommitInfo]]:
        """A checkpoint, verified; CorruptFileError (or FileNotFoundError) says why it cannot be used."""
        path = checkpoint_path(version)
        raw = self.storage.read(path)
        self.reads += 1
        try:
            d = json.loads(raw)
            _check_format(d, path)
            fv = d["format_version"]
            if "checksum" not in d and fv >= WHOLE_FILE_CHECKSUM_FROM:
                raise CorruptFileError(f"checkpoint {path} has no checksum, which format version {fv} requires")
            if checkpoint_checksum(d) != d.get("checksum"):
                raise CorruptFileError(f"checkpoint {path} fails its checksum")
            if d["version"] != version or d["state"]["version"] != version:
                raise CorruptFileError(f"checkpoint {path} says version {d['version']}")
            if fv < d["state"]["format_version"]:   # an older rule claimed for a newer table: a downgrade
                raise CorruptFileError(f"checkpoint {path} says format version {fv}, older than its table's "
                                       f"{d['state']['format_version']}")
            state = replace(TableState.from_json(d["state"]), log_format=fv)
            history = [CommitInfo.from_json(x) for x in d["history"]]
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, UnicodeDecodeError) as e:
            raise CorruptFileError(f"checkpoint {path} is corrupt or truncated: {e!r}") from None
        self._format_of.setdefault(version, fv)
        return state, history

    def _read_checkpoint(self, version: int) -> tuple[TableState, list[CommitInfo]] | None:
        try:
            return self.read_checkpoint(version)
        except UnsupportedFormatVersionError:
            raise
        except (FileNotFoundError, CorruptFileError):
            return None  # a checkpoint is derived data: fall back to an older one

    def _try_read_commit(self, version: int) -> Commit | None:
        try:
            return self.read_commit(version)
        except VersionNotFoundError:
            return None

    def _no_start(self, listing: Listing) -> TableNotFoundError | CorruptFileError:
        """No state to replay from: no table (no commits at all), or a damaged log whose commit 0 is
        gone with no checkpoint after it (specs/format.md §8.3)."""
        if not listing.commits:
            return TableNotFoundError(f"no table at {self.storage.uri!r} (no {LOG_DIR}/ commits)")
        return CorruptFileError(
            f"commit file {commit_path(0)} of the table at {self.storage.uri!r} is missing, while {LOG_DIR}/ "
            f"holds {len(listing.commits)} commits (versions {listing.commits[0]}..{listing.latest}) and no "
            f"usable checkpoint to start from: the log is damaged; restore {commit_path(0)} from a backup")

    def load(self, version: int | None = None, base: tuple[TableState, list[CommitInfo]] | None = None,
             ) -> tuple[TableState, list[CommitInfo]]:
        """State at `version` (latest if None) and the history up to it.

        Without `base`, the state is opened from one listing of `_log/` (specs/format.md §8.3), never
        from `_last_checkpoint`, so every reader (the JVM's too) finds the same state whatever the
        hint says. With `base` (a state this log verified), the commits after it are read until one
        is missing: a writer catching up (§8.4).
        """
        if base is None or (version is not None and base[0].version > version):
            return self._open(version)
        state, history = base[0], list(base[1])
        v = state.version + 1
        while version is None or v <= version:
            d = self._try_read_commit(v)
            if d is None:
                if version is not None:
                    raise VersionNotFoundError(f"version {version} does not exist; the latest is {state.version}")
                break
            state = self._apply(state, history, d, v)
            v += 1
        return state, history

    def _open(self, version: int | None) -> tuple[TableState, list[CommitInfo]]:
        """The state at `version` (None: the newest listed commit) from the newest checkpoint at or
        before it that passes its checks, then every commit after it: one missing there is a damaged
        log, never the log's end (§8.3, "Opening a table")."""
        listing = self.listing()
        if not listing.commits:
            raise self._no_start(listing)
        if version is not None and version > listing.latest:
            raise VersionNotFoundError(f"version {version} does not exist; the latest is {listing.latest}")
        target = listing.latest if version is None else version
        loaded = next(filter(None, (self._read_checkpoint(c) for c in reversed(listing.checkpoints) if c <= target)),
                      None)
        state, history = (loaded[0], list(loaded[1])) if loaded is not None else (None, [])
        listed = set(listing.commits)
        for v in range(0 if state is None else state.version + 1, target + 1):
            d = self._try_read_commit(v) if v in listed else None
            if d is None and state is None:
                raise self._no_start(listing)
            if d is None:
                raise CorruptFileError(
                    f"commit file {commit_path(v)} is missing from the log of {self.storage.uri!r}, whose commits go "
                    f"on to version {listing.latest}: the log is damaged; restore the file from a backup (versions "
                    f"before {v} and from a checkpoint after it can still be read)")
            state = self._apply(state, history, d, v)
        return state, history

    def _apply(self, state: TableState | None, history: list[CommitInfo], d: Commit, v: int) -> TableState:
        """The state after commit v, its table's own (§8.1 `table_id`), in no older format than its table's;
        v's entry is appended to `history`."""
        if state is not None and d.table_id is not None and d.table_id != state.table_id:
            raise TableReplacedError(
                f"the table at {self.storage.uri!r} was replaced: commit {commit_path(v)} belongs to table "
                f"{d.table_id}, this state to {state.table_id}; open the table again")
        state = apply_commit(state, d, commit_path(v))
        if d.format_version < state.format_version:
            # a table created in format N is only ever written in format >= N: an older label was
            # put there to fall back to a weaker checksum rule
            raise CorruptFileError(f"commit file {commit_path(v)} says format version {d.format_version} in a "
                                   f"table created in format version {state.format_version}: the file was "
                                   "altered; restore it from a backup")
        history.append(CommitInfo(v, d.timestamp, d.operation, dict(d.counts), d.read_version))
        return state

    def read_new_commits(self, after: int) -> list[Commit]:
        """Commits after version `after`, up to the head."""
        out, v = [], after + 1
        while (d := self._try_read_commit(v)) is not None:
            out.append(d)
            v += 1
        return out

    # --- writing ----------------------------------------------------------------------
    def try_commit(self, prev: TableState | None, operation: str, actions: list,
                   counts: dict, read_version: int | None, data_change: bool = True,
                   txn_id: str | None = None) -> Commit | None:
        """Try to create version prev.version + 1 with put-if-absent. Returns the commit as
        readers will decode it, or None if another writer took the version."""
        version = 0 if prev is None else prev.version + 1
        actions = [a.to_json() if isinstance(a, Action) else a for a in actions]
        ts = now_micros()
        if prev is not None and ts <= prev.timestamp:
            ts = prev.timestamp + 1
        table_id = prev.table_id if prev is not None else \
            next((a["metadata"]["table_id"] for a in actions if "metadata" in a), None)
        commit = {
            "format_version": commit_format(prev, actions), "version": version, "timestamp": ts,
            "operation": operation, "read_version": read_version, "txn_id": txn_id or uuid.uuid4().hex,
            "table_id": table_id, "counts": counts, "data_change": data_change, "actions": actions,
        }
        # over the JSON round trip, so the writer sums exactly what a reader will parse
        commit["checksum"] = commit_checksum(json.loads(json.dumps(commit)))
        data = json.dumps(commit, separators=(",", ":")).encode()
        if not self.storage.put_if_absent(commit_path(version), data):
            return None
        return decode_commit(commit, commit_path(version))

    def write_checkpoint(self, state: TableState, history: list[CommitInfo]) -> None:
        """Best effort: a missing or broken checkpoint only costs replay time."""
        d = {"format_version": checkpoint_format(state), "version": state.version,
             "state": state.to_json(), "history": [h.to_json() for h in history]}
        d["checksum"] = checkpoint_checksum(json.loads(json.dumps(d)))
        try:
            self.storage.put_if_absent(checkpoint_path(state.version), json.dumps(d).encode())
            # no read of the hint first: no reader of this format opens from it (§8.3); older engines
            # do, and a hint another writer moves back only costs them some replay
            if self._hint is None or self._hint < state.version:
                self.storage.write(LAST_CHECKPOINT, json.dumps({"version": state.version}).encode())
                self._hint = state.version
        except OSError:
            pass
