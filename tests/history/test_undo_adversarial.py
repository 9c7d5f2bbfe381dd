"""Adversarial tests of history inside rowsets (UNDO files, ghost rows, the vacuum horizon, UNDO GC).

Each test builds a history, compacts and vacuums with no retention, and checks that every version
(and timestamps between versions) reads back as it did before, that `check()` passes, and that
only documented errors are raised. The scenarios below `bugs found` each broke the first
version of the feature (fixed since); they stay as regression tests.
"""
import random
import time

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf

from helpers import col_ids, during_next_commit, every_version, force, kv, merge_all, read, vacuum0


# --- helpers -----------------------------------------------------------------------------

# --- a random model of every operation, compaction and vacuum ---------------------------

MODEL_COLS = ["a", "b", "c"]
ARROW = {"a": pa.int64(), "b": pa.string(), "c": pa.int32(), "d": pa.int64()}
DEFAULTS = {"c": 7, "d": 5}            # write defaults (d is added later with read default 5)
EXPIRED = object()


def _model_table(path, hashed, **props):
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("a", "int64", nullable=True),
                     tf.Column("b", "string", nullable=True), tf.Column("c", "int32", nullable=False, default=7)],
                    primary_key="k")
    part = tf.PartitionSchema(hash=[tf.HashPartition(["k"], buckets=2)]) if hashed else None
    return tf.create_table(str(path), sch, partitioning=part,
                           properties={"rowset_target_bytes": 1 << 16, **props})


def _rd(t, **kw):
    try:
        return t.scan(**kw).to_arrow().to_pylist()
    except tf.HistoryExpiredError:
        return EXPIRED


def _verify(t, expected, rng, nkeys):
    """Every version (plus a timestamp just after it, a filtered projection and a key lookup) reads
    as the model says, or raises HistoryExpiredError; net changes from a version at or after the
    horizon turn it into a later one."""
    hist = t.history()
    for v, (want, cs) in expected.items():
        got = _rd(t, as_of=v, ordered=True)
        if got is EXPIRED:
            continue
        assert got == want, f"version {v} (horizon {t.state.history_horizon})"
        if v + 1 < len(hist) and hist[v + 1].timestamp > hist[v].timestamp + 1:
            got = _rd(t, as_of=tf.Timestamp(hist[v].timestamp + 1), ordered=True)
            assert got is EXPIRED or got == want, f"timestamp just after version {v}"
        c = rng.choice(cs)
        thr = rng.randint(0, 50) if c != "b" else f"s{rng.randint(0, 50)}"
        fw = [{"k": r["k"], c: r[c]} for r in want if r[c] is not None and r[c] >= thr]
        got = _rd(t, as_of=v, columns=["k", c], filter=[(c, ">=", thr)], ordered=True)
        assert got is EXPIRED or got == fw, f"version {v} filter {c} >= {thr}"
        kk = rng.randrange(nkeys)
        got = _rd(t, as_of=v, filter=[("k", "==", kk)])
        assert got is EXPIRED or got == [r for r in want if r["k"] == kk], f"version {v} key {kk}"
    vs = sorted(v for v in expected if v >= t.state.history_horizon)
    if len(vs) >= 2:
        a, b = sorted(rng.sample(vs, 2))
        try:
            ch = t.changes(a, b, mode="net").to_pylist()
        except tf.HistoryExpiredError:
            return
        cs = expected[b][1]
        rows = {r["k"]: {"d": 5, **r} for r in expected[a][0]}      # d: its read default before the add
        for r in ch:
            if r["_op"] == "delete":
                rows.pop(r["k"], None)
            else:
                rows[r["k"]] = {"k": r["k"], **{c: r[c] for c in cs}}
        got = [{"k": r["k"], **{c: r.get(c) for c in cs}} for r in sorted(rows.values(), key=lambda r: r["k"])]
        assert got == expected[b][0], f"net changes {a}..{b}"


def _random_model_run(tmp_path, seed, steps=60, hashed=True, nkeys=12, gc=False):
    rng = random.Random(seed)
    props = {"history_max_age": 1, "reclaim_deleted_pct": 10} if gc else {}
    t = _model_table(tmp_path / "t", hashed, **props)
    cols = list(MODEL_COLS)
    model: dict[int, dict] = {}
    expected = {t.version: ([], list(cols))}

    def rv(c):
        if c == "b":
            return rng.choice([None, f"s{rng.randint(0, 50)}"])
        if c == "c":
            return rng.randint(0, 50)
        return rng.choice([None, rng.randint(0, 50)])

    def tbl(rows, cs):
        return pa.table({"k": pa.array([r["k"] for r in rows], pa.int64()),
                         **{c: pa.array([r[c] for r in rows], ARROW[c]) for c in cs}})

    def new_row(r, cs):
        full = {c: DEFAULTS.get(c) for c in cols}
        full.update({c: r[c] for c in cs})
        return full

    for _step in range(steps):
        op = rng.choice(["insert", "insert_ignore", "update", "update_ignore", "delete", "delete_ignore",
                         "upsert", "apply", "compact", "compact", "compact", "vacuum"]
                        + (["alter"] if "d" not in cols else []))
        ks = sorted(rng.sample(range(nkeys), rng.randint(1, 5)))
        if op in ("insert", "insert_ignore"):
            if op == "insert":
                ks = [k for k in ks if k not in model]
            if not ks:
                continue
            cs = [c for c in cols if c != "c" or rng.random() < 0.5]
            rows = [{"k": k, **{c: rv(c) for c in cs}} for k in ks]
            getattr(t, op)(tbl(rows, cs))
            for r in rows:
                model.setdefault(r["k"], new_row(r, cs))
        elif op in ("update", "update_ignore", "upsert"):
            if op == "update":
                ks = [k for k in ks if k in model]
            if not ks:
                continue
            cs = rng.sample(cols, rng.randint(1, len(cols)))
            rows = [{"k": k, **{c: rv(c) for c in cs}} for k in ks]
            getattr(t, op)(tbl(rows, cs))
            for r in rows:
                if r["k"] in model:
                    model[r["k"]].update({c: r[c] for c in cs})
                elif op == "upsert":
                    model[r["k"]] = new_row(r, cs)
        elif op in ("delete", "delete_ignore"):
            if op == "delete":
                ks = [k for k in ks if k in model]
            if not ks:
                continue
            getattr(t, op)(pa.table({"k": pa.array(ks, pa.int64())}))
            for k in ks:
                model.pop(k, None)
        elif op == "apply":              # several operations on one key in one batch
            ops, rows = [], []
            for k in ks:
                seq = rng.choice([["delete", "insert"], ["update", "delete"], ["delete", "insert", "update"],
                                  ["upsert"]] if k in model else
                                 [["insert"], ["insert", "update"], ["insert", "delete"], ["upsert", "upsert"]])
                for o in seq:
                    ops.append(o)
                    rows.append({"k": k, **{c: rv(c) for c in cols}})
            t.apply(tbl(rows, cols).append_column("op", pa.array(ops)))
            for o, r in zip(ops, rows):
                if o == "delete":
                    model.pop(r["k"])
                elif o == "insert" or r["k"] not in model:
                    model[r["k"]] = {c: r[c] for c in cols}
                else:
                    model[r["k"]].update({c: r[c] for c in cols})
        elif op == "compact":
            st = t.state
            by_tablet = {}
            for r in st.rowsets.values():
                by_tablet.setdefault(r.tablet, []).append(r.id)
            choice = rng.choice(["policy", "merge_all", "merge_some", "major", "minor"])
            if choice == "policy":
                t.compact(t.compaction_plan())
            elif choice == "merge_all":
                merge_all(t)
            elif choice == "merge_some" and by_tablet:
                ids = rng.choice(list(by_tablet.values()))
                force(t, "merge", rng.sample(ids, rng.randint(1, len(ids))))
            elif choice in ("major", "minor"):
                with_redo = [r for r in st.rowsets.values() if any(d.kind == "redo" for d in st.deltas_of(r.id))]
                if with_redo:
                    rs = rng.choice(with_redo)
                    if choice == "major":
                        force(t, "major_delta", [rs.id], col_ids(t, *rng.sample(cols, rng.randint(1, len(cols)))))
                    else:
                        force(t, "minor_delta", [rs.id])
        elif op == "vacuum":
            vacuum0(t)
        else:
            with t.alter() as a:
                a.add_column("d", "int64", nullable=True, default=5)
            cols.append("d")
            for r in model.values():
                r["d"] = 5
        expected[t.version] = (sorted(({"k": k, **r} for k, r in model.items()), key=lambda r: r["k"]), list(cols))
        if gc and rng.random() < 0.08:
            time.sleep(0.4)                      # let part of the history become ancient
        if op in ("vacuum", "compact"):
            _verify(t, expected, rng, nkeys)
    vacuum0(t)
    _verify(t, expected, rng, nkeys)
    assert t.scan(ordered=True).to_arrow().to_pylist() == expected[max(expected)][0]
    assert t.check().ok


@pytest.mark.parametrize("seed,hashed", [(0, True), (5, False), (206, True)])
def test_random_model_every_version_after_compactions_and_vacuums(tmp_path, seed, hashed):
    """Every operation (incl. NULLs, apply batches with delete+insert of one key, upserts of deleted
    keys, a column added after data exists) with random merges of subsets, majors of random column
    groups, minors, the policy and vacuums with no retention: every version, timestamp, filtered
    projection, key lookup and net change history reads exactly."""
    _random_model_run(tmp_path, seed, steps=50, hashed=hashed)


def test_random_model_with_history_garbage_collected_midway(tmp_path):
    """history_max_age = 1 s with pauses: GC and reclaiming merges run mid-history; versions read
    exactly or raise HistoryExpiredError, never anything else."""
    _random_model_run(tmp_path, 301, steps=50, hashed=False, gc=True)


# --- targeted scenarios that hold ---------------------------------------------------------

def test_null_and_back_across_major_merge_major(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b", "c"], "val": [1, 2, 3], "s": ["x", None, "z"]}))
    t.update(pa.table({"key": ["a", "b"], "val": pa.array([None, None], pa.int64())}))
    t.update(pa.table({"key": ["a"], "val": [10], "s": pa.array([None], pa.string())}))
    (rs,) = t.state.rowsets
    force(t, "major_delta", [rs], col_ids(t, "val"))
    t.update(pa.table({"key": ["a", "b"], "val": pa.array([None, 20], pa.int64()), "s": ["x2", "y2"]}))
    t.update(pa.table({"key": ["b"], "s": pa.array([None], pa.string())}))
    force(t, "major_delta", [rs], col_ids(t, "s"))
    t.update(pa.table({"key": ["a"], "val": [11]}))
    merge_all(t)
    t.update(pa.table({"key": ["c"], "val": pa.array([None], pa.int64())}))
    (rs,) = t.state.rowsets
    force(t, "major_delta", [rs], col_ids(t, "val", "s"))
    before = every_version(t)
    vacuum0(t)
    assert t.state.history_horizon == t.version - 1
    assert every_version(t, before) == before
    assert read(t, 2, filter=[("val", "is_null")], columns=["key"]) == [{"key": "a"}, {"key": "b"}]
    assert t.check().ok


def test_reinsert_cycles_make_ghost_layers_then_updates_and_merges(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["k", "m"], "val": [0, 100]}))
    for i in range(1, 5):
        t.delete(pa.table({"key": ["k"]}))
        if i % 2:
            t.upsert(pa.table({"key": ["k"], "val": [i]}))           # upsert of a deleted key inserts
        else:
            t.insert(pa.table({"key": ["k"], "val": [i]}))
        merge_all(t)
    assert len(t.state.rowsets) == 5                                   # live rows, then four ghost layers
    t.update(pa.table({"key": ["k"], "val": [40]}))
    t.update(pa.table({"key": ["k", "m"], "s": ["s", "t"]}))
    merge_all(t)
    (main,) = [r for r in t.state.rowsets.values() if r.num_rows == 2]
    force(t, "major_delta", [main.id], col_ids(t, "s"))
    t.delete(pa.table({"key": ["k"]}))
    merge_all(t)
    before = every_version(t)
    vacuum0(t)
    assert every_version(t, before) == before
    assert t.check().ok
    hist = t.history()
    for v in range(1, len(hist) - 1):                                  # a timestamp between every two commits
        mid = tf.Timestamp((hist[v].timestamp + hist[v + 1].timestamp) // 2)
        assert t.scan(as_of=mid, ordered=True).to_arrow().to_pylist() == before[v]
    assert t.changes(t.state.history_horizon).num_rows == 0
    t.insert(pa.table({"key": ["k"], "val": [7]}))
    assert read(t, t.version) == [{"key": "k", "val": 7, "s": None}, {"key": "m", "val": 100, "s": "t"}]


def test_merge_of_rowsets_whose_rows_are_all_deleted(tmp_path):
    """Within the history the deleted rows stay as ghosts; once ancient the rowset vanishes."""
    t = kv(tmp_path / "t", history_max_age=2)
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    t.insert(pa.table({"key": ["c"], "val": [3]}))
    t.delete(pa.table({"key": ["a", "b"]}))
    first = [r for r in t.state.rowsets.values() if r.num_rows == 2][0].id
    force(t, "merge", [first])
    (ghosts,) = [r for r in t.state.rowsets.values() if r.num_rows == 2]
    before = every_version(t)
    vacuum0(t)
    assert every_version(t, before) == before
    assert [a.rowsets for a in t.compaction_plan().actions] == []    # a ghost layer is not merged again
    time.sleep(2.1)
    force(t, "merge", [ghosts.id, [r for r in t.state.rowsets if r != ghosts.id][0]])
    assert [r.num_rows for r in t.state.rowsets.values()] == [1]
    (rest,) = t.state.rowsets
    t.delete(pa.table({"key": ["c"]}))
    time.sleep(2.1)
    force(t, "merge", [rest])                                          # everything deleted and ancient
    assert not t.state.rowsets and t.scan().count() == 0
    vacuum0(t)
    assert t.check().ok and read(t, t.version) == []


def test_empty_table_history(tmp_path):
    t = kv(tmp_path / "t")
    assert not t.compaction_plan().actions
    vacuum0(t)
    assert read(t, 0) == [] and t.check().ok
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.delete(pa.table({"key": ["a"]}))
    merge_all(t)
    vacuum0(t)
    assert every_version(t, range(4)) == {0: [], 1: [{"key": "a", "val": 1, "s": None}], 2: [], 3: []}
    assert t.check().ok


def test_old_versions_through_undo_with_key_ranges_row_groups_and_stats(tmp_path):
    """Many row groups, key-range seeks (start > 0) and stats pruning on updated columns, as of
    versions before the horizon."""
    t = kv(tmp_path / "t", row_group_rows=128, pk_index_block_rows=16)
    keys = [f"k{i:05d}" for i in range(3000)]
    t.insert(pa.table({"key": keys, "val": np.arange(3000), "s": [f"s{i % 7}" for i in range(3000)]}))
    rng = np.random.default_rng(1)
    for step in range(4):
        idx = np.sort(rng.choice(3000, 200, replace=False))
        t.update_ignore(pa.table({"key": [keys[i] for i in idx], "val": np.full(200, 10_000 + step)}))
        t.delete_ignore(pa.table({"key": [keys[i] for i in idx[:5]]}))
        t.insert_ignore(pa.table({"key": [keys[i] for i in idx[:3]], "val": [-1, -2, -3]}))
    big = max(t.state.rowsets.values(), key=lambda r: r.num_rows)
    force(t, "major_delta", [big.id], col_ids(t, "val"))
    vals = {v: read(t, v, columns=["key", "val"]) for v in range(t.version + 1)}
    merge_all(t)
    force(t, "major_delta", [max(t.state.rowsets.values(), key=lambda r: r.num_rows).id], col_ids(t, "val"))
    vacuum0(t)
    assert t.state.history_horizon == t.version - 1
    for v, want in vals.items():
        assert read(t, v, columns=["key", "val"]) == want, v
        lo, hi = "k01000", "k01500"
        got = read(t, v, columns=["key", "val"], filter=[("key", ">=", lo), ("key", "<", hi)])
        assert got == [r for r in want if lo <= r["key"] < hi], v
        got = read(t, v, columns=["key", "val"], filter=[("val", "<", 50)])
        assert got == [r for r in want if r["val"] < 50], v
        got = read(t, v, columns=["key", "val"], filter=[("val", ">=", 10_000)])
        assert got == [r for r in want if r["val"] >= 10_000], v
    assert t.check().ok


def test_aged_out_alters_let_the_horizon_pass_and_later_versions_read_exactly(tmp_path):
    """Range drop / re-add and a column add with a read default: while they are within the history
    the horizon waits; once older than history_max_age it passes them, and the versions after
    them, read through UNDO with their own schema and partitioning, are exact."""
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "int64", nullable=True)], primary_key="k")
    part = tf.PartitionSchema(hash=[tf.HashPartition(["k"], buckets=2)],
                              range=tf.RangePartition(["k"], bounds=[(0, 100), (100, 200)]))
    t = tf.create_table(str(tmp_path / "t"), sch, partitioning=part, properties={"history_max_age": 2})
    t.insert(pa.table({"k": [1, 2, 101, 102], "v": [1, 2, 101, 102]}))
    t.update(pa.table({"k": [1, 101], "v": [10, 1010]}))
    with t.alter() as a:
        a.drop_range_partition(100, 200)
        a.add_column("w", "int32", nullable=False, default=9)
    before_alter = every_version(t)
    merge_all(t)
    vacuum0(t)
    assert t.state.history_horizon == 2                                # waits before the ALTER
    assert every_version(t, before_alter) == before_alter
    with t.alter() as a:
        a.add_range_partition(100, 300)
    time.sleep(2.1)                                                    # both ALTERs are now ancient
    t.insert(pa.table({"k": [150, 3], "v": [150, 3]}))
    t.update(pa.table({"k": [1, 150], "w": [90, 1500]}))
    t.delete(pa.table({"k": [2]}))
    first = t.version - 2
    recent = every_version(t, range(first, t.version + 1))
    merge_all(t)
    vacuum0(t)
    assert t.state.history_horizon >= t.version - 1
    assert every_version(t, recent) == recent
    assert recent[first + 1] == [{"k": 1, "v": 10, "w": 90}, {"k": 2, "v": 2, "w": 9},
                                 {"k": 3, "v": 3, "w": 9}, {"k": 150, "v": 150, "w": 1500}]
    with pytest.raises(tf.HistoryExpiredError):
        t.scan(as_of=1)
    assert t.check().ok


def test_drop_and_re_add_a_column_of_the_same_name_then_compactions(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2], "s": ["x", "y"]}))
    t.update(pa.table({"key": ["a"], "s": ["x2"]}))
    with t.alter() as a:
        a.drop_column("s")
    with t.alter() as a:
        a.add_column("s", "string", nullable=True)
        a.rename_column("val", "v")
    t.update(pa.table({"key": ["b"], "s": ["new"], "v": [20]}))
    before = every_version(t)
    (rs,) = t.state.rowsets
    force(t, "major_delta", [rs], col_ids(t, "s", "v"))
    merge_all(t)
    vacuum0(t)
    assert t.state.history_horizon == 2
    assert every_version(t, before) == before
    assert read(t, 2, filter=[("s", "==", "x2")], columns=["key"]) == [{"key": "a"}]
    assert read(t, t.version, filter=[("s", "==", "x2")]) == []
    assert t.check().ok


def test_compactions_with_a_concurrent_mutation_each_time(tmp_path):
    """A mutation lands between every compaction's snapshot and its commit (merge rebases it onto
    the outputs; delta compactions keep rowids); then every version reads back from UNDO."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": [f"k{i}" for i in range(6)], "val": list(range(6))}))
    t.update(pa.table({"key": ["k1", "k2"], "val": [10, 20]}))
    t.delete(pa.table({"key": ["k3"]}))
    other = tf.open_table(str(tmp_path / "t"))
    writes = iter([
        lambda: other.update(pa.table({"key": ["k1", "k4"], "val": [11, 41]})),
        lambda: other.apply(pa.table({"key": ["k2", "k2", "k5"], "val": [0, 21, 0],
                                      "op": ["delete", "insert", "delete"]})),
        lambda: other.update(pa.table({"key": ["k1"], "s": ["one"]})),
        lambda: other.upsert(pa.table({"key": ["k3", "k5"], "val": [30, 50]})),
    ])
    for kind in ["merge", "major_delta", "minor_delta", "merge"]:
        st = t.state
        rs = max(st.rowsets.values(), key=lambda r: (len(st.deltas_of(r.id)), r.num_rows)).id
        if kind == "merge":
            ids = [r for r in st.rowsets]
        during_next_commit(t, next(writes))
        res = force(t, kind, ids if kind == "merge" else [rs], col_ids(t, "val") if kind == "major_delta" else ())
        t._storage.fault_hook = None
        assert len(res) == 1
    want = [{"key": "k0", "val": 0, "s": None}, {"key": "k1", "val": 11, "s": "one"},
            {"key": "k2", "val": 21, "s": None}, {"key": "k3", "val": 30, "s": None},
            {"key": "k4", "val": 41, "s": None}, {"key": "k5", "val": 50, "s": None}]
    assert read(t, t.version) == want
    before = every_version(t)
    vacuum0(t)
    assert every_version(t, before) == before
    assert t.check().ok


# --- bugs found, fixed: regression tests -----------------------------------------------------------

def test_merge_racing_a_major_delta_of_its_input_keeps_the_latest_values(tmp_path):
    """compaction.rebase_merge only gives up when a winner *removes* an input rowset; a major delta
    replaces the rowset with `add_rowset` of the same id, so it passes. Every `add_delta` the winner
    made for the input is then remapped onto the outputs as a REDO file, including the major's UNDO
    file (its before-images become REDO updates) and its leftover REDO file (records the merge already
    applied). Here key a reads 1 instead of 10 at the latest version."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.update(pa.table({"key": ["a"], "val": [10]}))
    (rs,) = t.state.rowsets
    other = tf.open_table(str(tmp_path / "t"))
    during_next_commit(t, lambda: force(other, "major_delta", [rs], col_ids(other, "val")))
    force(t, "merge", [rs], committed=False)                # it restarts or rebases
    t._storage.fault_hook = None
    assert read(t, t.version) == [{"key": "a", "val": 10, "s": None}]


def test_merge_racing_a_minor_delta_then_another_merge_keeps_old_versions(tmp_path):
    """Same cause as above (rebase_merge remaps every add_delta of the input, here the minor delta's
    merged REDO file, whose records the merge already turned into UNDO records). The outputs then
    carry each update twice: as UNDO and as a REDO at its old timestamp. The next merge inverts the
    duplicate REDO over the current base value, giving an UNDO record at t1 whose before-image is the
    *current* value, sorted ahead of the right one: version 1 reads val 100 instead of 1."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.update(pa.table({"key": ["a"], "val": [10]}))
    t.update(pa.table({"key": ["a"], "val": [100]}))
    (rs,) = t.state.rowsets
    before = every_version(t)
    other = tf.open_table(str(tmp_path / "t"))
    during_next_commit(t, lambda: force(other, "minor_delta", [rs]))
    force(t, "merge", [rs], committed=False)                # it restarts or rebases
    t._storage.fault_hook = None
    merge_all(t)
    vacuum0(t)
    assert every_version(t, before) == before


def test_insert_of_a_deleted_key_racing_a_merge_that_keeps_its_ghost(tmp_path):
    """writer.rebase_conflicts probes the rowsets the winners added without their deltas
    (`probe(storage, rowsets, b.keys)`, no `deltas_of`), so the merge's output, which now holds the
    deleted row of 'a' (a ghost, deleted by a REDO file in the same commit), looks like a concurrent
    insert of 'a'. Before ghost rows, merge outputs held only live rows. (Table._mutate's `clash`
    has the same blind spot but only restarts.)"""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    t.delete(pa.table({"key": ["a"]}))
    (rs,) = t.state.rowsets
    other = tf.open_table(str(tmp_path / "t"))
    during_next_commit(t, lambda: force(other, "merge", [rs]))
    try:
        t.insert(pa.table({"key": ["a"], "val": [3]}))
    finally:
        t._storage.fault_hook = None
    assert read(t, t.version) == [{"key": "a", "val": 3, "s": None}, {"key": "b", "val": 2, "s": None}]


def test_changes_after_a_merge_that_remapped_a_concurrent_update(tmp_path):
    """A merge rebases an update committed during it (val 1 -> 10) into a REDO file of its output,
    added in the merge's own data_change=false commit. changes.collect_changes only adds delta
    files of data_change commits to a rowset's replay history, so a later update of the same row
    replays over the output's base (val 1, the merge's snapshot) without that file: its after-image
    says val 1, although the row (and scan) says 10."""
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    start = t.version
    (rs,) = t.state.rowsets
    other = tf.open_table(str(tmp_path / "t"))
    during_next_commit(t, lambda: other.update(pa.table({"key": ["a"], "val": [10]})))
    force(t, "merge", [rs])
    t._storage.fault_hook = None
    t.update(pa.table({"key": ["a"], "s": ["x"]}))
    assert read(t, t.version) == [{"key": "a", "val": 10, "s": "x"}]
    ch = t.changes(start).select(["_op", "key", "val", "s"]).to_pylist()
    assert ch == [{"_op": "update", "key": "a", "val": 10, "s": None},
                  {"_op": "update", "key": "a", "val": 10, "s": "x"}]


def test_raising_history_max_age_after_the_horizon_passed_a_range_drop(tmp_path):
    """With history_max_age = 1 a range drop ages out, so vacuum moves the horizon past it and deletes
    the dropped rowsets' files. Raising history_max_age afterwards (an ALTER) moves the ancient history
    mark back: Table._check_history lets version 1 through, and Table._state_at reads it from the
    horizon's files (no gc_ts guards it: no compaction ran), silently without the rows of the
    dropped range. Expected: the old rows, or HistoryExpiredError; not a wrong answer."""
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "int64", nullable=True)], primary_key="k")
    part = tf.PartitionSchema(range=tf.RangePartition(["k"], bounds=[(0, 10), (10, 20)]))
    t = tf.create_table(str(tmp_path / "t"), sch, partitioning=part, properties={"history_max_age": 1})
    t.insert(pa.table({"k": [1, 11], "v": [1, 11]}))
    with t.alter() as a:
        a.drop_range_partition(10, 20)
    time.sleep(1.2)
    vacuum0(t)
    with t.alter() as a:
        a.set_property("history_max_age", 3600)
    try:
        got = read(t, 1)
    except tf.HistoryExpiredError:
        return
    assert got == [{"k": 1, "v": 1}, {"k": 11, "v": 11}]


def test_version_within_history_max_age_stays_readable_after_vacuum(tmp_path):
    """history_max_age = 2: the table idles past it, then a major delta compaction records
    gc_before_ts = now - 2 s, later than version 2's timestamp although version 2 was the latest
    version until that compaction. After vacuum(retain 0) moves the horizon past it,
    Table._state_at refuses it because `st.timestamp < history_gc_ts`, even when asked by a
    Timestamp 0.5 s old (the spec promises HistoryExpiredError only below the ancient history mark).
    The data is there: nothing changed between version 2 and the compaction, so reading the
    horizon's files as of max(timestamp, history_gc_ts) would be exact."""
    t = kv(tmp_path / "t", history_max_age=2)
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.update(pa.table({"key": ["a"], "val": [2]}))
    time.sleep(2.1)
    (rs,) = t.state.rowsets
    force(t, "major_delta", [rs], col_ids(t, "val"))
    recent = tf.Timestamp(t.history()[-1].timestamp - 1)             # just before the compaction: version 2
    assert t.scan(as_of=recent).to_arrow().to_pylist() == [{"key": "a", "val": 2, "s": None}]
    vacuum0(t)
    assert t.scan(as_of=recent).to_arrow().to_pylist() == [{"key": "a", "val": 2, "s": None}]


def test_composite_keys_hash_and_range_partitions_decimal_nan_varchar(tmp_path):
    """The metrics table (3-column key, hash + range partitions, double with NaN, decimal, varchar
    with a default): updates to NULL and back, deletes and re-inserts, merges and majors per tablet,
    key-only projections; every version reads back after vacuum."""
    from helpers import assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning(),
                        properties={"rowset_target_bytes": 1 << 16})
    data = metrics_rows(1200)
    key = ["host", "metric", "time"]
    for i in range(3):
        t.insert(data.take(pa.array(np.arange(i, 1200, 3))))
    rng = np.random.default_rng(7)
    for step in range(4):
        idx = np.sort(rng.choice(1200, 150, replace=False))
        upd = data.take(pa.array(idx)).select(key)
        vals = np.where(rng.random(150) < 0.3, np.nan, rng.normal(size=150))
        upd = upd.append_column("value", pa.array(vals)).append_column(
            "price", pa.array([None] * 150, pa.decimal128(18, 2)) if step % 2 else
            pa.array([None if j % 3 else j for j in range(150)], pa.decimal128(18, 2)))
        t.update_ignore(upd)
        t.update_ignore(data.take(pa.array(idx[:40])).select(key).append_column("tag", pa.array(
            [None if j % 2 else f"t{step}" for j in range(40)], pa.string())))
        gone = data.take(pa.array(idx[40:60])).select(key)
        t.delete_ignore(gone)
        if step % 2:
            t.insert_ignore(data.take(pa.array(idx[40:50])))                  # some deleted keys come back
    before = {v: t.scan(as_of=v).to_arrow() for v in range(t.version + 1)}
    keys_before = {v: t.scan(as_of=v, columns=key).to_arrow() for v in range(t.version + 1)}
    st = t.state
    for i, rs in enumerate(sorted(st.rowsets.values(), key=lambda r: r.id)):
        if i % 2 and st.deltas_of(rs.id):
            force(t, "major_delta", [rs.id], col_ids(t, *(["value"] if i % 4 == 1 else ["price", "tag"])))
    merge_all(t)
    st = t.state
    for rs in st.rowsets.values():
        if rs.num_rows > 50:
            force(t, "major_delta", [rs.id], col_ids(t, "value", "price", "tag"))
    vacuum0(t)
    assert t.state.history_horizon == t.version - 1
    for v, want in before.items():
        assert_same_rows(t.scan(as_of=v).to_arrow(), want)
        assert_same_rows(t.scan(as_of=v, columns=key).to_arrow(), keys_before[v])
        assert t.scan(as_of=v).count() == want.num_rows
    assert t.check().ok


def _rewrite_as_format_version_1(root):
    """Rewrite a table's log as a version-1 writer would have written it: format_version 1, no
    `created_ts` in add_rowset, no UNDO files and no `history` action (all new in version 2)."""
    import json
    import os
    import zlib
    log = os.path.join(root, "_log")
    for name in os.listdir(log):
        p = os.path.join(log, name)
        if name.endswith(".checkpoint.json"):
            d = json.load(open(p))
            st = d["state"]
            for r in st["rowsets"]:
                r.pop("created_ts", None)
            st.pop("history_horizon", None)
            st.pop("history_gc_ts", None)
            st["format_version"] = d["format_version"] = 1
            d["checksum"] = zlib.crc32(json.dumps(st, sort_keys=True, separators=(",", ":")).encode())
        elif name.endswith(".json"):
            d = json.load(open(p))
            d["actions"] = [a for a in d["actions"] if "history" not in a and
                            not ("add_delta" in a and a["add_delta"]["kind"] == "undo")]
            for a in d["actions"]:
                a.get("add_rowset", {}).pop("created_ts", None)
                if "metadata" in a:
                    a["metadata"]["format_version"] = 1          # the table was created by a v1 writer
            d["format_version"] = 1
            d["checksum"] = zlib.crc32(json.dumps(d["actions"], sort_keys=True, separators=(",", ":")).encode())
        else:
            continue
        with open(p, "w") as f:
            json.dump(d, f)


def test_table_written_by_format_version_1_reads_old_versions_after_vacuum(tmp_path):
    """The spec says version-2 readers read version-1 tables unchanged. A v1 checkpoint has no
    `created_ts`, so RowSetMeta.from_json gives None; Scanner.plan treats None as 0 ("existed
    from the start", scan.py `(rs.created_ts or 0) > state.read_ts`) and so does a merge
    (compaction._load_input writes no UNDO DELETE when `created_ts` is falsy). Once a v2 writer's
    vacuum moves the horizon (here no compaction is even needed), version 1 shows all ten rows.
    (The log is written by this version and rewritten as a v1 writer would have written it.)"""
    root = str(tmp_path / "t")
    t = kv(root)
    for i in range(10):                                              # checkpoint_interval 10: a checkpoint at 10
        t.insert(pa.table({"key": [f"k{i}"], "val": [i]}))
    before = every_version(t)
    _rewrite_as_format_version_1(root)
    t = tf.open_table(root)
    t.insert(pa.table({"key": ["z"], "val": [99]}))                  # the first version-2 commit
    vacuum0(t)
    assert every_version(t, before) == before


def test_table_compacted_by_format_version_1_reads_old_versions_after_vacuum(tmp_path):
    """A version-1 major delta compaction wrote no UNDO file, and its `add_rowset` (same rowset id) has no
    `created_ts`, so metadata.apply_commit stamps the rowset with the *compaction's* timestamp. Version-1
    history is therefore unreadable from later files, but Table._history_horizon only stops at ALTERs:
    a v2 vacuum moves the horizon past it and versions 1 and 2 read an empty table (the rowset looks
    created after them). Expected: their rows, or HistoryExpiredError (e.g. never put the horizon
    past a version-1 commit)."""
    root = str(tmp_path / "t")
    t = kv(root)
    t.insert(pa.table({"key": ["a"], "val": [1]}))
    t.update(pa.table({"key": ["a"], "val": [2]}))
    before = every_version(t)
    (rs,) = t.state.rowsets
    force(t, "major_delta", [rs], col_ids(t, "val"))
    _rewrite_as_format_version_1(root)
    t = tf.open_table(root)
    assert every_version(t, before) == before                        # read unchanged, as the spec says
    t.insert(pa.table({"key": ["z"], "val": [9]}))
    vacuum0(t)
    for v, want in before.items():
        try:
            got = read(t, v)
        except tf.HistoryExpiredError:
            continue
        assert got == want, v


def test_spark_insert_commit_of_a_deleted_key_racing_a_merge_that_keeps_its_ghost(tmp_path):
    """The Spark insert job's driver-side commit (no Spark needed for it): the rowsets its tasks
    wrote hold a deleted key that a merge committed meanwhile keeps as a ghost; that is no duplicate."""
    pytest.importorskip("pyspark")
    from spark_jobs.insert import commit_rowsets
    from tableformat.batch import prepare
    from tableformat.insert import plan_insert, write_plan
    uri = str(tmp_path / "t")
    t = kv(uri)
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    t.delete(pa.table({"key": ["a"]}))
    planned = t.state
    batch = prepare(planned.schema, pa.table({"key": ["a"], "val": [3]}))
    written: list[str] = []
    rowsets = write_plan(t._storage, planned, plan_insert(t._storage, planned, batch, False), written)
    (rs,) = t.state.rowsets
    force(t, "merge", [rs])                                    # commits first, keeping 'a' as a ghost
    res = commit_rowsets(uri, None, planned.version, [[r.to_json() for r in rowsets]], [written], "INSERT",
                         {"inserted": 1, "ignored": 0})
    assert res.version == t.version
    assert read(t, t.version) == [{"key": "a", "val": 3, "s": None}, {"key": "b", "val": 2, "s": None}]
