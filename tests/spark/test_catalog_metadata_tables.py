"""The catalog's metadata tables (`<table>.tablets`, `.rowsets`, `.deltas`, `.files`, `.history`, `.tags`,
issue #35 item 2): read by the JVM from the log, with the engine's columns and meanings
(tableformat/read/inspect.py), compared row for row with `Table.inspect`, latest and as of a version."""
import numpy as np
import pyarrow as pa
import pytest

from helpers import range_keyed, spark_catalog as catalog

pyspark = pytest.importorskip("pyspark")

pytestmark = pytest.mark.usefixtures("jvm_connector")


def normalized(t: pa.Table) -> list[dict]:
    """Rows with timestamps as microseconds (Spark's are zone-less in Arrow, the engine's UTC)."""
    cols = {}
    for f in t.schema:
        c = t.column(f.name)
        cols[f.name] = c.cast(pa.timestamp("us")).cast(pa.int64()) if pa.types.is_timestamp(f.type) else c
    return pa.table(cols).to_pylist()


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """Three range tablets; a second insert makes a second rowset in two of them; a delete and an
    update leave REDO deltas pending in two rowsets; a tag on version 2 (written at version 3); more deltas after it."""
    root = tmp_path_factory.mktemp("meta") / "wh"
    t = range_keyed(root / "ns" / "t", ranges=3, width=100)
    t.delete(pa.table({"k": pa.array(np.arange(0, 300, 3), pa.int64())}))      # v2: deletes in every rowset
    t.tag("before")                                                            # v3
    t.update(pa.table({"k": pa.array([1, 101], pa.int64()), "v": pa.array([9.5, 8.5])}))   # v4
    t.delete(pa.table({"k": pa.array([2], pa.int64())}))                       # v5
    return root, t


@pytest.mark.parametrize("kind", ["tablets", "rowsets", "deltas", "files", "history", "tags"])
def test_metadata_tables_equal_the_engines(spark, table, kind):
    root, t = table
    c = catalog(spark, root)
    got = normalized(spark.sql(f"SELECT * FROM {c}.ns.t.{kind}").toArrow())
    assert got == normalized(t.inspect(kind))
    assert got, kind


@pytest.mark.parametrize("kind", ["history", "rowsets", "deltas", "files", "tags"])
def test_metadata_tables_travel_in_time(spark, table, kind):
    root, t = table
    c = catalog(spark, root)
    got = normalized(spark.sql(f"SELECT * FROM {c}.ns.t.{kind} VERSION AS OF 'before'").toArrow())
    assert got == normalized(t.inspect(kind, as_of="before"))
    assert got != normalized(t.inspect(kind)) or kind == "tags"


def test_the_table_has_several_tablets_rowsets_and_pending_deltas(spark, table):
    root, t = table
    c = catalog(spark, root)
    tab = spark.sql(f"SELECT count(*) AS n, sum(rowsets) AS rs, sum(redo_files) AS redo, sum(deleted_rows) AS d "
                    f"FROM {c}.ns.t.tablets").collect()[0]
    assert (tab.n, tab.rs) == (3, 3) and tab.redo >= 4 and tab.d == 101
