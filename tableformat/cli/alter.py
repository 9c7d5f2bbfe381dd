"""The steps of `alter`, from their command-line spelling to `AlterTable` calls.

Steps apply in the order given and commit together or not at all (the caller
holds the `t.alter()` transaction). Each returns a line saying what it did.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tableformat as tf

from ..write.alter import AlterTable
from ..format.errors import InvalidOptionError, PartitionSchemaError, SchemaError
from ..format.metadata import TableState
from ..format.types import COMPRESSIONS, ENCODINGS, parse_type
from .display import show, show_bound
from .values import typed, typed_bound
from .where import tokens


def _unquote(s: str) -> str:
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1].replace(s[0] * 2, s[0])
    return s


def _pair(spec: str, sep: str, what: str) -> tuple[str, str]:
    a, s, b = spec.partition(sep)
    if not s or not a.strip() or not b.strip():
        raise InvalidOptionError(f"{what} {spec!r}: expected A{sep}B")
    return a.strip(), b.strip()


def _add_column_spec(spec: str) -> tuple[str, str, bool, str | None, str | None, str | None]:
    """`name:type[:nullable|not_null][:encoding][:compression][=default]`."""
    left, eq, default = spec.partition("=")
    parts = [p.strip() for p in left.split(":")]
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise SchemaError(f"--add-column {spec!r}: expected NAME:TYPE[:nullable][:ENCODING][:COMPRESSION][=DEFAULT]")
    name, typ, nullable, enc, comp = parts[0], parts[1], False, None, None
    for p in parts[2:]:
        k = p.lower()
        if k in ("nullable", "null"):
            nullable = True
        elif k in ("not_null", "notnull", "not null", "required"):
            nullable = False
        elif k in ENCODINGS or k == "rle":
            enc = k
        elif k in COMPRESSIONS:
            comp = k
        else:
            raise SchemaError(f"--add-column {spec!r}: {p!r} is not nullable, not_null, an encoding "
                              f"({', '.join(ENCODINGS)}) or a compression ({', '.join(COMPRESSIONS)})")
    value = _unquote(default.strip()) if eq else None
    if not nullable and value is None:
        raise SchemaError(f"--add-column {spec!r}: a non-null column needs a default for the rows that "
                          "already exist (NAME:TYPE=DEFAULT), or make it NAME:TYPE:nullable")
    return name, typ, nullable, value, enc, comp


def _split_top(text: str, what: str) -> tuple[str, str]:
    """`lower,upper` split at the one comma outside parentheses and quotes."""
    depth, quote, cuts = 0, "", []
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch in "()":
            depth += 1 if ch == "(" else -1
        elif ch == "," and depth == 0:
            cuts.append(i)
    if len(cuts) != 1:
        raise PartitionSchemaError(f"{what} {text!r}: expected LOWER,UPPER (an empty side is unbounded; "
                                   "use (a,b) for several range columns)")
    return text[:cuts[0]], text[cuts[0] + 1:]


def _range_bound(text: str, rcols: Sequence[tf.Column], what: str) -> Any:
    """A range bound from `value` or `(v1, v2)`; empty, `null` or `unbounded` is None."""
    toks = tokens(text, what, PartitionSchemaError) if text.strip() else []
    if not toks or (len(toks) == 1 and toks[0].word in ("null", "none", "unbounded")):
        return None
    if toks[0].is_p("("):
        if toks[-1].value != ")":
            raise PartitionSchemaError(f"{what} {text!r}: missing ')'")
        toks = toks[1:-1]
    items = [t for t in toks if not t.is_p(",")]
    if any(t.kind not in ("str", "w") for t in items) or len(items) != len(rcols):
        names = ", ".join(c.name for c in rcols)
        raise PartitionSchemaError(f"{what} {text!r}: give one value per range column ({names})")
    return typed_bound(rcols, [t.value for t in items], what)


def apply_steps(a: AlterTable, state: TableState, steps: Sequence[tuple[str, str]]) -> list[str]:
    """Add each (option, text) step to the alter `a` of the table in `state`; what was done, a line each."""
    types = {c.name: c.type for c in state.schema.columns}     # follows the steps, for typing values
    rcols = [state.schema.by_id(i) for i in state.partitioning.range_column_ids]
    done: list[str] = []
    for kind, spec in steps:
        if kind == "add_column":
            name, typ, nullable, value, enc, comp = _add_column_spec(spec)
            ctype = parse_type(typ)
            default = typed(ctype, value, f"--add-column {spec!r}", SchemaError)
            a.add_column(name, ctype.name, nullable=nullable, default=default, encoding=enc, compression=comp or "lz4")
            types[name] = ctype
            done.append(f"add column {name} {ctype.name}{'' if nullable else ' NOT NULL'}"
                        + (f" DEFAULT {show(default)}" if default is not None else ""))
        elif kind == "drop_column":
            a.drop_column(spec)
            types.pop(spec, None)
            done.append(f"drop column {spec}")
        elif kind == "rename_column":
            old, new = _pair(spec, ":", "--rename-column")
            a.rename_column(old, new)
            if old in types:
                types[new] = types.pop(old)
            done.append(f"rename column {old} to {new}")
        elif kind == "rename_table":
            a.rename_table(spec)
            done.append(f"rename table to {spec}")
        elif kind == "set_property":
            k, v = _pair(spec, "=", "--set-property")
            if k == "sequence_column":                # a column name; empty or null unsets it
                name = None if v.lower() in ("", "null", "none") else v
                a.set_property(k, name)
                done.append(f"set property {k} = {name}")
                continue
            try:
                iv = int(v)
            except ValueError:
                raise InvalidOptionError(f"--set-property {k}: {v!r} is not an integer") from None
            a.set_property(k, iv)
            done.append(f"set property {k} = {iv}")
        elif kind == "set_default":
            col, v = _pair(spec, "=", "--set-default")
            if col not in types:
                raise tf.ColumnNotFoundError(f"--set-default: column {col!r} is not in the schema")
            v = _unquote(v)
            value = None if v.lower() == "null" else typed(types[col], v, f"--set-default {col}", SchemaError)
            a.set_default(col, value)
            done.append(f"set default of {col} to {show(value)}")
        elif kind in ("set_encoding", "set_compression"):
            col, v = _pair(spec, "=", "--" + kind.replace("_", "-"))
            getattr(a, kind)(col, v.lower())
            done.append(f"{kind.replace('_', ' ')} of {col} to {v.lower()}")
        elif kind in ("add_range_partition", "drop_range_partition"):
            what = "--" + kind.replace("_", "-")
            lo_text, hi_text = _split_top(spec, what)
            lo, hi = _range_bound(lo_text, rcols, what), _range_bound(hi_text, rcols, what)
            getattr(a, kind)(lo, hi)
            done.append(f"{kind.split('_')[0]} range partition [{show_bound(lo)}, {show_bound(hi)})")
    return done
