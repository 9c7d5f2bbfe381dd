"""A batch's row operations run on its distinct keys, one round at a time (`row_ops`): the r-th
round holds the r-th operation on each key, so a key's operations keep batch order while each
round is a whole-column update. Counts, errors, ignored and stale rows (a `sequence_column`,
specs/format.md §14) are gathered as the rounds run; `row_ops` turns them into files.
"""
from __future__ import annotations

from enum import IntEnum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..format.errors import NoRangePartitionError
from ..format.metadata import TableState
from .insert import describe_keys


class RowOp(IntEnum):
    """The operation of one row of a batch, as in a Kudu session."""

    INSERT = 0
    INSERT_IGNORE = 1
    UPDATE = 2
    UPDATE_IGNORE = 3
    DELETE = 4
    DELETE_IGNORE = 5
    UPSERT = 6


INSERT, INSERT_IGNORE, UPDATE_OP, UPDATE_IGNORE, DELETE_OP, DELETE_IGNORE, UPSERT = RowOp
IGNORING = {INSERT: INSERT_IGNORE, UPDATE_OP: UPDATE_IGNORE, DELETE_OP: DELETE_IGNORE}
OP_NAMES = {"insert": INSERT, "insert_ignore": INSERT_IGNORE, "update": UPDATE_OP, "update_ignore": UPDATE_IGNORE,
            "delete": DELETE_OP, "delete_ignore": DELETE_IGNORE, "upsert": UPSERT}


def distinct_keys(keys: pa.Array) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """Distinct keys in first-occurrence order: (key_id per row, the keys, first row of each)."""
    enc = pc.dictionary_encode(keys)
    key_id = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    n = len(keys)
    first_row = np.full(len(enc.dictionary), n, dtype=np.int64)
    np.minimum.at(first_row, key_id, np.arange(n))
    return key_id, enc.dictionary, first_row


def occurrence_rank(key_id: np.ndarray) -> np.ndarray:
    """Occurrence rank of each row among the rows of its key: the round it runs in."""
    n = len(key_id)
    order = np.argsort(key_id, kind="stable")
    ks = key_id[order]
    starts = np.r_[0, np.flatnonzero(np.diff(ks)) + 1]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    return rank


class KeyRounds:
    """What the batch has done to each distinct key so far, advanced one round at a time.

    A round holds at most one operation per key, so every step is a whole-column update.
    """

    def __init__(self, state: TableState, batch: pa.Table, ops: np.ndarray, update_cols: list[str],
                 tablet_pos: np.ndarray, key_id: np.ndarray, live_old: np.ndarray):
        u = len(live_old)
        self.state, self.batch, self.ops, self.update_cols = state, batch, ops, update_cols
        self.tablet_pos, self.key_id, self.live_old = tablet_pos, key_id, live_old
        self.was_live = live_old.copy()
        self.old_deleted = np.zeros(u, dtype=bool)
        self.new_src = np.full(u, -1, dtype=np.int64)          # batch row of the pending new row's insert
        self.present = list(batch.column_names)
        self.new_col = {c: np.full(u, -1, dtype=np.int64) for c in self.present}  # batch row per column of the new row
        self.upd = {c: np.full(u, -1, dtype=np.int64) for c in update_cols}    # batch row of each old-row update
        self.counts = {"inserted": 0, "updated": 0, "deleted": 0, "ignored": 0}
        self.cur_seq: np.ndarray | None = None
        self.in_seq: np.ndarray | None = None
        self.stale_rows: list[np.ndarray] = []
        self.ignored_rows: list[np.ndarray] = []
        self.dup_errors: list[np.ndarray] = []
        self.missing_errors: list[np.ndarray] = []

    def count_keys(self) -> None:
        """inserted / updated / deleted count keys by what the batch did to their stored rows, as
        changes(mode="all") shows the commit (specs/format.md §10.3): a key live at the snapshot is
        updated once however many rows update it, deleted if a row deletes it (and inserted too if a
        later row inserts it again); a key the batch leaves with a new row is inserted once (its
        later updates fold into the insert); a new row deleted within the batch counts nothing.
        `ignored` counts input rows."""
        touched = np.zeros(len(self.was_live), dtype=bool)
        for rows in self.upd.values():
            touched |= rows >= 0
        self.counts["inserted"] = int((self.new_src >= 0).sum())
        self.counts["deleted"] = int(self.old_deleted.sum())
        self.counts["updated"] = int((self.was_live & ~self.old_deleted & touched).sum())

    def order_by(self, cur_seq: np.ndarray, in_seq: np.ndarray) -> None:
        """From now on an update below its key's current sequence is skipped as stale."""
        self.cur_seq, self.in_seq = cur_seq, in_seq
        self.counts["stale"] = 0

    def run(self, rows: np.ndarray) -> None:
        """One round: `rows` hold at most one operation per key."""
        k = self.key_id[rows]
        ins, updt, dele = self._resolve(rows, k)
        if self.in_seq is not None:
            self._skip_stale(rows, k, ins, updt)
        self._insert(rows, k, ins)
        self._update(rows, k, updt)
        self._delete(rows, k, dele)

    def _resolve(self, rows: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Which rows insert, update or delete; a strict one that cannot is recorded as an error."""
        op = self.ops[rows]
        exists = self.live_old[k] | (self.new_src[k] >= 0)
        is_upsert = op == UPSERT
        ins = np.isin(op, [INSERT, INSERT_IGNORE]) | (is_upsert & ~exists)
        updt = np.isin(op, [UPDATE_OP, UPDATE_IGNORE]) | (is_upsert & exists)
        dele = np.isin(op, [DELETE_OP, DELETE_IGNORE])
        strict = np.isin(op, [INSERT, UPDATE_OP, DELETE_OP])
        dup = ins & exists
        missing = (updt | dele) & ~exists
        self.dup_errors.append(rows[dup & strict])
        self.missing_errors.append(rows[missing & strict])
        no_range = ins & ~dup & (self.tablet_pos[rows] < 0)
        if no_range.any():
            raise NoRangePartitionError(f"{int(no_range.sum())} rows fall in no range partition "
                                        f"(first: {describe_keys(self.state, self.batch, rows[no_range])})")
        self.counts["ignored"] += int((dup | missing).sum())
        self.ignored_rows.append(rows[dup | missing])
        return ins & ~dup, updt & exists, dele & exists

    def _skip_stale(self, rows: np.ndarray, k: np.ndarray, ins: np.ndarray, updt: np.ndarray) -> None:
        """Drop (in place) updates below the key's current sequence; the winners' sequences become current."""
        stale = updt & (self.in_seq[rows] < self.cur_seq[k])
        updt &= ~stale
        self.counts["ignored"] += int(stale.sum())
        self.counts["stale"] += int(stale.sum())
        self.stale_rows.append(rows[stale])
        won = ins | updt
        self.cur_seq[k[won]] = self.in_seq[rows[won]]

    def _insert(self, rows: np.ndarray, k: np.ndarray, ins: np.ndarray) -> None:
        """An insert becomes the key's pending new row, every present column from its batch row."""
        ki, ri = k[ins], rows[ins]
        self.new_src[ki] = ri
        for c in self.present:
            self.new_col[c][ki] = ri

    def _update(self, rows: np.ndarray, k: np.ndarray, updt: np.ndarray) -> None:
        """An update goes to a pending new row, or as REDO on the old row."""
        to_new = updt & (self.new_src[k] >= 0)
        to_old = updt & ~to_new
        for c in self.update_cols:
            self.new_col[c][k[to_new]] = rows[to_new]
            self.upd[c][k[to_old]] = rows[to_old]

    def _delete(self, rows: np.ndarray, k: np.ndarray, dele: np.ndarray) -> None:
        """A delete drops a pending new row, or DELETEs the old row (and its pending updates)."""
        del_new = dele & (self.new_src[k] >= 0)
        del_old = dele & ~del_new
        self.new_src[k[del_new]] = -1
        self.live_old[k[del_old]] = False
        self.old_deleted[k[del_old]] = True
        for c in self.update_cols:
            self.upd[c][k[del_old]] = -1
