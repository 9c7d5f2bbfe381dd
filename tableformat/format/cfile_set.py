"""Parquet plumbing shared by base data, PK indexes and delta files (Kudu's cfile_set.cc).

One place for what every Parquet file of the format has in common: the codec
names, field names by column ID, writing with page checksums, statistics of a
column, the byte-bounded cache of open files, whole-file CRC checks against the
log, and turning a reader's failure into CorruptFileError naming the file.
See specs/format.md §5 and §2.2.
"""
from __future__ import annotations

import weakref

import threading
import zlib
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .errors import CorruptFileError
from .constants import field_name  # noqa: F401  (re-exported)
from .metadata import FileRef
from .schema import Column, value_to_json
from .storage import Storage
from .ranged_file import WHOLE_READ_BYTES, RangedFile

PARQUET_CODEC = {"none": "NONE", "lz4": "LZ4", "snappy": "SNAPPY", "zlib": "GZIP", "zstd": "ZSTD"}
_MAX_STAT_BYTES = 256




def arrow_owned(n: int, dtype) -> tuple[pa.Buffer, np.ndarray]:
    """A writable numpy array of n items over a buffer from Arrow's memory pool, which becomes
    an Arrow array without a copy. Arrow's pool reuses freed blocks, where a new numpy array of
    a column's size faults in fresh pages on every scan (measured several times the copy)."""
    dtype = np.dtype(dtype)
    buf = pa.allocate_buffer(n * dtype.itemsize)
    return buf, np.frombuffer(buf, dtype)


def bool_array(mask: np.ndarray) -> pa.BooleanArray:
    """A numpy bool mask as an Arrow boolean array, by packing its bits (measured ~20x faster than
    pa.array, which converts element by element): for filters over whole columns."""
    bits = np.packbits(mask, bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(mask), [None, pa.py_buffer(bits)])


def to_parquet_bytes(table: pa.Table, **kwargs) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, write_page_checksum=True, store_decimal_as_integer=True, **kwargs)
    return sink.getvalue()


def parquet_writer(sink, schema: pa.Schema, **kwargs) -> pq.ParquetWriter:
    """An incremental writer of the same files `to_parquet_bytes` writes, row group by row group."""
    return pq.ParquetWriter(sink, schema, write_page_checksum=True, store_decimal_as_integer=True, **kwargs)


def _footer_min_max(chunks: list[tuple[int, Any]]) -> tuple[Any, Any] | None:
    """Min and max over Parquet column chunk statistics [(rows, Statistics)], or None unless
    every chunk holding a value has them (Parquet drops those of very long values)."""
    lo = hi = None
    for rows, st in chunks:
        if st is None or not st.has_null_count:
            return None
        if st.null_count >= rows:
            continue                                   # all NULL: no min/max, nothing to merge
        if not st.has_min_max:
            return None
        lo = st.min if lo is None or st.min < lo else lo
        hi = st.max if hi is None or st.max > hi else hi
    return (lo, hi) if lo is not None else None


def footer_chunks(meta: pq.FileMetaData, column_index: int) -> list[tuple[int, Any]]:
    """(rows, statistics) of each row group's chunk of one column, from a file's footer."""
    return [(meta.row_group(g).num_rows, meta.row_group(g).column(column_index).statistics)
            for g in range(meta.num_row_groups)]


def column_stats(col: Column, arr: pa.Array, chunks: list[tuple[int, Any]] | None = None) -> dict[str, Any]:
    """nulls, min and max (float: of the non-NaN values, with `nan` counting NaNs). Dates and
    timestamps are taken as ints, so every int32 date and int64 timestamp has statistics.

    `chunks`: the Parquet statistics of the column chunks just written from `arr`. A string
    or binary column's min and max come from them, as the Parquet writer already compared
    every value (bytewise, unsigned, as Arrow does): a second pass costs as much again."""
    nulls = arr.null_count
    stats: dict[str, Any] = {"nulls": nulls}
    k = col.type.kind
    if nulls == len(arr) or k == "bool":
        return stats
    if k in ("float", "double"):
        nan = pc.sum(pc.is_nan(arr)).as_py() or 0
        stats["nan"] = nan
        if nan + nulls == len(arr):
            return stats
    if k in ("date", "unixtime_micros"):
        mm = pc.min_max(arr.cast(pa.int32() if k == "date" else pa.int64()))
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if k == "date":     # ISO text when Python can hold the date (older readers parse it), else int days
            stats["min"], stats["max"] = _date_stat(lo), _date_stat(hi)
        else:
            stats["min"], stats["max"] = lo, hi
        return stats
    found = _footer_min_max(chunks) if chunks is not None and col.type.is_variable_width else None
    if found is not None:
        lo, hi = found
    else:
        mm = pc.min_max(arr)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if col.type.is_variable_width:
        lo_b = lo.encode() if isinstance(lo, str) else lo
        hi_b = hi.encode() if isinstance(hi, str) else hi
        if len(lo_b) > _MAX_STAT_BYTES or len(hi_b) > _MAX_STAT_BYTES:
            return stats
    stats["min"] = value_to_json(col.type, lo)
    stats["max"] = value_to_json(col.type, hi)
    return stats


def _date_stat(days: int):
    d = pa.scalar(days, pa.int32()).cast(pa.date32())
    try:
        return d.as_py().isoformat()
    except (OverflowError, ValueError):
        return days


# The share of the block cache key files may hold ahead of data (RocksDB's high_pri_pool_ratio;
# ours is higher than its 0.5: PK indexes of 16M rows take ~460 MB, and at 0.5 a warm lookup
# re-read demoted indexes: 0.7-0.8 s, against 0.4 s at 0.9).
INDEX_SHARE = 0.9


class FileCache:
    """Process-wide LRU of parsed immutable files (blooms, index blocks, Parquet footers).

    Files never change once written (unique names), so entries never go stale. An entry is keyed
    by the file's path and, where the log records it, its size: a key probe reads a rowset's
    bloom filter and PK index once per process.

    Two tiers, as RocksDB's high-priority pool keeps index and filter blocks: key files (PK
    indexes, blooms, footers, and the delta files and deletion masks every lookup of a rowset
    reads: `index=True`) leave only when no data entry (decoded row groups) is left to evict. A lookup's row groups then never push out the PK indexes
    every later lookup needs (issue 26: at 16M rows they did, and each lookup re-read and
    re-checked every index whole). As RocksDB's pool (`high_pri_pool_ratio`), the tier holds
    at most INDEX_SHARE of the cache: beyond it the least recently used key files join the data
    tier, so key files nobody reads any more never starve the row groups of those in use.
    """

    def __init__(self, max_bytes: int = 512 * 1024 * 1024, rows: "FileCache | None" = None):
        self.max_bytes = max_bytes
        self.rows = rows              # the row cache beside it (cleared and dropped with it)
        self._gen = 0
        self._ops: list[int] = []     # generations of the operations under way, oldest first
        self._used: dict[tuple, int] = {}              # entry -> generation of its last use
        self._items: dict[tuple, tuple[Any, int]] = {}
        self._data: OrderedDict[tuple, None] = OrderedDict()     # LRU order of data entries
        self._index: OrderedDict[tuple, None] = OrderedDict()    # LRU order of key-file entries
        self._first_out: dict[tuple, None] = {}        # evicted before any other entry, oldest first
        self._key_files: set[tuple] = set()            # key-file entries, in either tier
        self._bytes = 0
        self._index_bytes = 0
        self._lock = threading.Lock()

    def get(self, storage: Storage, path: str, size: int | None = None):
        key = (storage.protocol, storage.path(path), size)
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._used[key] = self._gen
            if key in self._index:
                self._index.move_to_end(key)
            elif key in self._key_files:       # a demoted key file read again: back in its tier
                del self._data[key]
                self._index[key] = None
                self._index_bytes += item[1]
                self._demote()
            else:
                self._data.move_to_end(key)
            return item[0]

    def put(self, storage: Storage, path: str, value: Any, nbytes: int, size: int | None = None,
            first_out: bool = False, index: bool = False) -> None:
        """first_out: an entry nobody asked for yet (a load's columns), evicted before every other
        entry however recently used, so it never costs a PK index or a decoded row group its place.
        index: a key file's entry, evicted only after every data entry."""
        key = (storage.protocol, storage.path(path), size)
        with self._lock:
            if key in self._items:
                return
            self._demote()
            if not index and nbytes > self.max_bytes - self._index_bytes:
                return            # no room beside the key files: not cached, and nothing evicted for it
            self._items[key] = (value, nbytes)
            self._used[key] = self._gen
            self._bytes += nbytes
            if index:
                self._key_files.add(key)
                self._index[key] = None
                self._index_bytes += nbytes
                self._demote()
            else:
                self._data[key] = None
            if first_out:
                self._first_out[key] = None
            self._make_room(key, index)

    def _make_room(self, key: tuple, index: bool) -> None:
        """Evict until the cache fits: entries a load left first, then data, then key files. Within
        an operation, a data entry evicts none of the operation's own entries (it is refused
        instead)."""
        while self._bytes > self.max_bytes:
            if self._first_out:
                victim = next(iter(self._first_out))
            elif self._data:
                victim = next(iter(self._data))
            elif len(self._index) > 1:
                victim = next(iter(self._index))
            else:
                break                                  # one key file larger than the cache: kept alone
            if victim != key and self._in_use(victim):
                if not index:
                    self._evict(key)                   # refused: the operation's own entries stay
                    return
            self._evict(victim)

    def _in_use(self, key: tuple) -> bool:
        return bool(self._ops) and self._used.get(key, -1) >= self._ops[0]

    @contextmanager
    def operation(self):
        """A span (a lookup) whose entries a data entry put within it never evicts: a working set
        larger than the cache then keeps the part that fits, where LRU under a cyclic pattern
        evicted each entry before its next use (issue 39: at 16M rows every warm lookup re-read
        a PK index its own row groups had pushed out). Key-file puts evict as before."""
        with self._lock:
            self._gen += 1
            gen = self._gen
            self._ops.append(gen)
        try:
            yield
        finally:
            with self._lock:
                self._ops.remove(gen)

    def _demote(self) -> None:
        """Key files beyond their share join the data tier, as its most recently used entries."""
        while self._index_bytes > self.max_bytes * INDEX_SHARE and len(self._index) > 1:
            if self._in_use(next(iter(self._index))):
                break         # key files the operation under way uses stay in their tier until it ends
            old, _ = self._index.popitem(last=False)
            self._index_bytes -= self._items[old][1]
            self._data[old] = None

    def _evict(self, key: tuple) -> None:
        nbytes = self._items.pop(key)[1]
        self._bytes -= nbytes
        if self._index.pop(key, False) is None:
            self._index_bytes -= nbytes
        self._data.pop(key, None)
        self._first_out.pop(key, None)
        self._key_files.discard(key)
        self._used.pop(key, None)

    def drop_key(self, storage: Storage, path: str, size: int | None = None) -> None:
        """Forget one entry (to put a grown value in its place)."""
        with self._lock:
            key = (storage.protocol, storage.path(path), size)
            if key in self._items:
                self._evict(key)

    @property
    def free_bytes(self) -> int:
        return max(0, self.max_bytes - self._bytes)

    def drop(self, storage: Storage, prefixes: list[str]) -> None:
        """Forget every entry whose path starts with one of `prefixes` (the files of rowsets a
        merge is replacing: their decoded data would sit in memory beside the merge's own)."""
        starts = tuple(storage.path(p) for p in prefixes)
        with self._lock:
            for key in [k for k in self._items if k[0] == storage.protocol and k[1].startswith(starts)]:
                self._evict(key)
        if self.rows is not None:
            self.rows.drop(storage, prefixes)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._data.clear()
            self._index.clear()
            self._first_out.clear()
            self._key_files.clear()
            self._used.clear()
            self._bytes = 0
            self._index_bytes = 0
        if self.rows is not None:
            self.rows.clear()


# The row cache (RocksDB's row_cache, apart from its block cache): the values of base rows lookups
# hit, so a lookup of keys looked up before decodes nothing, where the decoded row groups of a
# working set larger than the block cache would have evicted one another (base_rows.py).
ROW_CACHE_BYTES = 64 * 1024 * 1024
FILE_CACHE = FileCache(rows=FileCache(ROW_CACHE_BYTES))


def wrap_read_error(path: str, e: Exception) -> CorruptFileError:
    if isinstance(e, FileNotFoundError):
        return CorruptFileError(f"file {path} referenced by the log is missing")
    return CorruptFileError(f"file {path} is corrupt or truncated: {e}")


def verify_file_bytes(ref: FileRef, data: bytes, kind: str) -> None:
    """The whole-file check of format 3: the size and CRC-32 the log recorded (specs/format.md §8.2).

    Parquet's page CRCs cover page data only, not page headers or the footer (where the PK
    index keeps its block first keys), so a flipped byte there would go unnoticed without this.
    """
    if len(data) != ref.size:
        raise CorruptFileError(f"{kind} {ref.path} has {len(data)} bytes, the log recorded {ref.size}")
    if ref.crc32 is not None and zlib.crc32(data) != ref.crc32:
        raise CorruptFileError(f"{kind} {ref.path} fails its checksum (the CRC-32 the log recorded): "
                               "the file is damaged; restore it from a backup")


def read_verified(storage: Storage, ref: FileRef, kind: str) -> bytes:
    """All bytes of a file, checked against the log's size and CRC-32."""
    try:
        data = storage.read(ref.path)
    except OSError as e:
        raise wrap_read_error(ref.path, e) from None
    verify_file_bytes(ref, data, kind)
    return data


def verified_parquet_file(storage: Storage, ref: FileRef, kind: str,
                          dictionary: Callable[[pq.FileMetaData], list[str]] | None = None) -> pq.ParquetFile:
    """A Parquet file read whole into memory (an Arrow buffer: `Storage.read_buffer`) and verified,
    for reads that need all of it anyway. The columns `dictionary` names from the footer are read
    as dictionaries (a scan's: `diskrowset.dictionary_columns`). Its page CRCs are not
    checked again: the log's CRC-32 covered every byte of this very buffer (specs/format.md §5;
    they were ~5% of a read of all columns)."""
    try:
        data = storage.read_buffer(ref.path)
    except OSError as e:
        raise wrap_read_error(ref.path, e) from None
    verify_file_bytes(ref, data, kind)
    pages = ref.crc32 is None              # no recorded CRC-32 checked the bytes: the page CRCs must
    try:
        pf = pq.ParquetFile(pa.BufferReader(data), page_checksum_verification=pages)
        md = pf.metadata
        as_dict = dictionary(md) if dictionary is not None else []
        if as_dict:
            pf = pq.ParquetFile(pa.BufferReader(data), metadata=md, page_checksum_verification=pages,
                                read_dictionary=as_dict)
    except (OSError, pa.ArrowException) as e:
        raise wrap_read_error(ref.path, e) from None
    FILE_CACHE.put(storage, ref.path + "#footer", pf.metadata, pf.metadata.serialized_size, ref.size, index=True)
    return pf


def _input_file(storage: Storage, ref: FileRef):
    """An Arrow input file of the size the log recorded, opened without a request where the store allows.

    Returns (file, pre_buffer): ranged files coalesce their column chunk reads."""
    if not storage.is_local and ref.size and ref.size <= WHOLE_READ_BYTES:
        data = storage.read(ref.path)
        verify_file_bytes(ref, data, "file")
        return pa.BufferReader(data), False
    if (storage.is_s3 or storage.is_hdfs) and ref.size:
        return RangedFile(storage, ref), True      # the log knows the size: no HEAD (GETFILESTATUS)
    if storage.is_local:
        f = pafs.LocalFileSystem().open_input_file(storage.path(ref.path))
    else:
        f = pafs.PyFileSystem(pafs.FSSpecHandler(storage.fs)).open_input_file(storage.path(ref.path))
    if ref.size and f.size() != ref.size:
        # another valid file in its place (page CRCs cannot tell): the log recorded the size
        raise CorruptFileError(f"file {ref.path} has {f.size()} bytes, the log recorded {ref.size}: it was "
                               "replaced or damaged; restore it from a backup")
    return f, False


# the ranged reader under a ParquetFile opened over ranged GETs (prefetch_columns batches its GETs)
_RANGED: "weakref.WeakKeyDictionary[pq.ParquetFile, RangedFile]" = weakref.WeakKeyDictionary()


def parquet_file(storage: Storage, ref: FileRef, read_dictionary=None) -> pq.ParquetFile:
    """A base, delta or key file opened for reading, its footer from the block cache when there.
    read_dictionary: columns read as dictionary arrays (a lookup's, `base_rows`)."""
    meta = FILE_CACHE.get(storage, ref.path + "#footer", ref.size)
    try:
        f, pre_buffer = _input_file(storage, ref)
        ranged = f if isinstance(f, RangedFile) else None
        if ranged is not None:
            f = pa.PythonFile(ranged, mode="r")
        pf = pq.ParquetFile(f, metadata=meta, page_checksum_verification=True, pre_buffer=pre_buffer,
                            read_dictionary=read_dictionary)
        if ranged is not None:
            _RANGED[pf] = ranged
    except (OSError, pa.ArrowException) as e:
        raise wrap_read_error(ref.path, e) from None
    if meta is None:
        FILE_CACHE.put(storage, ref.path + "#footer", pf.metadata, pf.metadata.serialized_size, ref.size, index=True)
    return pf


def prefetch_columns(pf: pq.ParquetFile, row_groups, names) -> None:
    """Before reading `names` of `row_groups` from a file over ranged GETs, fetch their column
    chunks in as few GETs as pay (a one-column scan: one GET, not one per row group)."""
    ranged = _RANGED.get(pf)
    if ranged is None:
        return
    md, wanted, ranges = pf.metadata, set(names), []
    for i in row_groups:
        rg = md.row_group(i)
        for j in range(rg.num_columns):
            cc = rg.column(j)
            if cc.path_in_schema.split(".")[0] in wanted:
                start = cc.dictionary_page_offset if cc.has_dictionary_page and cc.dictionary_page_offset \
                    else cc.data_page_offset
                ranges.append((start, start + cc.total_compressed_size))
    ranged.prefetch(ranges)
