"""MVCC: which version a read sees, and how far back history reaches (Kudu's mvcc.cc).

Every commit has a timestamp; a read `as_of` a version or a timestamp sees one
committed state. Reads older than the ancient history mark (now minus
`history_max_age`) are refused, and versions behind vacuum's history horizon
are read from the horizon's files through UNDO records. `parse_as_of` is the
one parser of `as_of` values, shared by the API, the Spark jobs and the CLI;
an `as_of` may name a tag. Tagged versions are retention points: history
older than the mark that a tagged version needs is kept (`retention_points`,
`kept_by_tags`), and reads of them are never refused as too old.
See `specs/format.md` §8.3, §9.1 and §12.
"""
from __future__ import annotations

import datetime as _dt
import numbers
import re
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..format.errors import (HistoryExpiredError, InvalidOptionError, InvalidTagNameError, TagNotFoundError,
                             TimestampAfterLatestError, VersionNotFoundError)
from ..format.metadata import CommitInfo, TableState, property_value
from .txlog import now_micros


class Timestamp(int):
    """An MVCC timestamp in microseconds since the epoch (UTC).

    Passing one as `as_of` means "as of this time"; a plain int means a version.
    """

    def __new__(cls, micros: int = 0):
        if not isinstance(micros, numbers.Integral) or isinstance(micros, bool):
            raise InvalidOptionError(f"a Timestamp is an integer of microseconds since the epoch, got "
                                     f"{type(micros).__name__} {micros!r:.60}")
        return super().__new__(cls, micros)

    def to_datetime(self) -> _dt.datetime:
        return _dt.datetime.fromtimestamp(self / 1e6, tz=_dt.timezone.utc)

    def __repr__(self) -> str:
        return f"Timestamp({int(self)})"

    def iso(self) -> str:
        """ISO-8601 UTC, as error messages show times (microseconds only when there are some): a
        form `as_of` takes back, where raw microseconds say nothing to a reader.
        Any int64, even outside datetime's years 1..9999 (an error must not become OverflowError):
        the year as java.time's `uuuu` prints it (AsOf.iso), 4 digits, `+` above 9999, `-` below 0."""
        days, us = divmod(int(self), 86_400_000_000)
        y, mo, d = _civil_from_days(days)
        year = f"{y:04d}" if 0 <= y <= 9999 else (f"+{y}" if y > 9999 else f"-{-y:04d}")
        sec, frac = divmod(us, 1_000_000)
        hms = f"{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}"
        return f"{year}-{mo:02d}-{d:02d}T{hms}" + (f".{frac:06d}Z" if frac else "Z")


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of the proleptic Gregorian calendar, `days` after 1970-01-01 (H. Hinnant's
    days_from_civil inverse), with no bound on the year."""
    era, doe = divmod(days + 719468, 146097)
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, doy - (153 * mp + 2) // 5 + 1


_TAG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,127}")


class TagName(str):
    """An `as_of` naming a tag: resolved against the table's tags (TableState.tags). `explicit`
    when written `tag:<name>`; a bare word that names no tag is then just an invalid as_of."""

    explicit = True

    def __repr__(self) -> str:
        return f"TagName({str(self)!r})"


class _BareTagName(TagName):
    explicit = False


def validate_tag_name(name: Any) -> str:
    """A tag name: a letter or `_`, then letters, digits, `_`, `.`, `-`; at most 128 characters.
    So no tag reads as a version number, a `ts:` timestamp or an ISO date-time."""
    if not isinstance(name, str) or not _TAG_NAME.fullmatch(name):
        raise InvalidTagNameError(f"tag name must start with a letter or underscore and hold only letters, "
                                  f"digits, '_', '.' and '-' (at most 128), got {name!r:.80}")
    return name


def _micros(d: _dt.datetime) -> int:
    if d.tzinfo is None:
        d = d.replace(tzinfo=_dt.timezone.utc)
    return int(d.timestamp() * 1_000_000) if d.microsecond == 0 else \
        int(d.replace(microsecond=0).timestamp()) * 1_000_000 + d.microsecond


def parse_as_of(value: Any, what: str = "as_of", tags: bool = False) -> int | Timestamp | TagName | None:
    """A version (int, or a string of digits), a Timestamp (also `ts:<microseconds>`), a
    datetime / ISO-8601 string (`Z` allowed, naive means UTC) as a Timestamp, or a tag name:
    `tag:<name>`, or with tags=True (a caller that resolves against a table) a bare name that
    is no date-time; None is "latest"."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, TagName):
        return value
    if isinstance(value, bool):
        raise InvalidOptionError(f"{what} must be a version, a timestamp or a datetime, not a bool")
    if isinstance(value, Timestamp):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, _dt.datetime):
        return Timestamp(_micros(value))
    if isinstance(value, str):
        s = value.strip()
        if _DIGITS.fullmatch(s.removeprefix("-")):      # "-1" is a version no log holds (resolve refuses it)
            n = int(_digits(s, what, "version", VersionNotFoundError))
            if s[0] == "-" and n == 0:                  # "-0" named version 0; AsOf.java refuses it alike
                raise VersionNotFoundError(f"version {s} does not exist; versions start at 0")
            return -n if s[0] == "-" else n
        if s[:3].lower() == "ts:" and _DIGITS.fullmatch(s[3:].strip()):
            return Timestamp(int(_digits(s[3:].strip(), what, "timestamp", TimestampAfterLatestError)))
        if s[:4].lower() == "tag:":
            return TagName(validate_tag_name(s[4:].strip()))
        m = ISO_AS_OF.fullmatch(s)
        micros = _iso_micros(m) if m else None
        if micros is not None:
            return Timestamp(micros)
        if tags and m is None and _TAG_NAME.fullmatch(s):
            return _BareTagName(s)
        raise InvalidOptionError(f"{what} {value!r} is not a version number, ts:<microseconds>, an ISO "
                                 "date-time such as 2024-05-01T12:00:00Z or tag:<name>")
    raise InvalidOptionError(f"{what} must be a version (int), a tf.Timestamp, a datetime or an ISO string; "
                             f"got {type(value).__name__}")


_DIGITS = re.compile(r"[0-9]+")
# The one date-time grammar of as_of (specs/format.md §9.1), the JVM reader's too (AsOf.java):
# YYYY-MM-DD[(T|t| )HH:MM[:SS[.f{1,9}]][Z|z|±HH:MM|±HHMM]]; no Python version's fromisoformat.
ISO_AS_OF = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,9}))?)?"
                       r"(?:([Zz])|([+-])([0-9]{2}):?([0-9]{2}))?)?")
_EPOCH = _dt.datetime(1970, 1, 1)


def _iso_micros(m: "re.Match") -> int | None:
    """Microseconds since the epoch (UTC) of an ISO_AS_OF match: naive means UTC, fractions are cut to
    microseconds, offsets at most ±18:00; None for a date or time that does not exist (2024-02-30)."""
    y, mo, d, h, mi, sec, frac, _, sign, oh, om = m.groups()
    try:
        t = _dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(sec or 0))
    except ValueError:
        return None
    off = 0
    if sign:
        if int(om) > 59 or int(oh) * 60 + int(om) > 18 * 60:
            return None
        off = (int(oh) * 60 + int(om)) * 60 * (1 if sign == "+" else -1)
    micros = ((t - _EPOCH) // _dt.timedelta(seconds=1) - off) * 1_000_000
    return micros + int((frac or "0").ljust(6, "0")[:6])


_MAX_DIGITS = 40      # far past any int64 version or timestamp, far below Python's int() digit limit


def _digits(s: str, what: str, name: str, error: type) -> str:
    """A number too long for Python's int() (a bare ValueError past 4300 digits) names no version
    or time of any table: refused as one the log does not have (specs/format.md §9.1)."""
    sign = "-" if s.startswith("-") else ""                 # "-" and 45 nines lost its sign
    n = s.removeprefix("-").lstrip("0") or "0"
    if len(n) > _MAX_DIGITS:
        raise error(f"{what}: {name} {sign}{n[:20]}... ({len(n)} digits) does not exist")
    return n


def is_version(as_of: Any) -> bool:
    return isinstance(as_of, int) and not isinstance(as_of, (Timestamp, bool))


def resolve_version(history: Sequence[CommitInfo], as_of: Any,
                    tags: Mapping[str, tuple[int, int]] | None = None) -> int:
    """The version a read `as_of` sees: the version itself, or the last one committed at or
    before the timestamp. A timestamp after the newest commit's is refused: the answer to a
    read as of T never changes once given, because every later commit has a later timestamp
    (a commit's timestamp exceeds its predecessor's, specs/format.md §8.1)."""
    as_of = parse_as_of(as_of, tags=True)
    latest = history[-1].version
    if isinstance(as_of, TagName):
        if not tags or as_of not in tags:
            known = ", ".join(sorted(tags or ())[:10]) or "none"
            if not as_of.explicit:        # one class for an unknown tag, bare or not (the JVM's too)
                raise TagNotFoundError(f"as_of {str(as_of)!r} is not a version number, ts:<microseconds>, an ISO "
                                       f"date-time nor a tag: no tag of that name in this table (tags: {known})")
            raise TagNotFoundError(f"no tag {str(as_of)!r} in this table (tags: {known})")
        return tags[as_of][0]
    if is_version(as_of):
        if as_of < 0 or as_of > latest:
            raise VersionNotFoundError(f"version {as_of} does not exist; versions are 0..{latest}")
        return as_of
    if as_of > history[-1].timestamp:
        # a writer that picked its timestamp at or before as_of may not have landed yet: what
        # this read sees now could change, so only times up to the newest commit are answered
        raise TimestampAfterLatestError(
            f"timestamp {Timestamp(int(as_of)).iso()} is after the newest commit (version {latest} at "
            f"{Timestamp(history[-1].timestamp).iso()}); read the latest with as_of=None, or as of a time at or before it")
    candidates = [h.version for h in history if h.timestamp <= as_of]
    if not candidates:
        raise VersionNotFoundError(f"timestamp {Timestamp(int(as_of)).iso()} is before the table was created "
                                   f"({Timestamp(history[0].timestamp).iso()})")
    return candidates[-1]


def ancient_history_mark(state: TableState) -> int | None:
    """Timestamps below this are outside the retained history (None: retention disabled)."""
    age = property_value(state.properties, "history_max_age")
    if age < 0:
        return None
    return max(0, now_micros() - age * 1_000_000)


def check_history(state: TableState, history: Sequence[CommitInfo], version: int, as_of: Any) -> None:
    """Refuse a read of `version` that history_max_age no longer covers."""
    ahm = ancient_history_mark(state)
    if ahm is None or version == state.version or is_tagged(state, version):
        return
    parsed = parse_as_of(as_of, tags=True)
    explicit_ts = parsed if isinstance(parsed, Timestamp) else None
    end_of_validity = history[version + 1].timestamp if version + 1 < len(history) else None
    too_old = (explicit_ts is not None and explicit_ts < ahm) or \
        (end_of_validity is not None and end_of_validity <= ahm)
    if too_old:
        raise HistoryExpiredError(
            f"version {version} is earlier than the ancient history mark: history older than "
            f"history_max_age={state.properties.get('history_max_age')} s is not retained; "
            "raise the table property history_max_age to keep more")


def state_at(latest: TableState, history: Sequence[CommitInfo], v: int,
             load: Callable[[int], TableState]) -> TableState:
    """Version v: its own files, or, behind the vacuum's history horizon (whose older files
    may be gone), the horizon's files read as of v's timestamp through UNDO records."""
    st = load(v)
    horizon = latest.history_horizon
    if v >= horizon:
        return st
    valid_until = history[v + 1].timestamp        # v < horizon <= latest
    if valid_until <= latest.history_gc_ts and not is_tagged(latest, v):
        # history (UNDO records, deleted rows, a passed ALTER) up to gc_ts is gone; a version
        # still valid after it lost nothing: no change happened between its commit and gc_ts
        raise HistoryExpiredError(
            f"version {v} is older than history a compaction garbage-collected "
            f"(before {Timestamp(latest.history_gc_ts).iso()}) behind the vacuum horizon (version {horizon})")
    h = load(horizon)
    return replace(h, version=v, timestamp=st.timestamp, name=st.name, schema=st.schema,
                   partitioning=st.partitioning, properties=st.properties, txns=st.txns,
                   read_ts=st.timestamp, log_format=st.log_format)


def history_horizon(latest: TableState, history: Sequence[CommitInfo], wanted: int,
                    commit_format: Callable[[int], int]) -> tuple[int, int]:
    """The newest version (<= wanted) from whose files every version within the history can
    be read through UNDO records, and the timestamp before which passing it loses history.

    The horizon never passes, within the history, an ALTER (the files after it may lack a
    dropped column or a dropped range's rows) nor a format-1 commit (no UNDO records, no
    insert times). Passing one that aged out makes the versions before it unreadable for
    good, even if history_max_age is raised later: that is the returned floor."""
    ahm = ancient_history_mark(latest)
    oldest_tag = min((v for v, _ in latest.tags.values()), default=None)
    floor = 0
    born_v2 = latest.format_version >= 2          # then no commit is format 1: none to read
    for v in range(max(1, latest.history_horizon + 1), wanted + 1):
        info = history[v]
        blocking = info.operation == "ALTER TABLE" or (not born_v2 and commit_format(v) < 2)
        if not blocking:
            continue
        if ahm is None or info.timestamp > ahm or (oldest_tag is not None and v > oldest_tag):
            # within the history, or after a tagged version, which must stay readable
            return max(latest.history_horizon, v - 1), floor
        floor = info.timestamp
    return wanted, floor


# --- tags: retention points ----------------------------------------------------------------

def is_tagged(state: TableState, version: int) -> bool:
    return any(v == version for v, _ in state.tags.values())


def retention_points(state: TableState) -> np.ndarray:
    """Sorted commit timestamps of the tagged versions: besides the ancient history mark, the
    times whose reads history garbage collection must keep answering."""
    return np.unique(np.array([ts for _, ts in state.tags.values()], dtype=np.int64))


def kept_by_tags(ts: np.ndarray, prev_ts: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Which history records a tagged read needs: a read as of time P takes, per row and column,
    the first record after P, so a record at `ts` whose predecessor (same row and column) is at
    `prev_ts` (-1: none) is needed exactly when some point P has prev_ts <= P < ts."""
    if not len(points):
        return np.zeros(len(ts), bool)
    return np.searchsorted(points, ts, side="left") > np.searchsorted(points, prev_ts, side="left")


def gc_floor(state: TableState, ahm: int | None) -> int | None:
    """History at or before this time no read needs at all: the ancient history mark, or the
    oldest tagged version's time when older (whole UNDO files are dropped only below it)."""
    points = retention_points(state)
    if ahm is None or not len(points):
        return ahm
    return min(ahm, int(points[0]))

