"""The --where language: `host = 'h1' and value >= 3.5` to the scan API's filter tuples.

A --where expression is `column OP value` with OP one of = != < <= > >=,
`column in (v1, v2, ...)`, `column is null` or `column is not null`; several
--where options (or terms joined by `and`) are ANDed. Values may be quoted
('it''s', "x"); they are converted to the column's type (`values.py`), and a
column name with spaces or symbols is written `like this`. The same tokens
spell range bounds in `alter`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import tableformat as tf

from ..format.errors import InvalidFilterError, UnknownScanColumnError
from .values import typed

_TOKEN = re.compile(r"""\s*(?:
      (?P<q>'(?:[^']|'')*')
    | (?P<dq>"(?:[^"]|"")*")
    | (?P<bq>`[^`]*`)
    | (?P<op>[=<>!]+)
    | (?P<p>[(),])
    | (?P<w>[^\s(),'"`=<>!]+)
    )""", re.VERBOSE)


OPERATORS = ("=", "==", "!=", "<>", "<", "<=", ">", ">=")


@dataclass(frozen=True)
class Tok:
    kind: str        # "str" (quoted), "name" (backquoted), "op", "p" (punctuation), "w" (bare word)
    value: str
    quoted: str = ""

    @property
    def word(self) -> str:
        return self.value.lower() if self.kind == "w" else ""

    def is_p(self, ch: str) -> bool:
        return self.kind == "p" and self.value == ch


def tokens(text: str, what: str, error: type = InvalidFilterError) -> list[Tok]:
    out, pos, s = [], 0, text.rstrip()
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if m is None:
            raise error(f"{what} {text!r}: cannot parse at position {pos} ({s[pos:pos + 12]!r}); is a quote missing?")
        kind = m.lastgroup
        raw = m.group(kind)
        if kind == "q":
            out.append(Tok("str", raw[1:-1].replace("''", "'"), "'"))
        elif kind == "dq":
            out.append(Tok("str", raw[1:-1].replace('""', '"'), '"'))
        elif kind == "bq":
            out.append(Tok("name", raw[1:-1]))
        else:
            out.append(Tok(kind, raw))
        pos = m.end()
    return out


def parse_where(text: str, schema: tf.Schema) -> list[tuple]:
    """`host = 'h1' and value >= 3.5` -> [("host", "=", "h1"), ("value", ">=", 3.5)], typed by the schema."""
    terms: list[list[Tok]] = [[]]
    for t in tokens(text, "--where"):
        if t.word == "and":
            terms.append([])
        elif t.word == "or":
            raise InvalidFilterError(f"--where {text!r}: OR is not supported; conditions are ANDed")
        else:
            terms[-1].append(t)
    return [_term(text, toks, schema) for toks in terms]


def _term(text: str, toks: list[Tok], schema: tf.Schema) -> tuple:
    def bad(msg: str) -> InvalidFilterError:
        return InvalidFilterError(f"--where {text!r}: {msg}")
    if not toks:
        raise bad("a condition is empty")
    head = toks[0]
    if head.kind not in ("w", "name") and not (head.kind == "str" and head.quoted == '"'):
        raise bad(f"expected a column name, found {head.value!r}")
    name = head.value
    if not schema.has_column(name):
        raise UnknownScanColumnError(f"--where {text!r}: unknown column {name!r}; columns are {schema.names}")
    ctype = schema.column(name).type

    def value(t: Tok) -> Any:
        if t.kind not in ("str", "w"):
            raise bad(f"expected a value, found {t.value!r}")
        if t.word == "null":
            raise bad(f"comparing with null is never true; use '{name} is null'")
        return typed(ctype, t.value, f"--where {text!r}: column {name!r}", InvalidFilterError)

    rest = toks[1:]
    words = [t.word for t in rest]
    ops = [t.value for t in rest if t.kind == "op" and t.value not in OPERATORS]
    if ops:
        raise bad(f"unknown operator {ops[0]!r}; operators are {' '.join(OPERATORS)}, in, is null, is not null")
    if rest and rest[0].kind == "op":
        if len(rest) < 2:
            raise bad(f"expected a value after {rest[0].value!r}")
        if len(rest) > 2:
            raise bad(f"unexpected {rest[2].value!r} after the value; join conditions with 'and'")
        return (name, rest[0].value, value(rest[1]))
    if words == ["is", "null"]:
        return (name, "is null")
    if words == ["is", "not", "null"]:
        return (name, "is not null")
    if words[:1] == ["in"]:
        inner = rest[1:]
        if len(inner) < 2 or not inner[0].is_p("(") or inner[-1].value != ")":
            raise bad("expected a parenthesised list after 'in', like x in (1, 2)")
        items = inner[1:-1]
        vals = [value(t) for t in items[0::2]]
        if not all(t.is_p(",") for t in items[1::2]) or (items and len(items) % 2 == 0):
            raise bad("the values of 'in' are separated by commas")
        return (name, "in", vals)
    if words[:2] == ["not", "in"]:
        raise bad("NOT IN is not supported")
    found = rest[0].value if rest else "the end"
    raise bad(f"expected an operator (= != < <= > >= in, is null, is not null) after {name!r}, found {found!r}")
