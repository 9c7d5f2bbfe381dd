"""DiskRowSet files: writing a sorted batch as base data + PK index + bloom, and reading them.

Base data is Parquet with one field per column, named `c<column id>` and with
the column ID as Parquet field ID, so any Parquet reader can read it and no
file depends on a column name. The PK index is a Parquet file of encoded keys
in rowid order, in blocks whose first keys sit in its footer, so a key check
reads one block rather than the whole index. See `specs/format.md`, "DiskRowSet".
"""
from __future__ import annotations

import json
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .batch import one_array
from .bloom import BloomFilter, SplitBlockBloomFilter, read_bloom
from .cfile_set import (FILE_CACHE, PARQUET_CODEC, field_name, parquet_file,
                        prefetch_columns, to_parquet_bytes, verified_parquet_file, verify_file_bytes, wrap_read_error)
from .errors import CorruptFileError
from .metadata import FileRef, RowSetMeta
from .schema import Column
from .storage import Storage

_DICT_MAX_DISTINCT_RATIO = 0.5
_DICT_SAMPLE = 65536
DICT_SAMPLE_ROWS = _DICT_SAMPLE      # the streaming writer (rolling_writer) samples as many first rows
BLOCK_KEYS_META = b"tableformat.pk_block_first_keys"


# --- encodings ---------------------------------------------------------------------------

def _high_cardinality(arr: pa.Array) -> bool:
    """Kudu falls back from dictionary to plain when a rowset's values are mostly distinct."""
    n = len(arr)
    if n < 64:
        return False
    sample = arr if n <= _DICT_SAMPLE else arr.take(np.linspace(0, n - 1, _DICT_SAMPLE).astype(np.int64))
    return pc.count_distinct(sample).as_py() > _DICT_MAX_DISTINCT_RATIO * len(sample)


def parquet_encoding(col: Column, arr: pa.Array) -> tuple[bool, str | None]:
    """(use_dictionary, explicit Parquet encoding) for a Kudu encoding; table in specs/format.md."""
    enc = col.encoding
    if enc == "dictionary" or (enc == "run_length" and col.type.kind != "bool"):
        if _high_cardinality(arr):
            return False, "PLAIN"
        return True, None
    if enc == "run_length":
        return False, "RLE"
    if enc == "bitshuffle":
        # decimal(p > 18) is a FIXED_LEN_BYTE_ARRAY, whose BYTE_STREAM_SPLIT DuckDB and Polars
        # cannot decode: PLAIN there, so every common reader opens every base file (§5).
        if col.type.kind == "decimal" and col.type.precision > 18:
            return False, "PLAIN"
        return False, "BYTE_STREAM_SPLIT"
    if enc == "prefix":
        return False, "DELTA_BYTE_ARRAY"
    return False, "PLAIN"


def footer_statistics_safe(col: Column, arr: pa.Array | pa.ChunkedArray, whole: bool) -> bool:
    """Whether a column's Parquet footer may carry min/max statistics (§5). A float or double
    min/max leaves NaN out (Parquet's rule), so a reader pruning row groups by them (Spark,
    DuckDB, Trino) drops NaN rows that match `f > 0.0` (NaN ranks above every number, §13):
    a float column gets them only when `arr` is the whole file's column (`whole`) and holds
    no NaN. Our own pruning uses the log's statistics (§8.2), never the footer's."""
    if col.type.kind not in ("float", "double"):
        return True
    return whole and not pc.any(pc.is_nan(arr)).as_py()


def base_file_layout(columns: Sequence[Column], arrays: Sequence[pa.Array], whole: bool = True) \
        -> tuple[pa.Schema, dict]:
    """A base file's Arrow schema and Parquet write options, encodings chosen from `arrays`: the
    file's whole columns, or (`whole` False: a streaming writer) a sample of its first rows."""
    fields, codecs, dict_cols, encodings, stats = [], {}, [], {}, []
    for col, arr in zip(columns, arrays):
        name = field_name(col.id)
        fields.append(pa.field(name, col.arrow_type, nullable=col.nullable,
                               metadata={b"PARQUET:field_id": str(col.id).encode()}))
        codecs[name] = PARQUET_CODEC[col.compression]
        use_dict, enc = parquet_encoding(col, arr)
        if use_dict:
            dict_cols.append(name)
        else:
            encodings[name] = enc
        if footer_statistics_safe(col, arr, whole):
            stats.append(name)
    names = {field_name(c.id): c.name for c in columns}
    schema = pa.schema(fields, metadata={b"tableformat.column_names": json.dumps(names).encode()})
    return schema, dict(compression=codecs, use_dictionary=dict_cols or False, column_encoding=encodings or None,
                        data_page_version="2.0", write_statistics=True if len(stats) == len(fields) else stats)


def write_pk_index(storage: Storage, rowset_dir: str, keys: pa.Array, properties: dict,
                   written: list[str]) -> FileRef:
    """A rowset's PK index (§6), from its sorted encoded keys."""
    block = properties["pk_index_block_rows"]
    first_keys = keys.take(pa.array(np.arange(0, len(keys), block, dtype=np.int64))).to_pylist()
    idx_schema = pa.schema([pa.field("key", pa.binary(), nullable=False)],
                           metadata={BLOCK_KEYS_META: json.dumps([k.hex() for k in first_keys]).encode()})
    idx_buf = to_parquet_bytes(pa.Table.from_arrays([keys], schema=idx_schema), compression="LZ4",
                                use_dictionary=False, column_encoding={"key": "DELTA_BYTE_ARRAY"},
                                row_group_size=block, write_statistics=False)
    idx_path = f"{rowset_dir}/pkindex.parquet"
    idx_size = storage.write(idx_path, idx_buf)
    written.append(idx_path)
    # The keys just written are the index a lookup reads whole (as the bloom filter is cached
    # below): the first lookup after a load then costs what a warm one does, not a read, a
    # checksum and a decode of the index.
    FILE_CACHE.put(storage, f"{idx_path}#all", keys, keys.nbytes, idx_size, index=True)
    layout = (first_keys, min(block, len(keys)) or 1)        # as _block_layout reads it back
    _cache_layout(storage, idx_path, idx_size, layout, verified=True)
    return FileRef(idx_path, idx_size, crc32=zlib.crc32(idx_buf))


def write_bloom(storage: Storage, rowset_dir: str, keys: pa.Array, written: list[str]) -> FileRef:
    """A rowset's bloom filter (§7), from its encoded keys."""
    bloom = SplitBlockBloomFilter.build(keys)
    bloom_path = f"{rowset_dir}/bloom.bin"
    bloom_bytes = bloom.to_bytes()
    storage.write(bloom_path, bloom_bytes)
    written.append(bloom_path)
    FILE_CACHE.put(storage, bloom_path, bloom, bloom.nbytes, len(bloom_bytes), index=True)
    return FileRef(bloom_path, len(bloom_bytes), crc32=zlib.crc32(bloom_bytes))


def rowset_meta(rowset_id: str, tablet: str, keys: pa.Array, base: FileRef, stats: dict,
                pk_index: FileRef, bloom: FileRef) -> RowSetMeta:
    """The descriptor of a rowset whose data and key files are written."""
    return RowSetMeta(rowset_id, tablet, len(keys), keys[0].as_py(), keys[-1].as_py(), (base,), pk_index, bloom, stats)


# --- reading -----------------------------------------------------------------------------

def load_bloom(storage: Storage, rowset: RowSetMeta) -> BloomFilter | SplitBlockBloomFilter:
    b = FILE_CACHE.get(storage, rowset.bloom.path, rowset.bloom.size)
    if b is None:
        try:
            data = storage.read(rowset.bloom.path)
        except OSError as e:
            raise wrap_read_error(rowset.bloom.path, e) from None
        verify_file_bytes(rowset.bloom, data, "bloom filter file")
        b = read_bloom(data, rowset.bloom.path)
        FILE_CACHE.put(storage, rowset.bloom.path, b, b.nbytes, rowset.bloom.size, index=True)
    return b


def _load_verified_pk_index(storage: Storage, rowset: RowSetMeta) -> tuple[pa.Array, tuple[list[bytes], int]]:
    """A format-3 PK index: read whole and checked against its CRC-32, since its block first keys
    sit in the Parquet footer, which no page CRC covers. Caches the keys and the block layout."""
    ref = rowset.pk_index
    pf = verified_parquet_file(storage, ref, "PK index file")
    try:
        full = pf.read(columns=["key"]).column(0).combine_chunks()
        layout = _block_layout(pf)
    except (OSError, pa.ArrowException, KeyError, ValueError) as e:
        raise wrap_read_error(ref.path, e) from None
    if len(full) != rowset.num_rows:
        raise CorruptFileError(f"PK index {ref.path} has {len(full)} keys, the rowset has {rowset.num_rows} rows")
    _cache_whole_index(storage, ref, full)
    _cache_layout(storage, ref.path, ref.size, layout, verified=True)
    return full, layout


def _cache_layout(storage: Storage, path: str, size: int, layout: tuple[list[bytes], int],
                  verified: bool = False) -> None:
    """A PK index's block layout, and (`verified`) the mark that its bytes matched the log's CRC-32."""
    FILE_CACHE.put(storage, f"{path}#layout", layout, sum(len(k) for k in layout[0]) + 64, size, index=True)
    if verified:
        FILE_CACHE.put(storage, f"{path}#verified", True, 16, size, index=True)


def pk_index_verified(storage: Storage, rowset: RowSetMeta) -> bool:
    """Was this format-3 PK index checked whole against its CRC-32 in this process (its blocks
    may then be read alone)?"""
    ref = rowset.pk_index
    return ref.crc32 is not None and FILE_CACHE.get(storage, f"{ref.path}#verified", ref.size) is not None


def _block_layout(pf: pq.ParquetFile) -> tuple[list[bytes], int]:
    raw = pf.schema_arrow.metadata[BLOCK_KEYS_META]
    firsts = [bytes.fromhex(h) for h in json.loads(raw)]
    block = pf.metadata.row_group(0).num_rows if pf.metadata.num_row_groups else 1
    return firsts, block


def pk_block_first_keys(storage: Storage, rowset: RowSetMeta) -> tuple[list[bytes], int]:
    """First key of each PK index block, and the block size in rows."""
    if rowset.pk_index.crc32 is not None:
        ref = rowset.pk_index
        layout = FILE_CACHE.get(storage, f"{ref.path}#layout", ref.size)
        if layout is not None:
            return layout
        if not pk_index_verified(storage, rowset):
            return _load_verified_pk_index(storage, rowset)[1]
        layout = _block_layout(parquet_file(storage, ref))     # verified once: its footer will do
        _cache_layout(storage, ref.path, ref.size, layout)
        return layout
    pf = parquet_file(storage, rowset.pk_index)
    return _block_layout(pf)


def own_piece(col: pa.ChunkedArray, offset: int, n: int, groups: int) -> pa.Array:
    """Rows [offset, offset + n) of a column read from `groups` row groups, to cache alone: a
    copy when several were read (pyarrow returns them as one chunk, and a slice would keep all
    of it alive while the cache counts the slice)."""
    piece = col.slice(offset, n)
    return one_array(piece) if groups == 1 else pa.concat_arrays(piece.chunks or [pa.array([], col.type)])


def read_pk_blocks(storage: Storage, rowset: RowSetMeta, blocks: Sequence[int]) -> pa.Array:
    """Encoded keys of the given PK index blocks, concatenated in block order.

    A format-3 index is verified whole on first use (its block first keys sit in the footer,
    which no page CRC covers); once it has been, a block is read alone (a ranged read of its
    row group) and cached alone, so an index pushed out of the block cache costs a lookup the
    blocks it hits, not a read and a check of the whole file.
    """
    ref = rowset.pk_index
    full = FILE_CACHE.get(storage, f"{ref.path}#all", ref.size)
    if full is None and ref.crc32 is not None and not pk_index_verified(storage, rowset):
        full = read_pk_index(storage, rowset)
    if full is not None:
        firsts, block = pk_block_first_keys(storage, rowset)
        return pa.concat_arrays([full.slice(b * block, block) for b in blocks]) if blocks else full.slice(0, 0)
    got = {b: FILE_CACHE.get(storage, f"{ref.path}#blk{b}", ref.size) for b in blocks}
    missing = sorted(b for b, v in got.items() if v is None)
    if missing:
        pf = parquet_file(storage, ref)
        try:
            t = pf.read_row_groups(missing, columns=["key"], use_threads=False)
        except (OSError, pa.ArrowException) as e:
            raise wrap_read_error(ref.path, e) from None
        md, col, offset = pf.metadata, t.column(0), 0
        for b in missing:
            n = md.row_group(b).num_rows
            got[b] = own_piece(col, offset, n, len(missing))
            offset += n
            FILE_CACHE.put(storage, f"{ref.path}#blk{b}", got[b], got[b].nbytes, ref.size, index=True)
        if FILE_CACHE.get(storage, f"{ref.path}#all", ref.size) is not None:
            FILE_CACHE.drop(storage, [f"{ref.path}#blk"])     # cached whole meanwhile (another thread)
    parts = [got[b] for b in blocks]
    return pa.concat_arrays(parts) if parts else pa.array([], pa.binary())


def read_pk_index(storage: Storage, rowset: RowSetMeta) -> pa.Array:
    """The whole PK index: encoded keys in rowid order."""
    key = f"{rowset.pk_index.path}#all"
    full = FILE_CACHE.get(storage, key, rowset.pk_index.size)
    if full is None and rowset.pk_index.crc32 is not None:
        return _load_verified_pk_index(storage, rowset)[0]
    if full is None:
        pf = parquet_file(storage, rowset.pk_index)
        try:
            full = pf.read(columns=["key"]).column(0).combine_chunks()
        except (OSError, pa.ArrowException) as e:
            raise wrap_read_error(rowset.pk_index.path, e) from None
        if len(full) != rowset.num_rows:
            raise CorruptFileError(f"PK index {rowset.pk_index.path} has {len(full)} keys, "
                                   f"the rowset has {rowset.num_rows} rows")
        _cache_whole_index(storage, rowset.pk_index, full)
    return full


def _cache_whole_index(storage: Storage, ref: FileRef, keys: pa.Array) -> None:
    """The index's keys, cached whole: its blocks cached alone go (the same keys twice)."""
    FILE_CACHE.put(storage, f"{ref.path}#all", keys, keys.nbytes, ref.size, index=True)
    FILE_CACHE.drop(storage, [f"{ref.path}#blk"])       # after the put: read_pk_blocks checks #all after its own


def dictionary_columns(md: pq.FileMetaData, groups: Sequence[int], names: Sequence[str]) -> list[str]:
    """The string or binary columns of `names` whose chunks in `groups` all have a dictionary page:
    read as dictionaries, a lookup decodes its hits alone, and a scan decodes the column by one
    take of the dictionary (measured 2x faster than Parquet's dense decode, which appends value
    by value). A plain chunk read so would be dictionary-encoded by the reader (dearer than
    decoding it), so it is read as it is."""
    index = {md.schema.column(j).name: j for j in range(md.num_columns)}
    out = []
    for nm in names:
        j = index.get(nm)
        if j is None or md.schema.column(j).physical_type not in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY") \
                or md.schema.column(j).logical_type.type not in ("STRING", "NONE"):
            continue
        if all(md.row_group(g).column(j).has_dictionary_page for g in groups):
            out.append(nm)
    return out


def columns_by_file(rowset: RowSetMeta, columns: Sequence[Column],
                     n: int) -> tuple[dict[int, pa.Array], dict[FileRef, list[Column]]]:
    """The columns to read grouped by the base file holding them; columns written before they
    were added (in no file) come back already, as n values of their read default, or NULL."""
    out: dict[int, pa.Array] = {}
    by_file: dict[FileRef, list[Column]] = {}
    for c in columns:
        ref = rowset.base_file_for(c.id)
        if ref is None:
            out[c.id] = pa.nulls(n, c.arrow_type) if c.read_default is None else \
                pa.nulls(n, c.arrow_type).fill_null(pa.scalar(c.read_default, c.arrow_type))
        else:
            by_file.setdefault(ref, []).append(c)
    return out, by_file


def read_base_columns(storage: Storage, rowset: RowSetMeta, columns: Sequence[Column],
                      start: int = 0, stop: int | None = None) -> dict[int, pa.Array]:
    """Base values of `columns` for rowids [start, stop); reads only the row groups needed.

    Columns absent from the rowset (added later) are materialized from their default.
    """
    stop = rowset.num_rows if stop is None else stop
    n = stop - start
    out, by_file = columns_by_file(rowset, columns, n)

    def read_file(item):
        ref, cols = item
        whole = start == 0 and stop == rowset.num_rows
        names = [field_name(c.id) for c in cols]
        # strings dictionary-encoded on disk are read as dictionaries and decoded by one take
        # (the cast below): see dictionary_columns
        strings = [nm for c, nm in zip(cols, names) if c.type.is_variable_width]
        # A read of every column and row needs all the bytes anyway: check them against the log's
        # CRC-32 too. Other reads rely on the page CRCs (check() verifies every file whole).
        if whole and ref.crc32 is not None and len(cols) == len(ref.column_ids):
            pf = verified_parquet_file(storage, ref, "base file", dictionary=lambda md: dictionary_columns(
                md, range(md.num_row_groups), strings) if strings else [])
        else:
            meta = FILE_CACHE.get(storage, ref.path + "#footer", ref.size) if strings else None
            as_dict = dictionary_columns(meta, range(meta.num_row_groups), strings) if meta is not None else None
            pf = parquet_file(storage, ref, read_dictionary=as_dict or None)
        try:
            if whole:
                prefetch_columns(pf, range(pf.metadata.num_row_groups), names)
                t = pf.read(columns=names, use_threads=True)
                offset = 0
            else:
                md = pf.metadata
                bounds = np.cumsum([0] + [md.row_group(i).num_rows for i in range(md.num_row_groups)])
                first = int(np.searchsorted(bounds, start, side="right") - 1)
                last = int(np.searchsorted(bounds, stop, side="left"))
                prefetch_columns(pf, range(first, last), names)
                t = pf.read_row_groups(list(range(first, last)), columns=names, use_threads=True)
                offset = start - int(bounds[first])
        except (OSError, pa.ArrowException) as e:
            raise wrap_read_error(ref.path, e) from None
        if t.num_rows < offset + n:
            raise CorruptFileError(f"base file {ref.path} has fewer rows than the rowset's {rowset.num_rows}")
        read = dict(zip(names, t.columns))
        del t                    # each column read is freed once cast (a dictionary's indices)
        got = {}
        for c, name in zip(cols, names):
            arr = read.pop(name).slice(offset, n)
            if arr.type != c.arrow_type:
                arr = arr.cast(c.arrow_type)
            got[c.id] = arr
        return got
    items = list(by_file.items())
    # Column groups of one rowset are read side by side (a separate pool: never nested in itself).
    for got in (_IO_POOL.map(read_file, items) if len(items) > 1 else map(read_file, items)):
        out.update(got)
    return out


_IO_POOL = ThreadPoolExecutor(4, thread_name_prefix="tableformat-io")
