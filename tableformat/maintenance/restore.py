"""Restore: one commit making the current rows equal to the rows of an earlier version
(Delta's RESTORE, Iceberg's rollback), written as ordinary row operations.

Only the keys that changed since that version are touched (the net changes, or
every key when the change history no longer reaches back that far): a key
inserted since is deleted (a REDO DELETE), a key deleted since is inserted again
(a new rowset), and a key updated since gets a REDO record holding only the
cells that differ. Nothing is rewritten, so every version in between still
reads back, and `changes()` reports the restore as inserts, updates and deletes.
See specs/format.md §9 and §10.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..log.actions import AddDelta, AddRowSet
from ..log import mvcc
from ..log.changes import changes
from ..log.requirements import DataUnchanged, DefinitionUnchanged, KeysAbsent, RowsLive
from ..format.errors import InvalidOptionError, RestoreError
from ..log.fragment import WriteFragment
from ..log.handle import TableHandle
from ..read.lookup import lookup
from ..format.metadata import TableState
from ..write.key_rounds import DELETE_OP, INSERT, OP_NAMES, UPDATE_OP, RowOp
from ..write.row_ops import plan_mutation, validate, write_plan_files
from ..format.storage import Storage

_OP = "__restore_op"
_NAME_OF = {op: name for name, op in OP_NAMES.items()}


def check_restorable(target: TableState, latest: TableState) -> None:
    """Refuse a restore across a schema or partitioning change: the rows of then do not fit now."""
    if target.schema.to_json() != latest.schema.to_json() or \
            target.partitioning.to_json(target.schema) != latest.partitioning.to_json(latest.schema):
        raise RestoreError(
            f"cannot restore table {latest.name!r} to version {target.version}: its schema or partitioning "
            f"changed since (ALTER TABLE); a restore only writes rows, so the definition must be the same. "
            "Read the old version with as_of and write what you need instead")


def _same(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Cell-wise equality, NULL equal to NULL and NaN equal to NaN."""
    same = pc.fill_null(pc.equal(a, b), False)
    same = pc.or_(same, pc.and_(pc.is_null(a), pc.is_null(b)))
    if pa.types.is_floating(a.type):
        same = pc.or_(same, pc.and_(pc.fill_null(pc.is_nan(a), False), pc.fill_null(pc.is_nan(b), False)))
    return same.to_numpy(zero_copy_only=False)


def write_restore(storage: Storage, latest: TableState, target: TableState, keys: pa.Table) -> WriteFragment:
    """The fragment turning `latest` into `target` for `keys` (the keys that may differ)."""
    check_restorable(target, latest)
    schema = latest.schema
    pk = list(schema.primary_key)
    empty = WriteFragment("RESTORE", latest.version, counts={"inserted": 0, "updated": 0, "deleted": 0},
                          table_id=latest.table_id, kind="restore")
    if keys.num_rows == 0:
        return empty
    then = lookup(storage, target, keys, None, "null")
    now = lookup(storage, latest, keys, None, "null")
    then_found = then.column("_found").to_numpy(zero_copy_only=False)
    now_found = now.column("_found").to_numpy(zero_copy_only=False)
    non_key = [c for c in schema.columns if c.name not in pk]
    both = then_found & now_found
    differ = {c.id: both & ~_same(then.column(c.name).combine_chunks(), now.column(c.name).combine_chunks())
              for c in non_key}
    updated = np.zeros(len(both), bool)
    for d in differ.values():
        updated |= d
    ops = np.full(len(both), -1, np.int8)
    ops[now_found & ~then_found] = DELETE_OP
    ops[then_found & ~now_found] = INSERT
    ops[updated] = UPDATE_OP
    rows = np.flatnonzero(ops >= 0)
    if not len(rows):
        return empty
    names = np.array([_NAME_OF.get(op, "") for op in RowOp], dtype=object)   # indexed by RowOp value
    data = then.drop(["_found"]).take(pa.array(rows)).append_column(_OP, pa.array(names[ops[rows]], pa.string()))
    batch, row_ops, update_cols = validate(latest, data, None, _OP, None)
    plan = plan_mutation(storage, latest, batch, row_ops, update_cols)
    # an update record sets only the cells that differ from now
    for d in plan.deltas:
        for cid, src in d.updates.items():
            keep = src >= 0
            keep[keep] = differ[cid][rows[src[keep]]]
            d.updates[cid] = np.where(keep, src, -1)
    written: list[str] = []
    try:
        rowsets, deltas = write_plan_files(storage, latest, plan, written)
    except BaseException:
        storage.delete_quietly(written)
        raise
    # any data change since the plan may undo part of it: plan again (a compaction that keeps
    # rowids rebases; a merge that rewrote a touched rowset restarts through RowsLive)
    return WriteFragment("RESTORE", latest.version, [AddRowSet(r) for r in rowsets] + [AddDelta(d) for d in deltas],
                         written, {k: plan.counts.get(k, 0) for k in ("inserted", "updated", "deleted")},
                         [DefinitionUnchanged(), DataUnchanged(), RowsLive(plan.seen_live),
                          KeysAbsent(plan.seen_absent)], table_id=latest.table_id, kind="restore")


def plan_restore(handle: TableHandle, as_of):
    """The plan of a restore to `as_of` (a version, timestamp or tag): on each snapshot, the keys
    changed since the target (all keys when the change history starts later) set back."""
    if mvcc.parse_as_of(as_of, tags=True) is None:
        raise InvalidOptionError("restore needs as_of: a version, a tf.Timestamp, a datetime, an ISO string "
                                 "or a tag name")
    target = handle.state_at(as_of)
    check_restorable(target, handle.state)

    def plan(latest: TableState) -> WriteFragment:
        check_restorable(target, latest)
        if target.version >= latest.history_horizon:
            ch = changes(handle, target.version, latest.version, mode="net", images="changed")
        else:
            ch = None                        # the change history starts later: compare every key
        return write_restore(handle.storage, latest, target, restore_keys(handle.storage, target, latest, ch))
    return plan


def restore_keys(storage: Storage, target: TableState, latest: TableState, changed: pa.Table | None) -> pa.Table:
    """The keys a restore must look at: those the net changes name, or (no change history that far
    back) every key of either version."""
    pk = list(latest.schema.primary_key)
    if changed is not None:
        keys = changed.select(pk)
    else:
        from ..read.scan import Scanner
        keys = pa.concat_tables([Scanner(storage, target, pk).to_arrow(), Scanner(storage, latest, pk).to_arrow()])
    if keys.num_rows == 0:
        return keys
    return keys.group_by(pk, use_threads=False).aggregate([])
