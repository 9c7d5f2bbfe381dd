"""A key lookup's hit rows read from a rowset's base files (specs/format.md §5, §9.1).

Parquet is decoded by row group (pyarrow 26 reads no row range within one), so a hit costs
the decode of its row group's requested columns, and as little of it as the reader allows:
each hit row group is read on its own (one read of many concatenated them, then each was
copied out again to be cached alone: ~25% more CPU), and a string or binary column whose
chunks are dictionary-encoded is read as its dictionary indices, the values decoded only
at the hit rows (issue 39: the decode of a low-cardinality string column was half of a
row group's). The decoded row groups stay in the block cache as Kudu's decoded blocks do,
dictionary-encoded (smaller: more of them fit), in the data tier: past the cache they
evict one another, never the rowset's delta files that every lookup of it reads (kept with
the key files; at 4M rows each warm lookup evicted and re-read them). The hit rows' base
values also go to the row cache (`FILE_CACHE.rows`, RocksDB's row_cache): when a lookup's
row groups outgrow the block cache, looking the same keys up again decodes nothing (issue 39:
at 16M rows the warm 1,000-key lookup decoded ~635 row groups again).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .batch import one_array
from .cfile_set import FILE_CACHE, field_name, parquet_file, prefetch_columns, wrap_read_error
from .diskrowset import columns_by_file, dictionary_columns
from .errors import CorruptFileError
from .metadata import FileRef, RowSetMeta
from .schema import Column
from .storage import Storage


def decode_row_groups(storage: Storage, ref: FileRef, md: pq.FileMetaData, bounds: np.ndarray,
                      groups: list[int], cols: Sequence[Column]) -> dict[tuple[int, str], pa.Array]:
    """Row groups `groups` of a base file decoded, one piece per (group, field), each left in the
    block cache for the lookups that hit it next. Dictionary-encoded string columns come back
    as dictionary arrays (`take_hits` decodes them)."""
    names = [field_name(c.id) for c in cols]
    as_dict = dictionary_columns(md, groups, names)
    out = {}
    try:
        pf = parquet_file(storage, ref, read_dictionary=as_dict or None)
        prefetch_columns(pf, groups, names)
        for g in groups:
            t = pf.read_row_groups([g], columns=names, use_threads=False)
            if t.num_rows != int(bounds[g + 1] - bounds[g]):
                raise CorruptFileError(f"base file {ref.path} holds fewer rows than its footer says")
            for c, nm in zip(cols, names):
                piece = one_array(t.column(nm))
                if nm not in as_dict and piece.type != c.arrow_type:
                    piece = piece.cast(c.arrow_type)
                out[(g, nm)] = piece
                FILE_CACHE.put(storage, f"{ref.path}#rg{g}#{nm}", piece, piece.nbytes, ref.size)
    except (OSError, pa.ArrowException) as e:
        raise wrap_read_error(ref.path, e) from None
    return out


def take_hits(piece: pa.Array, idx: pa.Array, col: Column) -> pa.Array:
    """The values of one cached row group piece at `idx`, as the column's type."""
    got = piece.take(idx)
    if pa.types.is_dictionary(got.type):
        got = got.dictionary_decode()
    return got if got.type == col.arrow_type else got.cast(col.arrow_type)


def _bounds(storage: Storage, ref: FileRef) -> tuple[np.ndarray, pq.FileMetaData | None]:
    """Row group bounds of a base file (cached with its key files), and its footer if read."""
    bounds = FILE_CACHE.get(storage, ref.path + "#rg_bounds", ref.size)
    if bounds is not None:
        return bounds, None
    md = parquet_file(storage, ref).metadata
    bounds = np.cumsum([0] + [md.row_group(i).num_rows for i in range(md.num_row_groups)])
    FILE_CACHE.put(storage, ref.path + "#rg_bounds", bounds, bounds.nbytes, ref.size, index=True)
    return bounds, md


def read_base_rows(storage: Storage, rowset: RowSetMeta, columns: Sequence[Column],
                   rowids: np.ndarray) -> dict[int, pa.Array]:
    """Base values of `columns` at `rowids` (sorted, unique): a key lookup's hits, from only the
    row groups holding them; a row group read once stays in the block cache, so later lookups
    in it decode nothing."""
    n = len(rowids)
    out, by_file = columns_by_file(rowset, columns, n)
    for ref, cols in by_file.items():
        written = FILE_CACHE.get(storage, ref.path + "#written", ref.size)     # a load's columns, as written
        if written is not None:
            idx = pa.array(rowids)
            for c in [c for c in cols if field_name(c.id) in written]:
                out[c.id] = written[field_name(c.id)].take(idx)
            cols = [c for c in cols if field_name(c.id) not in written]
            if not cols:
                continue
        cols = _from_hit_rows(storage, ref, cols, rowids, out)
        if not cols:
            continue
        bounds, md = _bounds(storage, ref)
        if bounds[-1] < rowset.num_rows:
            raise CorruptFileError(f"base file {ref.path} has fewer rows than the rowset's {rowset.num_rows}")
        rg = np.searchsorted(bounds, rowids, side="right") - 1
        groups = np.unique(rg).tolist()
        names = [field_name(c.id) for c in cols]
        chunks = {(g, nm): FILE_CACHE.get(storage, f"{ref.path}#rg{g}#{nm}", ref.size)
                  for g in groups for nm in names}
        missing = sorted({g for (g, nm), v in chunks.items() if v is None})
        if missing:
            md = md or parquet_file(storage, ref).metadata
            chunks.update(decode_row_groups(storage, ref, md, bounds, missing, cols))
        # rowids are sorted: each hit row group's hits are a run of them, taken from that group
        # alone (a take over the groups as one chunked array concatenated them all first)
        cuts = np.r_[0, np.flatnonzero(np.diff(rg)) + 1, len(rg)]
        local = rowids - bounds[rg]
        runs = [(int(rg[a]), pa.array(local[a:b])) for a, b in zip(cuts[:-1], cuts[1:])]
        for c, nm in zip(cols, names):
            parts = [take_hits(chunks[(g, nm)], idx, c) for g, idx in runs]
            out[c.id] = parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
            _remember_hit_rows(storage, ref, nm, rowids, out[c.id])
    return out


# Rows one row cache entry (a base file's column) holds at most: past it, the entry keeps the
# latest lookup's hits alone, and a lookup hitting more rows than this is not remembered (it
# would push the rest of the row cache out for rows a point lookup is unlikely to ask again).
HIT_ROWS = 1 << 16


def _from_hit_rows(storage: Storage, ref: FileRef, cols: list[Column], rowids: np.ndarray,
                   out: dict[int, pa.Array]) -> list[Column]:
    """Fill `out` for the columns whose row cache entry holds every one of `rowids`; return the
    others. A warm lookup of the same keys then decodes no row group, however many it hit."""
    rows, left = FILE_CACHE.rows, []
    for c in cols:
        got = rows.get(storage, f"{ref.path}#hits#{field_name(c.id)}", ref.size)
        if got is not None:
            have, values = got
            pos = np.minimum(np.searchsorted(have, rowids), len(have) - 1)
            if (have[pos] == rowids).all():
                out[c.id] = values.take(pa.array(pos))
                continue
        left.append(c)
    return left


def _remember_hit_rows(storage: Storage, ref: FileRef, nm: str, rowids: np.ndarray, values: pa.Array) -> None:
    """Add a lookup's hit rows of one column to its row cache entry (sorted by rowid, each once)."""
    if len(rowids) > HIT_ROWS:
        return
    key = f"{ref.path}#hits#{nm}"
    rows = FILE_CACHE.rows
    old = rows.get(storage, key, ref.size)
    if old is not None and len(old[0]) + len(rowids) <= HIT_ROWS:
        both = np.concatenate([rowids, old[0]])
        rowids, first = np.unique(both, return_index=True)      # a rowid in both: this lookup's value
        values = pa.concat_arrays([values, old[1].cast(values.type)]).take(pa.array(first))
    if old is not None:
        rows.drop_key(storage, key, ref.size)
    rows.put(storage, key, (rowids, values), rowids.nbytes + values.nbytes, ref.size)
