"""The two halves of a distributed write: executors write fragments, the driver commits them.

Executors plan their rows on the job's snapshot with the engine (`Snapshot.write_insert`),
write rowsets and return a write fragment (JSON); the driver commits all fragments at once
with `Table.commit_fragments`, which checks the engine's own requirements.
"""
from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa

import tableformat as tf

from .snapshots import open_snapshot

TABLET_COL = "_tf_tablet"


def write_partition(uri: str, storage_options: dict | None, version: int, data: pa.Table | None,
                    on_duplicate: str = "fail", error_path: str | None = None, table_id: str | None = None) -> dict:
    """Executor side: validate, check keys and write rowsets for the rows of one task; the
    result holds the task's write fragment (JSON) and what it rejected."""
    out = {"fragment": None, "files": [], "rows": 0, "duplicates": 0, "sample": ""}
    if data is None or data.num_rows == 0:
        return out
    snap = open_snapshot(uri, storage_options, version, table_id)
    frag = snap.write_insert(data.drop([c for c in data.column_names if c == TABLET_COL]),
                             on_duplicate="fail" if on_duplicate == "fail" else "ignore", report=True,
                             distributed=True, write_when_rejected=on_duplicate != "fail")
    batch, dup_rows = frag.rejected
    out["duplicates"] = int(len(dup_rows))
    if len(dup_rows):
        out["sample"] = snap.describe_rows(batch, dup_rows)
        if on_duplicate == "collect":
            collect_rows(error_path, batch, dup_rows)
    out.update(fragment=frag.to_json(), files=list(frag.files), rows=frag.counts.get("inserted", 0))
    return out


def collect_rows(error_path: str, batch: pa.Table, rows: np.ndarray) -> None:
    """Write rejected rows to the error output, one uniquely named Parquet file per task."""
    import pyarrow.parquet as pq
    sink = pa.BufferOutputStream()
    pq.write_table(batch.take(pa.array(rows)), sink)
    tf.Storage(error_path).write(f"part-{uuid.uuid4().hex}.parquet", sink.getvalue())


def commit_fragments(uri: str, storage_options: dict | None, fragments: list[dict], operation: str,
                     counts: dict) -> tf.WriteResult:
    """Driver side: one commit of every task's fragment, with the engine's key-level requirements
    (a key inserted concurrently fails it; a job planned on a definition since changed restarts)."""
    table = tf.open_table(uri, storage_options=storage_options)
    frags = [tf.WriteFragment.from_json(f) for f in fragments]
    for f in frags:
        f.operation, f.counts = operation, {}
    if frags:
        frags[0].counts = dict(counts)
    return table.commit_fragments(frags, operation)


def commit_rowsets(uri: str, storage_options: dict | None, version: int, rowset_lists: list, file_lists: list,
                   operation: str, counts: dict) -> tf.WriteResult:
    """Driver side, from rowset descriptors (the log's JSON) written on snapshot `version`: one
    fragment whose commit checks their keys against each other and against concurrent commits."""
    ignore = operation == "INSERT_IGNORE"
    frag = {"operation": operation, "read_version": version,
            "actions": [{"add_rowset": r} for lst in rowset_lists for r in lst],
            "files": [f for lst in file_lists for f in lst], "counts": dict(counts),
            "requirements": [{"kind": "definition_unchanged", "on_change": "restart"},
                             {"kind": "keys_absent", "keys": {}, "own_rowsets": True,
                              "on_clash": "restart" if ignore else "fail"}]}
    return commit_fragments(uri, storage_options, [frag], operation, counts)
