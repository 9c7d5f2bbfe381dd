"""Delta files: the order records are written in."""
import numpy as np
import pytest

from tableformat.deltafile import record_order


@pytest.mark.parametrize("shape", ["sorted", "two_runs", "ties_out_of_ts_order", "random", "no_ts"])
def test_records_are_ordered_by_rowid_then_time_as_lexsort_orders_them(shape):
    """Delta records are written by (rowid, ts), stable. Input that is in order already (or in
    sorted runs, as a merge's UNDO is) takes the cheap ways; every way gives lexsort's order."""
    rng = np.random.default_rng(len(shape))
    n = 5000
    rowids = np.sort(rng.integers(0, 2000, n))
    ts = rng.integers(0, 5, n)
    if shape == "sorted":
        o = np.lexsort((ts, rowids))
        rowids, ts = rowids[o], ts[o]
    elif shape == "two_runs":
        rowids = np.r_[np.sort(rng.integers(0, 2000, n - n // 2)), np.sort(rng.integers(0, 2000, n // 2))]
        ts = np.r_[np.full(n - n // 2, 3), np.full(n // 2, 7)]
    elif shape == "random":
        rowids = rng.integers(0, 2000, n)
    ts_arg = None if shape == "no_ts" else ts
    got = record_order(rowids, ts_arg)
    want = np.argsort(rowids, kind="stable") if ts_arg is None else np.lexsort((ts_arg, rowids))
    assert (np.arange(n) if got is None else got).tolist() == want.tolist()
    assert (got is None) == (shape in ("sorted", "no_ts"))
