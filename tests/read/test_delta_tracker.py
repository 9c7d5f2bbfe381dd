"""The delta tracker: changes resolved once per rowset, placed and deleted rows dropped in a scan's pass.

Checked against a plain-Python model of the rows (rowid = position in the one rowset, keys
inserted in key order), for every column kind the placement treats differently: fixed-width
numbers with and without NULLs, strings, booleans, decimals and timestamps.
"""
import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf
from tableformat.format.cfile_set import arrow_owned, bool_array
from tableformat.read.delta_tracker import _Drop, apply_deltas, column_changes
from tableformat.format.diskrowset import read_base_columns

N = 1000
UTC = dt.timezone.utc
COLS = ["n", "x", "s", "b", "d", "t"]


def _schema():
    return tf.Schema([
        tf.Column("k", "int64"),
        tf.Column("n", "int64"),                              # never NULL: the numpy scatter path
        tf.Column("x", "double", nullable=True),
        tf.Column("s", "string", nullable=True),
        tf.Column("b", "bool", nullable=True),
        tf.Column("d", "decimal(18,2)", nullable=True),
        tf.Column("t", "unixtime_micros", nullable=True),
    ], primary_key=["k"])


def _row(k: int, gen: int) -> dict:
    return {"k": k, "n": k * 10 + gen, "x": None if (k + gen) % 11 == 0 else k / 4 + gen,
            "s": None if (k + gen) % 13 == 0 else f"s{k}-{gen}", "b": (k + gen) % 3 == 0,
            "d": decimal.Decimal(k * 100 + gen).scaleb(-2),
            "t": dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=k, minutes=gen)}


def _table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=_schema().arrow_schema())


@pytest.fixture(scope="module")
def churned(tmp_path_factory):
    """One rowset of N rows; three commits of updates (some rows twice, some set to NULL), deletes
    around byte boundaries of the live bitmap, then a reinsert of some deleted keys. Returns the
    table, the model at each version, and the reinserted keys."""
    t = tf.create_table(str(tmp_path_factory.mktemp("dt") / "t"), _schema(),
                        properties={"row_group_rows": 128})
    model = {k: _row(k, 0) for k in range(N)}
    t.insert(_table(list(model.values())))
    versions = {t.version: dict(model)}
    rng = np.random.default_rng(5)
    for gen in (1, 2, 3):
        ks = sorted(rng.choice(N, 120, replace=False).tolist())
        rows = [_row(k, gen) for k in ks]
        for r in rows[::7]:
            r["x"], r["s"] = None, None                       # set to NULL, not "unchanged"
        t.update(_table(rows))
        model.update({r["k"]: r for r in rows})
        versions[t.version] = dict(model)
    dead = sorted({0, 7, 8, 9, 15, 16, 63, 64, 65, 500, 501, 502, 503, 504, 505, 506, 507, 998, 999}
                  | set(rng.choice(N, 40, replace=False).tolist()))
    t.delete(pa.table({"k": pa.array(dead, pa.int64())}))
    for k in dead:
        del model[k]
    versions[t.version] = dict(model)
    back = [_row(k, 4) for k in dead[::3]]
    t.insert(_table(back))                                    # a new rowset: the old rows stay deleted
    model.update({r["k"]: r for r in back})
    versions[t.version] = dict(model)
    return t, versions, {r["k"] for r in back}


def _expect(model: dict, lo: int, hi: int, cols) -> list[dict]:
    return [{c: model[k][c] for c in cols} for k in range(lo, hi) if k in model]


@pytest.mark.parametrize("lo,hi", [(0, N), (1, 999), (7, 66), (8, 9), (9, 17), (499, 509), (500, 508), (998, N)])
def test_a_row_range_is_its_live_rows_with_the_newest_values(churned, lo, hi):
    t, versions, moved = churned
    s = t.scan(columns=COLS + ["k"])
    (rs,) = [r for r in t.state.rowsets.values() if r.num_rows == N]
    got = s.read_task(s.task(rs.id, lo, hi))
    want = [r for r in _expect(versions[t.version], lo, hi, COLS + ["k"]) if r["k"] not in moved]
    assert got.to_pylist() == want


@pytest.mark.parametrize("cols", [["x"], ["n"], ["s", "b"], ["d", "t"], []])
def test_every_version_scans_as_the_model(churned, cols):
    t, versions, _ = churned
    for v, model in versions.items():
        got = t.scan(columns=cols + ["k"], as_of=v).to_arrow().sort_by("k")
        assert got.to_pylist() == _expect(model, 0, 2 * N, cols + ["k"]), v
        assert t.scan(columns=cols, as_of=v).count() == len(model)
        filtered = t.scan(columns=cols + ["k"], filter=[("n", ">=", 5000)], as_of=v).to_arrow().sort_by("k")
        assert filtered.to_pylist() == [r for r, k in zip(_expect(model, 0, 2 * N, cols + ["k"]), sorted(model))
                                        if model[k]["n"] >= 5000], v


def test_the_same_reads_after_compaction_through_undo(tmp_path):
    """After compact() the old versions come from UNDO records: each column's changes as of an
    earlier time are resolved from them, and the current read needs no delta file at all."""
    t = tf.create_table(str(tmp_path / "t"), _schema(), properties={"row_group_rows": 128})
    model = {k: _row(k, 0) for k in range(300)}
    t.insert(_table(list(model.values())))
    versions = {t.version: dict(model)}
    for gen in (1, 2):
        rows = [_row(k, gen) for k in range(gen, 300, 5)]
        t.update(_table(rows))
        model.update({r["k"]: r for r in rows})
        versions[t.version] = dict(model)
    t.delete(pa.table({"k": pa.array(list(range(0, 300, 9)), pa.int64())}))
    for k in range(0, 300, 9):
        del model[k]
    versions[t.version] = dict(model)
    t.compact()
    for v, m in versions.items():
        got = t.scan(columns=COLS + ["k"], as_of=v).to_arrow().sort_by("k")
        assert got.to_pylist() == _expect(m, 0, 300, COLS + ["k"]), v


def test_column_changes_are_resolved_once_per_rowset_and_version(churned):
    """The newest value of every changed cell, by ascending rowid; cached by the files read
    (immutable), so a second scan of any range reuses it; a read as of another time gets its own."""
    t, versions, _ = churned
    (rs,) = [r for r in t.state.rowsets.values() if r.num_rows == N]
    deltas = t.state.deltas_of(rs.id)
    col = t.schema.column("s")
    rowids, values = column_changes(t.storage, rs, deltas, col)
    assert np.all(np.diff(rowids) > 0)
    model, base = versions[max(versions) - 1], {k: _row(k, 0) for k in range(N)}   # before the reinsert
    got = dict(zip(rowids.tolist(), values.to_pylist()))
    assert {k: v for k, v in got.items() if k in model} == {k: model[k]["s"] for k in got if k in model}
    assert {k for k in model if model[k]["s"] != base[k]["s"]} <= set(got)
    again = column_changes(t.storage, rs, deltas, col)
    assert again[0] is rowids and again[1] is values
    assert column_changes(t.storage, rs, deltas, t.schema.column("k")) is None     # keys never change
    first_update = min(v for v in versions if v > 1)
    snap = t.snapshot(first_update).state
    early = column_changes(t.storage, rs, snap.deltas_of(rs.id), col, snap.read_ts)
    assert early[0] is not rowids and len(early[0]) < len(rowids)


def test_drop_deleted_gives_the_live_rows_of_the_kept_result(churned):
    t, _, _ = churned
    (rs,) = [r for r in t.state.rowsets.values() if r.num_rows == N]
    deltas = t.state.deltas_of(rs.id)
    cols = [t.schema.column(c) for c in COLS]
    for lo, hi in [(0, N), (3, 77), (500, 508)]:
        base = read_base_columns(t.storage, rs, cols, lo, hi)
        before = {k: v.to_pylist() for k, v in base.items()}
        kept, live = apply_deltas(t.storage, rs, deltas, cols, base, lo, hi)
        dropped, live2 = apply_deltas(t.storage, rs, deltas, cols, base, lo, hi, drop_deleted=True)
        assert live is not None and np.array_equal(live, live2)
        assert {k: v.to_pylist() for k, v in base.items()} == before       # the base arrays are not written
        for c in cols:
            assert dropped[c.id].to_pylist() == [v for v, ok in zip(kept[c.id].to_pylist(), live) if ok], c.name


def test_arrow_owned_is_writable_and_becomes_an_array_without_a_copy():
    buf, view = arrow_owned(5, np.int64)
    view[:] = np.arange(5) * 3
    arr = pa.Array.from_buffers(pa.int64(), 5, [None, buf])
    assert arr.to_pylist() == [0, 3, 6, 9, 12]
    assert arr.buffers()[1].address == buf.address


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 1001])
def test_bool_array_packs_a_numpy_mask(n):
    mask = np.random.default_rng(n).random(n) < 0.5
    assert bool_array(mask).to_pylist() == mask.tolist()
    assert bool_array(mask[1:]).to_pylist() == mask[1:].tolist()


def test_a_string_column_with_few_deleted_rows_keeps_its_live_runs_without_a_copy():
    a = pa.array([f"v{i}" for i in range(1000)])
    gone = np.zeros(1000, bool)
    gone[[0, 3, 500, 501, 999]] = True
    drop = _Drop(gone, np.flatnonzero(gone), bool_array(~gone))
    out = drop.apply(pa.chunked_array([a]))
    assert out.to_pylist() == [v for v, g in zip(a.to_pylist(), gone) if not g]
    assert {c.buffers()[2].address for c in out.chunks} == {a.buffers()[2].address}    # slices of `a`


@pytest.mark.parametrize("typ", [pa.int64(), pa.float64(), pa.decimal128(18, 2), pa.decimal128(38, 5), pa.bool_(),
                                 pa.string(), pa.timestamp("us", tz="UTC"), pa.int8(), pa.date32(), pa.int32()])
def test_placing_changes_and_dropping_deleted_rows_matches_the_plain_way(typ):
    """Changed cells placed into a column and deleted rows dropped in one pass (the scan's and
    the lookup's delta application) give the values of placing them one by one and filtering:
    every type of the metrics schema and more, NULLs in the base and in the changes, a sliced
    base, changes on deleted rows."""
    import decimal
    from tableformat.format.cfile_set import bool_array
    from tableformat.read.delta_tracker import _Drop, _place
    rng = np.random.default_rng(abs(hash(str(typ))) % 1000)

    def make(m, nulls):
        if typ == pa.bool_():
            vals = [bool(x) for x in rng.random(m) < .5]
        elif typ == pa.string():
            vals = [str(x) for x in rng.integers(0, 100, m)]
        elif pa.types.is_decimal(typ):
            vals = [decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-10 ** 6, 10 ** 6, m)]
        else:
            vals = [int(x) for x in rng.integers(0, 100, m)]
        if nulls:
            vals = [None if rng.random() < .3 else x for x in vals]
        if pa.types.is_timestamp(typ) or pa.types.is_date(typ):
            return pa.array(vals, pa.int64()).cast(pa.int32() if pa.types.is_date(typ) else pa.int64()).cast(typ)
        return pa.array(vals, typ)
    for trial in range(40):
        n = int(rng.integers(1, 300))
        off = trial % 3
        base = make(n + off, trial % 3 == 0).slice(off)
        k = int(rng.integers(0, n + 1))
        pos = np.sort(rng.choice(n, k, replace=False))
        values = make(k, trial % 2 == 0)
        want = base.to_pylist()
        for p, v in zip(pos, values.to_pylist()):
            want[p] = v
        got = _place(base, pos, values)
        got.validate(full=True)
        assert got.to_pylist() == want
        gone = rng.random(n) < .2
        got = _Drop(gone, np.flatnonzero(gone), bool_array(~gone)).place(base, pos, values)
        got.validate(full=True)
        assert got.to_pylist() == [x for x, g in zip(want, gone) if not g]


def test_consume_replaces_the_base_columns_in_the_callers_dict(churned):
    """A scan gives its base columns up (`consume`): each is replaced where it lies, so it is
    freed once its live values are built (issue 39), and the values are those of a copy."""
    t, _, _ = churned
    (rs,) = [r for r in t.state.rowsets.values() if r.num_rows == N]
    deltas = t.state.deltas_of(rs.id)
    cols = [t.schema.column(c) for c in COLS]
    expect, live = apply_deltas(t.storage, rs, deltas, cols, read_base_columns(t.storage, rs, cols, 0, N), 0, N,
                                drop_deleted=True)
    base = read_base_columns(t.storage, rs, cols, 0, N)
    given = dict(base)
    got, live2 = apply_deltas(t.storage, rs, deltas, cols, base, 0, N, drop_deleted=True, consume=True)
    assert got is base and np.array_equal(live, live2)
    assert all(base[c.id] is not given[c.id] for c in cols)          # no base column is left in it
    assert {k: v.to_pylist() for k, v in got.items()} == {k: v.to_pylist() for k, v in expect.items()}
