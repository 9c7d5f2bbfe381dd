"""INSERT INTO through the catalog (issue #45 item 2, specs/format.md §17): a key-enforced append in
one commit, written by the JVM rowset writers and committed by the JVM committer, read back by the
engine exactly; duplicates, NULL keys and overwrites refused with nothing committed."""
import datetime
import decimal
import os

import pyarrow as pa
import pytest

import tableformat as tf
from spark_jobs.errors import typed_error

from helpers import spark_catalog as catalog

pyspark = pytest.importorskip("pyspark")

pytestmark = pytest.mark.usefixtures("jvm_connector")


def files_under(root) -> set[str]:
    out = set()
    for d, _, fs in os.walk(os.path.join(root, "tablets")):
        out |= {os.path.join(d, f) for f in fs}
    return out


def make(spark, tmp_path, ddl_cols="k BIGINT NOT NULL, v DOUBLE, s STRING, PRIMARY KEY (k)", part="") -> tuple[str, str]:
    c = catalog(spark, tmp_path / "wh")
    spark.sql(f"CREATE TABLE {c}.t ({ddl_cols}) {part}")
    return f"{c}.t", str(tmp_path / "wh" / "t")


def test_insert_values_is_one_commit_the_engine_reads(spark, tmp_path):
    t, uri = make(spark, tmp_path)
    spark.sql(f"INSERT INTO {t} VALUES (3, 3.5, 'c'), (1, 1.5, 'a'), (2, NULL, NULL)")
    table = tf.open_table(uri)
    assert table.version == 1
    h = table.history()[-1]
    assert h.operation == "INSERT" and h.counts.get("inserted") == 3
    assert table.scan().to_arrow().sort_by("k").to_pylist() == [
        {"k": 1, "v": 1.5, "s": "a"}, {"k": 2, "v": None, "s": None}, {"k": 3, "v": 3.5, "s": "c"}]
    assert table.check().ok
    assert sorted(tuple(r) for r in spark.sql(f"SELECT k, v FROM {t}").collect()) == [(1, 1.5), (2, None), (3, 3.5)]


def test_insert_select_of_many_rows_into_hash_and_range_tablets_equals_the_engine(spark, tmp_path):
    t, uri = make(spark, tmp_path, "host STRING NOT NULL, ts BIGINT NOT NULL, v DOUBLE, n INT, PRIMARY KEY (host, ts)",
                  "PARTITIONED BY (bucket(4, host), range(ts)) TBLPROPERTIES ('range_bounds' = '[[0, 50000], [50000, null]]', "
                  "'row_group_rows' = '1000', 'rowset_target_bytes' = '65536')")
    spark.sql(f"INSERT INTO {t} SELECT concat('h', CAST(id % 37 AS STRING)), id, id * 0.5, CAST(id % 7 AS INT) "
              "FROM range(0, 100000, 1, 5)")
    table = tf.open_table(uri)
    got = table.scan().to_arrow().sort_by([("host", "ascending"), ("ts", "ascending")])
    assert got.num_rows == 100000
    ids = got["ts"].to_numpy()
    assert sorted(ids.tolist()) == list(range(100000))
    assert got["v"].to_pylist() == [i * 0.5 for i in got["ts"].to_pylist()]
    assert table.check().ok
    rowsets = table.inspect("rowsets")
    assert rowsets.num_rows > 8          # rolled at the small rowset target, in every tablet
    ch = table.changes(0, 1)
    assert ch.num_rows == 100000 and set(ch["_op"].to_pylist()) == {"insert"}


def test_every_type_round_trips_through_a_sql_insert(spark, tmp_path):
    t, uri = make(spark, tmp_path, "k INT NOT NULL, d DATE NOT NULL, b BOOLEAN, i8 TINYINT, i16 SMALLINT, f FLOAT, "
                  "x DOUBLE, dec DECIMAL(20,2), dsm DECIMAL(9,3), vc VARCHAR(5), ts TIMESTAMP, bin BINARY, "
                  "PRIMARY KEY (k, d)")
    spark.sql(f"INSERT INTO {t} VALUES "
              "(1, DATE'2024-02-29', true, -3, 300, CAST(1.25 AS FLOAT), CAST('NaN' AS DOUBLE), 123456789012345678.91, "
              "-1.5, 'abc', TIMESTAMP'2024-01-01 00:00:00.000001 UTC', X'00FF'), "
              "(2, DATE'1582-10-10', NULL, NULL, NULL, NULL, -0.0, NULL, NULL, NULL, NULL, NULL)")
    got = tf.open_table(uri).scan().to_arrow().sort_by("k").to_pylist()
    assert got[0]["d"] == datetime.date(2024, 2, 29) and got[0]["b"] is True and got[0]["i8"] == -3
    assert got[0]["dec"] == decimal.Decimal("123456789012345678.91") and got[0]["dsm"] == decimal.Decimal("-1.500")
    assert got[0]["x"] != got[0]["x"] and got[0]["f"] == 1.25 and got[0]["vc"] == "abc"
    assert got[0]["ts"] == datetime.datetime(2024, 1, 1, 0, 0, 0, 1, tzinfo=datetime.timezone.utc)
    assert got[0]["bin"] == b"\x00\xff"
    assert got[1]["d"] == datetime.date(1582, 10, 10) and got[1]["b"] is None
    assert tf.open_table(uri).check().ok


def typed(e) -> tf.TableFormatError:
    err = typed_error(e)
    assert err is not None, str(e)
    return err


def test_a_key_repeated_in_the_input_fails_and_commits_nothing(spark, tmp_path):
    t, uri = make(spark, tmp_path)
    spark.sql(f"INSERT INTO {t} VALUES (1, 1.0, 'a')")
    before = files_under(uri)
    with pytest.raises(Exception) as e:
        spark.sql(f"INSERT INTO {t} SELECT id + 10, 0.0, 'x' FROM range(1000) UNION ALL SELECT 500, 1.0, 'y'")
    assert isinstance(typed(e.value), tf.DuplicateKeyError)
    assert tf.open_table(uri).version == 1
    assert files_under(uri) == before          # the tasks' files are deleted


def test_a_key_live_in_the_table_fails_and_a_deleted_one_is_inserted_again(spark, tmp_path):
    t, uri = make(spark, tmp_path)
    spark.sql(f"INSERT INTO {t} VALUES (1, 1.0, 'a'), (2, 2.0, 'b')")
    with pytest.raises(Exception) as e:
        spark.sql(f"INSERT INTO {t} VALUES (3, 3.0, 'c'), (2, 9.0, 'z')")
    err = typed(e.value)
    assert isinstance(err, tf.DuplicateKeyError) and "1 key" in str(err)
    assert tf.open_table(uri).version == 1
    tf.open_table(uri).delete(pa.table({"k": pa.array([2], pa.int64())}))
    spark.sql(f"INSERT INTO {t} VALUES (2, 9.0, 'z')")
    table = tf.open_table(uri)
    assert table.scan().to_arrow().sort_by("k").to_pylist() == [{"k": 1, "v": 1.0, "s": "a"}, {"k": 2, "v": 9.0, "s": "z"}]
    assert table.check().ok
    ch = table.changes(table.version - 1, table.version)
    assert ch["_op"].to_pylist() == ["insert"] and ch["k"].to_pylist() == [2] and ch["v"].to_pylist() == [9.0]


def test_a_null_key_fails_and_commits_nothing(spark, tmp_path):
    t, uri = make(spark, tmp_path)
    with pytest.raises(Exception, match="NULL|null"):
        spark.sql(f"INSERT INTO {t} VALUES (CAST(NULL AS BIGINT), 1.0, 'a')")
    assert tf.open_table(uri).version == 0 and not files_under(uri)


def test_a_value_that_does_not_fit_its_type_fails_and_commits_nothing(spark, tmp_path):
    t, uri = make(spark, tmp_path, "k INT NOT NULL, v DOUBLE, PRIMARY KEY (k)")
    with pytest.raises(Exception, match="CAST_OVERFLOW_IN_TABLE_INSERT"):
        spark.sql(f"INSERT INTO {t} VALUES (5000000000, 1.0)")
    with pytest.raises(Exception, match="CANNOT_SAFELY_CAST"):
        spark.sql(f"INSERT INTO {t} VALUES ('abc', 1.0)")
    assert tf.open_table(uri).version == 0


def test_insert_overwrite_is_refused_naming_the_alternatives(spark, tmp_path):
    t, uri = make(spark, tmp_path)
    spark.sql(f"INSERT INTO {t} VALUES (1, 1.0, 'a')")
    with pytest.raises(Exception, match="INSERT OVERWRITE is refused.*MERGE INTO"):
        spark.sql(f"INSERT OVERWRITE {t} VALUES (2, 2.0, 'b')")
    assert tf.open_table(uri).version == 1


def test_write_to_append_and_a_table_made_by_the_engine(spark, tmp_path):
    uri = str(tmp_path / "wh" / "e")
    tf.create_table(uri, tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double", nullable=True)], primary_key="k"),
                    tf.PartitionSchema(hash=[tf.HashPartition("k", 3)]))
    c = catalog(spark, tmp_path / "wh")
    spark.range(0, 5000).selectExpr("id AS k", "id / 2.0D AS v").writeTo(f"{c}.e").append()
    table = tf.open_table(uri)
    got = table.scan().to_arrow().sort_by("k")
    assert got["k"].to_pylist() == list(range(5000)) and got["v"].to_pylist() == [i / 2 for i in range(5000)]
    assert table.check().ok
    # the engine keeps writing the table, and SQL sees both
    table.insert(pa.table({"k": pa.array([99999], pa.int64()), "v": [1.0]}))
    assert spark.sql(f"SELECT count(*) FROM {c}.e").collect()[0][0] == 5001


def test_an_empty_insert_commits_nothing(spark, tmp_path):
    t, uri = make(spark, tmp_path)
    spark.sql(f"INSERT INTO {t} SELECT id, 1.0, 'x' FROM range(0)")
    assert tf.open_table(uri).version == 0


def test_a_varchar_too_long_fails_as_sql_says_and_commits_nothing(spark, tmp_path):
    t, uri = make(spark, tmp_path, "k BIGINT NOT NULL, vc VARCHAR(3), PRIMARY KEY (k)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'abc')")
    with pytest.raises(Exception, match="EXCEED_LIMIT_LENGTH"):
        spark.sql(f"INSERT INTO {t} VALUES (2, 'abcd')")
    table = tf.open_table(uri)
    assert table.version == 1 and table.scan().to_arrow()["vc"].to_pylist() == ["abc"]
    assert spark.table(t).schema["vc"].dataType.simpleString() == "string"     # it reads as a string


def test_a_cell_over_64_kib_or_a_key_over_16_kib_fails_and_commits_nothing(spark, tmp_path):
    """§2.1: string/binary cells are at most 64 KiB and an encoded key at most 16 KiB (CellTooLargeError)."""
    t, uri = make(spark, tmp_path, "k STRING NOT NULL, s STRING, b BINARY, PRIMARY KEY (k)")
    for values in (f"('a', repeat('x', {64 * 1024 + 1}), NULL)",
                   f"('a', NULL, CAST(repeat('x', {64 * 1024 + 1}) AS BINARY))",
                   f"(repeat('k', {16 * 1024 + 1}), NULL, NULL)"):
        with pytest.raises(Exception) as e:
            spark.sql(f"INSERT INTO {t} VALUES {values}")
        assert isinstance(typed(e.value), tf.CellTooLargeError), str(e.value)[:300]
    assert tf.open_table(uri).version == 0 and not files_under(uri)
    spark.sql(f"INSERT INTO {t} VALUES ('a', repeat('x', {64 * 1024}), NULL)")     # the limit itself is a cell
    assert tf.open_table(uri).version == 1


def test_columns_left_out_of_an_insert_take_their_defaults_as_in_the_engine(spark, tmp_path):
    """§2.2/§17: a column's DEFAULT is its write default: an INSERT naming a subset of the columns
    writes the others' defaults, as the engine's insert of rows without them does (not NULL)."""
    t, uri = make(spark, tmp_path, "k BIGINT NOT NULL, v INT NOT NULL DEFAULT 7, w STRING DEFAULT 'it''s', "
                  "d DATE DEFAULT DATE'1500-03-01', ts TIMESTAMP DEFAULT TIMESTAMP'1960-01-01 00:00:00.000001 UTC', "
                  "dec DECIMAL(25,3) DEFAULT -12.5, f DOUBLE DEFAULT 0.1, b BINARY DEFAULT X'00FF', n INT, PRIMARY KEY (k)")
    spark.sql(f"INSERT INTO {t} (k) VALUES (1)")
    spark.sql(f"INSERT INTO {t} (k, w, n) VALUES (2, NULL, 5)")
    got = tf.open_table(uri).scan().to_arrow().sort_by("k").to_pylist()
    twin = tf.create_table(str(tmp_path / "twin"), tf.open_table(uri).schema)
    twin.insert(pa.table({"k": pa.array([1], pa.int64())}))
    twin.insert(pa.table({"k": pa.array([2], pa.int64()), "w": pa.array([None], pa.string()),
                          "n": pa.array([5], pa.int32())}))
    assert got == twin.scan().to_arrow().sort_by("k").to_pylist()
    assert got[0]["v"] == 7 and got[0]["w"] == "it's" and got[0]["d"] == datetime.date(1500, 3, 1)
    assert got[0]["dec"] == decimal.Decimal("-12.500") and got[0]["b"] == b"\x00\xff" and got[0]["n"] is None


def test_tasks_writing_at_once_in_one_executor_write_intact_files(spark, tmp_path):
    """The executor's task threads write their rowsets at the same time (local[2]: two), each file
    compressed by its own thread's codecs: a compressor shared between threads interleaved their
    pages ("write beyond end of stream", or pages of another file)."""
    t, uri = make(spark, tmp_path, "k BIGINT NOT NULL, a DOUBLE, s STRING, d DECIMAL(30,2), e BIGINT, PRIMARY KEY (k)",
                  "PARTITIONED BY (bucket(4, k)) TBLPROPERTIES ('row_group_rows' = '1024', 'column.s.compression' = 'zstd')")
    spark.sql(f"INSERT INTO {t} SELECT id, id * 1.5, CAST(id AS STRING), CAST(id AS DECIMAL(30,2)), -id "
              "FROM range(0, 300000, 1, 2)")
    table = tf.open_table(uri)
    got = table.scan().to_arrow().sort_by("k")
    assert got["k"].to_pylist() == list(range(300000))
    assert got["s"].to_pylist() == [str(i) for i in range(300000)]
    assert got["e"].to_pylist() == [-i for i in range(300000)]
    assert table.check().ok


def test_a_task_meeting_many_tablets_holds_the_rows_it_was_given(spark, tmp_path):
    """A task's rows span every hash bucket (the input is ranged by key), so it opens a rowset
    writer per tablet: each writer's buffers grow with its rows. Allocated whole (65,536 rows of
    every column each) 200 tablets x 2 tasks took ~1.6 GiB and the 1 GiB driver died of
    OutOfMemoryError on 20,000 rows."""
    t, uri = make(spark, tmp_path, "k BIGINT NOT NULL, a DOUBLE, s STRING, d DECIMAL(30,2), e BIGINT, PRIMARY KEY (k)",
                  "PARTITIONED BY (bucket(200, k))")
    spark.sql(f"INSERT INTO {t} SELECT id, id * 1.5, CAST(id AS STRING), CAST(id AS DECIMAL(30,2)), -id "
              "FROM range(0, 20000, 1, 2)")
    table = tf.open_table(uri)
    assert sorted(table.scan(columns=["k"]).to_arrow()["k"].to_pylist()) == list(range(20000))
    assert table.check().ok
