"""DELETE FROM through the catalog (issue #46 item 1): Spark's delta-based row-level operation,
the catalog's pruned scan, the JVM's REDO DELETE files and one commit of the JVM committer.

Each statement runs on a table and the engine deletes the same keys on a copy: same rows, same
`changes()`, one commit with operation DELETE and the count, `check()` clean, and no base file
added or removed (`inspect("files")`). A statement that matches nothing commits nothing; UPDATE and
MERGE stay refused.
"""
import shutil

import pyarrow.compute as pc
import pytest

import tableformat as tf

from helpers import spark_catalog as catalog

pyspark = pytest.importorskip("pyspark")

pytestmark = pytest.mark.usefixtures("jvm_connector")

KEY = [("host", "ascending"), ("ts", "ascending")]


def make(spark, tmp_path):
    c = catalog(spark, tmp_path / "wh")
    spark.sql(f"CREATE TABLE {c}.t (host STRING NOT NULL, ts BIGINT NOT NULL, v DOUBLE, PRIMARY KEY (host, ts)) "
              "PARTITIONED BY (bucket(4, host)) TBLPROPERTIES ('rowset_target_bytes' = '65536')")
    for lo in (0, 1500):                                  # two commits: rowsets of both in every tablet
        spark.sql(f"INSERT INTO {c}.t SELECT concat('h', CAST(id % 7 AS STRING)), id, id * 0.5 "
                  f"FROM range({lo}, {lo + 1500}, 1, 3)")
    return f"{c}.t", str(tmp_path / "wh" / "t")


def engine_delete(twin, mask):
    rows = twin.to_arrow()
    doomed = rows.filter(mask(rows)).select(["host", "ts"])
    twin.delete(doomed)
    return doomed.num_rows


def bases(table):
    f = table.inspect("files")
    return set(f.filter(pc.not_equal(f["kind"], "redo"))["path"].to_pylist())


def same_as_engine(table, twin, v):
    table.refresh()
    assert table.version == twin.version == v
    assert table.to_arrow().sort_by(KEY).equals(twin.to_arrow().sort_by(KEY))
    drop = ["_timestamp"]
    assert table.changes(v - 1, v).drop(drop).equals(twin.changes(v - 1, v).drop(drop))
    assert table.check().ok


def test_delete_where_is_one_commit_of_delete_records_the_engine_reads_as_its_own(spark, tmp_path):
    t, uri = make(spark, tmp_path)
    shutil.copytree(uri, tmp_path / "twin")
    twin, table = tf.open_table(str(tmp_path / "twin")), tf.open_table(uri)
    before = bases(table)
    assert table.inspect("rowsets").num_rows > 4

    spark.sql(f"DELETE FROM {t} WHERE ts % 10 = 3 OR host = 'h5'")
    n = engine_delete(twin, lambda r: pc.or_(pc.equal(pc.subtract(r["ts"], pc.multiply(pc.divide(r["ts"], 10), 10)), 3),
                                             pc.equal(r["host"], "h5")))
    same_as_engine(table, twin, 3)
    h = table.history()[-1]
    assert (h.operation, h.counts) == ("DELETE", {"deleted": n}) and n > 300
    assert bases(table) == before                         # no base file added or removed
    assert set(table.inspect("files")["kind"].to_pylist()) - {"base", "pk_index", "bloom"} == {"redo"}

    # by key (tablets pruned by host), and rows the first statement deleted already: those count nothing
    spark.sql(f"DELETE FROM {t} WHERE host = 'h1' AND ts < 500")
    n = engine_delete(twin, lambda r: pc.and_(pc.equal(r["host"], "h1"), pc.less(r["ts"], 500)))
    same_as_engine(table, twin, 4)
    assert table.history()[-1].counts == {"deleted": n}
    assert bases(table) == before
    assert spark.sql(f"SELECT count(*) FROM {t}").collect()[0][0] == twin.to_arrow().num_rows


def test_a_delete_matching_nothing_commits_nothing(spark, tmp_path):
    t, uri = make(spark, tmp_path)
    spark.sql(f"DELETE FROM {t} WHERE ts < 0")
    assert tf.open_table(uri).version == 2


@pytest.mark.parametrize("stmt", ["UPDATE {t} SET v = 1.0 WHERE ts = 3",
                                  "MERGE INTO {t} USING (SELECT 'h0' AS host, 0L AS ts) s "
                                  "ON {t}.host = s.host AND {t}.ts = s.ts WHEN MATCHED THEN DELETE"])
def test_update_and_merge_stay_refused(spark, tmp_path, stmt):
    t, uri = make(spark, tmp_path)
    with pytest.raises(Exception) as e:
        spark.sql(stmt.format(t=t)).collect()
    assert "mutation_merge" in str(e.value)
    assert tf.open_table(uri).version == 2
