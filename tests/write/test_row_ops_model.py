"""Property test: random operation sequences against a plain dict model (bounded for CI).

After every commit it checks the current scan, a scan as of every earlier
version, and the change history (every change and net) between random
pairs of versions.
"""
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tableformat as tf

KEYS = [f"k{i}" for i in range(8)]
OPS = ["insert", "insert_ignore", "update", "update_ignore", "delete", "delete_ignore", "upsert"]

step = st.tuples(
    st.sampled_from(OPS + ["apply"]),
    st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(OPS), st.integers(-5, 5) | st.none(),
                       st.sampled_from(["x", "y", None])), min_size=1, max_size=5, unique_by=lambda r: r[0]),
    st.sampled_from([("val",), ("s",), ("val", "s")]),
)


def model_apply(model, kind, rows, cols):
    """Returns (new model, per-key change records, counts) or raises the expected error class."""
    m = dict(model)
    changes, errors = [], None
    for key, op, val, s in rows:
        op = op if kind == "apply" else kind
        exists = key in m
        given_cols = {"val": val, "s": s}
        if op in ("insert", "insert_ignore") or (op == "upsert" and not exists):
            if exists:
                if op == "insert":
                    errors = errors or tf.DuplicateKeyError
                continue
            row = {"val": val if "val" in cols or kind == "apply" else None,
                   "s": s if "s" in cols or kind == "apply" else "d"}
            m[key] = row
            changes.append(("insert", key, (row["val"], row["s"]), None))
        elif op in ("update", "update_ignore", "upsert"):
            if not exists:
                if op == "update":
                    errors = errors or tf.KeyNotFoundError
                continue
            ucols = ("val", "s") if kind == "apply" else cols
            old = m[key]
            row = dict(old)
            for c in ucols:
                row[c] = given_cols[c]
            m[key] = row
            # _changed_columns: the written cells whose value changed (specs/format.md §9.2)
            changes.append(("update", key, (row["val"], row["s"]), tuple(sorted(c for c in ucols if old[c] != row[c]))))
        else:
            if not exists:
                if op == "delete":
                    errors = errors or tf.KeyNotFoundError
                continue
            del m[key]
            changes.append(("delete", key, (None, None), None))
    return m, changes, errors


def batch(kind, rows, cols):
    d = {"key": [r[0] for r in rows]}
    if kind == "apply":
        d = {"op": [r[1] for r in rows], **d, "val": pa.array([r[2] for r in rows], pa.int64()),
             "s": pa.array([r[3] for r in rows], pa.string())}
    elif not kind.startswith("delete"):
        if "val" in cols:
            d["val"] = pa.array([r[2] for r in rows], pa.int64())
        if "s" in cols:
            d["s"] = pa.array([r[3] for r in rows], pa.string())
    return pa.table(d)


def scan_dict(t, **kw):
    return {r["key"]: {"val": r["val"], "s": r["s"]} for r in t.scan(**kw).to_arrow().to_pylist()}


def net_changes(states, logs, a, b):
    """Expected net changes between versions a and b from the model."""
    before, after = states[a], states[b]
    touched, reins, cols = set(), set(), {}
    for v in range(a + 1, b + 1):
        deleted = set()
        for op, key, _, c in logs[v]:
            touched.add(key)
            if op == "delete":
                deleted.add(key)
            if op == "insert" and key in before and (key in deleted or any(
                    o == "delete" and k == key for w in range(a + 1, v) for o, k, _, _ in logs[w])):
                reins.add(key)
            if op == "update":
                cols.setdefault(key, set()).update(c)
    out = {}
    for key in touched:
        if key in before and key not in after:
            out[key] = ("delete", None)
        elif key not in before and key in after:
            out[key] = ("insert", (after[key]["val"], after[key]["s"]), None)
            out[key] = ("insert", (after[key]["val"], after[key]["s"]))
        elif key in before and key in after:
            out[key] = ("update", (after[key]["val"], after[key]["s"]))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=10), st.randoms(use_true_random=False))
def test_random_operations_match_a_dict_model(tmp_path_factory, steps, rnd):
    uri = str(tmp_path_factory.mktemp("model") / "t")
    t = tf.create_table(uri, tf.Schema([tf.Column("key", "string"), tf.Column("val", "int64", nullable=True),
                                        tf.Column("s", "string", nullable=True, default="d")], primary_key="key"))
    model, states, logs = {}, [{}], [[]]
    for kind, rows, cols in steps:
        new_model, changes, err = model_apply(model, kind, rows, cols)
        data = batch(kind, rows, cols)
        fn = {"apply": t.apply, "insert": t.insert, "insert_ignore": t.insert_ignore}.get(kind) or getattr(t, kind)
        if kind in ("update", "update_ignore", "upsert") and kind != "apply":
            res = None
            if err:
                with pytest.raises(err, match=r"key\(s\) not found in table 't' \(first: 'k"):
                    fn(data, columns=list(cols))
            else:
                res = fn(data, columns=list(cols))
        elif err:
            with pytest.raises(err, match=r"key\(s\) (not found|already exist) in table 't' \(first: 'k"):
                fn(data)
            res = None
        else:
            res = fn(data)
        if err or not changes:
            assert t.version == len(states) - 1      # nothing committed
            continue
        assert res.version == len(states)
        model = new_model
        states.append(model)
        logs.append(changes)
        # current and every earlier version
        assert scan_dict(t) == model
        for v, s in enumerate(states):
            assert scan_dict(t, as_of=v) == s, v
        # change history between a random pair
        a = rnd.randrange(0, len(states))
        b = rnd.randrange(a, len(states))
        every = t.changes(a, b).to_pylist()
        expect = sorted((v, op, key, img) for v in range(a + 1, b + 1) for op, key, img, _ in logs[v])
        got = sorted((c["_version"], c["_op"], c["key"], (c["val"], c["s"]) if c["_op"] != "delete" else (None, None))
                     for c in every)
        assert got == expect
        upd = {(c["_version"], c["key"]): tuple(sorted(c["_changed_columns"])) for c in every if c["_op"] == "update"}
        assert upd == {(v, key): cc for v in range(a + 1, b + 1) for op, key, _, cc in logs[v] if op == "update"}
        net = {c["key"]: (c["_op"], (c["val"], c["s"]) if c["_op"] != "delete" else None)
               for c in t.changes(a, b, mode="net").to_pylist()}
        assert net == net_changes(states, logs, a, b)
