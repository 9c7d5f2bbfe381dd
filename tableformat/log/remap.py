"""Remapping by key: a rebase over a merging compaction, which changed rowids.

Delta records carry their row's key, so REDO files committed against a merge's
inputs (or a mutation's own, planned before the merge) are rewritten onto the
merge's outputs by probing those keys. This writes files; the matrix only
decides that a rebase is allowed (`requirements` calls this when it is).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .actions import Action, AddDelta, AddRowSet, Commit, added_deltas
from ..format.cfile_set import field_name
from ..format.deltafile import REDO, flag_name, read_delta, write_delta_file
from ..format.errors import CommitConflictError
from ..format.keyencoder import encode_keys
from ..read.keyprobe import probe
from ..format.metadata import DeltaFileMeta, TableState
from ..format.storage import Storage


def remap_by_key(storage: Storage, snapshot: TableState, own: list[Action], late: list[tuple[Commit, DeltaFileMeta]],
                 written: list[str], commit_ts: bool = False) -> list[Action]:
    """REDO files committed to a merge's inputs after its snapshot, rewritten onto its outputs.

    Delta records carry their row's key, so each finds its row in the outputs by key (the live
    copy, in a main output: history-only outputs are not probed). Rowids change; timestamps do not
    (commit_ts: files not committed yet stay without timestamps, so they get their commit's)."""
    schema = snapshot.schema
    outputs = [a.rowset for a in own if isinstance(a, AddRowSet)]
    own_deltas = added_deltas([Commit(0, 0, "", tuple(own))])
    key_cols = list(schema.key_columns)
    out: list[Action] = []
    for _c, m in late:
        t = read_delta(storage, m, [x.id for x in schema.columns], key_cols)
        keys = encode_keys([t.column(field_name(k.id)) for k in key_cols], [k.type for k in key_cols])
        which, rowid = probe(storage, outputs, keys, own_deltas)
        if (which < 0).any():
            raise CommitConflictError("a concurrent change touched a row the compaction dropped")
        ts = t.column("ts").to_numpy() if "ts" in t.column_names else np.full(t.num_rows, m.max_ts, np.int64)
        ops = t.column("op").to_numpy()
        for o in np.unique(which):
            sel = which == o
            sub = t.filter(pa.array(sel))
            updates = {x.id: (sub.column(flag_name(x.id)).fill_null(False).to_numpy(zero_copy_only=False),
                              sub.column(field_name(x.id)))
                       for x in schema.columns if flag_name(x.id) in sub.column_names}
            keys_t = pa.table({k.name: sub.column(field_name(k.id)) for k in key_cols})
            meta = write_delta_file(storage, schema, outputs[int(o)], rowid[sel], ops[sel], keys_t, updates,
                                    REDO, None if commit_ts else ts[sel].astype(np.int64))
            written.append(meta.path)
            out.append(AddDelta(meta))
    return out
