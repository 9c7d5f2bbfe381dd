"""Adversarial review of history-only rowsets, tags as retention points, the insert fast path
and lookups (review-history). A random model of inserts (shuffled and key-ordered, with repeats
and live keys), updates, deletes, re-inserts of deleted keys, upserts, restores, every kind of
compaction, vacuums with no retention, tags and untags, with and without a 1 s history_max_age:
after every step the current scan, every retained version (scan and lookup), every tag, the
duplicate-key check and check() agree with the model. Deterministic scenarios pin tags over
layered history-only rowsets and inserts racing a merge that writes them."""
import random
import time

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf

from helpers import during_next_commit as _during_next_commit, force, kt, merge_all, model_rows, vacuum0


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
        with pytest.raises(tf.DuplicateKeyError):
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
                with pytest.raises(tf.DuplicateKeyError):
                    t.insert(kt(ks, vals))
            if not new:
                continue
            repeated = sorted(new + [new[0]])
            with pytest.raises(tf.DuplicateKeyError):
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


def test_tags_keep_exactly_the_layers_of_history_only_rows_they_see(tmp_path):
    """A key deleted and inserted again twice: its two deleted copies live in history-only
    layers as long as a tag sees them; untagging lets UNDO GC drop exactly the unseen ones."""
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("a", "int64", nullable=True)], primary_key="k")
    t = tf.create_table(str(tmp_path / "t"), sch, properties={"history_max_age": 1})

    def rd(**kw):
        return t.scan(ordered=True, **kw).to_arrow().to_pylist()
    want = {}
    t.insert(kt([1, 2], [10, 20]))
    t.tag("A")
    want["A"] = rd()
    t.delete(kt([1]))
    t.tag("Adel")
    want["Adel"] = rd()
    t.insert(kt([1], [11]))
    t.update(kt([1], [12]))
    t.tag("B")
    want["B"] = rd()
    t.delete(kt([1]))
    t.insert(kt([1], [13]))
    t.delete(kt([2]))
    t.tag("C")
    want["C"] = rd()
    t.insert(kt([2], [21]))
    t.update(kt([2], [22]))
    final = rd()

    def verify():
        for n, w in want.items():
            assert rd(as_of=n) == w and t.lookup(kt([1, 2]), as_of=n).to_pylist() == w, n
        assert rd() == final and t.lookup(kt([1, 2])).to_pylist() == final
        assert t.check().ok
        with pytest.raises(tf.DuplicateKeyError):
            t.insert(kt([1], [0]))

    def ghosts():
        return sorted(r.num_rows for r in t.state.rowsets.values() if r.history_only)
    time.sleep(1.2)                       # everything is older than history_max_age now
    merge_all(t)
    vacuum0(t)
    verify()
    assert ghosts() == [1, 2]             # 1 (10) and 2 (20) seen by A/Adel/B; 1 (12) by B
    t.compact(t.compaction_plan())
    verify()
    t.untag("A")
    want.pop("A")
    time.sleep(1.2)
    merge_all(t)
    t.compact(t.compaction_plan())
    vacuum0(t)
    verify()
    assert ghosts() == [2]                # 1 (10) was seen only by A
    t.untag("B")
    want.pop("B")
    merge_all(t)                          # a merge drops the rows of a history-only rowset no tag sees
    t.compact(t.compaction_plan())
    vacuum0(t)
    verify()
    assert ghosts() == [1]                # 2 (20), seen by Adel


@pytest.mark.parametrize("case", range(6))
def test_writes_racing_a_merge_that_writes_history_only_rowsets(tmp_path, case):
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("a", "int64", nullable=True)], primary_key="k")
    t = tf.create_table(str(tmp_path / "t"), sch)
    t.insert(kt([1, 2, 3], [10, 20, 30]))
    t.delete(kt([2]))
    other = tf.open_table(str(tmp_path / "t"))
    if case == 0:      # insert of the deleted key; the merge moving its old row to history commits first
        _during_next_commit(t, lambda: merge_all(other))
        t.insert(kt([2], [21]))
        want = {1: 10, 2: 21, 3: 30}
    elif case == 1:    # insert of a live key: still a duplicate after the merge
        _during_next_commit(t, lambda: merge_all(other))
        with pytest.raises(tf.DuplicateKeyError):
            t.insert(kt([3], [31]))
        want = {1: 10, 3: 30}
    elif case == 2:    # the insert of the deleted key commits first
        _during_next_commit(other, lambda: t.insert(kt([2], [22])))
        merge_all(other)
        want = {1: 10, 2: 22, 3: 30}
    elif case == 3:    # a delete and re-insert of a live key commit first
        _during_next_commit(other, lambda: (t.delete(kt([3])), t.insert(kt([3], [33]))))
        merge_all(other)
        want = {1: 10, 3: 33}
    elif case == 4:    # an upsert of the deleted key and an update commit first
        _during_next_commit(other, lambda: (t.upsert(kt([2], [23])), t.update(kt([1], [11]))))
        merge_all(other)
        want = {1: 11, 2: 23, 3: 30}
    else:              # insert_ignore of a deleted and a live key; the merge commits first
        _during_next_commit(t, lambda: merge_all(other))
        t.insert_ignore(kt([2, 3], [24, 34]))
        want = {1: 10, 2: 24, 3: 30}
    t = tf.open_table(str(tmp_path / "t"))
    for _ in range(2):
        assert t.scan(ordered=True).to_arrow().to_pylist() == model_rows(want)
        assert t.lookup(kt([1, 2, 3])).to_pylist() == model_rows(want)
        for k in want:
            with pytest.raises(tf.DuplicateKeyError):
                t.insert(kt([k], [0]))
        assert t.check().ok
        t.compact()
        vacuum0(t)


def test_key_ordered_multi_chunk_insert_finds_every_existing_key(tmp_path):
    """A key-ordered load (no sort) over many rowsets with small PK index blocks: a later batch
    repeating any one stored key (first, middle, last rowset) fails; lookups (cold, then through
    the hash index) find every key; an empty string key is a key like any other."""
    sch = tf.Schema([tf.Column("s", "string"), tf.Column("i", "int64"), tf.Column("a", "int64", nullable=True)],
                    primary_key=["s", "i"])
    t = tf.create_table(str(tmp_path / "t"), sch, properties={"rowset_target_bytes": 1 << 16,
                                                               "pk_index_block_rows": 64})
    n = 50000
    tb = pa.table({"s": np.array([f"pfx{j // 7:08d}" for j in range(n)], dtype=object),
                   "i": np.arange(n) % 7 - 3, "a": np.arange(n)})
    t.insert(pa.concat_tables([tb.slice(0, 17000), tb.slice(17000)]))
    assert len(t.state.rowsets) > 3
    extra = pa.table({"s": ["pfx99999999", "pfx99999999"], "i": [0, 1], "a": [1, 2]})
    for j in (0, 12345, n - 1):
        with pytest.raises(tf.DuplicateKeyError):
            t.insert(pa.concat_tables([tb.slice(j, 1), extra]))
    t.insert(pa.table({"s": [""], "i": [0], "a": [-1]}))
    with pytest.raises(tf.DuplicateKeyError):
        t.insert(pa.table({"s": ["", "zz"], "i": [0, 0], "a": [0, 0]}))
    q = tb.take(pa.array(np.random.default_rng(0).choice(n, 3000, replace=False)))
    for _ in range(2):
        assert t.lookup(q.select(["s", "i"])).to_pylist() == q.to_pylist()
    assert t.lookup(pa.table({"s": [""], "i": [0]})).to_pylist() == [{"s": "", "i": 0, "a": -1}]
    assert t.scan().count() == n + 1 and t.check().ok
