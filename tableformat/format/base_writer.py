"""A rowset's base data written (§5): its base file, encodings and footer statistics chosen by
`diskrowset.base_file_layout`, column statistics for the log (§8.2), and its row groups left in the
block cache for the lookups that follow a load. The key files (PK index, bloom) and every read
are `diskrowset`'s.
"""
from __future__ import annotations

import uuid
import zlib
from typing import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from .batch import one_array
from .cfile_set import FILE_CACHE, column_stats, field_name, footer_chunks, to_parquet_bytes
from .diskrowset import base_file_layout
from .metadata import FileRef
from .schema import Column, Schema
from .storage import Storage


def write_base_file(storage: Storage, rowset_dir: str, columns: Sequence[Column], arrays: Sequence[pa.Array],
                    row_group_rows: int, warm: Sequence[int] = (), owned: bool = False) -> tuple[FileRef, dict]:
    """Write one column group of a rowset (a base Parquet file). Returns its FileRef and its
    columns' statistics (§8.2), string min/max read back from the footer the Parquet writer
    has just computed. The columns whose IDs are in `warm` are left in the block cache
    (`warm_row_groups`; `owned`: the arrays are the engine's own, cached without a copy)."""
    schema, options = base_file_layout(columns, arrays)
    table = pa.Table.from_arrays(list(arrays), schema=schema)
    buf = to_parquet_bytes(table, row_group_size=row_group_rows, **options)
    path = f"{rowset_dir}/base-{uuid.uuid4().hex[:12]}.parquet"
    size = storage.write(path, buf)
    meta = pq.read_metadata(pa.BufferReader(buf))
    if warm:
        picked = [i for i, c in enumerate(columns) if c.id in warm]
        # room left for the rowset's PK index and bloom, cached when written: about its other
        # columns' bytes (the key columns) and a few bytes a row
        reserve = sum(a.nbytes for i, a in enumerate(arrays) if i not in picked) + 4 * len(arrays[0])
        warm_row_groups(storage, path, size, meta, [columns[i] for i in picked], [arrays[i] for i in picked],
                        reserve, owned)
    return FileRef(path, size, tuple(c.id for c in columns), zlib.crc32(buf)), \
        {c.id: column_stats(c, a, footer_chunks(meta, i) if c.type.is_variable_width else None)
         for i, (c, a) in enumerate(zip(columns, arrays))}


# A rowset written by a load leaves its row groups in the block cache when they take at most this
# share of the cache and fit in its free space: a load never pushes out what is cached already
# (PK indexes and blooms, or row groups lookups decoded).
WARM_CACHE_SHARE = 0.25


def warm_row_groups(storage: Storage, path: str, size: int, meta: pq.FileMetaData, columns: Sequence[Column],
                    arrays: Sequence[pa.Array], reserve: int = 0, owned: bool = False) -> None:
    """Leave a base file's columns in the block cache as just written, one entry for the file
    (`#written`, which `base_rows.read_base_rows` takes hits from): copied once, nothing decoded, and the
    entry leaves the cache whole, so the cache counts what it holds. The first lookup after a
    load then costs what a warm one does (issue 26: decoding the hit row groups was ~90% of
    the first one). Past the cache, it goes first (`first_out`): lookups then decode only the
    row groups they hit, as without it. `reserve`: free bytes to leave in the cache. `owned`:
    the arrays are the engine's own, whole (a take of the batch's rows into key order): cached
    as they are, where a copy cost ~10% of a load's CPU (issue 39)."""
    n = len(arrays[0]) if arrays else 0
    nbytes = sum(a.nbytes for a in arrays)
    if not n or nbytes > min(FILE_CACHE.max_bytes * WARM_CACHE_SHARE, FILE_CACHE.free_bytes - reserve):
        return
    if sum(meta.row_group(i).num_rows for i in range(meta.num_row_groups)) != n:
        return
    # Copied: the arrays may be the caller's memory (Arrow wraps NumPy and pandas columns without
    # a copy), which it may reuse after the insert; and a slice would hold its whole batch.
    written = {field_name(c.id): arr if owned and arr.type == c.arrow_type and not arr.offset else
               pa.concat_arrays([arr if arr.type == c.arrow_type else arr.cast(c.arrow_type)])
               for c, arr in zip(columns, arrays)}
    nbytes = sum(a.nbytes for a in written.values())
    FILE_CACHE.put(storage, path + "#written", written, nbytes, size, first_out=True)


def write_rowset_data(storage: Storage, schema: Schema, rowset_dir: str, data: pa.Table, properties: dict,
                      written: list[str], warm: bool = True, owned: bool = False) -> tuple[FileRef, dict]:
    """A rowset's base data (rows already in key order): its base file and column statistics.
    warm: leave its non-key columns in the block cache, where a lookup reads them (its keys
    are the probe's); owned: `data` is the engine's own memory (`write_base_file`)."""
    cols = list(schema.columns)
    arrays = [one_array(data.column(c.name)) for c in cols]
    warm_ids = [c.id for c in cols if c.name not in schema.primary_key] if warm else []
    base, stats = write_base_file(storage, rowset_dir, cols, arrays, properties["row_group_rows"], warm=warm_ids,
                                  owned=owned)
    written.append(base.path)
    return base, stats
