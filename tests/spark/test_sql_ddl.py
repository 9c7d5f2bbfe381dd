"""DDL through the catalog (issue #45 item 1, specs/format.md §17): CREATE TABLE with a SQL PRIMARY
KEY, hash and range partitioning and table properties makes the table the engine makes from the
same definition; ALTER TABLE commits the engine's `alter`; DROP TABLE and namespaces are directories.
Bad definitions are typed errors that leave nothing behind."""
import os

import pyarrow as pa
import pytest

import tableformat as tf
from spark_jobs.errors import typed_error

from helpers import spark_catalog as catalog

pyspark = pytest.importorskip("pyspark")

pytestmark = pytest.mark.usefixtures("jvm_connector")


def definition(t: tf.Table) -> dict:
    """A table's definition as its version-0 commit states it, without what differs by table."""
    st = t.snapshot().state
    cols = [dict(name=c.name, type=c.type.name, nullable=c.nullable, default=c.default, encoding=c.encoding,
                 compression=c.compression, read_default=c.read_default) for c in st.schema.columns]
    part = st.partitioning.to_json(st.schema)
    return dict(columns=cols, primary_key=list(st.schema.primary_key), partitioning=part,
                properties=dict(st.properties), format_version=st.format_version)


def engine_error(e) -> tf.TableFormatError:
    typed = typed_error(e)
    assert typed is not None, str(e)
    return typed


ALL_TYPES = ("k1 BIGINT NOT NULL, k2 STRING NOT NULL, d DATE NOT NULL, b BOOLEAN, i8 TINYINT, i16 SMALLINT, "
             "i32 INT, f FLOAT, x DOUBLE, dec DECIMAL(20,2), dsm DECIMAL(9,3), vc VARCHAR(12), ts TIMESTAMP, bin BINARY")


def test_create_with_a_primary_key_makes_the_table_the_engine_makes(spark, tmp_path):
    c = catalog(spark, tmp_path / "wh")
    spark.sql(f"CREATE NAMESPACE {c}.ns")
    spark.sql(f"CREATE TABLE {c}.ns.t ({ALL_TYPES}, CONSTRAINT pk PRIMARY KEY (k1, k2, d)) "
              "PARTITIONED BY (bucket(4, k1), bucket(2, k2)) "
              "TBLPROPERTIES ('row_group_rows' = '1024', 'column.x.encoding' = 'bitshuffle', "
              "'column.vc.compression' = 'zstd')")
    t = tf.open_table(str(tmp_path / "wh" / "ns" / "t"))
    schema = tf.Schema([
        tf.Column("k1", "int64"), tf.Column("k2", "string"), tf.Column("d", "date"),
        tf.Column("b", "bool", nullable=True), tf.Column("i8", "int8", nullable=True),
        tf.Column("i16", "int16", nullable=True), tf.Column("i32", "int32", nullable=True),
        tf.Column("f", "float", nullable=True), tf.Column("x", "double", nullable=True, encoding="bitshuffle"),
        tf.Column("dec", "decimal(20,2)", nullable=True), tf.Column("dsm", "decimal(9,3)", nullable=True),
        tf.Column("vc", "varchar(12)", nullable=True, compression="zstd"),
        tf.Column("ts", "unixtime_micros", nullable=True), tf.Column("bin", "binary", nullable=True)],
        primary_key=["k1", "k2", "d"])
    part = tf.PartitionSchema(hash=[tf.HashPartition(["k1"], 4), tf.HashPartition(["k2"], 2)])
    twin = tf.create_table(str(tmp_path / "twin"), schema, part, properties={"row_group_rows": 1024})
    assert definition(t) == definition(twin)
    assert t.snapshot().state.name == "t" and t.version == 0
    assert [h.operation for h in t.history()] == ["CREATE TABLE"]
    assert t.check().ok
    # and back: the catalog's schema of the table is the one it was created with
    fields = {f.name: f for f in spark.table(f"{c}.ns.t").schema.fields}
    assert fields["dec"].dataType.simpleString() == "decimal(20,2)"
    assert fields["ts"].dataType.simpleString() == "timestamp" and fields["i8"].dataType.simpleString() == "tinyint"


def test_range_partitions_are_declared_as_the_engine_declares_them(spark, tmp_path):
    c = catalog(spark, tmp_path / "wh")
    spark.sql(f"CREATE TABLE {c}.t (host STRING NOT NULL, ts BIGINT NOT NULL, v DOUBLE, "
              "CONSTRAINT pk PRIMARY KEY (host, ts)) PARTITIONED BY (bucket(3, host), range(ts)) "
              "TBLPROPERTIES ('range_bounds' = '[[0, 1000], [2000, null]]', 'range_splits' = '[500, 3000]')")
    t = tf.open_table(str(tmp_path / "wh" / "t"))
    schema = tf.Schema([tf.Column("host", "string"), tf.Column("ts", "int64"), tf.Column("v", "double", nullable=True)],
                       primary_key=["host", "ts"])
    part = tf.PartitionSchema(hash=[tf.HashPartition(["host"], 3)],
                              range=tf.RangePartition(["ts"], bounds=[(0, 1000), (2000, None)], splits=[500, 3000]))
    twin = tf.create_table(str(tmp_path / "twin"), schema, part)
    assert definition(t) == definition(twin)
    assert len(t.snapshot().tablet_ids) == 4 * 3


def test_a_range_on_a_date_and_string_key_takes_json_values(spark, tmp_path):
    c = catalog(spark, tmp_path / "wh")
    spark.sql(f"CREATE TABLE {c}.t (d DATE NOT NULL, s STRING NOT NULL, PRIMARY KEY (d, s)) "
              "TBLPROPERTIES ('range_bounds' = '[[[\"2024-01-01\", \"a\"], [\"2024-02-01\", \"\"]]]')")
    t = tf.open_table(str(tmp_path / "wh" / "t"))
    import datetime
    twin = tf.create_table(str(tmp_path / "twin"), tf.Schema([tf.Column("d", "date"), tf.Column("s", "string")],
                                                              primary_key=["d", "s"]),
                           tf.PartitionSchema(range=tf.RangePartition(
                               bounds=[((datetime.date(2024, 1, 1), "a"), (datetime.date(2024, 2, 1), ""))])))
    assert definition(t) == definition(twin)


def test_a_table_made_by_the_engine_reads_and_takes_ddl_in_sql(spark, tmp_path):
    t = tf.create_table(str(tmp_path / "wh" / "e"), tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double")],
                                                              primary_key="k"))
    t.insert(pa.table({"k": pa.array([1, 2], pa.int64()), "v": [1.0, 2.0]}))
    c = catalog(spark, tmp_path / "wh")
    spark.sql(f"ALTER TABLE {c}.e ADD COLUMN n INT")
    spark.sql(f"ALTER TABLE {c}.e ADD COLUMN m BIGINT NOT NULL DEFAULT 7")
    got = tf.open_table(t.uri).scan().to_arrow().sort_by("k")
    assert got["n"].to_pylist() == [None, None] and got["m"].to_pylist() == [7, 7]
    assert sorted(tuple(r) for r in spark.sql(f"SELECT k, m FROM {c}.e").collect()) == [(1, 7), (2, 7)]


def test_alter_renames_drops_and_sets_properties_in_one_commit_each(spark, tmp_path):
    c = catalog(spark, tmp_path / "wh")
    spark.sql(f"CREATE TABLE {c}.t (k BIGINT NOT NULL, a DOUBLE, b STRING, PRIMARY KEY (k))")
    uri = str(tmp_path / "wh" / "t")
    tf.open_table(uri).insert(pa.table({"k": pa.array([1], pa.int64()), "a": [1.5], "b": ["x"]}))
    spark.sql(f"ALTER TABLE {c}.t RENAME COLUMN a TO a2")
    spark.sql(f"ALTER TABLE {c}.t DROP COLUMN b")
    spark.sql(f"ALTER TABLE {c}.t SET TBLPROPERTIES ('history_max_age' = '3600')")
    spark.sql(f"ALTER TABLE {c}.t RENAME COLUMN k TO key")
    t = tf.open_table(uri)
    assert t.schema.names == ["key", "a2"] and list(t.schema.primary_key) == ["key"]
    assert t.snapshot().state.properties["history_max_age"] == 3600
    assert t.scan().to_arrow().to_pylist() == [{"key": 1, "a2": 1.5}]
    assert [h.operation for h in t.history()][-4:] == ["ALTER TABLE"] * 4
    # the old version still reads with its own names
    assert tf.open_table(uri).scan(as_of=1).to_arrow().to_pylist() == [{"k": 1, "a": 1.5, "b": "x"}]
    spark.sql(f"ALTER TABLE {c}.t UNSET TBLPROPERTIES ('history_max_age')")
    assert tf.open_table(uri).snapshot().state.properties["history_max_age"] == 7 * 24 * 3600
    assert tf.open_table(uri).check().ok


def test_alter_adds_and_drops_range_partitions(spark, tmp_path):
    c = catalog(spark, tmp_path / "wh")
    spark.sql(f"CREATE TABLE {c}.t (k BIGINT NOT NULL, v DOUBLE, PRIMARY KEY (k)) "
              "TBLPROPERTIES ('range_bounds' = '[[0, 100]]')")
    uri = str(tmp_path / "wh" / "t")
    t = tf.open_table(uri)
    t.insert(pa.table({"k": pa.array([5, 50], pa.int64()), "v": [1.0, 2.0]}))
    with pytest.raises(tf.NoRangePartitionError):
        t.insert(pa.table({"k": pa.array([150], pa.int64()), "v": [3.0]}))
    spark.sql(f"ALTER TABLE {c}.t SET TBLPROPERTIES ('add_range_partition' = '[100, 200]')")
    t = tf.open_table(uri)
    t.insert(pa.table({"k": pa.array([150], pa.int64()), "v": [3.0]}))
    spark.sql(f"ALTER TABLE {c}.t SET TBLPROPERTIES ('drop_range_partition' = '[0, 100]')")
    t = tf.open_table(uri)
    assert t.scan().to_arrow()["k"].to_pylist() == [150]
    assert t.check().ok
    with pytest.raises(Exception) as e:
        spark.sql(f"ALTER TABLE {c}.t SET TBLPROPERTIES ('add_range_partition' = '[150, 300]')")
    assert isinstance(engine_error(e.value), tf.PartitionSchemaError)
    assert tf.open_table(uri).version == t.version


@pytest.mark.parametrize("ddl, error, words", [
    ("CREATE TABLE {c}.bad (k BIGINT NOT NULL, v DOUBLE)", tf.SchemaError, "primary key"),
    ("CREATE TABLE {c}.bad (k DOUBLE NOT NULL, PRIMARY KEY (k))", tf.SchemaError, "cannot be bool, float or double"),
    ("CREATE TABLE {c}.bad (k BIGINT NOT NULL, a ARRAY<INT>, PRIMARY KEY (k))", tf.SchemaError, "no type for"),
    ("CREATE TABLE {c}.bad (k BIGINT NOT NULL, PRIMARY KEY (k)) TBLPROPERTIES ('rowgroup_rows' = '5')",
     tf.InvalidOptionError, "unknown table property"),
    ("CREATE TABLE {c}.bad (k BIGINT NOT NULL, PRIMARY KEY (k)) TBLPROPERTIES ('row_group_rows' = '5')",
     tf.InvalidOptionError, "must be an integer in"),
    ("CREATE TABLE {c}.bad (k BIGINT NOT NULL, v INT, PRIMARY KEY (k)) PARTITIONED BY (bucket(4, v))",
     tf.PartitionSchemaError, "not a primary key column"),
    ("CREATE TABLE {c}.bad (k BIGINT NOT NULL, PRIMARY KEY (k)) PARTITIONED BY (k)",
     tf.PartitionSchemaError, "range(key columns...)"),
    ("CREATE TABLE {c}.bad (k BIGINT NOT NULL, PRIMARY KEY (k)) TBLPROPERTIES ('range_bounds' = '[[0, 10], [5, 20]]')",
     tf.PartitionSchemaError, "overlap"),
    ("CREATE TABLE {c}.bad (k INT NOT NULL, PRIMARY KEY (k)) TBLPROPERTIES ('range_bounds' = '[[0, 5000000000]]')",
     tf.PartitionSchemaError, "out of range"),
    ("CREATE TABLE {c}.bad (k BIGINT NOT NULL, PRIMARY KEY (k)) TBLPROPERTIES ('column.zz.encoding' = 'plain')",
     tf.SchemaError, "column.zz.encoding"),
    ("CREATE TABLE {c}.bad (k BIGINT NOT NULL, s STRING, PRIMARY KEY (k)) TBLPROPERTIES ('column.s.encoding' = 'bitshuffle')",
     tf.SchemaError, "not allowed"),
    ("CREATE TABLE {c}.bad (k BIGINT NOT NULL, n BIGINT, PRIMARY KEY (k)) TBLPROPERTIES ('column.n.encoding' = 'dictionary')",
     tf.SchemaError, "not allowed"),     # the engine's encodings by type (§2): dictionary is for strings and binaries
    ("CREATE TABLE {c}.bad (k BIGINT NOT NULL, b BOOLEAN, PRIMARY KEY (k)) TBLPROPERTIES ('column.b.encoding' = 'dictionary')",
     tf.SchemaError, "not allowed"),
    ("CREATE TABLE {c}.bad (k STRING COLLATE UTF8_LCASE NOT NULL, PRIMARY KEY (k))", tf.SchemaError, "collation"),
    # sequence_column (§14) by the engine's rules: a non-null, non-key column of an orderable type
    ("CREATE TABLE {c}.bad (k BIGINT NOT NULL, v BIGINT NOT NULL, PRIMARY KEY (k)) TBLPROPERTIES ('sequence_column' = 'k')",
     tf.SequenceColumnError, "primary key column"),
    ("CREATE TABLE {c}.bad (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k)) TBLPROPERTIES ('sequence_column' = 'v')",
     tf.SequenceColumnError, "nullable"),
    ("CREATE TABLE {c}.bad (k BIGINT NOT NULL, v DOUBLE NOT NULL, PRIMARY KEY (k)) TBLPROPERTIES ('sequence_column' = 'v')",
     tf.SequenceColumnError, "total order"),
    ("CREATE TABLE {c}.bad (k BIGINT NOT NULL, v BIGINT NOT NULL, PRIMARY KEY (k)) TBLPROPERTIES ('sequence_column' = 'w')",
     tf.SequenceColumnError, "is not a column"),
])
def test_a_bad_definition_is_a_typed_error_and_creates_nothing(spark, tmp_path, ddl, error, words):
    c = catalog(spark, tmp_path / "wh")
    with pytest.raises(Exception) as e:
        spark.sql(ddl.format(c=c))
    err = engine_error(e.value)
    assert isinstance(err, error) and words in str(err), str(err)
    assert not (tmp_path / "wh" / "bad").exists()


def test_create_of_an_existing_table_is_refused_and_if_not_exists_keeps_it(spark, tmp_path):
    c = catalog(spark, tmp_path / "wh")
    spark.sql(f"CREATE TABLE {c}.t (k BIGINT NOT NULL, PRIMARY KEY (k))")
    with pytest.raises(Exception, match="TABLE_OR_VIEW_ALREADY_EXISTS|already exists"):
        spark.sql(f"CREATE TABLE {c}.t (k BIGINT NOT NULL, PRIMARY KEY (k))")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {c}.t (j INT NOT NULL, PRIMARY KEY (j))")
    assert tf.open_table(str(tmp_path / "wh" / "t")).schema.names == ["k"]


def test_alter_of_a_key_column_or_a_type_is_refused_and_commits_nothing(spark, tmp_path):
    c = catalog(spark, tmp_path / "wh")
    spark.sql(f"CREATE TABLE {c}.t (k BIGINT NOT NULL, v INT, PRIMARY KEY (k))")
    uri = str(tmp_path / "wh" / "t")
    for ddl, error in [(f"ALTER TABLE {c}.t DROP COLUMN k", tf.SchemaError),
                       (f"ALTER TABLE {c}.t ALTER COLUMN v TYPE BIGINT", tf.SchemaError),
                       (f"ALTER TABLE {c}.t ADD COLUMN n INT NOT NULL", tf.SchemaError),
                       (f"ALTER TABLE {c}.t DROP COLUMN nope", None)]:
        with pytest.raises(Exception) as e:
            spark.sql(ddl)
        if error is not None:
            assert isinstance(engine_error(e.value), error), ddl
    assert tf.open_table(uri).version == 0


def test_ctas_takes_its_key_from_a_table_property(spark, tmp_path):
    c = catalog(spark, tmp_path / "wh")
    spark.sql(f"CREATE TABLE {c}.t TBLPROPERTIES ('primary_key' = 'k') AS "
              "SELECT CAST(id AS BIGINT) AS k, id * 1.5D AS v FROM range(100)")
    t = tf.open_table(str(tmp_path / "wh" / "t"))
    assert list(t.schema.primary_key) == ["k"]
    a = t.scan().to_arrow().sort_by("k")
    assert a["k"].to_pylist() == list(range(100)) and a["v"].to_pylist() == [i * 1.5 for i in range(100)]
    assert t.check().ok


def test_drop_table_deletes_its_directory_and_a_path_table_is_refused(spark, tmp_path):
    c = catalog(spark, tmp_path / "wh")
    spark.sql(f"CREATE TABLE {c}.t (k BIGINT NOT NULL, PRIMARY KEY (k))")
    spark.sql(f"DROP TABLE {c}.t")
    assert not (tmp_path / "wh" / "t").exists()
    spark.sql(f"DROP TABLE IF EXISTS {c}.t")
    other = tf.create_table(str(tmp_path / "else"), tf.Schema([tf.Column("k", "int64")], primary_key="k"))
    with pytest.raises(Exception, match="named by its path"):
        spark.sql(f"DROP TABLE {c}.`{other.uri}`")
    assert os.path.isdir(other.uri)


def test_namespaces_are_directories_created_and_dropped(spark, tmp_path):
    c = catalog(spark, tmp_path / "wh")
    spark.sql(f"CREATE NAMESPACE {c}.a")
    spark.sql(f"CREATE NAMESPACE {c}.a.b")
    assert (tmp_path / "wh" / "a" / "b").is_dir()
    spark.sql(f"CREATE TABLE {c}.a.b.t (k BIGINT NOT NULL, PRIMARY KEY (k))")
    with pytest.raises(Exception, match="SCHEMA_NOT_EMPTY|not empty"):
        spark.sql(f"DROP NAMESPACE {c}.a.b")
    spark.sql(f"DROP NAMESPACE {c}.a.b CASCADE")
    assert not (tmp_path / "wh" / "a" / "b").exists()
    with pytest.raises(Exception, match="SCHEMA_NOT_FOUND|not found|cannot be found"):
        spark.sql(f"CREATE TABLE {c}.nope.t (k BIGINT NOT NULL, PRIMARY KEY (k))")


def test_rename_of_the_sequence_column_carries_the_property(spark, tmp_path):
    """§14: rename_column carries sequence_column to the new name, as the engine's AlterTable does."""
    c = catalog(spark, tmp_path / "wh")
    spark.sql(f"CREATE TABLE {c}.t (k BIGINT NOT NULL, lsn BIGINT NOT NULL, PRIMARY KEY (k)) "
              "TBLPROPERTIES ('sequence_column' = 'lsn')")
    spark.sql(f"ALTER TABLE {c}.t RENAME COLUMN lsn TO seq")
    t = tf.open_table(str(tmp_path / "wh" / "t"))
    assert t.schema.names == ["k", "seq"]
    assert t.snapshot().state.properties["sequence_column"] == "seq"
    assert t.check().ok
