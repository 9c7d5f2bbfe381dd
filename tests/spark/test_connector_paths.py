"""Tables whose paths hold a space, brackets, braces or a literal `%20` read through the JVM
(`LogStore.normalize`/`fileSystem`, `catalog.Location`): read_table, register_view, a catalog
whose warehouse holds them, a path identifier and `spark.read.format("tableformat-jvm")`, each as
a local path and as file: URIs. A path's characters are taken as they are, as the engine takes
them: never decoded, never parsed as a URI, never globbed (`br[ack]et` is not a character class)."""
import pyarrow as pa
import pytest

from helpers import assert_same_rows, range_keyed, spark_catalog as catalog

pytest.importorskip("pyspark")

from spark_jobs.read import read_table, register_view  # noqa: E402

pytestmark = pytest.mark.usefixtures("jvm_connector")

NAMES = ["with space", "br[ack]et{s}", "pct%20kept", "a[b]c {d} %41"]


def table(tmp_path, name):
    """A pruned-to-one-rowset table under a directory named `name`, and its rows with k < 100."""
    t = range_keyed(tmp_path / name / "wh" / "ns" / "t", ranges=3)
    t.delete(pa.table({"k": pa.array([5, 150], pa.int64())}))
    return t, t.scan(filter=[("k", "<", 100)]).to_arrow()


def spellings(uri):
    """The same local table as a path, a file:/ URI and a file:/// URI (none %-encoded)."""
    return [uri, "file:" + uri, "file://" + uri]


def same(df, expect):
    assert_same_rows(df.toArrow().cast(expect.schema), expect, ["k"])


@pytest.mark.parametrize("name", NAMES)
def test_read_table_and_register_view(spark, tmp_path, name):
    t, expect = table(tmp_path, name)
    for uri in spellings(t.uri):
        df = read_table(spark, uri, filter=[("k", "<", 100)])
        assert "BatchScan tableformat_jvm" in df._jdf.queryExecution().executedPlan().toString()
        same(df, expect)
        register_view(spark, "paths_v", uri)
        q = spark.sql("SELECT * FROM paths_v WHERE k < 100")
        assert "(1 rowsets" in q._jdf.queryExecution().executedPlan().toString()
        same(q, expect)
        same(spark.read.format("tableformat-jvm").load(uri).where("k < 100"), expect)


@pytest.mark.parametrize("name", NAMES)
def test_catalog_warehouse_and_path_identifiers(spark, tmp_path, name):
    t, expect = table(tmp_path, name)
    for wh in spellings(str(tmp_path / name / "wh")):
        c = catalog(spark, wh)
        assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {c}.ns").collect()] == ["t"]
        assert [r[0] for r in spark.sql(f"SHOW NAMESPACES IN {c}").collect()] == ["ns"]
        same(spark.sql(f"SELECT * FROM {c}.ns.t WHERE k < 100"), expect)
    for uri in spellings(t.uri):
        same(spark.sql(f"SELECT * FROM {c}.`{uri}` WHERE k < 100"), expect)
