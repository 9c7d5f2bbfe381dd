"""The change feed's rows as users see them (specs/format.md §9.2): the `_op` codes and labels,
the output schema, `_changed_columns`, the net collapse to one change per key, and the rows a
`sequence_column` skipped (§14). `changes` gathers the records from the log and files.
"""
from __future__ import annotations

from enum import IntEnum
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .actions import Commit
from ..format.errors import SchemaError
from ..format.schema import Column, Schema
from ..format.storage import Storage


TS_TYPE = pa.timestamp("us", tz="UTC")


class ChangeOp(IntEnum):
    """The `_op` of a change row; its name, lower-cased, is the label users see."""

    INSERT = 0
    DELETE = 1
    UPDATE = 2


# A change's place in its commit (specs/format.md §9.2): 0 for a change to a row the commit found
# (update, delete), 1 for a row it inserted. A commit changes a key at most once in each place (a
# delete and a re-insert, §10.3), so (version, _commit_order) orders a key's changes.
COMMIT_ORDER = "_commit_order"
FOUND, INSERTED = 0, 1


def output_schema(cols: list[Column], before_image: bool, skipped: bool) -> pa.Schema:
    """The change rows' fields (§9.2); a data column named as one of the feed's own fields is a
    SchemaError (the rows could not tell them apart)."""
    fields = [pa.field("_op", pa.string()), pa.field("_version", pa.int64()), pa.field("_timestamp", TS_TYPE)] + \
        [pa.field(c.name, c.arrow_type) for c in cols] + [pa.field("_changed_columns", pa.list_(pa.string())),
                                                          pa.field(COMMIT_ORDER, pa.int64())] + \
        ([pa.field("_before_" + c.name, c.arrow_type) for c in cols] if before_image else []) + \
        ([pa.field("_reason", pa.string())] if skipped else [])
    check_feed_names([f.name for f in fields])
    return pa.schema(fields)


def check_feed_names(fields: Sequence[str], what: str = "change feed") -> None:
    """A change feed whose data columns share a name with its own fields (`_op`, `_version`,
    `_commit_order`, `_before_<column>`, ...) is refused: a typed error naming them, never two
    fields of one name."""
    seen, clash = set(), set()
    for n in fields:
        (clash if n in seen else seen).add(n)
    if clash:
        raise SchemaError(
            f"the table's column(s) {sorted(clash)} have the names of the {what}'s own fields: its change rows "
            "could not tell them apart. Rename them (Table.alter().rename_column) to read its changes")


# `_op` labels, indexed by the ChangeOp codes of the finished table
_LABELS = np.array([op.name.lower() for op in ChangeOp], dtype=object)


def finish(t: pa.Table | None, changed: np.ndarray, cols: list[Column], key_names: list[str], net: bool,
           before_image: bool, ts_type: pa.DataType) -> pa.Table:
    """Label ops, build `_changed_columns`, and collapse to one net change per key if asked."""
    names = [c.name for c in cols]
    schema = output_schema(cols, before_image, False)
    if t is None or t.num_rows == 0:
        return schema.empty_table()
    op = t.column("_op").to_numpy()
    if net:
        t, op, changed = _net(t, op, changed, cols, key_names, before_image)
        if t.num_rows == 0:
            return schema.empty_table()
    non_key = np.array([c.name not in key_names for c in cols])
    lists = _changed_lists(changed & non_key[None, :], names, op == ChangeOp.UPDATE)
    arrays = [pa.array(_LABELS[op]), t.column("_version"), t.column("_timestamp").cast(pa.int64()).cast(ts_type)]
    arrays += [t.column(n) for n in names] + [lists, t.column(COMMIT_ORDER)]
    if before_image:
        arrays += [t.column("_before_" + n) for n in names]
    return pa.Table.from_arrays(arrays, schema=schema)


def _changed_lists(changed: np.ndarray, names: list[str], is_update: np.ndarray) -> pa.Array:
    counts = changed.sum(axis=1)
    offsets = np.zeros(len(changed) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    flat = np.nonzero(changed)[1]
    values = pa.array(np.array(names, dtype=object)[flat] if len(flat) else [], pa.string())
    arr = pa.ListArray.from_arrays(pa.array(offsets), values)
    return pc.if_else(pa.array(is_update), arr, pa.nulls(len(changed), pa.list_(pa.string())))


def _net(t, op, changed, cols, key_names, before_image):
    """One change per key: insert..delete vanishes, update+update is one update, delete..insert an update."""
    keys = t.select(key_names)
    idx = pc.sort_indices(pa.table({**{k: keys.column(k) for k in key_names},
                                    "_pos": pa.array(np.arange(t.num_rows))}),
                          sort_keys=[(k, "ascending") for k in key_names] + [("_pos", "ascending")]).to_numpy()
    ks = keys.take(pa.array(idx))
    same = np.ones(len(idx), dtype=bool)
    same[0] = False
    for k in key_names:
        col = ks.column(k).combine_chunks()
        if len(idx) > 1:
            same[1:] &= pc.equal(col.slice(1), col.slice(0, len(col) - 1)).to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(~same)
    ends = np.r_[starts[1:], len(idx)] - 1
    first, last = idx[starts], idx[ends]
    f_op, l_op = op[first], op[last]
    any_changed = np.logical_or.reduceat(changed[idx], starts, axis=0)
    # insert ... delete -> nothing; insert ... -> insert; ... delete -> delete;
    # delete ... (re)insert/update -> update of every column; update ... update -> update
    keep = ~((f_op == ChangeOp.INSERT) & (l_op == ChangeOp.DELETE))
    new_op = np.where(f_op == ChangeOp.INSERT, ChangeOp.INSERT,
                      np.where(l_op == ChangeOp.DELETE, ChangeOp.DELETE, ChangeOp.UPDATE)).astype(np.int8)
    reinsert = (f_op == ChangeOp.DELETE) & (l_op != ChangeOp.DELETE)
    any_changed[reinsert] = True
    rows = last[keep]
    out = t.take(pa.array(rows))
    if before_image:
        fb = t.take(pa.array(first[keep]))
        for c in cols:
            out = out.set_column(out.schema.get_field_index("_before_" + c.name), "_before_" + c.name,
                                 fb.column("_before_" + c.name))
    perm = np.argsort(rows, kind="stable")   # back to commit order of each key's last change
    return out.take(pa.array(perm)), new_op[keep][perm], any_changed[keep][perm]


def skipped_files(commits: Sequence[Commit], start: Schema) -> tuple:
    """(version, timestamp, schema as of the commit, skipped file) of each `skipped` action, in
    commit order: plain, picklable data for the part that reads them."""
    from .actions import AddSkipped, AlterDefinition
    out = []
    schema = start                                     # the schema as of each commit
    for c in commits:
        for a in c.of(AlterDefinition):
            schema = a.schema
        for a in c.of(AddSkipped):
            out.append((c.version, c.timestamp, schema, a.file))
    return tuple(out)


def with_skipped(out: pa.Table, storage: Storage, skipped: Sequence[tuple], end: Schema) -> pa.Table:
    """The changes plus the rows the commits skipped (`skipped` actions, §14; `skipped_files`):
    `_op` "skipped", the input's values (null for a column the input lacked) and a `_reason`,
    in commit order.

    A skipped file names its columns as the schema of its commit did; they are matched to the
    output's (the `end` schema's) by column ID, as every reader matches columns, so a column
    dropped and added again under the same name since is the new column, NULL in the old rows."""
    from .sequence import read_skipped
    reason = pa.field("_reason", pa.string())
    parts = [out.append_column(reason, pa.nulls(out.num_rows, pa.string()))]
    for version, ts, schema, file in skipped:
        t = read_skipped(storage, file)
        n = t.num_rows
        arrays = []
        for f in out.schema:
            src = None                             # the file's column holding this output column
            if end.has_column(f.name):
                cid = end.column(f.name).id
                src = next((x.name for x in schema.columns if x.id == cid), None)
            if f.name == "_op":
                arrays.append(pa.array(["skipped"] * n, pa.string()))
            elif f.name == "_version":
                arrays.append(pa.array(np.full(n, version, np.int64)))
            elif f.name == "_timestamp":
                arrays.append(pa.array(np.full(n, ts, np.int64)).cast(f.type))
            elif src is not None and src in t.column_names:
                arrays.append(t.column(src).cast(f.type))
            else:
                arrays.append(pa.nulls(n, f.type))
        arrays.append(t.column("_reason"))
        parts.append(pa.Table.from_arrays(arrays, schema=parts[0].schema))
    t = pa.concat_tables(parts)
    return t.take(pc.sort_indices(pa.table({"v": t.column("_version"), "i": pa.array(np.arange(t.num_rows))}),
                                  sort_keys=[("v", "ascending"), ("i", "ascending")]))
