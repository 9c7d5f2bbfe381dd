"""Table.inspect: metadata tables from the log (history, tablets, rowsets, deltas, files, tags)."""
import datetime as dt
import json
import os

import pyarrow as pa
import pytest

import tableformat as tf
from helpers import metrics_partitioning, metrics_rows, metrics_schema

KEY = ["host", "metric", "time"]


@pytest.fixture
def t(table_uri):
    t = tf.create_table(table_uri, metrics_schema(), metrics_partitioning())
    rows = metrics_rows(1200)
    t.insert(rows)
    t.insert(metrics_rows(300, start=5000))
    t.update(rows.slice(0, 200).select(KEY).append_column("value", pa.array([1.0] * 200)))
    t.delete(rows.slice(200, 120).select(KEY))
    return t


def test_kinds_and_bad_kind(t):
    for kind in ("history", "tablets", "rowsets", "deltas", "files", "tags"):
        assert isinstance(t.inspect(kind), pa.Table)
    with pytest.raises(tf.InvalidOptionError, match="kind"):
        t.inspect("snapshots")
    with pytest.raises(tf.InvalidOptionError, match="kind"):
        t.inspect(None)


def test_history(t):
    h = t.inspect("history")
    assert h.column("version").to_pylist() == [c.version for c in t.history()] == [0, 1, 2, 3, 4]
    assert h.column("operation").to_pylist() == ["CREATE TABLE", "INSERT", "INSERT", "UPDATE", "DELETE"]
    assert h.column("inserted").to_pylist() == [0, 1200, 300, 0, 0]
    assert h.column("updated").to_pylist()[3] == 200 and h.column("deleted").to_pylist()[4] == 120
    assert h.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert h.column("timestamp").to_pylist()[-1] == dt.datetime.fromtimestamp(t.history()[-1].timestamp / 1e6,
                                                                                 dt.timezone.utc)
    assert t.inspect("history", as_of=2).column("version").to_pylist() == [0, 1, 2]


def test_rowsets_counts_fractions_and_key_ranges(t):
    r = t.inspect("rowsets")
    st = t.state
    assert r.num_rows == len(st.rowsets)
    assert sum(r.column("rows").to_pylist()) == 1500
    assert sum(r.column("deleted_rows").to_pylist()) == 120
    assert sum(r.column("live_rows").to_pylist()) == t.scan().count() == 1380
    for row in r.to_pylist():
        rs = st.rowsets[row["rowset"]]
        assert row["deleted_fraction"] == pytest.approx(row["deleted_rows"] / rs.num_rows)
        assert row["base_bytes"] + row["index_bytes"] + row["delta_bytes"] == row["bytes"]
        # the key range, decoded: the rowset's first and last key as typed values
        keys = t.scan(columns=KEY, filter=[("host", "=", row["min_key"]["host"])]).to_arrow()
        assert set(row["min_key"]) == set(KEY) and row["min_key_hex"] == rs.min_key.hex()
        assert row["min_key"]["host"] <= row["max_key"]["host"] and keys.num_rows > 0
    assert r.schema.field("min_key").type == pa.struct([("host", pa.string()), ("metric", pa.string()),
                                                        ("time", pa.timestamp("us", tz="UTC"))])
    stats = json.loads(r.column("stats")[0].as_py())
    assert set(stats) >= {"host", "value"} and stats["host"]["nulls"] == 0
    # 200 updated rows of the first insert: their delta fraction is updates per base row
    upd = sum(row["delta_fraction"] * row["rows"] for row in r.to_pylist())
    assert upd == pytest.approx(200)


def test_tablets_sum_their_rowsets(t):
    tb, r = t.inspect("tablets"), t.inspect("rowsets")
    assert tb.column("tablet").to_pylist() == t.state.partitioning.tablet_ids()
    assert sum(tb.column("rows").to_pylist()) == sum(r.column("rows").to_pylist())
    assert sum(tb.column("bytes").to_pylist()) == sum(r.column("bytes").to_pylist())
    assert sum(tb.column("rowsets").to_pylist()) == r.num_rows


def test_deltas_and_files_exist_with_their_sizes(t):
    d = t.inspect("deltas")
    assert set(d.column("kind").to_pylist()) == {"redo"}
    assert sum(d.column("deletes").to_pylist()) == 120
    assert {c for cols in d.column("updated_columns").to_pylist() for c in cols} == {"value"}
    f = t.inspect("files")
    assert set(f.column("kind").to_pylist()) == {"base", "pk_index", "bloom", "redo"}
    root = t.uri.removeprefix("file://")
    for path, size in zip(f.column("path").to_pylist(), f.column("size").to_pylist()):
        assert os.path.getsize(os.path.join(root, path)) == size
    assert set(d.column("path").to_pylist()) <= set(f.column("path").to_pylist())


def test_after_compaction_history_is_undo(t):
    t.compact()
    d = t.inspect("deltas")
    r = t.inspect("rowsets")
    assert sum(r.column("live_rows").to_pylist()) == t.scan().count() == 1380
    assert set(r.column("rowset").to_pylist()) == set(t.state.rowsets)
    assert set(d.column("path").to_pylist()) == {x.path for ds in t.state.deltas.values() for x in ds}


def test_empty_table_has_typed_empty_tables(table_uri):
    t = tf.create_table(table_uri, metrics_schema(), metrics_partitioning())
    assert t.inspect("rowsets").num_rows == 0 and t.inspect("files").num_rows == 0
    assert t.inspect("tablets").num_rows == len(t.state.partitioning.tablet_ids())
    tags = t.inspect("tags")
    assert tags.num_rows == 0 and tags.column_names == ["name", "version", "timestamp"]


def test_tags_read_whatever_the_state_holds(t):
    """Tags live in the state (specs/format.md §12.2): a name -> version map, or records with a version."""
    from types import SimpleNamespace
    from tableformat.read.inspect import tags
    hist = t.history()
    for held in ({"b": 2, "a": 1}, {"b": {"version": 2}, "a": SimpleNamespace(version=1, timestamp=None)}):
        got = tags(SimpleNamespace(tags=held), hist).to_pylist()
        assert [(g["name"], g["version"]) for g in got] == [("a", 1), ("b", 2)]
        assert got[0]["timestamp"] == dt.datetime.fromtimestamp(hist[1].timestamp / 1e6, dt.timezone.utc)


def test_tags_of_a_tagged_table_carry_their_version_and_timestamp(t):
    """TableState holds a tag as (version, timestamp): both reach the metadata table."""
    v = t.version
    t.tag("nightly")
    (row,) = t.inspect("tags").to_pylist()
    assert (row["name"], row["version"]) == ("nightly", v)
    assert row["timestamp"] == dt.datetime.fromtimestamp(t.state.tags["nightly"][1] / 1e6, dt.timezone.utc)
