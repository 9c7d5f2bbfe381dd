"""The protocol every requirement follows (specs/format.md §10): a requirement is plain data
(to_json / from_json through one registry, `REQUIREMENTS`), checked against exactly the commits
that won; the conflict matrix (`matrix.decide`) gives the outcome of a clash it finds."""
from __future__ import annotations

import base64
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from ..actions import Action, AddRowSet, Commit
from ...format.keyencoder import decode_key
from ...format.metadata import TableState
from ...format.storage import Storage
from ..matrix import Outcome, decide, fallback
from ..registry import Registry


@dataclass
class Verdict:
    outcome: Outcome
    reason: str = ""
    error: Exception | None = None
    extra: list[Action] = field(default_factory=list)      # remapped actions, on REBASE
    dropped: list[Action] = field(default_factory=list)    # own actions the remapped ones replace


@dataclass
class Context:
    """What a requirement may look at: the snapshot the write planned on, the state the winners
    start from, the winners, and this transaction's own actions."""

    storage: Storage
    snapshot: TableState
    base: TableState
    winners: list[Commit]
    own: list[Action]
    written: list[str]                  # a requirement that writes files (remapping) appends them
    kind: str                           # the write's row of the matrix (WriteFragment.kind)

    def decide(self, winner: Commit) -> Outcome:
        """The matrix's outcome for this write against a winner that touched its data."""
        return decide(self.kind, winner)

    def fallback(self) -> Outcome:
        """The outcome when the matrix says REBASE but this write cannot be carried over."""
        return fallback(self.kind)

    @property
    def winner_actions(self) -> list[Action]:
        return [a for c in self.winners for a in c.actions]


REBASE = Verdict(Outcome.REBASE)
REQUIREMENTS = Registry("requirement")
LEGACY = ("on_clash", "on_change")


def strictest(verdicts) -> Verdict:
    """FAIL over RESTART over REBASE; REBASE when there are none."""
    order = {Outcome.FAIL: 0, Outcome.RESTART: 1, Outcome.REBASE: 2}
    return min(verdicts, key=lambda v: order[v.outcome], default=REBASE)


class Requirement:
    """A condition a write relies on. `check` answers REBASE, RESTART or FAIL."""

    kind: ClassVar[str] = ""

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        REQUIREMENTS.register(cls.kind, cls)

    def check(self, ctx: Context) -> Verdict:
        raise NotImplementedError

    def precheck(self, ctx: Context) -> Verdict:
        """Checked once before the first commit attempt, on the write itself."""
        return REBASE

    def to_json(self) -> dict:
        return {"kind": self.kind, **self._body()}

    def _body(self) -> dict:
        """Plain JSON of the fields: tuples as lists."""
        return {f.name: (list(v) if isinstance(v, tuple) else v) for f in fields(self) for v in [getattr(self, f.name)]}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Requirement":
        d = dict(d)
        return REQUIREMENTS.lookup(d.pop("kind")).from_body(d)

    @classmethod
    def from_body(cls, d: dict) -> "Requirement":
        # on_clash / on_change: outcomes a fragment carried before the matrix decided them
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k not in LEGACY})


def pack_rowids(a: np.ndarray) -> str:
    return base64.b64encode(np.asarray(a, np.int64).tobytes()).decode()


def unpack_rowids(s: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(s), np.int64)


def schema_name(ctx: Context) -> str:
    return ctx.base.name


def decoded_key(key: bytes, schema) -> Any:
    """A key as its column values, for an error message (its hex when it does not decode)."""
    try:
        t = decode_key(key, [c.type for c in schema.key_columns])
        return t[0] if len(t) == 1 else t
    except ValueError:
        return key.hex()


def new_rowsets(ctx: Context, winners: list[Commit] | None = None) -> list:
    """Rowsets the winners (all, or those given) added that hold rows new to the table: a major
    delta compaction re-adds a rowset under its id with a new column group, and that is no new row."""
    return [a.rowset for c in (ctx.winners if winners is None else winners) for a in c.actions
            if isinstance(a, AddRowSet) and a.rowset.id not in ctx.base.rowsets]


def no_rebase(ctx: Context, winner: Commit) -> Outcome:
    """The matrix's outcome for a clash this requirement can never rebase over."""
    outcome = ctx.decide(winner)
    return ctx.fallback() if outcome is Outcome.REBASE else outcome


def check_all(requirements: Sequence[Requirement], ctx: Context, before: bool = False) -> Verdict:
    """The strictest answer of all requirements (FAIL over RESTART over REBASE); REBASE carries
    every requirement's remapped actions. before=True runs the prechecks instead."""
    extra: list[Action] = []
    dropped: list[Action] = []
    restart = None
    for r in requirements:
        v = r.precheck(ctx) if before else r.check(ctx)
        if v.outcome is Outcome.FAIL:
            return v
        if v.outcome is Outcome.RESTART and restart is None:
            restart = v
        extra += v.extra
        dropped += v.dropped
    return restart or Verdict(Outcome.REBASE, extra=extra, dropped=dropped)
