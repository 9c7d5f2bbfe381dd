"""Single values, sizes and small aligned grids as text for people (describe, history, alter).

Row data never goes through here: `celltext.py` converts whole columns.
"""
from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import Any

EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def size(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def iso(micros: int) -> str:
    """ISO-8601 UTC, with microseconds only when there are some."""
    d = EPOCH + _dt.timedelta(microseconds=int(micros))
    s = d.strftime("%Y-%m-%dT%H:%M:%S")
    return s + (f".{d.microsecond:06d}Z" if d.microsecond else "Z")


def show(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, _dt.datetime):
        return iso((v - EPOCH) // _dt.timedelta(microseconds=1))
    if isinstance(v, _dt.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return "0x" + bytes(v).hex()
    if isinstance(v, str):
        return repr(v)
    return str(v)


def show_bound(v: Any) -> str:
    """A range bound or key: `unbounded`, one value, or a tuple of them."""
    if v is None:
        return "unbounded"
    return "(" + ", ".join(map(show, v)) + ")" if isinstance(v, tuple) else show(v)


def grid(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "") -> str:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells):
        return (indent + "  ".join(c.ljust(w) for c, w in zip(cells, widths))).rstrip()
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def fitted_grid(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> str:
    """`grid` with as many leading columns as fit in `width` characters (at least one); a last line
    names the columns left out."""
    keep, used = 0, 0
    for i, h in enumerate(headers):
        w = max([len(h)] + [len(r[i]) for r in rows]) + (2 if i else 0)
        if keep and used + w > width:
            break
        keep, used = keep + 1, used + w
    text = grid(headers[:keep], [r[:keep] for r in rows])
    if keep < len(headers):
        text += (f"\n({len(headers) - keep} more column(s) not shown to fit {width} characters: "
                 f"{', '.join(h.lower() for h in headers[keep:])}; --format csv or json shows every column)")
    return text
