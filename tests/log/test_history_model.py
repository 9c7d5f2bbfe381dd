"""Random models of every operation against every retained version, checked after every step.

Two models: one of inserts (shuffled and key-ordered, with repeats and live keys), updates, deletes,
re-inserts of deleted keys, upserts, restores, every kind of compaction, vacuums with no retention,
tags and untags, with and without a 1 s history_max_age (the current scan, every retained version by
scan and lookup, every tag, the duplicate-key check and check() agree with the model); and one of
row operations, alters and compactions on a table whose history lives in UNDO files, where every
version and the timestamps between versions read back exactly (or raise HistoryExpiredError) after
vacuums and UNDO GC."""
import random
import time

import pyarrow as pa
import pytest

import tableformat as tf

from helpers import col_ids, force, kt, merge_all, model_rows, vacuum0


def _check_version(t, v, m, rng, nkeys):
    assert t.scan(as_of=v, ordered=True).to_arrow().to_pylist() == model_rows(m), f"scan as of {v}"
    got = t.lookup(kt(list(range(nkeys))), as_of=v).to_pylist()
    assert got == model_rows(m), f"lookup as of {v}"
    sub = sorted(rng.sample(range(nkeys), 3))
    assert t.lookup(kt(sub), as_of=v).to_pylist() == [r for r in model_rows(m) if r["k"] in sub]


def _verify(t, expected, tags, model, rng, nkeys):
    assert t.scan(ordered=True).to_arrow().to_pylist() == model_rows(model)
    assert t.lookup(kt(list(range(nkeys)))).to_pylist() == model_rows(model)
    for v, m in expected.items():
        try:
            _check_version(t, v, m, rng, nkeys)
        except tf.HistoryExpiredError:
            assert v not in tags.values(), f"tagged version {v} expired"
    for name, v in tags.items():
        assert t.scan(as_of=name, ordered=True).to_arrow().to_pylist() == model_rows(expected[v]), f"tag {name}"
    if model:
        with pytest.raises(tf.DuplicateKeyError, match=r"1 key\(s\) already exist in table 't' \(first: \d+\)"):
            t.insert(kt([rng.choice(sorted(model))], [0]))
    rep = t.check()
    assert rep.ok, rep.violations


def _model_run(path, seed, steps, age=None, nkeys=30):
    rng = random.Random(seed)
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("a", "int64", nullable=True)], primary_key="k")
    part = tf.PartitionSchema(hash=[tf.HashPartition(["k"], buckets=2)]) if seed % 2 == 0 else None
    props = {"rowset_target_bytes": 1 << 16, **({"history_max_age": age} if age else {})}
    t = tf.create_table(str(path), sch, partitioning=part, properties=props)
    model, tags = {}, {}
    expected = {t.version: {}}
    for step in range(steps):
        op = rng.choice(["insert", "insert", "insert_sorted", "update", "delete", "delete", "upsert", "reinsert",
                         "compact", "compact", "compact", "vacuum", "tag", "untag", "sleep", "restore"])
        ks = sorted(rng.sample(range(nkeys), rng.randint(1, 8)))
        vals = [rng.randint(0, 99) for _ in ks]
        if op == "insert":
            new = [(k, v) for k, v in zip(ks, vals) if k not in model]
            rng.shuffle(new)
            if not new:
                continue
            t.insert(kt([k for k, _ in new], [v for _, v in new]))
            model.update(new)
        elif op == "insert_sorted":          # key-ordered input: the sort is skipped
            live = [k for k in ks if k in model]
            new = [k for k in ks if k not in model]
            if live:
                with pytest.raises(tf.DuplicateKeyError, match=r"key\(s\) already exist in table 't' \(first: "):
                    t.insert(kt(ks, vals))
            if not new:
                continue
            repeated = sorted(new + [new[0]])
            with pytest.raises(tf.DuplicateKeyError,
                               match=r"1 key\(s\) appear more than once in the batch in table 't' \(first: \d+\)"):
                t.insert(kt(repeated, list(range(len(repeated)))))
            t.insert_ignore(kt(repeated, list(range(len(repeated)))))
            for i, k in enumerate(repeated):
                model.setdefault(k, i)             # the first of a repeated key wins
        elif op == "reinsert":
            gone = [k for k in range(nkeys) if k not in model]
            if not gone:
                continue
            ks = sorted(rng.sample(gone, min(len(gone), rng.randint(1, 4))))
            t.insert(kt(ks, [100 + k for k in ks]))
            model.update((k, 100 + k) for k in ks)
        elif op == "update":
            upd = [(k, v) for k, v in zip(ks, vals) if k in model]
            if not upd:
                continue
            t.update(kt([k for k, _ in upd], [v for _, v in upd]))
            model.update(upd)
        elif op == "upsert":
            t.upsert(kt(ks, vals))
            model.update(zip(ks, vals))
        elif op == "delete":
            ks = [k for k in ks if k in model]
            if not ks:
                continue
            t.delete(kt(ks))
            for k in ks:
                model.pop(k)
        elif op == "compact":
            how = rng.choice(["policy", "policy", "merge_all", "merge_some", "major", "minor", "default"])
            st = t.state
            if how == "policy":
                t.compact(t.compaction_plan())
            elif how == "default":
                t.compact()
            elif how == "merge_all":
                merge_all(t)
            elif how == "merge_some":
                by = {}
                for r in st.rowsets.values():
                    by.setdefault(r.tablet, []).append(r.id)
                if by:
                    ids = rng.choice(sorted(by.values()))
                    force(t, "merge", rng.sample(ids, rng.randint(1, len(ids))))
            else:
                wr = [r for r in st.rowsets.values() if any(d.kind == "redo" for d in st.deltas_of(r.id))]
                if wr:
                    rs = rng.choice(sorted(wr, key=lambda r: r.id))
                    force(t, "major_delta" if how == "major" else "minor_delta", [rs.id],
                          [t.schema.column("a").id] if how == "major" else ())
        elif op == "vacuum":
            vacuum0(t)
        elif op == "tag":
            v = rng.choice(sorted(expected))
            try:
                t.tag(f"t{step}", as_of=v)
                tags[f"t{step}"] = v
            except tf.HistoryExpiredError:
                pass
        elif op == "untag":
            if tags:
                name = rng.choice(sorted(tags))
                t.untag(name)
                tags.pop(name)
        elif op == "sleep":
            if age:
                time.sleep(rng.choice([0.3, 0.7, 1.1]))
            continue
        else:
            v = rng.choice(sorted(expected))
            try:
                t.restore(as_of=v)
            except tf.HistoryExpiredError:
                continue
            model = dict(expected[v])
        expected.setdefault(t.version, dict(model))
        _verify(t, expected, tags, model, rng, nkeys)


@pytest.mark.parametrize("seed,age", [(0, None), (11, None), (104, 1), (107, 1)])
def test_random_model_history_only_tags_lookups_and_key_ordered_inserts(tmp_path, seed, age):
    _model_run(tmp_path / "t", seed, steps=40, age=age)


# --- UNDO history: every version and the timestamps between, through compactions, vacuums and UNDO GC ---

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


def _verify_every_version(t, expected, rng, nkeys):
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
            _verify_every_version(t, expected, rng, nkeys)
    vacuum0(t)
    _verify_every_version(t, expected, rng, nkeys)
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
