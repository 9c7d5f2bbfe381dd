"""Every bad input the API can receive: a typed error with a clear message, and the table unchanged."""
import datetime as dt
import decimal
import json
import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tableformat as tf

from helpers import T0, metrics_partitioning, metrics_rows, metrics_schema, table_files

KEY = ["host", "metric", "time"]


def base_table(root):
    t = tf.create_table(str(root / "t"), metrics_schema(), partitioning=metrics_partitioning())
    t.insert(metrics_rows(50))
    return t


def ts(n, v=T0):
    return pa.array([v] * n, pa.timestamp("us", tz="UTC"))


ROW = {"host": ["h"], "metric": ["m"], "time": ts(1)}
BAD = [
    # wrong types
    ("string into double", lambda t: t.insert(pa.table({**ROW, "value": ["x"]})), tf.TypeMismatchError,
     "column 'value' is double; input has type string"),
    ("float into decimal", lambda t: t.insert(pa.table({**ROW, "price": [1.5]})), tf.TypeMismatchError,
     r"column 'price' is decimal\(18,2\); input has type double"),
    ("int into timestamp", lambda t: t.insert(pa.table({"host": ["h"], "metric": ["m"], "time": [5]})),
     tf.TypeMismatchError, "column 'time' is unixtime_micros; input has type int64"),
    ("bytes into string key", lambda t: t.insert(pa.table({"host": [b"h"], "metric": ["m"], "time": ts(1)})),
     tf.TypeMismatchError, "column 'host' is string; input has type binary"),
    ("update with wrong type", lambda t: t.update(pa.table({**ROW, "tag": [1]})), tf.TypeMismatchError,
     r"column 'tag' is varchar\(16\); input has type int64"),
    # nulls in keys
    ("null key on insert", lambda t: t.insert(pa.table({"host": pa.array([None], pa.string()), "metric": ["m"],
                                                         "time": ts(1)})), tf.NullValueError,
     r"column 'host' is not nullable but has 1 NULL value\(s\)"),
    ("null key on delete", lambda t: t.delete(pa.table({"host": pa.array([None], pa.string()), "metric": ["m"],
                                                         "time": ts(1)})), tf.NullValueError,
     r"primary key column 'host' has 1 NULL value\(s\)"),
    # oversized cells
    ("65 KiB key cell", lambda t: t.insert(pa.table({**ROW, "host": ["x" * 66000]})), tf.CellTooLargeError,
     r"column 'host': a cell is 66000 bytes; the limit is 65536 bytes \(64"),
    ("16 KiB encoded key", lambda t: t.insert(pa.table({**ROW, "host": ["x" * 9000], "metric": ["y" * 9000]})),
     tf.CellTooLargeError, r"an encoded primary key is 18012 bytes; the limit is 16384 bytes \(16"),
    # unknown columns
    ("unknown column on insert", lambda t: t.insert(pa.table({**ROW, "nope": [1]})), tf.UnknownColumnError,
     r"input has column\(s\) \['nope'\] that table does not have; columns are"),
    ("unknown column on update", lambda t: t.update(pa.table({**ROW, "nope": [1]})), tf.UnknownColumnError,
     r"input has column\(s\) \['nope'\] that table 't' does not have; columns"),
    ("unknown scan column", lambda t: t.scan(columns=["nope"]), tf.ColumnNotFoundError,
     r"scan names unknown column\(s\) \['nope'\]; columns are \['host', 'metric'"),
    ("unknown filter column", lambda t: t.scan(filter=[("nope", "=", 1)]), tf.ColumnNotFoundError,
     r"filter names unknown column 'nope'; columns are \['host', 'metric'"),
    ("missing key column", lambda t: t.update(pa.table({"host": ["h"], "value": [1.0]})), tf.MissingColumnError,
     r"input lacks primary key column\(s\) \['metric', 'time'\]"),
    # out-of-range decimals and integers
    ("decimal over precision", lambda t: t.insert(pa.table({**ROW, "price": pa.array(
        [decimal.Decimal("1e17")], pa.decimal128(38, 2))})), tf.DecimalOutOfRangeError,
     r"column 'price' \(decimal\(18,2\)\): a value does not fit the precision"),
    ("decimal from big int", lambda t: t.insert(pa.table({**ROW, "price": [10**17]})), tf.DecimalOutOfRangeError,
     r"column 'price' \(decimal\(18,2\)\): a value does not fit the precision"),
    # rows outside every range partition
    ("time before the first range", lambda t: t.insert(pa.table({**ROW, "time": ts(1, T0 - 1)})),
     tf.NoRangePartitionError, r"1 rows fall in no range partition of \(time\) \(first"),
    ("upsert outside the ranges", lambda t: t.upsert(pa.table({**ROW, "time": ts(1, T0 + 10**13)})),
     tf.NoRangePartitionError, r"1 rows fall in no range partition \(first: \('h', 'm', '2024-03-09"),
    # bad filters and options
    ("unknown filter operator", lambda t: t.scan(filter=[("host", "like", "h%")]), tf.InvalidFilterError,
     r"unknown filter operator 'like'; use one of \['!=', '<', '<=', '='"),
    ("filter value of the wrong type", lambda t: t.scan(filter=[("time", ">", "tomorrow")]), tf.InvalidFilterError,
     r"filter on 'time': 'tomorrow' \(str\) is not a valid unixtime_micros"),
    ("as_of a future version", lambda t: t.scan(as_of=10**9), tf.VersionNotFoundError,
     r"version 1000000000 does not exist; versions are 0\.\.1"),
    ("as_of a negative version", lambda t: t.scan(as_of=-1), tf.VersionNotFoundError,
     r"version -1 does not exist; versions are 0\.\.1"),
    ("as_of nonsense", lambda t: t.scan(as_of="not a date"), tf.InvalidOptionError,
     "as_of 'not a date' is not a version number, ts:<microseconds>, an ISO"),
    ("as_of before creation", lambda t: t.scan(as_of=dt.datetime(1990, 1, 1)), tf.VersionNotFoundError,
     "is before the table was created"),
    ("negative compaction budget", lambda t: t.compaction_plan(budget_bytes=-5), tf.InvalidOptionError,
     r"budget_bytes must be an integer in \[1"),
    ("negative vacuum retention", lambda t: t.vacuum(retain_seconds=-1), tf.InvalidOptionError,
     r"retain_seconds must be a finite number in \[0, 3153600000\] or None"),
    ("negative vacuum grace", lambda t: t.vacuum(grace_seconds=-1), tf.InvalidOptionError,
     r"grace_seconds must be a finite number in \[0, 3153600000\], got int -1"),
    ("absurd property", lambda t: t.alter().set_property("rowset_target_bytes", 10**30), tf.InvalidOptionError,
     r"table property rowset_target_bytes must be an integer in \[65536"),
    ("unknown property", lambda t: t.alter().set_property("turbo", 1), tf.InvalidOptionError,
     "unknown table property 'turbo'; known: checkpoint_interval"),
    ("changes with a bad mode", lambda t: t.changes(0, mode="fast"), tf.InvalidOptionError,
     "mode must be one of 'all', 'net', got str 'fast'"),
    ("apply with unknown op", lambda t: t.apply(pa.table({"op": ["merge"], **ROW})), tf.InvalidDataError,
     r"unknown op\(s\) \['merge'\]; use one of \['insert', 'insert_ignore'"),
    ("not a table at all", lambda t: t.insert("hello"), tf.InvalidDataError,
     "input must be a pyarrow Table, RecordBatch, RecordBatchReader, pandas"),
    # names
    ("column name with a slash", lambda t: t.alter().add_column("a/b", "int32"), tf.InvalidIdentifierError,
     r"column name 'a/b' contains a path separator or is '\.'/'\.\.'"),
    ("column name ..", lambda t: t.alter().add_column("..", "int32"), tf.InvalidIdentifierError,
     r"column name '\.\.' contains a path separator or is '\.'/'\.\.'"),
    ("column name with NUL", lambda t: t.alter().add_column("a\x00b", "int32"), tf.InvalidIdentifierError,
     r"column name 'a\\x00b' contains a control character \(NUL, newline\.\.\.\)"),
    ("column name not UTF-8", lambda t: t.alter().add_column(b"\xff\xfe", "int32"), tf.InvalidIdentifierError,
     r"column name b'\\xff\\xfe' is not valid UTF-8"),
    ("table name with a slash", lambda t: t.alter().rename_table("../../etc"), tf.InvalidIdentifierError,
     r"table name '\.\./\.\./etc' contains a path separator or is '\.'/'\.\.'"),
    ("type change", lambda t: t.alter().change_type("value", "int64"), tf.SchemaError,
     "cannot change the type of column 'value': type changes are not"),
    ("key column update", lambda t: t.update(pa.table({**ROW, "value": [1.0]}), columns=["host"]),
     tf.KeyColumnUpdateError, r"primary key column\(s\) \['host'\] cannot be updated; delete the row and"),
]


@pytest.mark.parametrize("name,call,err,msg", BAD, ids=[b[0] for b in BAD])
def test_bad_input(tmp_path, name, call, err, msg):
    t = base_table(tmp_path)
    before, files = t.version, table_files(tmp_path / "t")
    with pytest.raises(err, match=msg) as e:
        r = call(t)
        if hasattr(r, "to_arrow"):
            r.to_arrow()
    assert str(e.value)                          # a message, never empty
    assert t.version == before and table_files(tmp_path / "t") == files


@pytest.mark.parametrize("uri,err", [
    ("", tf.InvalidURIError), ("nosuch://x/y", tf.InvalidURIError), ("a\x00b", tf.InvalidURIError),
    (None, tf.InvalidURIError),
])
def test_bad_uris(uri, err):
    with pytest.raises(err, match=r"table URI must be a non-empty string without NUL|"
                                  r"cannot open table URI 'nosuch://x/y': Protocol not known"):
        tf.open_table(uri)


def test_path_that_is_not_a_table_and_newer_format(tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "data.csv").write_text("a,b\n")
    with pytest.raises(tf.TableNotFoundError, match=r"no table at '.*plain' \(no _log/ commits\)"):
        tf.open_table(str(tmp_path / "plain"))
    t = base_table(tmp_path)
    d = {"format_version": 99, "version": t.version + 1, "timestamp": 1, "operation": "X", "actions": []}
    (tmp_path / "t" / "_log" / f"{t.version + 1:020d}.json").write_text(json.dumps(d))
    with pytest.raises(tf.UnsupportedFormatVersionError,
                       match=f"was written with format version 99; this reader supports up to {tf.FORMAT_VERSION}"):
        tf.open_table(str(tmp_path / "t"))


TYPES = st.sampled_from([pa.int8(), pa.int64(), pa.float64(), pa.string(), pa.binary(), pa.bool_(),
                         pa.timestamp("us"), pa.date32(), pa.decimal128(20, 3), pa.null()])


@st.composite
def batches(draw):
    names = draw(st.lists(st.sampled_from(["host", "metric", "time", "value", "price", "tag", "zz", "op"]),
                          min_size=1, max_size=6, unique=True))
    n = draw(st.integers(0, 4))
    cols = {}
    for name in names:
        typ = draw(TYPES)
        vals = draw(st.lists(st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=3), st.floats(allow_nan=True)),
                             min_size=n, max_size=n))
        try:
            cols[name] = pa.array(vals, typ) if typ != pa.null() else pa.nulls(n)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            cols[name] = pa.nulls(n, typ if typ != pa.null() else pa.null())
    return pa.table(cols)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(batches(), st.sampled_from(["insert", "insert_ignore", "update", "update_ignore", "delete", "upsert",
                                   "apply", "alter"]))
def test_fuzzed_batches_never_corrupt_the_table(tmp_path_factory, batch, op):
    root = tmp_path_factory.mktemp("fuzz")
    t = base_table(root)
    before, rows, files = t.version, t.scan().count(), table_files(root / "t")
    try:
        if op == "alter":
            with t.alter() as a:
                for name, col in zip(batch.column_names, batch.columns):
                    a.add_column(name, str(col.type) if col.type != pa.null() else "int32")
        else:
            getattr(t, op)(batch)
    except tf.TableFormatError as e:
        assert str(e)
        assert t.version == before and t.scan().count() == rows and table_files(root / "t") == files
    assert tf.open_table(str(root / "t")).check().ok


# --- one input-conversion path, typed errors for every write and lookup --------------------------

def _twice(name):
    row = pa.table({**ROW, "value": [1.0], "tag": ["a"]})
    return row.append_column(name, row.column(name))


@pytest.mark.parametrize("op", ["update", "update_ignore", "upsert", "delete", "delete_ignore", "insert"])
def test_duplicate_column_names_are_typed_for_every_write(tmp_path, op):
    """Update/upsert/delete of input with a column twice raised a bare KeyError."""
    t = base_table(tmp_path)
    before, files = t.version, table_files(tmp_path / "t")
    with pytest.raises(tf.InvalidDataError, match=r"duplicate column names \['tag'\]"):
        getattr(t, op)(_twice("tag"))
    assert t.version == before and table_files(tmp_path / "t") == files


def test_lookup_with_the_key_column_twice_is_typed(tmp_path):
    """A lookup whose input names the key column twice is a typed error."""
    t = base_table(tmp_path)
    with pytest.raises(tf.InvalidDataError, match=r"duplicate column names \['host'\]"):
        t.lookup(_twice("host"))


@pytest.mark.parametrize("keys", [
    {"host": ["h"], "metric": ["m"], "time": [T0], "value": [1.0], "zz": [10**23]},     # an ignored column
    {"host": ["h"], "metric": ["m"], "time": [10**23]},
    [{"host": "h", "metric": "m", "time": 10**23}],
], ids=["dict, other column", "dict", "rows"])
def test_lookup_of_an_int_beyond_int64_is_typed_and_names_the_column(tmp_path, keys):
    """`lookup({"k": [10**23]})` and the list-of-dicts form raised OverflowError."""
    t = base_table(tmp_path)
    col = "zz" if "zz" in (keys if isinstance(keys, dict) else {}) else "time"
    with pytest.raises(tf.TypeMismatchError, match=f"column '{col}'.*64-bit"):
        t.lookup(keys)


@pytest.mark.parametrize("op", ["insert", "update", "upsert"])
def test_rows_with_an_int_beyond_int64_are_typed_for_writes(tmp_path, op):
    """`batch.to_arrow_table`'s list-of-dicts path raised OverflowError for insert and update."""
    t = base_table(tmp_path)
    before, files = t.version, table_files(tmp_path / "t")
    row = {"host": "h", "metric": "m", "time": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc), "tag": "x"}
    with pytest.raises(tf.TypeMismatchError, match="column 'price'.*64-bit"):
        getattr(t, op)([row, {**row, "price": 10**40}])
    assert t.version == before and table_files(tmp_path / "t") == files


def test_rows_keep_keys_the_first_row_lacks(tmp_path):
    """Arrow's from_pylist takes its columns from the first row: a key only later rows have was
    dropped without a word. Every key of every row is a column."""
    t = base_table(tmp_path)
    when = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=T0 + 5)
    row = {"host": "new", "metric": "m", "time": when}
    t.insert([row, {**row, "host": "new2", "tag": "kept"}])
    got = {r["host"]: r["tag"] for r in t.scan(filter=[("host", "in", ["new", "new2"])]).to_arrow().to_pylist()}
    assert got == {"new": None, "new2": "kept"}


def test_a_dict_of_columns_takes_any_iterable_of_values(tmp_path):
    """A dict of columns is converted as pa.table converts one: a column may be any iterable
    (a generator, a map), as lookup's dict form took before the one input path."""
    t = base_table(tmp_path)
    keys = t.scan(columns=["host", "metric", "time"]).to_arrow().slice(0, 2)
    got = t.lookup({"host": (h for h in keys.column("host").to_pylist()), "metric": iter(keys.column("metric")),
                    "time": map(lambda v: v, keys.column("time").to_pylist())})
    assert got.select(["host", "metric", "time"]).equals(keys)


def test_a_write_of_one_shot_columns_that_plans_again_sees_every_row(tmp_path):
    """A write converts its input once: a plan on a stale snapshot that fails (the key was
    inserted since, through another handle) plans again on the latest one, and a generator
    read by the first plan must not come back empty (a silent no-op)."""
    t = base_table(tmp_path)
    other = tf.open_table(str(tmp_path / "t"))
    when = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=T0 + 7)
    other.insert([{"host": "late", "metric": "m", "time": when}])      # t's cached snapshot lacks it
    res = t.update({"host": (h for h in ["late"]), "metric": ["m"], "time": [when], "tag": iter(["seen"])})
    assert res.updated == 1
    got = t.lookup([{"host": "late", "metric": "m", "time": when}], columns=["tag"])
    assert got.column("tag").to_pylist() == ["seen"]


@pytest.mark.parametrize("op", ["insert", "upsert", "delete", "lookup"])
def test_a_record_batch_reader_whose_batches_break_its_schema_is_typed(tmp_path, op):
    """A stream is read in the one input path too: a batch that does not match the reader's
    schema raised a bare ArrowInvalid out of read_all()."""
    t = base_table(tmp_path)
    before, files = t.version, table_files(tmp_path / "t")
    schema = pa.schema([("host", pa.string()), ("metric", pa.string()), ("time", pa.timestamp("us", tz="UTC"))])
    bad = pa.record_batch({"host": [1], "metric": ["m"], "time": pa.array([T0], pa.timestamp("us", tz="UTC"))})
    reader = pa.RecordBatchReader.from_batches(schema, [bad])
    with pytest.raises(tf.InvalidDataError, match="RecordBatchReader"):
        getattr(t, op)(reader)
    assert t.version == before and table_files(tmp_path / "t") == files


@pytest.mark.parametrize("value", [1e300, -1e300, 3.5e38])
def test_a_double_beyond_a_float_columns_range_is_typed_not_infinity(tmp_path, value):
    """A finite double too large for a 32-bit float column was cast to +-inf without a word: a
    value the column cannot hold is a typed error, as an int beyond int32 is (NaN and +-inf
    themselves are float values and stay)."""
    t = tf.create_table(str(tmp_path / "f"), tf.Schema([tf.Column("k", "int64"), tf.Column("x", "float", nullable=True)],
                                                        primary_key=["k"]))
    with pytest.raises(tf.TypeMismatchError, match="column 'x'.*float"):
        t.insert({"k": [1, 2], "x": [1.5, value]})
    assert t.version == 0
    t.insert({"k": [1, 2, 3, 4], "x": [float("inf"), float("-inf"), float("nan"), 3.4e38]})
    got = t.scan().to_arrow().sort_by("k").column("x").to_pylist()
    assert got[:2] == [float("inf"), float("-inf")] and got[2] != got[2] and got[3] == pytest.approx(3.4e38, rel=1e-6)


def _overlapping_spellings(root):
    """Every spelling of the table's directory, a path inside it and an ancestor of it (#34.1)."""
    t = str(root / "t")
    os.symlink(root, root / "link")
    return [t, t + "/", t + "//", "file://" + t, f"file:{t}", t + "/tablets/../", str(root), str(root) + "/",
            "file://" + str(root), f"{t}/mirror", f"file://{t}/mirror/", str(root / "link" / "t"),
            str(root / "link"), f"{root}/x/../t", "/"]


def test_the_overlap_rule_normalises_every_spelling(tmp_path):
    """storage.overlaps is the one rule for every output path: file:// URIs, trailing slashes,
    `..`, symlinks (real paths), and S3 as one store under s3://, s3a:// and s3n://."""
    from tableformat.format.storage import overlaps
    for p in _overlapping_spellings(tmp_path):
        assert overlaps(p, str(tmp_path / "t")), p
    for p in [str(tmp_path / "t2"), str(tmp_path / "tt" / "t"), str(tmp_path / "m"), "s3://b" + str(tmp_path)]:
        assert not overlaps(p, str(tmp_path / "t")), p
    for p in ["s3://b/w/t", "s3a://b/w/t/", "s3n://b/w/t/m", "s3a://b", "s3://b/", "s3://b/w", "s3a://b/w/x/../t/m",
              "simplecache::s3a://b/w", "s3://key:secret@b/w/t/x"]:
        assert overlaps(p, "s3://b/w/t"), p
    for p in ["s3://b/w/t2", "s3://c/w/t", "s3a://b/x", "gs://b/w/t", "/b/w/t"]:
        assert not overlaps(p, "s3a://b/w/t"), p


def test_a_mirror_that_overlaps_the_table_is_refused_before_anything_is_written(tmp_path):
    """#34.1: a mirror at the table's parent was accepted (so was `file://` + the table's own
    path), and a Delta VACUUM there then deleted our PK indexes and UNDO files."""
    t = base_table(tmp_path)
    before, files = t.version, table_files(tmp_path)
    for p in _overlapping_spellings(tmp_path):
        with pytest.raises(tf.PathOverlapError, match="outside the table's directory"):
            t.mirror_delta(p)
        with pytest.raises(tf.InvalidOptionError):          # the typed error is an InvalidOptionError
            tf.check_outside_table(p, t.uri, "x")
    assert t.refresh().version == before and table_files(tmp_path) == files
