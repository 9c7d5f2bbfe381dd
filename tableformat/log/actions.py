"""Typed log actions: one frozen class per action, one pure function applying each.

A commit file (specs/format.md §8.1-8.2) is decoded once, by `decode_commit`,
into a `Commit` of typed actions. Decoding is also where a commit's timestamp
is stamped on what takes it (a REDO file without a `ts` column, an insert's
rowset), so no reader does it again. `apply_commit` folds a commit into a
TableState with `apply_action`, dispatched on the action's type: log replay,
rebase and time travel share it. The JSON written is exactly the JSON read.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import singledispatch
from types import MappingProxyType
from typing import Any, Mapping

from ..format.errors import CorruptFileError
from ..format.metadata import TXN_FORMAT_VERSION, DeltaFileMeta, FileRef, RowSetMeta, TableState
from ..format.partition import Partitioning
from .registry import Registry
from ..format.schema import Schema


ACTIONS = Registry("log action")


class Action:
    """A change to the table state, as recorded in a commit: `{key: body}`, decoded through
    the protocol's one registry (`registry`) by `from_body`."""

    key = ""
    needs_format = 1        # the lowest format version a commit carrying it declares (specs/format.md)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        ACTIONS.register(cls.key, cls)

    def to_json(self) -> dict:
        raise NotImplementedError

    @classmethod
    def from_body(cls, body: dict) -> "Action":
        raise NotImplementedError


@dataclass(frozen=True)
class CreateTable(Action):
    """Version 0: the table's identity and first definition (`metadata`)."""

    meta: Mapping[str, Any]
    key = "metadata"

    def to_json(self) -> dict:
        return {self.key: dict(self.meta)}

    @classmethod
    def from_body(cls, body: dict) -> "CreateTable":
        return cls(MappingProxyType(dict(body)))


@dataclass(frozen=True)
class AddRowSet(Action):
    rowset: RowSetMeta
    key = "add_rowset"

    def to_json(self) -> dict:
        return {self.key: self.rowset.to_json()}

    @classmethod
    def from_body(cls, body: dict) -> "AddRowSet":
        return cls(RowSetMeta.from_json(body))


@dataclass(frozen=True)
class RemoveRowSet(Action):
    rowset_id: str
    key = "remove_rowset"

    def to_json(self) -> dict:
        return {self.key: {"id": self.rowset_id}}

    @classmethod
    def from_body(cls, body: dict) -> "RemoveRowSet":
        return cls(body["id"])


@dataclass(frozen=True)
class AddDelta(Action):
    delta: DeltaFileMeta
    key = "add_delta"

    @property
    def rowset_id(self) -> str:
        return self.delta.rowset

    def to_json(self) -> dict:
        return {self.key: self.delta.to_json()}

    @classmethod
    def from_body(cls, body: dict) -> "AddDelta":
        return cls(DeltaFileMeta.from_json(body))


@dataclass(frozen=True)
class RemoveDelta(Action):
    rowset_id: str
    path: str
    key = "remove_delta"

    def to_json(self) -> dict:
        return {self.key: {"rowset": self.rowset_id, "path": self.path}}

    @classmethod
    def from_body(cls, body: dict) -> "RemoveDelta":
        return cls(body["rowset"], body["path"])


@dataclass(frozen=True)
class AlterDefinition(Action):
    """A new definition: schema, name, partitioning and (from format 2 on) properties."""

    name: str
    schema: Schema
    partitioning: Partitioning
    properties: Mapping[str, int] | None = None
    key = "alter"

    def to_json(self) -> dict:
        d: dict[str, Any] = {"name": self.name, "schema": self.schema.to_json(),
                             "partitioning": self.partitioning.to_json(self.schema)}
        if self.properties is not None:
            d["properties"] = dict(self.properties)
        return {self.key: d}

    @classmethod
    def from_body(cls, body: dict) -> "AlterDefinition":
        schema = Schema.from_json(body["schema"])
        props = body.get("properties")
        return cls(body["name"], schema, Partitioning.from_json(body["partitioning"], schema),
                   None if props is None else MappingProxyType(dict(props)))


@dataclass(frozen=True)
class SetHistory(Action):
    """Vacuum's history horizon and/or the timestamp before which compactions dropped history."""

    horizon_version: int | None = None
    gc_before_ts: int | None = None
    key = "history"
    needs_format = 2

    def to_json(self) -> dict:
        d = {}
        if self.horizon_version is not None:
            d["horizon_version"] = self.horizon_version
        if self.gc_before_ts is not None:
            d["gc_before_ts"] = self.gc_before_ts
        return {self.key: d}

    @classmethod
    def from_body(cls, body: dict) -> "SetHistory":
        return cls(body.get("horizon_version"), body.get("gc_before_ts"))


@dataclass(frozen=True)
class AddTag(Action):
    """(v4) A name for a version: `as_of` accepts it, and the history it needs is kept (§12)."""

    name: str
    version: int
    timestamp: int
    key = "tag"
    needs_format = 4

    def to_json(self) -> dict:
        return {self.key: {"name": self.name, "version": self.version, "timestamp": self.timestamp}}

    @classmethod
    def from_body(cls, body: dict) -> "AddTag":
        return cls(str(body["name"]), int(body["version"]), int(body["timestamp"]))


@dataclass(frozen=True)
class RemoveTag(Action):
    """(v4) The tag is gone; the history only it needed may be garbage-collected."""

    name: str
    key = "untag"
    needs_format = 4

    def to_json(self) -> dict:
        return {self.key: {"name": self.name}}

    @classmethod
    def from_body(cls, body: dict) -> "RemoveTag":
        return cls(str(body["name"]))


@dataclass(frozen=True)
class AddSkipped(Action):
    """Format 4: input rows a write skipped, and why (`sequence.STALE`), in a file the commit
    names. The table state is unchanged; `changes(skipped=True)` reads it."""

    file: FileRef
    count: int
    reason: str
    key = "skipped"
    needs_format = 4

    def to_json(self) -> dict:
        return {self.key: {**self.file.to_json(), "count": self.count, "reason": self.reason}}

    @classmethod
    def from_body(cls, body: dict) -> "AddSkipped":
        return cls(FileRef.from_json(body), body["count"], body["reason"])


@dataclass(frozen=True)
class SetTransaction(Action):
    """Format 6: an application's transaction version (Delta's `txn`: appId, version), e.g. a
    streaming query's id and micro-batch id. The state keeps the newest version per app id, so a
    writer that replays a batch finds it committed (`Snapshot.txn_version`; specs/format.md §8.2)."""

    app_id: str
    version: int
    key = "txn"
    needs_format = TXN_FORMAT_VERSION

    def to_json(self) -> dict:
        return {self.key: {"app_id": self.app_id, "version": self.version}}

    @classmethod
    def from_body(cls, body: dict) -> "SetTransaction":
        app_id, version = body["app_id"], body["version"]
        if not isinstance(app_id, str) or not isinstance(version, int) or isinstance(version, bool):
            raise TypeError(f"txn needs a string app_id and an integer version, got {body!r:.100}")
        return cls(app_id, version)


DEFINITION_CHANGES = (CreateTable, AlterDefinition)


def action_from_json(d: dict, path: str = "<commit>") -> Action:
    """One action as written (no timestamp stamping: see decode_commit)."""
    if not isinstance(d, dict) or len(d) != 1:
        raise CorruptFileError(f"{path}: malformed log action {d!r:.200}")
    (key, body), = d.items()
    cls = ACTIONS.lookup(key, path)
    try:
        return cls.from_body(body)
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptFileError(f"{path}: malformed {key} action: {e}") from None


@dataclass(frozen=True)
class Commit:
    """One decoded commit file: a version, its MVCC timestamp and typed actions."""

    version: int
    timestamp: int
    operation: str
    actions: tuple[Action, ...]
    counts: Mapping[str, int] = field(default_factory=dict)
    read_version: int | None = None
    data_change: bool = True
    format_version: int = 1
    txn_id: str = ""
    table_id: str | None = None      # format 3: the table the commit belongs to

    def of(self, *types: type) -> list:
        """The actions of the given types, in commit order."""
        return [a for a in self.actions if isinstance(a, types)]

    @property
    def files(self) -> set[str]:
        """The files this commit made part of the table."""
        out: set[str] = set()
        for a in self.of(AddRowSet, AddDelta):
            out.update(f.path for f in a.rowset.files) if isinstance(a, AddRowSet) else out.add(a.delta.path)
        out.update(a.file.path for a in self.of(AddSkipped))
        return out

    @property
    def changes_definition(self) -> bool:
        return any(isinstance(a, DEFINITION_CHANGES) for a in self.actions)


def stamp(action: Action, ts: int) -> Action:
    """What takes its commit's timestamp: a REDO file without a `ts` column, an insert's rowset."""
    if isinstance(action, AddDelta) and not action.delta.has_ts_column:
        return AddDelta(replace(action.delta, min_ts=ts, max_ts=ts))
    if isinstance(action, AddRowSet) and action.rowset.created_ts is None:
        return AddRowSet(replace(action.rowset, created_ts=ts))
    return action


def decode_commit(d: dict, path: str = "<commit>") -> Commit:
    """A commit file's JSON (already checked for format and checksum) as a typed Commit."""
    ts = d["timestamp"]
    return Commit(d["version"], ts, d["operation"],
                  tuple(stamp(action_from_json(a, path), ts) for a in d["actions"]),
                  MappingProxyType(dict(d.get("counts", {}))), d.get("read_version"), d.get("data_change", True),
                  d.get("format_version", 1), d.get("txn_id", ""), d.get("table_id"))


def added_deltas(commits: list[Commit]):
    """`deltas_of(rowset id)` over the delta files the given commits added, in commit order."""
    out: dict[str, tuple] = {}
    for c in commits:
        for a in c.of(AddDelta):
            out[a.delta.rowset] = out.get(a.delta.rowset, ()) + (a.delta,)
    return lambda rid: out.get(rid, ())


# --- applying actions --------------------------------------------------------------------

class _Invalid(Exception):
    """An action that does not fit the state it is applied to (a corrupt log)."""


@singledispatch
def apply_action(action: Action, state: TableState) -> TableState:
    raise _Invalid(f"unknown action {type(action).__name__}")


@apply_action.register
def _(action: CreateTable, state: TableState) -> TableState:
    return state            # the state of version 0 is built from it by apply_commit


@apply_action.register
def _(action: AddRowSet, state: TableState) -> TableState:
    return replace(state, rowsets=MappingProxyType({**state.rowsets, action.rowset.id: action.rowset}))


@apply_action.register
def _(action: RemoveRowSet, state: TableState) -> TableState:
    rowsets = dict(state.rowsets)
    rowsets.pop(action.rowset_id, None)
    deltas = dict(state.deltas)
    deltas.pop(action.rowset_id, None)
    return replace(state, rowsets=MappingProxyType(rowsets), deltas=MappingProxyType(deltas))


@apply_action.register
def _(action: AddDelta, state: TableState) -> TableState:
    m = action.delta
    if m.rowset not in state.rowsets:
        raise _Invalid(f"delta {m.path} names unknown rowset {m.rowset}")
    return replace(state, deltas=MappingProxyType({**state.deltas, m.rowset: state.deltas_of(m.rowset) + (m,)}))


@apply_action.register
def _(action: RemoveDelta, state: TableState) -> TableState:
    kept = tuple(d for d in state.deltas_of(action.rowset_id) if d.path != action.path)
    return replace(state, deltas=MappingProxyType({**state.deltas, action.rowset_id: kept}))


@apply_action.register
def _(action: AlterDefinition, state: TableState) -> TableState:
    props = state.properties if action.properties is None else action.properties
    return replace(state, schema=action.schema, name=action.name, partitioning=action.partitioning,
                   properties=MappingProxyType(dict(props)))


@apply_action.register
def _(action: AddSkipped, state: TableState) -> TableState:
    return state            # a record for change history only


@apply_action.register
def _(action: SetTransaction, state: TableState) -> TableState:
    return replace(state, txns=MappingProxyType({**state.txns, action.app_id: action.version}))


@apply_action.register
def _(action: SetHistory, state: TableState) -> TableState:
    return replace(state, history_horizon=max(state.history_horizon, action.horizon_version or 0),
                   history_gc_ts=max(state.history_gc_ts, action.gc_before_ts or 0))


@apply_action.register
def _(action: AddTag, state: TableState) -> TableState:
    if action.name in state.tags:
        raise _Invalid(f"tag {action.name!r} added twice")
    return replace(state, tags=MappingProxyType({**state.tags, action.name: (action.version, action.timestamp)}))


@apply_action.register
def _(action: RemoveTag, state: TableState) -> TableState:
    if action.name not in state.tags:
        raise _Invalid(f"untag of unknown tag {action.name!r}")
    return replace(state, tags=MappingProxyType({k: v for k, v in state.tags.items() if k != action.name}))


def apply_commit(state: TableState | None, commit: Commit, path: str = "<commit>") -> TableState:
    """Fold one commit into the state before it (None before version 0)."""
    if state is None:
        meta = next((a.meta for a in commit.of(CreateTable)), None)
        if meta is None:
            raise CorruptFileError(f"{path}: version 0 has no metadata action")
        state = TableState.from_json({**meta, "version": commit.version, "timestamp": commit.timestamp,
                                      "rowsets": []})
    elif commit.version != state.version + 1:
        raise CorruptFileError(f"{path}: expected version {state.version + 1}, found {commit.version}")
    try:
        for a in commit.actions:
            state = apply_action(a, state)
    except _Invalid as e:
        raise CorruptFileError(f"{path}: {e}") from None
    return replace(state, version=commit.version, timestamp=commit.timestamp,
                   log_format=max(state.log_format, commit.format_version))
