"""Streaming insert of key-sorted batches into one tablet (Kudu's RollingDiskRowSetWriter).

A caller that already sorted its rows by encoded key (a Spark task after a range
shuffle and sortWithinPartitions) feeds them batch by batch. The writer checks
each batch's keys against the snapshot (interval, bloom, PK index) and against
the previous key (duplicates in sorted input are adjacent), buffers the rows
it keeps, and writes a DiskRowSet each time the buffer reaches the table's
`rowset_target_bytes`. So it holds at most one rowset's worth of rows, however
long the input. `finish` returns the write fragment (specs/format.md §10), whose
commit checks the written rowsets' keys like any distributed insert.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .actions import AddRowSet
from .batch import prepare
from .conflicts import DefinitionUnchanged, KeysAbsent, Outcome, SkippedKeysStillLive
from .diskrowset import write_rowset
from .errors import InvalidDataError, InvalidOptionError
from .fragment import WriteFragment
from .keyprobe import probe
from .metadata import RowSetMeta, TableState
from .storage import Storage
from .writer import duplicate_error, encoded_keys

ON_DUPLICATE = ("fail", "ignore")
_KEY_SPOT_CHECKS = 64


class RollingRowSetWriter:
    """Writes sorted rows of one tablet as rowsets rolled at the target size.

    `write(batch, keys=None)` takes rows sorted by primary key, every key at least the last
    key of the previous batch, and returns the batch row numbers it skipped (a key that repeats
    or already exists); on_duplicate="fail" raises DuplicateKeyError instead, after deleting the
    files written so far. `abort()` deletes them too; later writes then only check keys (to
    count duplicates). `finish()` writes the last rowset and returns the fragment."""

    def __init__(self, storage: Storage, state: TableState, tablet: str, on_duplicate: str = "fail"):
        if on_duplicate not in ON_DUPLICATE:
            raise InvalidOptionError(f"on_duplicate must be one of {ON_DUPLICATE}, got {on_duplicate!r}")
        if tablet not in state.partitioning.tablet_ids():
            raise InvalidOptionError(f"table {state.name!r} has no tablet {tablet!r}")
        self.storage, self.state, self.tablet = storage, state, tablet
        self.ignore = on_duplicate == "ignore"
        self.target = int(state.properties["rowset_target_bytes"])
        self.rowsets_meta = state.rowsets_in(tablet)
        self.written: list[str] = []
        self.rowsets: list[RowSetMeta] = []
        self.inserted = self.ignored = 0
        self.aborted = self.finished = False
        self._last_key: bytes | None = None
        self._buf: list[tuple[pa.Table, pa.Array]] = []
        self._buf_bytes = 0

    @property
    def buffered_bytes(self) -> int:
        """Arrow bytes held for the rowset being built (never more than the target plus a batch)."""
        return self._buf_bytes

    def write(self, data: Any, keys: pa.Array | None = None) -> np.ndarray:
        if self.finished:
            raise InvalidOptionError("this rowset writer is finished")
        batch = prepare(self.state.schema, data)
        n = batch.num_rows
        if n == 0:
            return np.zeros(0, np.int64)
        keys = self._keys(batch, keys)
        prev = keys.slice(0, n - 1)
        nxt = keys.slice(1)
        if n > 1 and pc.any(pc.less(nxt, prev)).as_py():
            raise InvalidDataError("rows given to a rowset writer must be sorted by primary key")
        if self._last_key is not None and keys[0].as_py() < self._last_key:
            raise InvalidDataError("a batch given to a rowset writer starts below the previous batch's last key")
        dup = np.zeros(n, dtype=bool)
        if n > 1:
            dup[1:] = pc.equal(nxt, prev).to_numpy(zero_copy_only=False)
        dup[0] = keys[0].as_py() == self._last_key
        self._last_key = keys[n - 1].as_py()
        fresh = np.flatnonzero(~dup)
        exists = np.zeros(n, dtype=bool)
        if self.rowsets_meta and len(fresh):
            which, _ = probe(self.storage, self.rowsets_meta, keys.take(pa.array(fresh)), self.state.deltas_of)
            exists[fresh[which >= 0]] = True
        rejected = np.flatnonzero(dup | exists)
        if len(rejected) and not self.ignore:
            self.abort()
            where = "appear more than once in the input" if dup.any() else "already exist"
            raise duplicate_error(self.state, batch, rejected, where)
        self.ignored += len(rejected)
        if self.aborted:
            return rejected
        if len(rejected):
            keep = pa.array(~(dup | exists))
            batch, keys = batch.filter(keep), keys.filter(keep)
        self._append(batch, keys)
        return rejected

    def _keys(self, batch: pa.Table, keys: pa.Array | None) -> pa.Array:
        """The encoded keys: computed, or the caller's (spot-checked against the encoder)."""
        if keys is None:
            return encoded_keys(self.state, batch)
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        if len(keys) != batch.num_rows or keys.null_count:
            raise InvalidDataError("keys must be one non-null encoded key per row")
        keys = keys.cast(pa.binary())
        idx = pa.array(np.unique(np.linspace(0, batch.num_rows - 1, _KEY_SPOT_CHECKS).astype(np.int64)))
        if not encoded_keys(self.state, batch.take(idx)).equals(keys.take(idx)):
            raise InvalidDataError("the keys given are not the rows' encoded primary keys")
        return keys

    def _append(self, batch: pa.Table, keys: pa.Array) -> None:
        row_bytes = max(1.0, batch.nbytes / max(1, batch.num_rows))
        start = 0
        while start < batch.num_rows:
            room = max(1, int((self.target - self._buf_bytes) // row_bytes))
            take = min(room, batch.num_rows - start)
            piece = batch.slice(start, take)
            self._buf.append((piece, keys.slice(start, take)))
            self._buf_bytes += int(take * row_bytes)
            start += take
            if self._buf_bytes >= self.target:
                self._roll()

    def _roll(self) -> None:
        """Write the buffered rows as one rowset and drop them."""
        if not self._buf:
            return
        data = pa.concat_tables([b for b, _ in self._buf])      # write_rowset combines per column
        keys = pa.concat_arrays([k for _, k in self._buf])
        self._buf, self._buf_bytes = [], 0
        try:
            meta = write_rowset(self.storage, self.state.schema, self.tablet, data, keys,
                                dict(self.state.properties), self.written)
        except BaseException:
            self.abort()
            raise
        self.rowsets.append(meta)
        self.inserted += meta.num_rows

    def abort(self) -> None:
        """Delete every file written; later writes only check keys."""
        self.storage.delete_quietly(self.written)
        self.written, self.rowsets, self._buf, self._buf_bytes = [], [], [], 0
        self.inserted, self.aborted = 0, True

    def finish(self) -> WriteFragment:
        """Write the last rowset; the fragment to commit (empty if aborted or nothing was kept)."""
        if not self.finished and not self.aborted:
            self._roll()
        self.finished = True
        operation = "INSERT_IGNORE" if self.ignore else "INSERT"
        frag = WriteFragment(operation, self.state.version, counts={"inserted": self.inserted,
                                                                    "ignored": self.ignored},
                             table_id=self.state.table_id)
        if self.aborted:
            return frag
        # keys skipped as existing must still be live at commit, even when nothing was written
        frag.requirements = [SkippedKeysStillLive()] if self.ignored and self.ignore else []
        if self.rowsets:
            frag.actions = [AddRowSet(r) for r in self.rowsets]
            frag.files = list(self.written)
            frag.requirements[:0] = [DefinitionUnchanged(Outcome.RESTART), KeysAbsent(
                own_rowsets=True, on_clash=Outcome.RESTART if self.ignore else Outcome.FAIL)]
        return frag
