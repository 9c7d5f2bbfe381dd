"""Row operations (insert / update / delete / upsert and their _ignore forms) as one batch.

As in a Kudu session, a batch is a list of row operations applied in order.
Planning is whole-column: every distinct key is located once (interval, bloom,
PK index, minus deleted rows), then the operations are applied in rounds, the
r-th round holding the r-th operation on each key, so a key's operations keep
batch order while each round is vectorized. The outcome is:

- new rows, written as new rowsets (a deleted key inserted again lands there);
- per touched rowset, one REDO delta file keyed by rowid holding only the
  changed cells, or DELETE.

With a `sequence_column` (`sequence`, specs/format.md §14) each round also
skips an update or upsert whose sequence is below the key's current one (the
stored row's, or the one an earlier row of the batch set), so the highest
sequence per key wins whatever the batch order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..format.batch import convert_column
from ..log.actions import AddDelta, AddRowSet, AddSkipped
from ..log.requirements import DefinitionUnchanged, KeysAbsent, RowsLive, SequencesCurrent
from ..format.deltafile import DELETE, UPDATE, DeltaFileMeta, write_delta_file
from ..format.errors import (InvalidDataError, KeyColumnUpdateError, KeyNotFoundError, MissingColumnError,
                             NoRangePartitionError, NullValueError, UnknownColumnError)
from ..format.keyencoder import encoded_keys
from ..read.keyprobe import locate_keys
from ..format.metadata import RowSetMeta, TableState
from ..format.parallel import pmap
from ..log.sequence import STALE, ranks, sequence_column, stored_sequences, write_skipped
from ..format.storage import Storage
from ..log.fragment import WriteFragment
from .key_rounds import (INSERT, INSERT_IGNORE, IGNORING, OP_NAMES, UPDATE_IGNORE, UPDATE_OP, UPSERT, KeyRounds,
                         distinct_keys, occurrence_rank)
from .insert import describe_keys, duplicate_error, plan_insert, write_plan


@dataclass
class RowSetDelta:
    """The REDO records one mutation writes for one rowset."""

    rowset: RowSetMeta
    rowids: np.ndarray
    ops: np.ndarray
    key_rows: np.ndarray                         # batch row holding each record's key
    updates: dict[int, np.ndarray]               # column id -> batch row of the new value, -1 = unchanged


@dataclass
class MutationPlan:
    batch: pa.Table                              # the validated input (present columns only)
    new_rows: pa.Table | None                    # full rows to insert as new rowsets
    deltas: list[RowSetDelta]
    counts: dict[str, int] = field(default_factory=dict)
    ignored_rows: np.ndarray | None = None       # batch rows whose operation was skipped (_ignore variants)
    # What the plan read: rowids of every key found live, and every key found absent, by tablet.
    # A concurrent commit that deletes one of the former or inserts one of the latter changes the outcome.
    seen_live: dict[str, np.ndarray] = field(default_factory=dict)
    seen_absent: dict[str, pa.Array] = field(default_factory=dict)
    stale_rows: np.ndarray | None = None         # batch rows skipped for a lower sequence (sequence_column)


def _parse_ops(op_column: pa.Array) -> np.ndarray:
    if pa.types.is_dictionary(op_column.type):
        op_column = op_column.dictionary_decode()
    if not (pa.types.is_string(op_column.type) or pa.types.is_large_string(op_column.type)):
        raise InvalidDataError(f"the op column must hold strings ({', '.join(OP_NAMES)}), got {op_column.type}")
    if op_column.null_count:
        raise InvalidDataError("the op column has NULLs")
    names = pc.utf8_lower(op_column)
    idx = pc.index_in(names, value_set=pa.array(list(OP_NAMES)))
    if idx.null_count:
        bad = names.filter(pc.is_null(idx)).unique().to_pylist()[:5]
        raise InvalidDataError(f"unknown op(s) {bad}; use one of {list(OP_NAMES)}")
    return np.array(list(OP_NAMES.values()), dtype=np.int8)[idx.to_numpy(zero_copy_only=False)]


def validate(state: TableState, t: pa.Table, op: int | None, op_column: str | None,
             update_columns: Sequence[str] | None) -> tuple[pa.Table, np.ndarray, list[str]]:
    """Validate a mutation batch, an Arrow table (the facade converted the input once). Returns
    (batch with present columns, op per row, updated columns)."""
    schema = state.schema
    ops = np.full(t.num_rows, op if op is not None else INSERT, dtype=np.int8)
    if op_column is not None:
        if op_column not in t.column_names:
            raise MissingColumnError(f"apply needs an op column {op_column!r} in the input")
        ops = _parse_ops(t.column(op_column).combine_chunks())
        t = t.drop([op_column])
    names = list(t.column_names)
    unknown = [n for n in names if not schema.has_column(n)]
    if unknown:
        raise UnknownColumnError(f"input has column(s) {unknown} that table {state.name!r} does not have; "
                                 f"columns are {schema.names}")
    missing = [k for k in schema.primary_key if k not in names]
    if missing:
        raise MissingColumnError(f"input lacks primary key column(s) {missing}")
    non_key = [n for n in names if n not in schema.primary_key]
    if update_columns is not None:
        keycols = [c for c in update_columns if c in schema.primary_key]
        if keycols:
            raise KeyColumnUpdateError(f"primary key column(s) {keycols} cannot be updated; delete the row and "
                                       "insert it with the new key")
        bad = [c for c in update_columns if c not in non_key]
        if bad:
            raise UnknownColumnError(f"columns to update {bad} are not in the input")
        non_key = list(update_columns)
    mutating = np.isin(ops, [INSERT, INSERT_IGNORE, UPDATE_OP, UPDATE_IGNORE, UPSERT])
    arrays, fields = [], []
    for n in names:
        col = schema.column(n)
        arr = convert_column(t.column(n), col, check_nulls=False)
        if not col.nullable and arr.null_count:
            if col.name in schema.primary_key:
                raise NullValueError(f"primary key column {n!r} has {arr.null_count} NULL value(s)")
            nulls = pc.is_null(arr).to_numpy(zero_copy_only=False) & mutating
            if nulls.any():
                raise NullValueError(f"column {n!r} is not nullable but {int(nulls.sum())} row(s) set it to NULL")
        arrays.append(arr)
        fields.append(pa.field(n, col.arrow_type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields)), ops, non_key


def plan_mutation(storage: Storage, state: TableState, batch: pa.Table, ops: np.ndarray,
                  update_cols: list[str], sequence: str | None = None) -> MutationPlan:
    """Locate each distinct key once, then run the batch's operations on them round by round."""
    n = batch.num_rows
    if n == 0:
        return MutationPlan(batch, None, [], {})
    keys = encoded_keys(state.schema, batch)
    tablet_ids = state.partitioning.tablet_ids()
    tablet_pos = _tablet_positions(state, batch)
    key_id, uniq, first_row = distinct_keys(keys)
    u_tablet = tablet_pos[first_row]
    loc_rs, loc_rowid, rowsets = locate_keys(storage, state, uniq, u_tablet, tablet_ids)
    keyed = KeyRounds(state, batch, ops, update_cols, tablet_pos, key_id, loc_rs >= 0)
    if sequence is not None:
        # Current sequence per key and incoming per row, as dense ranks on one scale (-1: none).
        stored = stored_sequences(storage, state, sequence, rowsets, loc_rs, loc_rowid)
        keyed.order_by(*ranks(stored, batch.column(sequence).combine_chunks()))
    rank = occurrence_rank(key_id)
    for r in range(int(rank.max()) + 1):
        keyed.run(np.flatnonzero(rank == r))
    keyed.count_keys()

    _raise_first_error(state, batch, np.sort(np.concatenate(keyed.dup_errors)),
                       np.sort(np.concatenate(keyed.missing_errors)))
    new_rows = _new_rows(state, batch, keyed.new_src, keyed.new_col)
    deltas = _deltas(rowsets, loc_rs, loc_rowid, keyed.old_deleted, keyed.upd, first_row, state.schema)
    seen_live = {rowsets[int(i)].id: np.sort(loc_rowid[loc_rs == i]) for i in np.unique(loc_rs[loc_rs >= 0])}
    absent = loc_rs < 0
    seen_absent = {tablet_ids[int(t)]: uniq.filter(pa.array(absent & (u_tablet == t)))
                   for t in np.unique(u_tablet[absent & (u_tablet >= 0)])}
    stale_rows = keyed.stale_rows
    return MutationPlan(batch, new_rows, deltas, keyed.counts, np.concatenate(keyed.ignored_rows), seen_live,
                        seen_absent, np.sort(np.concatenate(stale_rows)) if stale_rows else None)


def _tablet_positions(state: TableState, batch: pa.Table) -> np.ndarray:
    """Each row's tablet (-1: no range partition); such a row only fails if it inserts, so not here."""
    try:
        return state.partitioning.assign(state.schema, batch)[0]
    except NoRangePartitionError:
        return state.partitioning.assign(state.schema, batch, strict=False)[0]


def _raise_first_error(state: TableState, batch: pa.Table, dups: np.ndarray, missing: np.ndarray) -> None:
    """A strict operation failed: raise the error of the first failure in batch order."""
    if not len(dups) and not len(missing):
        return
    if len(dups) and (not len(missing) or dups[0] < missing[0]):
        raise duplicate_error(state, batch, dups, "already exist")
    raise KeyNotFoundError(f"{len(missing)} key(s) not found in table {state.name!r} "
                           f"(first: {describe_keys(state, batch, missing)}); use the _ignore variant or upsert",
                           len(missing))


def _new_rows(state: TableState, batch: pa.Table, new_src: np.ndarray, new_col: dict) -> pa.Table | None:
    keep = np.flatnonzero(new_src >= 0)
    if not len(keep):
        return None
    arrays, fields = [], []
    for col in state.schema.columns:
        if col.name in new_col:
            arr = batch.column(col.name).take(pa.array(new_col[col.name][keep]))
            if not col.nullable and arr.null_count:
                raise NullValueError(f"column {col.name!r} is not nullable but inserted rows have NULLs")
        elif col.default is not None:
            arr = pa.nulls(len(keep), col.arrow_type).fill_null(pa.scalar(col.default, col.arrow_type))
        elif col.nullable:
            arr = pa.nulls(len(keep), col.arrow_type)
        else:
            raise MissingColumnError(f"inserted rows lack column {col.name!r}, which is not nullable and has "
                                     "no default")
        arrays.append(arr)
        fields.append(pa.field(col.name, col.arrow_type, nullable=col.nullable))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _deltas(rowsets, loc_rs, loc_rowid, old_deleted, upd, first_row, schema) -> list[RowSetDelta]:
    touched = old_deleted.copy()
    for src in upd.values():
        touched |= src >= 0
    touched &= loc_rs >= 0
    out = []
    for rs_idx in np.unique(loc_rs[touched]):
        sel = np.flatnonzero(touched & (loc_rs == rs_idx))
        order = np.argsort(loc_rowid[sel], kind="stable")
        sel = sel[order]
        ops = np.where(old_deleted[sel], DELETE, UPDATE).astype(np.int8)
        updates = {schema.column(c).id: np.where(old_deleted[sel], -1, src[sel]) for c, src in upd.items()}
        out.append(RowSetDelta(rowsets[int(rs_idx)], loc_rowid[sel], ops, first_row[sel], updates))
    return out


def write_deltas(storage: Storage, state: TableState, plan: MutationPlan, written: list[str]) -> list[DeltaFileMeta]:
    """One REDO delta file per touched rowset, holding only the changed cells."""
    pk = list(state.schema.primary_key)

    def one(d: RowSetDelta) -> DeltaFileMeta:
        keys = plan.batch.select(pk).take(pa.array(d.key_rows))
        updates = {}
        for cid, src in d.updates.items():
            col = state.schema.by_id(cid)
            idx = pa.array(np.where(src >= 0, src, 0), mask=src < 0)
            updates[cid] = (src >= 0, plan.batch.column(col.name).take(idx))
        meta = write_delta_file(storage, state.schema, d.rowset, d.rowids, d.ops, keys, updates)
        written.append(meta.path)
        return meta
    return pmap(one, plan.deltas)


def write_plan_files(storage: Storage, state: TableState, plan: MutationPlan,
                     written: list[str]) -> tuple[list[RowSetMeta], list[DeltaFileMeta]]:
    """A plan's files: a rowset of the rows (re)inserted, checked already, and its REDO files."""
    ins = plan_insert(storage, state, plan.new_rows, False, check_existing=False) \
        if plan.new_rows is not None else None
    rowsets = write_plan(storage, state, ins, written) if ins is not None else []
    return rowsets, write_deltas(storage, state, plan, written)


def write_mutation(storage: Storage, state: TableState, data: pa.Table, operation: str, op: int | None = None,
                   op_column: str | None = None, columns: Sequence[str] | None = None,
                   on_error: str = "fail", distributed: bool = False) -> WriteFragment:
    """Plan a batch of row operations on `state`, write its REDO deltas and new rowsets, and
    return the fragment to commit (`distributed`: one of a Spark merge's, the matrix's spark_merge).

    on_error="fail" raises for a strict operation that fails (a missing key for update or
    delete, an existing one for insert); "report" skips such rows like their _ignore variant
    and leaves (batch, rows, ops) in `rejected`, with `missing` and `duplicate` counts (the
    Snapshot checked `on_error`)."""
    batch, ops, update_cols = validate(state, data, op, op_column, columns)
    sequence = sequence_column(state)
    if sequence is not None and np.isin(ops, [UPDATE_OP, UPDATE_IGNORE, UPSERT]).any():
        if sequence not in batch.column_names:
            raise MissingColumnError(f"table {state.name!r} orders updates by sequence_column {sequence!r}; "
                                     "the input must carry it")
        if sequence not in update_cols:
            update_cols = [*update_cols, sequence]     # the winner's sequence becomes the row's
    elif sequence is not None and sequence not in batch.column_names:
        sequence = None                                # inserts and deletes only: nothing to order
    lenient = ops
    if on_error == "report":
        lenient = ops.copy()
        for strict, ignoring in IGNORING.items():
            lenient[ops == strict] = ignoring
    plan = plan_mutation(storage, state, batch, lenient, update_cols, sequence)
    stale = plan.stale_rows if plan.stale_rows is not None and len(plan.stale_rows) else None
    counts, rejected, kind = dict(plan.counts), None, "spark_merge" if distributed else "mutation"
    if on_error == "report":
        failed = plan.ignored_rows[np.isin(ops[plan.ignored_rows], list(IGNORING))] \
            if plan.ignored_rows is not None else np.zeros(0, np.int64)
        rejected = (batch, failed, ops)
        counts["duplicate"] = int((ops[failed] == INSERT).sum())
        counts["missing"] = int(len(failed)) - counts["duplicate"]
    reqs = [DefinitionUnchanged(), RowsLive(plan.seen_live), KeysAbsent(plan.seen_absent)]
    if sequence is not None:
        reqs.append(SequencesCurrent(plan.seen_live, state.schema.column(sequence).id))
    if plan.new_rows is None and not plan.deltas and stale is None:
        # nothing to write; what it read still holds beside other fragments of one commit (§10.3)
        return WriteFragment(operation, state.version, counts=counts, requirements=reqs, rejected=rejected,
                             table_id=state.table_id, kind=kind)
    written: list[str] = []
    try:
        rowsets, deltas = write_plan_files(storage, state, plan, written)
        skipped = []
        if stale is not None:
            ref = write_skipped(storage, batch, stale, STALE)
            written.append(ref.path)
            skipped = [AddSkipped(ref, len(stale), STALE)]
    except BaseException:
        storage.delete_quietly(written)
        raise
    return WriteFragment(operation, state.version, [AddRowSet(r) for r in rowsets] + [AddDelta(d) for d in deltas]
                         + skipped, written, counts, reqs, rejected=rejected, table_id=state.table_id, kind=kind)
