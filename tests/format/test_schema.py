"""Types, columns and schemas: Kudu's rules and column IDs."""
import pytest

import tableformat as tf
from tableformat.format.types import parse_type


@pytest.mark.parametrize("spec,name,arrow", [
    ("bool", "bool", "bool"), ("int8", "int8", "int8"), ("int16", "int16", "int16"),
    ("int32", "int32", "int32"), ("int64", "int64", "int64"), ("float", "float", "float"),
    ("double", "double", "double"), ("date", "date", "date32[day]"),
    ("unixtime_micros", "unixtime_micros", "timestamp[us, tz=UTC]"),
    ("decimal(18,2)", "decimal(18,2)", "decimal128(18, 2)"), ("varchar(16)", "varchar(16)", "string"),
    ("string", "string", "string"), ("binary", "binary", "binary"), ("DECIMAL( 38 , 0 )", "decimal(38,0)",
                                                                      "decimal128(38, 0)"),
])
def test_types_parse(spec, name, arrow):
    t = parse_type(spec)
    assert t.name == name
    assert str(t.arrow()) == arrow


@pytest.mark.parametrize("spec,msg", [
    ("decimal(0,0)", "precision"), ("decimal(39,2)", "precision"), ("decimal(5,6)", "scale"),
    ("varchar(0)", "length"), ("varchar(65536)", "length"), ("uint128", "unknown column type"), (5, "string"),
])
def test_bad_types(spec, msg):
    with pytest.raises(tf.SchemaError, match=msg):
        parse_type(spec)


def test_decimal_storage_width():
    from tableformat.format.types import decimal_storage_bytes
    assert [decimal_storage_bytes(p) for p in (1, 9, 10, 18, 19, 38)] == [4, 4, 8, 8, 16, 16]


def test_default_encodings_follow_kudu_except_numbers_are_plain():
    """Numbers default to plain, not Kudu's bitshuffle (BYTE_STREAM_SPLIT): Spark 4.2's vectorized
    reader cannot decode it (§5, issue 34); bitshuffle stays an explicit choice."""
    s = tf.Schema([tf.Column("k", "int64"), tf.Column("f", "double"), tf.Column("b", "bool"),
                   tf.Column("s", "string"), tf.Column("d", "decimal(10,1)"), tf.Column("t", "unixtime_micros")],
                  primary_key=["k"])
    assert [c.encoding for c in s.columns] == ["plain", "plain", "run_length", "dictionary", "plain", "plain"]
    assert tf.Column("f", "double", encoding="bitshuffle").encoding == "bitshuffle"
    assert all(c.compression == "lz4" for c in s.columns)


@pytest.mark.parametrize("col,msg", [
    (lambda: tf.Column("x", "int32", encoding="prefix"), "not allowed"),
    (lambda: tf.Column("x", "string", encoding="bitshuffle"), "not allowed"),
    (lambda: tf.Column("x", "bool", encoding="dictionary"), "not allowed"),
    (lambda: tf.Column("x", "int32", compression="brotli"), "unknown compression"),
    (lambda: tf.Column("x", "int32", default="abc"), "not a valid int32"),
    (lambda: tf.Column("x", "int8", default=1000), "not a valid int8"),
])
def test_bad_columns(col, msg):
    with pytest.raises(tf.SchemaError, match=msg):
        col()


@pytest.mark.parametrize("name", ["", "a\x00b", "a/b", "..", "x" * 257, "tab\tname", b"\xff\xfe", "\udc80"])
def test_bad_identifiers(name):
    with pytest.raises(tf.InvalidIdentifierError, match="column name"):
        tf.Column(name, "int32")


def test_identifier_limit_is_bytes():
    tf.Column("é" * 128, "int32")  # 256 bytes: allowed
    with pytest.raises(tf.InvalidIdentifierError, match="256"):
        tf.Column("é" * 129, "int32")


@pytest.mark.parametrize("make,msg", [
    (lambda: tf.Schema([tf.Column("a", "int32")], primary_key=[]), "primary key"),
    (lambda: tf.Schema([tf.Column("a", "int32"), tf.Column("a", "int64")], primary_key=["a"]), "duplicate"),
    (lambda: tf.Schema([tf.Column("a", "int32")], primary_key=["b"]), "not in the schema"),
    (lambda: tf.Schema([tf.Column("a", "int32", nullable=True)], primary_key=["a"]), "cannot be nullable"),
    (lambda: tf.Schema([tf.Column("a", "double")], primary_key=["a"]), "cannot be key"),
    (lambda: tf.Schema([tf.Column("a", "float")], primary_key=["a"]), "cannot be key"),
    (lambda: tf.Schema([tf.Column("a", "bool")], primary_key=["a"]), "cannot be key"),
    (lambda: tf.Schema([tf.Column(f"c{i}", "int32") for i in range(301)], primary_key=["c0"]), "at most 300"),
    (lambda: tf.Schema([], primary_key=["a"]), "at least one"),
])
def test_bad_schemas(make, msg):
    with pytest.raises(tf.SchemaError, match=msg):
        make()


def test_column_ids_are_assigned_and_survive_json():
    s = tf.Schema([tf.Column("a", "int32"), tf.Column("b", "string", nullable=True, default="x"),
                   tf.Column("c", "decimal(5,2)", nullable=True, default="1.25")], primary_key=["a"])
    assert [c.id for c in s.columns] == [0, 1, 2]
    assert s.next_column_id == 3
    s2 = tf.Schema.from_json(s.to_json())
    assert s2 == s
    assert str(s2.column("c").default) == "1.25"


def test_300_columns_allowed():
    s = tf.Schema([tf.Column(f"c{i}", "int32") for i in range(300)], primary_key=["c0"])
    assert len(s.columns) == 300
