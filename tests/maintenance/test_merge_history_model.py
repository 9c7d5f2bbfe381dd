"""A random model of inserts, re-inserts of deleted keys (ghosts sharing keys with live rows),
updates, upserts, deletes, merges of any subset of a tablet's rowsets (merge outputs,
history-only rowsets, a load with a few later rows: merge_order's bisection path), merges a
mutation races (rebased by key), major delta compactions, vacuums with no retention and tags,
with and without a 1 s history_max_age. After every compaction and vacuum, every version (scan
and lookup), every tag and check() agree with the model. Small rowset_target_bytes (several
outputs) and PK index blocks of 16 keys. (It covers the merge's
merged_created_ts, merge_order and _remapped_undo.)"""
import random
import time

import pytest

import tableformat as tf

from helpers import during_next_commit, force, int_keyed, merge_all, vacuum0


def _run(tmp_path, seed, steps, age=None, composite=False, nkeys=40):
    rng = random.Random(seed)
    props = {"rowset_target_bytes": 1 << 16, "pk_index_block_rows": 16, "row_group_rows": 128}
    if age is not None:
        props["history_max_age"] = age
    # a variable-width key part before the number when composite
    t, tbl = int_keyed(tmp_path / "t", composite, seed % 3 == 0, props)
    uri = str(tmp_path / "t")

    def order(r):
        return (r.get("h", ""), r["k"])

    def rows(m):
        return sorted(({**({"h": "x" * (k % 4)} if composite else {}), "k": k, "a": v} for k, v in m.items()),
                      key=order)

    model, tags, log = {}, {}, []
    expected = {t.version: {}}
    allk = list(range(nkeys * 10))
    big = list(range(0, nkeys * 10, 2))          # one large load: later merges bisect into it
    t.insert(tbl(big, big))
    model.update(zip(big, big))
    expected[t.version] = dict(model)

    def check(what):
        for v, m in expected.items():
            try:
                got = sorted(t.scan(as_of=v).to_arrow().to_pylist(), key=order)
                ks = sorted(rng.sample(allk, 6))
                lk = sorted(t.lookup(tbl(ks), as_of=v).to_pylist(), key=order)
            except tf.HistoryExpiredError:
                assert age is not None and v not in tags.values(), (what, v)
                continue
            assert got == rows(m), f"seed {seed}: version {v} after {what}; log {log[-10:]}"
            assert lk == [r for r in rows(m) if r["k"] in ks], f"seed {seed}: lookup as of {v} after {what}"
        for name, v in tags.items():
            assert sorted(t.scan(as_of=name).to_arrow().to_pylist(), key=order) == rows(expected[v]), name
        rep = t.check()
        assert rep.ok, rep.violations

    def rowsets_of_a_tablet():
        by = {}
        for r in t.state.rowsets.values():
            by.setdefault(r.tablet, []).append(r.id)
        ids = rng.choice(sorted(by.values()))
        return rng.sample(ids, rng.randint(1, len(ids)))

    for step in range(steps):
        op = rng.choice(["insert", "reinsert", "update", "delete", "delete", "upsert", "merge", "merge",
                         "merge_all", "merge_race", "major", "vacuum", "tag", "sleep"])
        ks = sorted(rng.sample(allk, rng.randint(1, 12)))
        vals = [rng.randint(0, 999) for _ in ks]
        if op == "insert":
            new = [(k, v) for k, v in zip(ks, vals) if k not in model]
            if not new:
                continue
            t.insert(tbl([k for k, _ in new], [v for _, v in new]))
            model.update(new)
        elif op == "reinsert":
            gone = [k for k in allk if k not in model and k % 2 == 0]
            if not gone:
                continue
            ks = sorted(rng.sample(gone, min(len(gone), rng.randint(1, 6))))
            t.insert(tbl(ks, [1000 + k for k in ks]))
            model.update((k, 1000 + k) for k in ks)
        elif op == "update":
            upd = [(k, v) for k, v in zip(ks, vals) if k in model]
            if not upd:
                continue
            t.update(tbl([k for k, _ in upd], [v for _, v in upd]))
            model.update(upd)
        elif op == "upsert":
            t.upsert(tbl(ks, vals))
            model.update(zip(ks, vals))
        elif op == "delete":
            ks = sorted(rng.sample(sorted(model), min(len(model), rng.randint(1, 10))))
            if not ks:
                continue
            t.delete(tbl(ks))
            for k in ks:
                model.pop(k)
        elif op in ("merge", "merge_all", "major"):
            if op == "merge_all":
                merge_all(t)
            elif op == "merge":
                force(t, "merge", rowsets_of_a_tablet())
            else:
                st = t.state
                wr = sorted((r for r in st.rowsets.values() if any(x.kind == "redo" for x in st.deltas_of(r.id))),
                            key=lambda r: r.id)
                if not wr:
                    continue
                force(t, "major_delta", [rng.choice(wr).id], [t.schema.column("a").id])
            log.append((op, t.version))
            expected[t.version] = dict(model)
            check(op)
            continue
        elif op == "merge_race":
            other = tf.open_table(uri)
            ids = rowsets_of_a_tablet()
            live = sorted(model)
            kind = rng.choice(["update", "delete", "upsert", "reinsert"])
            if kind == "reinsert":
                gone = [k for k in allk if k not in model]
                ks = sorted(rng.sample(gone, min(len(gone), 4)))
                vals = [2000 + k for k in ks]
            elif kind != "upsert":
                ks = sorted(rng.sample(live, min(len(live), 5)))
                vals = [rng.randint(0, 999) for _ in ks]
            if not ks:
                continue
            data = tbl(ks) if kind == "delete" else tbl(ks, vals)
            write = {"update": other.update, "delete": other.delete, "upsert": other.upsert,
                     "reinsert": other.insert}[kind]
            fired = during_next_commit(t, lambda w=write, x=data: w(x))
            done = force(t, "merge", ids, committed=False)
            t.storage.fault_hook = None
            if fired:
                if kind == "delete":
                    for k in ks:
                        model.pop(k)
                else:
                    model.update(zip(ks, vals))
                expected[t.version - (1 if done else 0)] = dict(model)
            expected[t.version] = dict(model)
            log.append(("merge_race", kind, len(done), t.version))
            check("merge_race")
            continue
        elif op == "vacuum":
            vacuum0(t)
            log.append(("vacuum", t.version))
            check("vacuum")
            continue
        elif op == "tag":
            v = rng.choice(sorted(expected))
            try:
                t.tag(f"t{step}", as_of=v)
                tags[f"t{step}"] = v
            except tf.HistoryExpiredError:
                continue
        else:
            if age:
                time.sleep(rng.choice([0.3, 1.1]))
            continue
        log.append((op, t.version, ks[:6]))
        expected[t.version] = dict(model)
    check("end")
    vacuum0(t)
    check("final vacuum")


@pytest.mark.parametrize("seed,age,composite", [(300, None, False), (301, None, True), (104, 1, False),
                                                (202, None, True)])
def test_random_merges_keep_every_version(tmp_path, seed, age, composite):
    _run(tmp_path, seed, steps=45, age=age, composite=composite)
