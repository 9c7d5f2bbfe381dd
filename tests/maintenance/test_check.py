"""The table check (`maintenance/check.py`): it finds each kind of corruption of the log or the files."""
import json
import os

import pyarrow as pa
import pytest

import tableformat as tf

from helpers import kv


def _tamper(t, action):
    st = t.state
    assert t.log.try_commit(st, "TAMPER", [action], {}, st.version) is not None


@pytest.mark.parametrize("damage,expect", [
    ("duplicate", "more than one rowset"),
    ("range", "key range"),
    ("rowid", "beyond rowset"),
    ("missing", "missing"),
    ("size", "bytes, the log recorded"),
    ("log", "log:"),
])
def test_check_finds_each_kind_of_corruption(tmp_path, damage, expect):
    t = kv(tmp_path / "kv")
    t.insert(pa.table({"key": [f"k{i}" for i in range(50)], "val": list(range(50))}))
    t.insert(pa.table({"key": ["x0", "x1"], "val": [1, 2]}))
    t.update(pa.table({"key": [f"k{i}" for i in range(0, 50, 5)], "val": [0] * 10}))
    assert t.check().ok
    big, small = sorted(t.state.rowsets.values(), key=lambda r: -r.num_rows)
    root = tmp_path / "kv"
    if damage == "duplicate":
        _tamper(t, {"add_rowset": {**big.to_json(), "id": "f" * 32}})
    elif damage == "range":
        _tamper(t, {"add_rowset": {**small.to_json(), "min_key": "00"}})
    elif damage == "rowid":
        d = t.state.deltas_of(big.id)[0]
        _tamper(t, {"add_delta": {**d.to_json(), "rowset": small.id}})
    elif damage == "missing":
        os.remove(root / big.bloom.path)
    elif damage == "size":
        with open(root / small.base[0].path, "ab") as f:
            f.write(b"junk")
    else:
        p = root / "_log" / "00000000000000000001.json"
        d = json.loads(p.read_text())
        d["actions"][0]["add_rowset"]["num_rows"] += 1
        p.write_text(json.dumps(d))
    rep = tf.open_table(str(root)).check() if damage != "log" else t.check()
    assert not rep.ok
    assert any(expect in v for v in rep.violations), rep
