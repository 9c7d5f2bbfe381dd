"""DELETE FROM through the catalog (issue #46 item 1): Spark's delta-based row-level operation,
the catalog's pruned scan, the JVM's REDO DELETE files and one commit of the JVM committer.

Each statement runs on a table and the engine deletes the same keys on a copy: same rows, same
`changes()`, one commit with operation DELETE and the count, `check()` clean, and no base file
added or removed (`inspect("files")`). A statement that matches nothing commits nothing; UPDATE and
MERGE stay refused.
"""
import datetime
import decimal
import shutil

import numpy as np
import pyarrow as pa
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


def test_review2_update_delete_reinsert_delete_all_and_the_past(spark, tmp_path):
    """review2: a SQL DELETE of rows an engine update changed (before-images), the same keys
    inserted again and deleted again (found in their new rowsets, not the dead ones), a DELETE with
    no WHERE; every step the engine's twin's rows and changes(), and the versions before read back."""
    t, uri = make(spark, tmp_path)
    shutil.copytree(uri, tmp_path / "twin")
    twin, table = tf.open_table(str(tmp_path / "twin")), tf.open_table(uri)
    upd = pa.table({"host": ["h3"] * 5, "ts": pa.array([3, 10, 17, 24, 31], pa.int64()), "v": [99.0] * 5})
    for x in (table, twin):
        x.update(upd)                                                            # v3
    spark.sql(f"DELETE FROM {t} WHERE host = 'h3' AND ts < 100")                  # v4
    n = engine_delete(twin, lambda r: pc.and_(pc.equal(r["host"], "h3"), pc.less(r["ts"], 100)))
    same_as_engine(table, twin, 4)
    assert table.history()[-1].counts == {"deleted": n}
    back = pa.table({"host": ["h3"] * n, "ts": pa.array(range(3, 100, 7), pa.int64()), "v": [-1.0] * n})
    spark.sql(f"INSERT INTO {t} SELECT 'h3', id, -1.0D FROM range(3, 100, 7)")   # v5
    twin.insert(back)
    table.refresh()
    assert table.to_arrow().sort_by(KEY).equals(twin.to_arrow().sort_by(KEY))
    spark.sql(f"DELETE FROM {t} WHERE host = 'h3' AND ts < 100")                  # v6
    assert engine_delete(twin, lambda r: pc.and_(pc.equal(r["host"], "h3"), pc.less(r["ts"], 100))) == n
    same_as_engine(table, twin, 6)
    assert table.history()[-1].counts == {"deleted": n}
    spark.sql(f"DELETE FROM {t}")                                                 # v7
    engine_delete(twin, lambda r: pc.greater_equal(r["ts"], 0))
    same_as_engine(table, twin, 7)
    assert table.to_arrow().num_rows == 0
    for v in range(2, 7):
        assert table.to_arrow(as_of=v).sort_by(KEY).equals(twin.to_arrow(as_of=v).sort_by(KEY)), v
        assert spark.sql(f"SELECT count(*) FROM {t} VERSION AS OF {v}").collect()[0][0] == \
            twin.to_arrow(as_of=v).num_rows
    drop = ["_timestamp"]
    assert table.changes(2, 7).drop(drop).sort_by(KEY).equals(twin.changes(2, 7).drop(drop).sort_by(KEY))
    for a, b in ((2, 4), (3, 4), (5, 6), (6, 7)):
        mine, theirs = table.changes(a, b, before_image=True), twin.changes(a, b, before_image=True)
        keep = [c for c in mine.column_names if c != "_timestamp"]
        assert mine.select(keep).to_pylist() == theirs.select(keep).to_pylist() or \
            sorted(map(str, mine.select(keep).to_pylist())) == sorted(map(str, theirs.select(keep).to_pylist())), (a, b)


def test_review2_delete_from_split_rowsets_with_nulls_ranges_and_wide_keys(spark, tmp_path):
    """review2: rowsets large enough that the scan splits each over several tasks (two REDO files of
    one rowset in one commit), range and hash partitions, date and decimal(20,2) keys, a WHERE on a
    nullable column (NOT (v > 0) keeps the NULLs; IS NULL takes them)."""
    c = catalog(spark, tmp_path / "wh")
    C = tf.Column
    schema = tf.Schema([C("d", "date"), C("m", "decimal(20,2)"), C("k", "int64"), C("v", "double", nullable=True)],
                       primary_key=["d", "m", "k"])
    part = tf.PartitionSchema(hash=[tf.HashPartition(["k"], buckets=2)],
                              range=tf.RangePartition(["d"], bounds=[(None, None)], splits=[datetime.date(2020, 1, 1)]))
    table = tf.create_table(str(tmp_path / "wh" / "big"), schema, part, properties={"row_group_rows": 1024})
    n = 40000
    rng = np.random.default_rng(3)
    v = rng.normal(size=n)
    table.insert(pa.table({
        "d": pa.array(np.where(np.arange(n) % 10 == 0, 17000, 19000).astype(np.int32)).cast(pa.date32()),
        "m": pa.array([decimal.Decimal(i * 1234567) / 100 for i in range(n)], pa.decimal128(20, 2)),
        "k": pa.array(np.arange(n, dtype=np.int64)),
        "v": pa.array([None if i % 11 == 0 else x for i, x in enumerate(v.tolist())], pa.float64())}))
    shutil.copytree(tmp_path / "wh" / "big", tmp_path / "twin")
    twin = tf.open_table(str(tmp_path / "twin"))
    key = [("d", "ascending"), ("m", "ascending"), ("k", "ascending")]
    old = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "65536")
    try:
        assert spark.table(f"{c}.big").rdd.getNumPartitions() > 2 * table.inspect("rowsets").num_rows
        for ver, where, mask in [
                (2, "NOT (v > 0)", lambda r: pc.fill_null(pc.invert(pc.greater(r["v"], 0)), False)),
                (3, "v IS NULL OR k % 97 = 5", lambda r: pc.or_kleene(pc.is_null(r["v"]),
                                                                      pc.equal(pc.subtract(r["k"], pc.multiply(pc.divide(r["k"], 97), 97)), 5)))]:
            spark.sql(f"DELETE FROM {c}.big WHERE {where}")
            rows = twin.to_arrow()
            doomed = rows.filter(mask(rows)).select(["d", "m", "k"])
            twin.delete(doomed)
            table.refresh()
            assert table.version == twin.version == ver
            assert table.history()[-1].counts == {"deleted": doomed.num_rows}
            assert table.to_arrow().sort_by(key).equals(twin.to_arrow().sort_by(key))
            drop = ["_timestamp"]
            assert table.changes(ver - 1, ver).drop(drop).sort_by(key).equals(
                twin.changes(ver - 1, ver).drop(drop).sort_by(key))
            assert table.check().ok
        assert table.to_arrow().filter(pc.is_null(table.to_arrow()["v"])).num_rows == 0
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", old)


@pytest.mark.parametrize("race", ["delete_of_its_row", "update_of_its_row", "reinsert_of_its_key", "compaction",
                                  "insert_matching"])
def test_review2_sql_delete_racing_an_engine_write(spark, tmp_path, race):
    """review2: an engine write commits while the DELETE's tasks run (a Python UDF of the WHERE
    commits it at its first call, after the statement planned on version 2). A write that deleted,
    updated (its WHERE read the old values), re-inserted or compacted one of its rows fails the
    statement with CommitConflictError, nothing of it committed and no file of it left; one that
    inserted a new matching key is rebased over (the new key stays: it was not read)."""
    from spark_jobs.errors import typed_error
    t, uri = make(spark, tmp_path)
    marker, before = str(tmp_path / "raced"), tf.open_table(uri)

    def racer(ts):
        import os
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return True
        import pyarrow as pa
        import tableformat as tf
        x = tf.open_table(uri)
        key = pa.table({"host": ["h3"], "ts": pa.array([3], pa.int64())})
        if race == "delete_of_its_row":
            x.delete(key)
        elif race == "update_of_its_row":
            x.update(key.append_column("v", pa.array([99.0])))
        elif race == "reinsert_of_its_key":
            x.delete(key)
            x.insert(key.append_column("v", pa.array([7.0])))
        elif race == "compaction":
            x.compact()
        else:
            x.insert(pa.table({"host": ["h3"], "ts": pa.array([-5], pa.int64()), "v": [1.0]}))
        return True

    spark.udf.register(f"racer_{race}", racer, "boolean")
    doomed = before.to_arrow().filter(pc.and_(pc.equal(before.to_arrow()["host"], "h3"),
                                               pc.less(before.to_arrow()["ts"], 100)))
    stmt = f"DELETE FROM {t} WHERE host = 'h3' AND ts < 100 AND racer_{race}(ts)"
    table = tf.open_table(uri)
    if race == "insert_matching":
        spark.sql(stmt)
        table.refresh()
        assert table.history()[-1].operation == "DELETE" and table.history()[-1].counts == {"deleted": doomed.num_rows}
        left = table.to_arrow().filter(pc.equal(table.to_arrow()["host"], "h3"))
        assert pc.min(left["ts"]).as_py() >= 100 or left.filter(pc.less(left["ts"], 100))["ts"].to_pylist() == [-5]
    else:
        with pytest.raises(Exception) as e:
            spark.sql(stmt)
        assert type(typed_error(e.value)).__name__ == "CommitConflictError", str(e.value)[:2000]
        table.refresh()
        if race == "compaction":                      # its commits only, and no DELETE
            assert table.version > 2 and all(h.operation != "DELETE" for h in table.history()[2:])
        else:
            assert table.version == 2 + {"delete_of_its_row": 1, "update_of_its_row": 1, "reinsert_of_its_key": 2}[race]
        left = table.to_arrow().filter(pc.and_(pc.equal(table.to_arrow()["host"], "h3"), pc.less(table.to_arrow()["ts"], 100)))
        assert left.num_rows == doomed.num_rows - (race == "delete_of_its_row")
        listed = set(table.inspect("files")["path"].to_pylist())
        import pathlib
        on_disk = {str(p.relative_to(uri)) for p in pathlib.Path(uri).glob("tablets/*/*/redo-*.parquet")}
        assert on_disk <= listed, on_disk - listed
    assert table.check().ok


def test_review2_delete_after_a_merging_compaction_of_dead_and_live_copies(spark, tmp_path):
    """review2: keys deleted and inserted again, then compacted (merged rowsets hold the dead
    copies as history and the live ones), then deleted by SQL: the live copies go, once each, as
    the engine's delete of the same keys on a copy."""
    t, uri = make(spark, tmp_path)
    table = tf.open_table(uri)
    keys = pa.table({"host": ["h2"] * 20, "ts": pa.array(range(2, 142, 7), pa.int64())})
    table.delete(keys)
    table.insert(keys.append_column("v", pa.array([5.0] * 20)))
    table.update(keys.append_column("v", pa.array([6.0] * 20)))
    table.compact()
    table.refresh()
    assert any(h.operation != "DELETE" and h.operation not in ("INSERT", "UPDATE", "CREATE TABLE")
               for h in table.history()), [h.operation for h in table.history()]
    v0 = table.version
    shutil.copytree(uri, tmp_path / "twin")
    twin = tf.open_table(str(tmp_path / "twin"))
    spark.sql(f"DELETE FROM {t} WHERE host = 'h2' AND ts < 142")
    n = engine_delete(twin, lambda r: pc.and_(pc.equal(r["host"], "h2"), pc.less(r["ts"], 142)))
    same_as_engine(table, twin, v0 + 1)
    assert table.history()[-1].counts == {"deleted": n}
    mine, theirs = table.changes(v0, v0 + 1, before_image=True), twin.changes(v0, v0 + 1, before_image=True)
    keep = [c for c in mine.column_names if c != "_timestamp"]
    assert mine.select(keep).sort_by(KEY).equals(theirs.select(keep).sort_by(KEY))


def test_review2_delete_with_the_key_in_another_order_than_the_columns_and_0x00_in_keys(spark, tmp_path):
    """review2: PRIMARY KEY (n, s) over columns (v, s, n), strings holding 0x00 and 0xFF-ish
    characters (a composite key's escaped bytes): the rows the WHERE matches go, as the engine's."""
    c = catalog(spark, tmp_path / "wh")
    spark.sql(f"CREATE TABLE {c}.o (v DOUBLE, s STRING NOT NULL, n INT NOT NULL, PRIMARY KEY (n, s)) "
              "PARTITIONED BY (bucket(3, s))")
    spark.sql(f"INSERT INTO {c}.o SELECT (id % 9) - 4.0D, concat(repeat(char(0), CAST(id % 3 AS INT)), "
              f"CAST(id % 11 AS STRING), char(255)), CAST(id % 13 AS INT) FROM range(0, 429)")
    uri = str(tmp_path / "wh" / "o")
    shutil.copytree(uri, tmp_path / "twin")
    table, twin = tf.open_table(uri), tf.open_table(str(tmp_path / "twin"))
    assert table.to_arrow().num_rows > 300
    spark.sql(f"DELETE FROM {c}.o WHERE v < 0 AND n % 2 = 1")
    rows = twin.to_arrow()
    doomed = rows.filter(pc.and_(pc.less(rows["v"], 0), pc.equal(pc.subtract(
        rows["n"], pc.multiply(pc.divide(rows["n"], 2), 2)), 1))).select(["n", "s"])
    twin.delete(doomed)
    table.refresh()
    assert doomed.num_rows > 0 and table.history()[-1].counts == {"deleted": doomed.num_rows}
    key = [("n", "ascending"), ("s", "ascending")]
    assert table.to_arrow().sort_by(key).equals(twin.to_arrow().sort_by(key))
    assert table.check().ok


def test_review2_sql_delete_does_not_delete_a_row_a_concurrent_update_took_out_of_its_where(spark, tmp_path):
    """review2: DELETE ... WHERE v < 50 reads (h3, 3) at v = 1.5; an engine update sets it to 99
    while the statement runs. Snapshot isolation (first committer wins on one row) or re-checking
    the WHERE would both keep the row at 99: deleting it loses the update. Either the statement
    fails with CommitConflictError, or the row stays."""
    from spark_jobs.errors import typed_error
    t, uri = make(spark, tmp_path)
    marker = str(tmp_path / "raced")

    def racer(ts):
        import os
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return True
        import pyarrow as pa
        import tableformat as tf
        tf.open_table(uri).update(pa.table({"host": ["h3"], "ts": pa.array([3], pa.int64()), "v": [99.0]}))
        return True

    spark.udf.register("racer_out_of_where", racer, "boolean")
    try:
        spark.sql(f"DELETE FROM {t} WHERE host = 'h3' AND v < 50 AND racer_out_of_where(ts)")
    except Exception as e:  # noqa: BLE001 - only CommitConflictError is an answer
        assert type(typed_error(e)).__name__ == "CommitConflictError", str(e)[:2000]
    table = tf.open_table(uri)
    got = table.lookup(pa.table({"host": ["h3"], "ts": pa.array([3], pa.int64())})).to_pylist()
    assert [r["v"] for r in got] == [99.0]
    assert table.check().ok
