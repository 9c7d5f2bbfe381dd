"""The on-disk names and codes a reader in another language needs (specs/format.md §1, §5, §9).

One place for the constants a foreign reader (Spark's Parquet reader in `spark_jobs/read_join.py`,
the JVM connector under `spark_jobs/connector/`) must agree on with the engine, so no reader
re-types them:

- `DeltaOp`: the `op` codes of delta records (UPDATE=1, DELETE=2, REINSERT=3);
- `field_name(c)` / `flag_name(c)`: the Parquet field of column ID c (`c<c>`) and its
  "changed" flag in a delta file (`u<c>`); `ROWID`, `OP`, `TS`: the other delta fields;
- `REDO` / `UNDO`: the delta file kinds;
- `rowset_dir(tablet, rowset)` and `rowset_of(path)`: a rowset's files sit in
  `tablets/<tablet id>/<rowset id>/`, so the directory of a file names its rowset.
"""
from __future__ import annotations

from enum import IntEnum

TABLETS_DIR = "tablets"
LOG_DIR = "_log"
ROWID, OP, TS = "rowid", "op", "ts"
REDO, UNDO = "redo", "undo"


class DeltaOp(IntEnum):
    """The operation of a delta record (REDO or UNDO), as stored in its `op` column."""

    UPDATE = 1
    DELETE = 2
    REINSERT = 3


UPDATE, DELETE, REINSERT = DeltaOp.UPDATE, DeltaOp.DELETE, DeltaOp.REINSERT


def field_name(column_id: int) -> str:
    """The Parquet field of column ID `column_id` in base and delta files: `c<id>`."""
    return f"c{column_id}"


def flag_name(column_id: int) -> str:
    """The delta-file flag "this record changes column `column_id`": `u<id>`."""
    return f"u{column_id}"


def rowset_dir(tablet: str, rowset: str) -> str:
    """The directory (relative to the table root) holding a rowset's base, index and delta files."""
    return f"{TABLETS_DIR}/{tablet}/{rowset}"


def rowset_of(path: str) -> str:
    """The rowset id of a base or delta file path: the name of the directory it sits in."""
    return path.rstrip("/").rsplit("/", 2)[-2]
