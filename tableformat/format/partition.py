"""Partitioning into tablets: hash levels times range partitions (specs/format.md §4).

A row's tablet is one range partition (by its encoded range key) and one bucket
per hash level (MurmurHash2_64 of the level's encoded columns, mod buckets).
Partition metadata refers to columns by ID. Assignment and pruning are
whole-column operations. See `specs/format.md`, section "Partitioning".
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import arguments as arg
from .errors import NoRangePartitionError, PartitionSchemaError, SchemaError
from .hashing import murmur2_64
from .keyencoder import encode_key, encode_keys, fixed_key_numbers, prefix_lengths
from .comparison import exact_value, to_python
from .schema import Column, Schema, value_from_json, value_to_json

MAX_TABLETS = 10_000


_SAMPLE = 4096   # values looked at to decide whether a hash level's values repeat


@dataclass(frozen=True)
class HashPartition:
    """One hash level: `buckets` buckets over a subset of the key columns."""

    columns: tuple[str, ...]
    buckets: int
    seed: int = 0

    def __init__(self, columns: Sequence[str] | str, buckets: int, seed: int = 0):
        cols = arg.names(columns, "hash partition columns", none=False, error=PartitionSchemaError)
        # buckets and seed are checked when the partitioning is resolved (create_table)
        object.__setattr__(self, "columns", tuple(cols))
        object.__setattr__(self, "buckets", buckets)
        object.__setattr__(self, "seed", seed)


@dataclass(frozen=True)
class RangePartition:
    """Range partitioning on key columns: bounds [lower, upper) plus split points.

    With no bounds the range is unbounded; `None` in a bound means unbounded on that side.
    """

    columns: tuple[str, ...] | None = None
    bounds: tuple = ()
    splits: tuple = ()

    def __init__(self, columns: Sequence[str] | str | None = None, bounds: Sequence = (), splits: Sequence = ()):
        cols = arg.names(columns, "range partition columns", error=PartitionSchemaError)
        bounds = arg.sequence(() if bounds is None else bounds, "range partition bounds", error=PartitionSchemaError)
        splits = arg.sequence(() if splits is None else splits, "range partition splits", error=PartitionSchemaError)
        object.__setattr__(self, "columns", tuple(cols) if cols is not None else None)
        object.__setattr__(self, "bounds", bounds)
        object.__setattr__(self, "splits", splits)


@dataclass(frozen=True)
class PartitionSchema:
    """The user's partitioning: zero or more hash levels and one range level."""

    hash: tuple[HashPartition, ...] = ()
    range: RangePartition | None = None

    def __init__(self, hash: Sequence[HashPartition] = (), range: RangePartition | None = None):
        if isinstance(hash, HashPartition):
            hash = [hash]
        hash = arg.sequence(() if hash is None else hash, "hash", error=PartitionSchemaError)
        for h in hash:
            arg.instance(h, "each hash level", HashPartition, "a tf.HashPartition", error=PartitionSchemaError)
        arg.instance(range, "range", RangePartition, "a tf.RangePartition", none=True, error=PartitionSchemaError)
        object.__setattr__(self, "hash", hash)
        object.__setattr__(self, "range", range)


# --- resolved, stored form -----------------------------------------------------------

@dataclass(frozen=True)
class HashLevel:
    column_ids: tuple[int, ...]
    buckets: int
    seed: int


@dataclass(frozen=True)
class RangeBound:
    """One range partition [lower, upper) over encoded range keys (None = unbounded)."""

    id: int
    lower: bytes | None
    upper: bytes | None
    lower_values: tuple | None = None   # for display only
    upper_values: tuple | None = None

    def overlaps(self, lo: bytes | None, hi: bytes | None) -> bool:
        """Does [lower, upper) meet the key interval [lo, hi) (None = unbounded)?"""
        if hi is not None and self.lower is not None and self.lower >= hi:
            return False
        if lo is not None and self.upper is not None and self.upper <= lo:
            return False
        return True


@dataclass(frozen=True)
class Partitioning:
    """Hash levels, range columns and the current range partitions, by column ID."""

    hash_levels: tuple[HashLevel, ...]
    range_column_ids: tuple[int, ...]
    ranges: tuple[RangeBound, ...]
    next_range_id: int = field(default=0)

    # tablets ---------------------------------------------------------------------------
    @property
    def bucket_counts(self) -> tuple[int, ...]:
        return tuple(h.buckets for h in self.hash_levels)

    def tablet_id(self, range_id: int, buckets: Sequence[int]) -> str:
        return f"r{range_id}" + "".join(f"-h{b}" for b in buckets)

    def tablet_ids(self) -> list[str]:
        out = []
        for rb in self.ranges:
            for combo in itertools.product(*[range(b) for b in self.bucket_counts]):
                out.append(self.tablet_id(rb.id, combo))
        return out

    # assignment ------------------------------------------------------------------------
    def assign(self, schema: Schema, table: pa.Table, strict: bool = True, keys: pa.Array | None = None,
               series: np.ndarray | None = None) -> tuple[np.ndarray, list[str]]:
        """Tablet ordinal per row and the tablet ids.

        Rows in no range partition raise NoRangePartitionError, or get -1 when not strict.
        `keys`, the rows' encoded primary keys when the caller has them, spare encoding the
        columns again for a level on a prefix of the key (and a range on the whole key);
        `series`, numbers of the runs of rows equal in every key column but the last
        (insert.series_ids), spare finding the runs of such a level's values again.
        """
        range_pos = self._range_positions(schema, table, strict, keys)
        ordinal = range_pos.astype(np.int64)
        for level in self.hash_levels:
            ordinal = ordinal * level.buckets + self.bucket_of(schema, table, level, keys, series).astype(np.int64)
        ordinal[range_pos < 0] = -1
        return ordinal, self.tablet_ids()

    def bucket_of(self, schema: Schema, table: pa.Table, level: HashLevel,
                  keys: pa.Array | None = None, series: np.ndarray | None = None) -> np.ndarray:
        kcols = schema.key_columns
        if keys is not None and list(level.column_ids) == [c.id for c in kcols[:len(level.column_ids)]]:
            columns = [table.column(c.name) for c in kcols]
            lengths = prefix_lengths(columns, [c.type for c in kcols], len(level.column_ids))
            if lengths is not None:           # the level's encoding is a prefix of each key: hash that
                if series is not None and len(level.column_ids) < len(kcols):
                    starts = _series_starts(series)    # runs of the whole key prefix: within the level's
                else:
                    starts = _run_starts(columns[:len(level.column_ids)])
                if starts is not None:
                    run_hash = murmur2_64(keys.take(pa.array(starts)), level.seed, lengths[starts])
                    return np.repeat(run_hash % np.uint64(level.buckets), np.diff(np.r_[starts, len(keys)]))
                combos = _value_combinations(columns[:len(level.column_ids)])
                if combos is None:
                    return murmur2_64(keys, level.seed, lengths) % np.uint64(level.buckets)
                rows, of_row = combos        # interleaved series (time order): each combination once
                return (murmur2_64(keys.take(pa.array(rows)), level.seed, lengths[rows])
                        % np.uint64(level.buckets))[of_row]
        cols = [schema.by_id(i) for i in level.column_ids]
        columns = [table.column(c.name) for c in cols]
        combos = _value_combinations(columns)
        if combos is not None:
            rows, of_row = combos
            enc = encode_keys([c.take(pa.array(rows)) for c in columns], [c.type for c in cols])
            return (murmur2_64(enc, level.seed) % np.uint64(level.buckets))[of_row]
        enc = encode_keys(columns, [c.type for c in cols])
        if len(enc) >= 4 * _SAMPLE and len(pc.unique(enc.slice(0, _SAMPLE))) * 4 <= _SAMPLE:
            # Hash columns repeat (hosts, tenants): hash each distinct value once.
            d = pc.dictionary_encode(enc)
            return (murmur2_64(d.dictionary, level.seed) % np.uint64(level.buckets))[d.indices.to_numpy()]
        return murmur2_64(enc, level.seed) % np.uint64(level.buckets)

    def range_keys(self, schema: Schema, table: pa.Table) -> pa.Array:
        cols = [schema.by_id(i) for i in self.range_column_ids]
        return encode_keys([table.column(c.name) for c in cols], [c.type for c in cols])

    def _range_positions(self, schema: Schema, table: pa.Table, strict: bool = True,
                         keys: pa.Array | None = None) -> np.ndarray:
        n = table.num_rows
        pos = np.full(n, -1, dtype=np.int64)
        if len(self.ranges) == 1 and self.ranges[0].lower is None and self.ranges[0].upper is None:
            pos[:] = 0
            return pos
        rcols = [schema.by_id(i) for i in self.range_column_ids]
        numbers = fixed_key_numbers([table.column(c.name) for c in rcols], [c.type for c in rcols])
        width = sum(c.type.key_width for c in rcols) if numbers is not None else 0
        if numbers is not None and all(b is None or len(b) == width
                                       for rb in self.ranges for b in (rb.lower, rb.upper)):
            # A fixed-width range key of up to 8 bytes (a time, an id): compared as numbers.
            def number(bound: bytes) -> np.uint64:
                return np.uint64(int.from_bytes(bound.ljust(8, b"\x00"), "big"))
            for i, rb in enumerate(self.ranges):
                m = np.ones(n, dtype=bool)
                if rb.lower is not None:
                    m &= numbers >= number(rb.lower)
                if rb.upper is not None:
                    m &= numbers < number(rb.upper)
                pos[m] = i
            return self._checked(schema, table, pos, strict)
        if keys is None or list(self.range_column_ids) != [c.id for c in schema.key_columns]:
            keys = self.range_keys(schema, table)        # (on the whole key, the range key is the key)
        for i, rb in enumerate(self.ranges):
            m = np.ones(n, dtype=bool)
            if rb.lower is not None:
                m &= pc.greater_equal(keys, pa.scalar(rb.lower, pa.binary())).to_numpy(zero_copy_only=False)
            if rb.upper is not None:
                m &= pc.less(keys, pa.scalar(rb.upper, pa.binary())).to_numpy(zero_copy_only=False)
            pos[m] = i
        return self._checked(schema, table, pos, strict)

    def _checked(self, schema: Schema, table: pa.Table, pos: np.ndarray, strict: bool) -> np.ndarray:
        bad = np.nonzero(pos < 0)[0]
        if len(bad) and strict:
            names = [schema.by_id(i).name for i in self.range_column_ids]
            first = [tuple(table.column(c)[int(r)].as_py() for c in names) for r in bad[:3]]
            raise NoRangePartitionError(
                f"{len(bad)} rows fall in no range partition of ({', '.join(names)}) "
                f"(first: {', '.join(map(repr, first))}); add a range partition that covers them")
        return pos

    # serialization -----------------------------------------------------------------------
    def to_json(self, schema: Schema) -> dict:
        rcols = [schema.by_id(i) for i in self.range_column_ids]

        def vals(v):
            return None if v is None else [value_to_json(c.type, x) for c, x in zip(rcols, v)]
        return {
            "hash": [{"column_ids": list(h.column_ids), "buckets": h.buckets, "seed": h.seed}
                     for h in self.hash_levels],
            "range_column_ids": list(self.range_column_ids),
            "ranges": [{"id": r.id, "lower": r.lower.hex() if r.lower is not None else None,
                        "upper": r.upper.hex() if r.upper is not None else None,
                        "lower_values": vals(r.lower_values), "upper_values": vals(r.upper_values)}
                       for r in self.ranges],
            "next_range_id": self.next_range_id,
        }

    @staticmethod
    def from_json(d: dict, schema: Schema) -> "Partitioning":
        rcols = [schema.by_id(i) for i in d["range_column_ids"]]

        def vals(v):
            return None if v is None else tuple(value_from_json(c.type, x) for c, x in zip(rcols, v))
        return Partitioning(
            tuple(HashLevel(tuple(h["column_ids"]), h["buckets"], h["seed"]) for h in d["hash"]),
            tuple(d["range_column_ids"]),
            tuple(RangeBound(r["id"], bytes.fromhex(r["lower"]) if r["lower"] is not None else None,
                             bytes.fromhex(r["upper"]) if r["upper"] is not None else None,
                             vals(r.get("lower_values")), vals(r.get("upper_values")))
                  for r in d["ranges"]),
            d["next_range_id"],
        )


def _value_combinations(columns: Sequence[pa.Array | pa.ChunkedArray]) -> tuple[np.ndarray, np.ndarray] | None:
    """(one row holding each distinct combination of the columns' values, each row's
    combination number), when values repeat but not in runs (series interleaved, as metrics
    arrive in time order): a level's hash is then computed once per combination.
    None when they do not repeat (a quarter of a sample distinct), hold NULLs, or combine into
    more numbers than rows."""
    n = len(columns[0])
    if n < 4 * _SAMPLE or any(c.null_count or pa.types.is_floating(c.type) for c in columns):
        return None                     # floats: equal values (0.0, -0.0) can encode apart
    if any(len(pc.unique(c.slice(0, _SAMPLE))) * 4 > _SAMPLE for c in columns):
        return None
    of_row = np.zeros(n, dtype=np.int64)
    size = 1
    for c in columns:
        distinct = pc.unique(c)
        if size * len(distinct) > n:
            return None
        of_row *= len(distinct)
        of_row += pc.index_in(c, value_set=distinct).to_numpy(zero_copy_only=False)
        size *= len(distinct)
    first = np.full(size, -1, dtype=np.int64)
    first[of_row] = np.arange(n, dtype=np.int64)        # some row of each combination present
    present = np.flatnonzero(first >= 0)
    number = np.zeros(size, dtype=np.int64)
    number[present] = np.arange(len(present), dtype=np.int64)
    return first[present], number[of_row]


def _series_starts(series: np.ndarray) -> np.ndarray | None:
    """_run_starts from the runs' numbers (insert.series_ids)."""
    starts = np.flatnonzero(series[1:] != series[:-1]) + 1
    return None if (len(starts) + 1) * 4 > len(series) else np.r_[0, starts]


def _run_starts(columns: Sequence[pa.Array | pa.ChunkedArray]) -> np.ndarray | None:
    """First row of each run of rows with equal values in `columns`, when rows come in runs
    (a time series' rows together, data sorted by key): each run is then hashed once.
    None when runs are short (fewer than 4 rows on average)."""
    n = len(columns[0])
    if n < 2 or (n > 2 * _SAMPLE and _run_starts([c.slice(0, _SAMPLE) for c in columns]) is None):
        return None
    starts = np.flatnonzero(~same_as_previous(columns)) + 1
    if (len(starts) + 1) * 4 > n:
        return None
    return np.r_[0, starts]


def same_as_previous(columns: Sequence[pa.Array | pa.ChunkedArray]) -> np.ndarray:
    """Per row but the first, whether it equals the row before it in every column."""
    n = len(columns[0])
    same = None
    for col in columns:
        eq = pc.equal(col.slice(1), col.slice(0, n - 1))
        same = eq if same is None else pc.and_(same, eq)
    if isinstance(same, pa.ChunkedArray):
        same = same.combine_chunks()
    return same.to_numpy(zero_copy_only=False)


def _as_tuple(v: Any, n: int, what: str) -> tuple:
    if n == 1 and not isinstance(v, (tuple, list)):
        return (v,)
    if not isinstance(v, (tuple, list)) or len(v) != n:
        raise PartitionSchemaError(f"{what} {v!r} must give {n} value(s), one per range column")
    return tuple(v)


def encode_bound(rcols: Sequence, v: Any, what: str) -> tuple[bytes | None, tuple | None]:
    """A user's range bound (a value, or a tuple per range column; None = unbounded), encoded."""
    if v is None:
        return None, None
    if not rcols:
        raise PartitionSchemaError("range bounds need range columns")
    t = _as_tuple(v, len(rcols), what)
    try:
        if any(x is None for x in t):
            raise PartitionSchemaError(f"{what} {v!r} has a NULL; use None for the whole bound instead")
        scal = tuple(exact_value(c.type, x, f"{what} for {c.name!r}") for c, x in zip(rcols, t))
    except SchemaError as e:
        raise PartitionSchemaError(str(e)) from None
    return encode_key(scal, [c.type for c in rcols]), tuple(to_python(c.type, x) for c, x in zip(rcols, scal))


def resolve(spec: PartitionSchema | None, schema: Schema) -> Partitioning:
    """Validate the user's PartitionSchema against the schema and encode its bounds."""
    spec = spec or PartitionSchema()
    if not isinstance(spec, PartitionSchema):
        raise PartitionSchemaError(f"partitioning must be a tf.PartitionSchema, got {type(spec).__name__}")
    levels = _hash_levels(spec.hash, schema)
    rp = spec.range or RangePartition()
    rcols = _range_columns(rp, schema)
    parts = _split(_range_bounds(rp, rcols), rp, rcols)
    ranges = tuple(RangeBound(i, lo, hi, lov, hiv) for i, (lo, hi, lov, hiv) in enumerate(parts))
    p = Partitioning(tuple(levels), tuple(c.id for c in rcols), ranges, len(ranges))
    ntablets = len(ranges) * int(np.prod(p.bucket_counts or (1,)))
    if ntablets > MAX_TABLETS:
        raise PartitionSchemaError(f"{ntablets} tablets is more than the limit of {MAX_TABLETS}")
    return p


def _hash_levels(spec: Sequence[HashPartition], schema: Schema) -> list[HashLevel]:
    """Hash levels over primary key columns, each column in one level at most."""
    pk = set(schema.primary_key)
    levels, seen = [], set()
    for h in spec:
        if not isinstance(h, HashPartition):
            raise PartitionSchemaError(f"hash levels must be tf.HashPartition, got {type(h).__name__}")
        if not h.columns:
            raise PartitionSchemaError("a hash level needs at least one column")
        for c in h.columns:
            if c not in pk:
                raise PartitionSchemaError(f"hash column {c!r} is not a primary key column")
            if c in seen:
                raise PartitionSchemaError(f"column {c!r} is in two hash levels")
        if len(set(h.columns)) != len(h.columns):
            raise PartitionSchemaError(f"hash level lists a column twice: {h.columns}")
        seen.update(h.columns)
        if not isinstance(h.buckets, int) or isinstance(h.buckets, bool) or not 2 <= h.buckets <= 1024:
            raise PartitionSchemaError(f"hash buckets must be an integer 2..1024, got {h.buckets!r}")
        if not isinstance(h.seed, int) or isinstance(h.seed, bool) or not 0 <= h.seed < 2 ** 32:
            raise PartitionSchemaError(f"hash seed must be a uint32, got {h.seed!r}")
        levels.append(HashLevel(tuple(schema.column(c).id for c in h.columns), h.buckets, h.seed))
    return levels


def _range_columns(rp: RangePartition, schema: Schema) -> list[Column]:
    """The range columns: primary key columns (all of them by default), each once."""
    pk = set(schema.primary_key)
    rnames = list(rp.columns) if rp.columns is not None else list(schema.primary_key)
    for c in rnames:
        if c not in pk:
            raise PartitionSchemaError(f"range column {c!r} is not a primary key column")
    if len(set(rnames)) != len(rnames):
        raise PartitionSchemaError(f"range columns list a column twice: {rnames}")
    return [schema.column(c) for c in rnames]


def _range_bounds(rp: RangePartition, rcols: list[Column]) -> list[list]:
    """The encoded [lower, upper) bounds, sorted; they must not overlap (one unbounded range if none)."""
    raw_bounds = list(rp.bounds) or [(None, None)]
    bounds = []
    for b in raw_bounds:
        if not isinstance(b, (tuple, list)) or len(b) != 2:
            raise PartitionSchemaError(f"each range bound is a (lower, upper) pair, got {b!r}")
        lo, lov = encode_bound(rcols, b[0], "lower bound")
        hi, hiv = encode_bound(rcols, b[1], "upper bound")
        if lo is not None and hi is not None and lo >= hi:
            raise PartitionSchemaError(f"range bound {b!r}: lower must be below upper")
        bounds.append([lo, hi, lov, hiv])
    bounds.sort(key=lambda x: (x[0] is not None, x[0] or b""))
    for a, b in zip(bounds, bounds[1:]):
        if a[1] is None or b[0] is None or a[1] > b[0]:
            raise PartitionSchemaError(f"range bounds overlap: [{a[2]}, {a[3]}) and [{b[2]}, {b[3]})")
    return bounds


def _split(bounds: list[list], rp: RangePartition, rcols: list[Column]) -> list[tuple]:
    """Apply splits inside their bounds: each cuts the one range that strictly contains it in two."""
    parts = [tuple(b) for b in bounds]
    for s in rp.splits:
        sk, sv = encode_bound(rcols, s, "split")
        for i, (lo, hi, lov, hiv) in enumerate(parts):
            if (lo is None or lo < sk) and (hi is None or sk < hi):
                parts[i:i + 1] = [(lo, sk, lov, sv), (sk, hi, sv, hiv)]
                break
        else:
            raise PartitionSchemaError(f"split {s!r} is not strictly inside any range bound")
    return parts
