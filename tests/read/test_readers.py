"""Scanner.to_duckdb and Scanner.to_polars with the real libraries, on a table with pending deltas."""
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tableformat as tf
from helpers import metrics_partitioning, metrics_rows, metrics_schema

duckdb = pytest.importorskip("duckdb")
pl = pytest.importorskip("polars")


@pytest.fixture
def table(table_uri):
    t = tf.create_table(table_uri, metrics_schema(), metrics_partitioning())
    rows = metrics_rows(600)
    t.insert(rows)
    upd = rows.slice(0, 100).select(["host", "metric", "time"]).append_column("value", pa.array([42.0] * 100))
    t.update(upd)                                  # pending REDO deltas: not compacted
    t.delete(rows.slice(100, 50).select(["host", "metric", "time"]))
    assert any(t.state.deltas.values())
    return t


def _sorted(t: pa.Table) -> pa.Table:
    """Key order, with NaN made comparable (Table.equals treats NaN as unequal to itself)."""
    keys = [(k, "ascending") for k in ("host", "metric", "time") if k in t.column_names]
    t = t.sort_by(keys)
    if "value" in t.column_names:
        v = t.column("value")
        t = t.set_column(t.column_names.index("value"), "value", pc.if_else(pc.is_nan(v), -1e300, v))
    return t


FILTER = [("host", "in", ["h001", "h002", "h003"]), ("value", ">", 0.0)]


@pytest.mark.parametrize("columns,filter", [(None, None), (["host", "metric", "time", "value"], FILTER)])
def test_duckdb_equals_arrow(table, columns, filter):
    scan = table.scan(columns=columns, filter=filter)
    expected = _sorted(scan.to_arrow())
    con = table.scan(columns=columns, filter=filter).to_duckdb("m")
    got = con.sql("SELECT * FROM m").to_arrow_table()
    assert got.num_rows == expected.num_rows == table.scan(columns=columns, filter=filter).count()
    assert _sorted(got).cast(expected.schema).equals(expected)
    # a second query reads the same table: the stream was loaded once, not consumed by the first query
    assert con.sql("SELECT count(*) FROM m").fetchall()[0][0] == expected.num_rows


def test_duckdb_given_connection_and_replace(table):
    con = duckdb.connect()
    assert table.scan(columns=["host"]).to_duckdb("metrics", con) is con
    n = con.sql("SELECT count(*) FROM metrics").fetchall()[0][0]
    assert n == table.scan().count() == 550
    table.scan(columns=["host"], filter=[("host", "=", "h001")]).to_duckdb("metrics", con)
    assert con.sql("SELECT count(DISTINCT host) FROM metrics").fetchall()[0][0] == 1


def test_duckdb_bad_connection(table):
    with pytest.raises(tf.InvalidOptionError, match="duckdb connection"):
        table.scan().to_duckdb("m", connection="not a connection")
    with pytest.raises(tf.InvalidOptionError, match="name must be a string, got NoneType None"):
        table.scan().to_duckdb(None)


@pytest.mark.parametrize("columns,filter", [(None, None), (["host", "time", "value"], FILTER)])
def test_polars_equals_arrow(table, columns, filter):
    expected = table.scan(columns=columns, filter=filter).to_arrow()
    df = table.scan(columns=columns, filter=filter).to_polars()
    assert isinstance(df, pl.DataFrame)
    assert df.columns == expected.column_names
    assert df.height == expected.num_rows
    assert _sorted(df.to_arrow().cast(expected.schema)).equals(_sorted(expected))


def test_empty_scan(table):
    df = table.scan(columns=["host", "value"], filter=[("host", "=", "nope")]).to_polars()
    assert df.height == 0 and df.columns == ["host", "value"]
    con = table.scan(columns=["host"], filter=[("host", "=", "nope")]).to_duckdb("e")
    assert con.sql("SELECT count(*) FROM e").fetchall()[0][0] == 0


@pytest.mark.parametrize("module,method", [("duckdb", "to_duckdb('x')"), ("polars", "to_polars()")])
def test_missing_library_is_a_typed_error(table, module, method):
    """A Python where the library cannot be imported: MissingDependencyError naming the extra."""
    code = f"""
import sys, tableformat as tf
sys.modules[{module!r}] = None           # makes `import {module}` raise ImportError
t = tf.open_table({table.uri!r})
try:
    t.scan().{method}
except tf.MissingDependencyError as e:
    assert isinstance(e, ImportError)
    print(e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert f"pip install 'tableformat[{module}]'" in out.stdout
