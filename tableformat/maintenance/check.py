"""Table check: verify the invariants of a snapshot and report every violation found.

Integrity (specs/format.md §8, §12): every commit and checkpoint against its checksum, and
every referenced file against the size and CRC-32 the log recorded, each violation naming
its kind (commit, checkpoint, base file, PK index, bloom filter, delta file) and its file.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from ..format.bloom import read_bloom
from ..read.delta_tracker import deleted_mask
from ..format.deltafile import REDO, read_delta
from ..format.cfile_set import FILE_CACHE, parquet_file, read_verified
from ..format.diskrowset import read_pk_index
from ..format.errors import TableFormatError
from ..format.metadata import DeltaFileMeta, RowSetMeta, TableState
from ..format.storage import Storage
from ..log.mvcc import Timestamp
from ..log.txlog import TransactionLog, checkpoint_path, commit_path


@dataclass
class CheckReport:
    version: int
    violations: list[str] = field(default_factory=list)
    rowsets: int = 0
    files: int = 0

    @property
    def ok(self) -> bool:
        return not self.violations

    def __str__(self) -> str:
        head = f"check of version {self.version}: {self.rowsets} rowsets, {self.files} files, " \
               f"{len(self.violations)} violation(s)"
        return "\n".join([head] + [f"  - {v}" for v in self.violations])


def check(storage: Storage, log: TransactionLog, st: TableState, deep: bool = True) -> CheckReport:
    """Every violation found, not just the first, so one run tells a user all that is wrong."""
    FILE_CACHE.clear()   # read what is on storage now, not what was cached
    rep = CheckReport(st.version, rowsets=len(st.rowsets))
    bad = rep.violations
    timestamps = _check_log(log, st, bad)
    _check_tags(st, timestamps, bad)
    _check_checkpoints(log, st, timestamps, bad)
    kinds = _referenced_files(st)
    rep.files = len(kinds)
    missing = _check_files(storage, kinds, deep, bad)
    live_keys: dict[str, list[pa.Array]] = {}
    for rs in st.rowsets.values():
        if any(f.path in missing for f in rs.files):
            continue   # reported above; reading it would only repeat that
        try:
            keys = _check_rowset(storage, st, rs, deep, missing, bad)
        except TableFormatError as e:
            bad.append(f"rowset {rs.id}: {e}")
            continue
        if keys is not None:
            live_keys.setdefault(rs.tablet, []).append(keys)
    _check_unique_keys(live_keys, bad)
    return rep


def _check_log(log: TransactionLog, st: TableState, bad: list[str]) -> dict[int, int]:
    """The log: dense versions, strictly increasing timestamps, commits that pass their checksums.

    Returns each readable version's timestamp, which tags and checkpoints are checked against.
    """
    prev_ts = -1
    timestamps: dict[int, int] = {}
    for v in range(st.version + 1):
        try:
            d = log.read_commit(v)
        except TableFormatError as e:
            bad.append(f"log: {e}")
            continue
        if d.timestamp <= prev_ts:
            bad.append(f"log: {commit_path(v)} has timestamp {Timestamp(d.timestamp).iso()} not after the "
                       f"previous {Timestamp(prev_ts).iso()}")
        prev_ts = timestamps[v] = d.timestamp
    return timestamps


def _check_tags(st: TableState, timestamps: dict[int, int], bad: list[str]) -> None:
    """Tags name versions that exist, with those versions' timestamps."""
    for name, (tv, tts) in sorted(st.tags.items()):
        if timestamps.get(tv) != tts:
            bad.append(f"tag {name!r}: version {tv} at timestamp {tts} does not match the log "
                       f"({timestamps.get(tv, 'no such version')})")


def _check_checkpoints(log: TransactionLog, st: TableState, timestamps: dict[int, int],
                       bad: list[str]) -> None:
    """Checkpoints are derived data that readers skip when broken, but a broken one is still reported."""
    for c in log.listing().checkpoints:
        if c > st.version:
            continue
        try:
            cp_state, cp_history = log.read_checkpoint(c)
        except (TableFormatError, FileNotFoundError) as e:
            bad.append(f"checkpoint: {e}")
            continue
        said = [(h.version, h.timestamp) for h in cp_history] + [(c, cp_state.timestamp)]
        if any(timestamps.get(v, ts) != ts for v, ts in said) or len(cp_history) != c + 1:
            bad.append(f"checkpoint: {checkpoint_path(c)} disagrees with the commits on versions or timestamps")


def _referenced_files(st: TableState) -> dict:
    """Every file the snapshot references, by path, with the kind a violation names it by."""
    kinds = {}
    for r in st.rowsets.values():
        kinds.update({f.path: ("base file", f) for f in r.base})
        kinds[r.pk_index.path] = ("PK index file", r.pk_index)
        kinds[r.bloom.path] = ("bloom filter file", r.bloom)
    for ds in st.deltas.values():
        kinds.update({d.path: ("delta file", d.ref) for d in ds})
    return kinds


def _check_files(storage: Storage, kinds: dict, deep: bool, bad: list[str]) -> set:
    """Referenced files exist with their recorded sizes (and, deep, their recorded CRC-32).

    Returns the paths found broken, so later checks skip them instead of repeating the violation.
    """
    missing = set()
    for path, (kind, ref) in kinds.items():
        try:
            actual = storage.size(path)
        except FileNotFoundError:
            bad.append(f"{kind} {path} is missing")
            missing.add(path)
            continue
        if actual != ref.size:
            bad.append(f"{kind} {path} has {actual} bytes, the log recorded {ref.size}")
            missing.add(path)
        elif ref.crc32 is not None and deep:   # PK index and bloom are verified below in any case
            try:
                read_verified(storage, ref, kind)
            except TableFormatError as e:
                bad.append(str(e))
                missing.add(path)
    return missing


def _check_rowset(storage: Storage, st: TableState, rs: RowSetMeta, deep: bool, missing: set,
                  bad: list[str]) -> pa.Array | None:
    """One rowset's base files, PK index, bloom filter and deltas agree with each other and the log.

    Returns its live keys for the one-rowset-per-key check, or None for a history-only rowset
    (current reads skip it).
    """
    keys = read_pk_index(storage, rs)
    _check_base(storage, rs, deep, bad)
    _check_pk_index(storage, rs, keys, bad)
    _check_deltas(storage, st, rs, missing, bad)
    deltas = [d for d in st.deltas_of(rs.id) if d.kind == REDO and d.path not in missing]
    dead = deleted_mask(storage, rs, deltas)
    if rs.history_only:
        _check_history_only(rs, deltas, dead, bad)
        return None
    return keys if dead is None else keys.filter(pa.array(~dead))


def _check_base(storage: Storage, rs: RowSetMeta, deep: bool, bad: list[str]) -> None:
    """Each base file has the rowset's row count; deep, every page decodes (page CRCs catch flipped bits)."""
    for f in rs.base:
        pf = parquet_file(storage, f)
        n = pf.metadata.num_rows
        if n != rs.num_rows:
            bad.append(f"rowset {rs.id}: base file {f.path} has {n} rows, the rowset {rs.num_rows}")
        if deep:
            try:   # decode every page: page CRCs catch flipped bits
                pf.read(use_threads=True)
            except (OSError, pa.ArrowException) as e:
                bad.append(f"base file {f.path} (rowset {rs.id}) is corrupt: {e}")


def _check_pk_index(storage: Storage, rs: RowSetMeta, keys: pa.Array, bad: list[str]) -> None:
    """The PK index is strictly sorted, spans the key range the log records, and the bloom has all its keys."""
    if len(keys) > 1 and not pc.all(pc.less(keys.slice(0, len(keys) - 1), keys.slice(1))).as_py():
        bad.append(f"rowset {rs.id}: PK index is not strictly sorted")
    first, last = (keys[0].as_py(), keys[-1].as_py()) if len(keys) else (None, None)
    if (first, last) != (rs.min_key, rs.max_key):
        bad.append(f"rowset {rs.id}: key range in the log does not match its PK index")
    bloom = read_bloom(read_verified(storage, rs.bloom, "bloom filter file"), rs.bloom.path)
    if not bloom.may_contain(keys).all():
        bad.append(f"rowset {rs.id}: bloom filter misses keys of its PK index")


def _check_deltas(storage: Storage, st: TableState, rs: RowSetMeta, missing: set, bad: list[str]) -> None:
    """Each delta file decodes and names only rowids inside its rowset; a broken one joins `missing`."""
    for d in st.deltas_of(rs.id):
        if d.path in missing:
            continue
        try:
            rid = read_delta(storage, d).column("rowid").to_numpy()
        except TableFormatError as e:
            bad.append(f"delta file {d.path} (rowset {rs.id}): {e}")
            missing.add(d.path)
            continue
        if len(rid) and int(rid.max()) >= rs.num_rows:
            bad.append(f"delta {d.path}: rowid {int(rid.max())} is beyond rowset {rs.id}'s "
                       f"{rs.num_rows} rows")
            missing.add(d.path)


def _check_history_only(rs: RowSetMeta, deltas: list[DeltaFileMeta], dead, bad: list[str]) -> None:
    """Current reads skip a history-only rowset by metadata alone: only right if no row of it is live."""
    n_live = rs.num_rows if dead is None else int((~dead).sum())
    if n_live:
        bad.append(f"rowset {rs.id}: history-only (live_until {rs.live_until}) but {n_live} "
                   "row(s) of it are live")
    last = max((d.max_ts for d in deltas if d.delete_count), default=0)
    if last > rs.live_until:
        bad.append(f"rowset {rs.id}: history-only until {rs.live_until}, but a row of it was "
                   f"deleted at {last}: reads between them would miss it")


def _check_unique_keys(live_keys: dict[str, list[pa.Array]], bad: list[str]) -> None:
    """Every key lives in at most one rowset of its tablet."""
    for tablet, parts in live_keys.items():
        if len(parts) < 2:
            continue
        allk = pa.concat_arrays(parts)
        dup = len(allk) - len(pc.unique(allk))
        if dup:
            bad.append(f"tablet {tablet}: {dup} key(s) live in more than one rowset")
