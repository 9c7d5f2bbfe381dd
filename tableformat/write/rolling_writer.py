"""Streaming insert of key-sorted batches into one tablet (Kudu's RollingDiskRowSetWriter).

A caller that already sorted its rows by encoded key (a Spark task after a range
shuffle and sortWithinPartitions) feeds them batch by batch. The writer checks
each batch's keys against the snapshot (interval, bloom, PK index) and against
the previous key (duplicates in sorted input are adjacent), and streams the rows
it keeps into the open rowset (`DiskRowSetWriter`, Kudu's name): base row groups
and PK index blocks go to storage as they fill, and only the keys' hashes (for
the bloom filter), each block's first key and running column statistics stay
until the rowset closes at the table's `rowset_target_bytes` of input. So the
writer holds about one row group, whatever the rowset target or the input
length. `finish` returns the write fragment (specs/format.md §10), whose commit
checks the written rowsets' keys like any distributed insert.
"""
from __future__ import annotations

import json
import uuid
import zlib
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..log.actions import AddRowSet
from ..format.batch import one_array, prepare
from ..format.bloom import SEED, SplitBlockBloomFilter
from ..format.cfile_set import column_stats, parquet_writer
from ..log.requirements import DefinitionUnchanged, KeysAbsent, SkippedKeysStillLive
from ..format.constants import rowset_dir
from ..format.diskrowset import BLOCK_KEYS_META, DICT_SAMPLE_ROWS, base_file_layout
from ..format.errors import InvalidDataError, InvalidOptionError
from ..format.keyencoder import encoded_keys
from ..log.fragment import WriteFragment
from ..format.hashing import murmur2_64
from ..read.keyprobe import probe
from ..format.metadata import FileRef, RowSetMeta, TableState
from ..format.schema import Schema
from ..format.storage import Storage
from .insert import duplicate_error

ON_DUPLICATE = ("fail", "ignore")
_KEY_SPOT_CHECKS = 64


class _CheckedSink:
    """A file that counts and checksums the bytes streamed into it (its FileRef's size, CRC-32)."""

    def __init__(self, f):
        self.f, self.size, self.crc = f, 0, 0

    def write(self, data) -> int:
        self.crc = zlib.crc32(data, self.crc)
        self.size += len(data)
        return self.f.write(data)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        self.f.flush()

    @property
    def closed(self) -> bool:
        return self.f.closed

    def close(self) -> None:
        self.f.close()

    def discard(self) -> None:
        """Close without publishing where the store can (an S3 multipart upload is aborted)."""
        try:
            if hasattr(self.f, "discard"):
                self.f.discard()
                self.f.closed = True        # so it is not flushed when collected
            else:
                self.f.close()
        except Exception:       # a file being dropped after a failure: its path is deleted anyway
            pass


class _ColumnStats:
    """A column's statistics (cfile_set.column_stats) over row groups seen one at a time:
    null and NaN counts summed, min and max kept per row group and reduced at the end."""

    def __init__(self, col):
        self.col, self.nulls, self.nan, self.extremes = col, 0, 0, []

    def add(self, arr: pa.ChunkedArray) -> None:
        self.nulls += arr.null_count
        kind = self.col.type.kind
        if kind == "bool" or arr.null_count == len(arr):
            return
        if kind in ("float", "double"):
            self.nan += pc.sum(pc.is_nan(arr)).as_py() or 0
        mm = pc.min_max(arr)
        for v in (mm["min"], mm["max"]):
            if v.is_valid and not (kind in ("float", "double") and v.as_py() != v.as_py()):
                self.extremes.append(v)

    def finish(self) -> dict:
        stats = column_stats(self.col, pa.array(self.extremes, self.col.arrow_type))
        stats["nulls"] = self.nulls
        if "nan" in stats or (self.col.type.kind in ("float", "double") and self.nan):
            stats["nan"] = self.nan       # an all-NaN column has no extremes, but its NaN count
        return stats


class DiskRowSetWriter:
    """One rowset written as its sorted rows arrive (Kudu's DiskRowSetWriter): the files of
    a one-shot insert (`writer.write_plan`), with the same row groups and PK index blocks, streamed
    to storage.

    Encodings are chosen from the rowset's first rows (up to the engine's dictionary sample),
    since row groups are written before the rest is seen; then rows wait only for a full row
    group and keys for a full PK index block. What stays to the end: each key's hash for the
    bloom filter (8 bytes), each block's first key and the column statistics."""

    def __init__(self, storage: Storage, schema: Schema, tablet: str, properties: dict, written: list[str]):
        self.storage, self.tablet, self.written = storage, tablet, written
        self.id = uuid.uuid4().hex
        self.dir = rowset_dir(tablet, self.id)
        self.cols = list(schema.columns)
        self.rg_rows = int(properties["row_group_rows"])
        self.block = int(properties["pk_index_block_rows"])
        self.head_rows = max(self.rg_rows, DICT_SAMPLE_ROWS)
        self.rows: list[pa.Table] = []          # not yet in a row group
        self.keys: list[pa.Array] = []          # not yet in a PK index block
        self.hashes: list[np.ndarray] = []
        self.first_keys: list[bytes] = []
        self.stats = [_ColumnStats(c) for c in self.cols]
        self.num_rows = 0
        self.min_key = self.max_key = None
        self._base = self._pk = None            # (ParquetWriter, sink, path, schema)

    @property
    def buffered_bytes(self) -> int:
        """Arrow bytes of the rows not yet in a row group (keys wait for under one PK block)."""
        return sum(t.nbytes for t in self.rows)

    def add(self, data: pa.Table, keys: pa.Array) -> None:
        """Rows sorted by key, after every row already added."""
        if not data.num_rows:
            return
        if self.min_key is None:
            self.min_key = keys[0].as_py()
        self.max_key = keys[len(keys) - 1].as_py()
        self.num_rows += data.num_rows
        self.hashes.append(murmur2_64(keys, SEED))
        self.rows.append(data.select([c.name for c in self.cols]))
        self.keys.append(keys)
        self._flush_rows(final=False)
        self._flush_keys(final=False)

    def _open(self, name: str, schema: pa.Schema, **options):
        path = f"{self.dir}/{name}"
        self.written.append(path)
        sink = _CheckedSink(self.storage.open_write(path))
        return parquet_writer(sink, schema, **options), sink, path, schema

    def _flush_rows(self, final: bool) -> None:
        pending = sum(t.num_rows for t in self.rows)
        if self._base is None:
            if pending < self.head_rows and not final:
                return
            head = pa.concat_tables(self.rows)
            # the head is the whole file only when the rowset ends inside it (footer statistics, §5)
            schema, options = base_file_layout(self.cols, [one_array(head.column(c.name)) for c in self.cols],
                                               whole=final)
            self._base = self._open(f"base-{uuid.uuid4().hex[:12]}.parquet", schema, **options)
        n = pending if final else pending - pending % self.rg_rows
        if not n:
            return
        t = pa.concat_tables(self.rows)
        part, rest = t.slice(0, n), t.slice(n)
        for st, c in zip(self.stats, self.cols):
            st.add(part.column(c.name))
        writer, _, _, schema = self._base
        writer.write_table(pa.Table.from_arrays(part.columns, schema=schema), row_group_size=self.rg_rows)
        self.rows = [rest] if rest.num_rows else []

    def _flush_keys(self, final: bool) -> None:
        pending = sum(len(k) for k in self.keys)
        n = pending if final else pending - pending % self.block
        if not n:
            return
        ks = pa.concat_arrays(self.keys)
        part, rest = ks.slice(0, n), ks.slice(n)
        if self._pk is None:
            self._pk = self._open("pkindex.parquet", pa.schema([pa.field("key", pa.binary(), nullable=False)]),
                                  compression="LZ4", use_dictionary=False,
                                  column_encoding={"key": "DELTA_BYTE_ARRAY"}, write_statistics=False,
                                  store_schema=False)     # the footer's key-value metadata: first keys only
        self.first_keys.extend(part.take(pa.array(np.arange(0, n, self.block, dtype=np.int64))).to_pylist())
        writer, _, _, schema = self._pk
        writer.write_table(pa.Table.from_arrays([part], schema=schema), row_group_size=self.block)
        self.keys = [rest] if len(rest) else []

    def finish(self) -> RowSetMeta:
        """Write what is left, close the files, write the bloom filter: the rowset's descriptor."""
        self._flush_rows(final=True)
        self._flush_keys(final=True)
        self._pk[0].add_key_value_metadata({BLOCK_KEYS_META: json.dumps([k.hex() for k in self.first_keys])})
        refs = []
        for (writer, sink, path, _), ids in ((self._base, tuple(c.id for c in self.cols)), (self._pk, ())):
            writer.close()
            sink.close()
            refs.append(FileRef(path, sink.size, ids, sink.crc) if ids else FileRef(path, sink.size,
                                                                                      crc32=sink.crc))
        self._base = self._pk = None
        bloom_bytes = SplitBlockBloomFilter.from_hashes(np.concatenate(self.hashes)).to_bytes()
        self.hashes = []
        bloom_path = f"{self.dir}/bloom.bin"
        self.written.append(bloom_path)
        self.storage.write(bloom_path, bloom_bytes)
        bloom = FileRef(bloom_path, len(bloom_bytes), crc32=zlib.crc32(bloom_bytes))
        return RowSetMeta(self.id, self.tablet, self.num_rows, self.min_key, self.max_key, (refs[0],), refs[1],
                          bloom, {c.id: st.finish() for c, st in zip(self.cols, self.stats)})

    def abort(self) -> None:
        """Drop the open files unpublished (their paths are in `written`, for deletion)."""
        for f in (self._base, self._pk):
            if f is not None:
                try:
                    f[0].close()
                except Exception:       # the sink may already be broken: what failed is reported
                    pass
                f[1].discard()
        self._base = self._pk = None
        self.rows, self.keys, self.hashes = [], [], []




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
        self.skipped: dict[str, list[np.ndarray]] = {}     # rowset -> live rowids of keys it skipped
        self.aborted = self.finished = False
        self._last_key: bytes | None = None
        self._open: DiskRowSetWriter | None = None
        self._rowset_bytes = 0                  # input bytes in the open rowset

    @property
    def buffered_bytes(self) -> int:
        """Arrow bytes of rows held, not yet written: under a row group (the first rows of a
        rowset until its encodings are chosen), never more than the rowset."""
        return self._open.buffered_bytes if self._open is not None else 0

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
            which, rowid = probe(self.storage, self.rowsets_meta, keys.take(pa.array(fresh)), self.state.deltas_of)
            exists[fresh[which >= 0]] = True
            for i in np.unique(which[which >= 0]):
                self.skipped.setdefault(self.rowsets_meta[i].id, []).append(rowid[which == i])
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
            return encoded_keys(self.state.schema, batch)
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        if len(keys) != batch.num_rows or keys.null_count:
            raise InvalidDataError("keys must be one non-null encoded key per row")
        keys = keys.cast(pa.binary())
        idx = pa.array(np.unique(np.linspace(0, batch.num_rows - 1, _KEY_SPOT_CHECKS).astype(np.int64)))
        key_cols = batch.select([c.name for c in self.state.schema.key_columns])
        if not encoded_keys(self.state.schema, key_cols.take(idx)).equals(keys.take(idx)):
            raise InvalidDataError("the keys given are not the rows' encoded primary keys")
        return keys

    def _append(self, batch: pa.Table, keys: pa.Array) -> None:
        row_bytes = max(1.0, batch.nbytes / max(1, batch.num_rows))
        start = 0
        while start < batch.num_rows:
            room = max(1, int((self.target - self._rowset_bytes) // row_bytes))
            take = min(room, batch.num_rows - start)
            if self._open is None:
                self._open = DiskRowSetWriter(self.storage, self.state.schema, self.tablet,
                                              dict(self.state.properties), self.written)
            try:
                self._open.add(batch.slice(start, take), keys.slice(start, take))
            except BaseException:
                self.abort()
                raise
            self._rowset_bytes += int(take * row_bytes)
            start += take
            if self._rowset_bytes >= self.target:
                self._roll()

    def _roll(self) -> None:
        """Close the open rowset."""
        rs, self._open, self._rowset_bytes = self._open, None, 0
        if rs is None or not rs.num_rows:
            return
        try:
            meta = rs.finish()
        except BaseException:
            self._open = rs
            self.abort()
            raise
        self.rowsets.append(meta)
        self.inserted += meta.num_rows

    def abort(self) -> None:
        """Delete every file written; later writes only check keys."""
        if self._open is not None:
            self._open.abort()
        self.storage.delete_quietly(self.written)
        self.written, self.rowsets, self._open, self._rowset_bytes = [], [], None, 0
        self.inserted, self.aborted = 0, True

    def finish(self) -> WriteFragment:
        """Write the last rowset; the fragment to commit (empty if aborted or nothing was kept)."""
        if not self.finished and not self.aborted:
            self._roll()
        self.finished = True
        operation = "INSERT_IGNORE" if self.ignore else "INSERT"
        counts = {"inserted": self.inserted, "ignored": self.ignored}
        kind = "spark_insert"       # a Spark task's: a clash plans the job again (the matrix's row)
        if self.aborted:
            return WriteFragment(operation, self.state.version, counts=counts, table_id=self.state.table_id,
                                 kind=kind)
        # keys skipped as existing must still be live at commit, even when nothing was written
        reqs = [SkippedKeysStillLive({r: np.unique(np.concatenate(v)) for r, v in self.skipped.items()})] \
            if self.ignored and self.ignore else []
        if self.rowsets:
            reqs[:0] = [DefinitionUnchanged(), KeysAbsent(own_rowsets=True)]
        return WriteFragment(operation, self.state.version, [AddRowSet(r) for r in self.rowsets],
                             list(self.written) if self.rowsets else [], counts, reqs,
                             table_id=self.state.table_id, kind=kind)
