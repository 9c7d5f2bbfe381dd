"""Schema changes and range-partition management, committed together atomically.

Follows specs/design/schema-change.md (and specs/format.md §11): columns are identified by internal
IDs that are never reused, so dropping a column and adding one of the same
name makes a new column whose reads never see the old data. A new column's
read default (or NULL) fills rows written before it existed.

    with table.alter() as a:
        a.add_column("col_c", "int32", nullable=False, default=999)
        a.drop_column("col_b")
        a.rename_column("host", "hostname")

See `specs/format.md`, section "Schema changes".
"""
from __future__ import annotations

import datetime as _dt

from dataclasses import replace
from typing import Any, Callable

from ..format import arguments as arg
from types import MappingProxyType

from ..format.errors import PartitionSchemaError, SchemaError, SequenceColumnError
from ..format.partition import RangeBound, encode_bound
from ..format.schema import MAX_COLUMNS, Column, Schema, validate_identifier
from ..log.actions import Action, AlterDefinition, RemoveRowSet
from ..log.requirements import DefinitionUnchanged, NoRowsInTablets
from ..log.fragment import WriteFragment
from ..format.metadata import TableState
from ..log.sequence import PROPERTY as SEQUENCE, check_sequence_column


class AlterTable:
    """Collects schema and partition changes; `commit()` (or leaving the `with`) applies them in one commit."""

    def __init__(self, commit: Callable[["AlterTable"], Any]):
        self._commit = commit              # Table.alter's: runs write_alter on a snapshot and commits
        self._steps: list[tuple[str, Callable[[TableState], TableState]]] = []
        self.result = None

    # --- columns ----------------------------------------------------------------------
    def add_column(self, name: str, type: str, nullable: bool = True, default: Any = None,
                   encoding: str | None = None, compression: str = "lz4") -> "AlterTable":
        """Add a column: nullable, or non-null with a default (which older rows read)."""
        col = Column(name, type, nullable, default, encoding, compression, read_default=default)
        if not nullable and default is None:
            raise SchemaError(f"a non-null column {name!r} needs a default for the rows that already exist")

        def step(st: TableState) -> TableState:
            s = st.schema
            if s.has_column(col.name):
                raise SchemaError(f"column {col.name!r} already exists")
            if len(s.columns) + 1 > MAX_COLUMNS:
                raise SchemaError(f"a table has at most {MAX_COLUMNS} columns")
            return replace(st, schema=Schema([*s.columns, col], s.primary_key, s.next_column_id))
        self._steps.append((f"add column {name}", step))
        return self

    def drop_column(self, name: str) -> "AlterTable":
        arg.string(name, "drop_column: name", error=SchemaError)
        def step(st: TableState) -> TableState:
            s = st.schema
            _require(s, name)
            if name in s.primary_key:
                raise SchemaError(f"column {name!r} is in the primary key and cannot be dropped")
            if st.properties.get(SEQUENCE) == name:
                raise SequenceColumnError(f"column {name!r} is the table's sequence_column; unset it first "
                                          "(set_property('sequence_column', None))")
            return replace(st, schema=Schema([c for c in s.columns if c.name != name], s.primary_key,
                                             s.next_column_id))
        self._steps.append((f"drop column {name}", step))
        return self

    def rename_column(self, old: str, new: str) -> "AlterTable":
        arg.string(old, "rename_column: old", error=SchemaError)
        new = validate_identifier(new)

        def step(st: TableState) -> TableState:
            s = st.schema
            _require(s, old)
            if s.has_column(new) and new != old:
                raise SchemaError(f"column {new!r} already exists")
            cols = [replace(c, name=new) if c.name == old else c for c in s.columns]
            pk = [new if k == old else k for k in s.primary_key]
            if st.properties.get(SEQUENCE) == old:     # the property follows its column
                st = replace(st, properties=MappingProxyType({**st.properties, SEQUENCE: new}))
            return replace(st, schema=Schema(cols, pk, s.next_column_id))
        self._steps.append((f"rename column {old} to {new}", step))
        return self

    def set_default(self, name: str, default: Any) -> "AlterTable":
        """Change the write default: rows inserted from now on without the column get it."""
        return self._change(name, f"set default of {name}", default=default)

    def set_encoding(self, name: str, encoding: str) -> "AlterTable":
        """Applies to files written from now on."""
        return self._change(name, f"set encoding of {name}", encoding=encoding)

    def set_compression(self, name: str, compression: str) -> "AlterTable":
        """Applies to files written from now on."""
        return self._change(name, f"set compression of {name}", compression=compression)

    def _change(self, name: str, what: str, **changes) -> "AlterTable":
        arg.string(name, f"{what.split(' of ')[0]}: name", error=SchemaError)
        for k in ("encoding", "compression"):
            if k in changes:
                arg.string(changes[k], f"{what}: {k}", none=True, error=SchemaError)
        def step(st: TableState) -> TableState:
            s = st.schema
            c = _require(s, name)
            nc = Column(c.name, c.type, c.nullable, changes.get("default", c.default),
                        changes.get("encoding", c.encoding), changes.get("compression", c.compression),
                        c.id, c.read_default)
            if not nc.nullable and nc.default is None and "default" in changes:
                raise SchemaError(f"column {name!r} is not nullable: its default cannot be removed")
            return replace(st, schema=Schema([nc if x.name == name else x for x in s.columns], s.primary_key,
                                             s.next_column_id))
        self._steps.append((what, step))
        return self

    # --- rejected changes ---------------------------------------------------------------
    def change_type(self, name: str, type: str) -> "AlterTable":
        raise SchemaError(f"cannot change the type of column {name!r}: type changes are not supported "
                          "(add a new column and copy the data)")

    def set_primary_key(self, columns) -> "AlterTable":
        raise SchemaError("the set of primary key columns cannot change")

    def set_partitioning(self, partitioning) -> "AlterTable":
        raise PartitionSchemaError("partitioning cannot change except by adding or dropping range partitions")

    # --- table ----------------------------------------------------------------------------
    def rename_table(self, name: str) -> "AlterTable":
        """Rename the table (its metadata; the path does not change)."""
        name = validate_identifier(name, "table")
        self._steps.append((f"rename table to {name}", lambda st: replace(st, name=name)))
        return self

    def set_property(self, name: str, value: int | str | None) -> "AlterTable":
        """Change a table property (e.g. history_max_age, rowset_target_bytes; sequence_column, a
        column name, or None to unset it)."""
        from ..format.metadata import validate_properties
        from types import MappingProxyType
        arg.string(name, "set_property: name")
        validate_properties({name: value})     # fail now, not at commit

        def step(st: TableState) -> TableState:
            return replace(st, properties=MappingProxyType(validate_properties({name: value}, st.properties)))
        self._steps.append((f"set {name} = {value}", step))
        return self

    # --- range partitions -----------------------------------------------------------------
    def add_range_partition(self, lower: Any, upper: Any) -> "AlterTable":
        """Add [lower, upper) over the range columns (None = unbounded); it may not overlap another."""
        def step(st: TableState) -> TableState:
            p = st.partitioning
            lo, lov = _encode_bound(st, lower, "lower bound")
            hi, hiv = _encode_bound(st, upper, "upper bound")
            if lo is not None and hi is not None and lo >= hi:
                raise PartitionSchemaError("range partition: lower must be below upper")
            new = RangeBound(p.next_range_id, lo, hi, lov, hiv)
            for r in p.ranges:
                if r.overlaps(lo, hi) and new.overlaps(r.lower, r.upper):
                    rcols = [st.schema.by_id(i) for i in p.range_column_ids]
                    raise PartitionSchemaError(
                        f"range partition {_shown(rcols, lov, hiv)} overlaps the existing range partition "
                        f"{_shown(rcols, r.lower_values, r.upper_values)} (an open end reaches to -inf/+inf; "
                        "drop or narrow that one first)")
            ranges = sorted([*p.ranges, new], key=lambda r: (r.lower is not None, r.lower or b""))
            return replace(st, partitioning=replace(p, ranges=tuple(ranges), next_range_id=p.next_range_id + 1))
        self._steps.append((f"add range partition [{lower}, {upper})", step))
        return self

    def drop_range_partition(self, lower: Any, upper: Any) -> "AlterTable":
        """Drop the range partition [lower, upper) exactly; its tablets' rows leave the snapshot."""
        def step(st: TableState) -> TableState:
            p = st.partitioning
            lo, _ = _encode_bound(st, lower, "lower bound")
            hi, _ = _encode_bound(st, upper, "upper bound")
            keep = [r for r in p.ranges if not (r.lower == lo and r.upper == hi)]
            if len(keep) == len(p.ranges):
                raise PartitionSchemaError(f"there is no range partition [{lower}, {upper})")
            return replace(st, partitioning=replace(p, ranges=tuple(keep)))
        self._steps.append((f"drop range partition [{lower}, {upper})", step))
        return self

    # --- commit ---------------------------------------------------------------------------
    def apply(self, state: TableState) -> TableState:
        for _what, step in self._steps:
            state = step(state)
        return state

    def commit(self):
        self.result = self._commit(self)
        return self.result

    def __enter__(self) -> "AlterTable":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.commit()
        return False

    def __repr__(self) -> str:
        return "AlterTable(" + "; ".join(w for w, _ in self._steps) + ")"


def _require(schema: Schema, name: str) -> Column:
    from ..format.errors import ColumnNotFoundError
    if not schema.has_column(name):
        raise ColumnNotFoundError(f"column {name!r} is not in the schema; columns are {schema.names}")
    return schema.column(name)


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def _iso(d: _dt.datetime) -> str:
    return d.isoformat().replace("+00:00", "Z")


def _shown(rcols: list, lower: tuple | None, upper: tuple | None) -> str:
    """A range as typed values, e.g. [2024-01-01T00:00:00Z, +inf): times in ISO, open ends as -inf/+inf."""
    def one(vals, open_end):
        if vals is None:
            return open_end
        txt = [_iso(_EPOCH + _dt.timedelta(microseconds=v)) if c.type.kind == "unixtime_micros" and isinstance(v, int)
               else _iso(v) if isinstance(v, _dt.datetime) else repr(v) for c, v in zip(rcols, vals)]
        return txt[0] if len(txt) == 1 else "(" + ", ".join(txt) + ")"
    return f"[{one(lower, '-inf')}, {one(upper, '+inf')})"


def _encode_bound(st: TableState, v: Any, what: str):
    return encode_bound([st.schema.by_id(i) for i in st.partitioning.range_column_ids], v, what)


def alter_actions(before: TableState, after: TableState) -> list[Action]:
    """The log actions of an alter: the new definition, and removal of rowsets in dropped tablets."""
    live = set(after.partitioning.tablet_ids())
    return [AlterDefinition(after.name, after.schema, after.partitioning, dict(after.properties))] + \
        [RemoveRowSet(r.id) for r in before.rowsets.values() if r.tablet not in live]


def write_alter(state: TableState, alter: "AlterTable") -> WriteFragment:
    """The fragment of an alter planned on `state`: it restarts (re-applying its steps) if the
    definition changed meanwhile or rows landed in a tablet it drops."""
    new = alter.apply(state)
    check_sequence_column(new.schema, new.properties)
    actions = alter_actions(state, new)
    gone = tuple(sorted(set(state.partitioning.tablet_ids()) - set(new.partitioning.tablet_ids())))
    return WriteFragment("ALTER TABLE", state.version, actions, [],
                         {"rowsets_dropped": sum(isinstance(a, RemoveRowSet) for a in actions)},
                         [DefinitionUnchanged(), NoRowsInTablets(gone)],
                         data_change=False, table_id=state.table_id, kind="alter")
