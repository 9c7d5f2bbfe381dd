"""Every public function that takes data or column names, and every CLI data command, given
duplicate column names, values beyond their column's range and rows that are not objects:
a typed TableFormatError (the CLI: one `error: <Type>: ...` line, exit 1), and the table as
it was (specs/guarantees.md "no bare Python error escapes").

Both lists below are tables: a new public function taking data is one more line in
DATA_FUNCTIONS (or NAME_FUNCTIONS), a new kind of bad input one more line in BAD_DATA.
"""
import datetime as dt
import decimal
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tableformat as tf
from tableformat.cli.run import main as cli_main

D = decimal.Decimal
TS = pa.timestamp("us", tz="UTC")
# A composite key of an integer, a decimal and a timestamp: every function reads the key, so every
# over-range case reaches every function (lookup, delete and route read nothing else).
SCHEMA = tf.Schema([tf.Column("k", "int64"), tf.Column("d", "decimal(5,2)"), tf.Column("ts", "unixtime_micros"),
                    tf.Column("s", "string", nullable=True), tf.Column("n", "int32", nullable=True)],
                   primary_key=["k", "d", "ts"])
T0 = 1_700_000_000_000_000


def good_rows(n=3):
    return pa.table({"k": pa.array(range(n), pa.int64()), "d": pa.array([D("1.50")] * n, pa.decimal128(5, 2)),
                     "ts": pa.array([T0 + i for i in range(n)], TS), "s": [f"s{i}" for i in range(n)],
                     "n": pa.array(range(n), pa.int32())})


@pytest.fixture
def t(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), SCHEMA, tf.PartitionSchema(hash=[tf.HashPartition(["k"], 2)]))
    t.insert(good_rows())
    return t


def state(t):
    return t.version, t.scan().to_arrow().sort_by("k")


EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
ROW = {"k": 1, "d": D("1.50"), "ts": EPOCH + dt.timedelta(microseconds=T0 + 1), "s": "x"}   # a stored key
TS_TEXT = (EPOCH + dt.timedelta(microseconds=T0 + 1)).isoformat()


def rows(**change):
    return [{**ROW, **change}]


def dup_table(name):
    """A one-row Arrow table with column `name` twice."""
    base = pa.Table.from_pylist(rows())
    return base.append_column(name, base.column(name))


# name -> (input, error class, match). Each input is what a user may pass as data.
BAD_DATA = {
    "duplicate non-key column": (lambda: dup_table("s"), tf.InvalidDataError, r"duplicate column names \['s'\]"),
    "duplicate key column": (lambda: dup_table("k"), tf.InvalidDataError, r"duplicate column names \['k'\]"),
    "duplicate column in a RecordBatch": (lambda: dup_table("ts").to_batches()[0], tf.InvalidDataError,
                                          r"duplicate column names \['ts'\]"),
    "duplicate column in pandas": (lambda: pd.DataFrame([[1, D("1.5"), T0, "a", "b"]],
                                                        columns=["k", "d", "ts", "s", "s"]),
                                   tf.InvalidDataError, r"duplicate column names \['s'\]"),
    "int beyond int64 in rows": (lambda: rows(k=10**23), tf.TypeMismatchError, "column 'k'.*64-bit"),
    "int beyond int64 in a dict": (lambda: {"k": [10**23], "d": [D("1.5")], "ts": [T0]}, tf.TypeMismatchError,
                                   "column 'k'.*64-bit"),
    "int beyond int64 in pandas": (lambda: pd.DataFrame({"k": [10**23], "d": [D("1.5")]}), tf.TypeMismatchError,
                                   "column 'k'.*64-bit"),
    "uint64 beyond int64": (lambda: pa.Table.from_pylist(rows()).set_column(
        0, "k", pa.array([2**63], pa.uint64())), tf.TypeMismatchError, "'k'"),
    "decimal beyond precision": (lambda: rows(d=D("123456.7")), tf.DecimalOutOfRangeError, "column 'd'"),
    "decimal beyond precision (Arrow)": (lambda: pa.Table.from_pylist(rows()).set_column(
        1, "d", pa.array([D(10**36)], pa.decimal128(38, 0))), tf.DecimalOutOfRangeError, "column 'd'"),
    "decimal beyond 128 bits": (lambda: rows(d=D("1e40")), tf.DecimalOutOfRangeError, "column 'd'"),
    "timestamp beyond int64 micros": (lambda: rows(ts=10**30), tf.TypeMismatchError, "column 'ts'"),
    "timestamp seconds beyond micros": (lambda: pa.Table.from_pylist(rows()).set_column(
        2, "ts", pa.array([2**62], pa.timestamp("s", tz="UTC"))), tf.TypeMismatchError, "column 'ts'"),
    "a row that is not an object": (lambda: [5], tf.InvalidDataError, "list of dicts"),
    "a later row not an object": (lambda: [ROW, 5], tf.InvalidDataError, "list of dicts"),
    "column names not strings": (lambda: [{1: 2}], tf.InvalidDataError, "names must be strings"),
    "a column that is not a list": (lambda: {"k": 5}, tf.InvalidDataError, "input must be.*'k' is a int"),
    "columns of different lengths": (lambda: {"k": [1, 2], "d": [D(1)]}, tf.InvalidDataError, "different lengths"),
    "a column of mixed types": (lambda: [ROW, {**ROW, "k": "two"}], tf.TypeMismatchError, "column 'k'"),
}


def with_op(data):
    """The input with an `op` column, for apply (whose op column is read after the data's check)."""
    if isinstance(data, list):
        return [{**r, "op": "upsert"} if isinstance(r, dict) else r for r in data]
    if isinstance(data, dict):
        return {**data, "op": ["upsert"] * len(next(iter(data.values()), []))} \
            if all(isinstance(v, list) for v in data.values()) else data
    if isinstance(data, pd.DataFrame):
        return data.assign(op="upsert") if not data.columns.duplicated().any() else data
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    return data.append_column("op", pa.array(["upsert"] * data.num_rows))


def writer_write(t, data):
    snap = t.snapshot()
    return snap.rowset_writer(snap.tablet_ids[0]).write(data)


# Every public function taking data, through Table and Snapshot: name -> call(table, data).
DATA_FUNCTIONS = {
    "Table.insert": lambda t, d: t.insert(d),
    "Table.insert_ignore": lambda t, d: t.insert_ignore(d),
    "Table.update": lambda t, d: t.update(d),
    "Table.update_ignore": lambda t, d: t.update_ignore(d),
    "Table.upsert": lambda t, d: t.upsert(d),
    "Table.delete": lambda t, d: t.delete(d),
    "Table.delete_ignore": lambda t, d: t.delete_ignore(d),
    "Table.apply": lambda t, d: t.apply(with_op(d)),
    "Table.lookup": lambda t, d: t.lookup(d),
    "Table.lookup(missing=null)": lambda t, d: t.lookup(d, missing="null"),
    "Snapshot.lookup": lambda t, d: t.snapshot().lookup(d),
    "Snapshot.write_insert": lambda t, d: t.snapshot().write_insert(d),
    "Snapshot.write_insert(report)": lambda t, d: t.snapshot().write_insert(d, "ignore", report=True),
    "Snapshot.write_mutation(upsert)": lambda t, d: t.snapshot().write_mutation(d, op="upsert"),
    "Snapshot.write_mutation(delete)": lambda t, d: t.snapshot().write_mutation(d, op="delete"),
    "Snapshot.write_mutation(op_column)": lambda t, d: t.snapshot().write_mutation(with_op(d), op_column="op"),
    "Snapshot.route": lambda t, d: t.snapshot().route(d),
    "Snapshot.route_keys": lambda t, d: t.snapshot().route_keys(d),
    "RollingRowSetWriter.write": writer_write,
}


@pytest.mark.parametrize("bad", list(BAD_DATA))
@pytest.mark.parametrize("fn", list(DATA_FUNCTIONS))
def test_bad_data_is_a_typed_error_and_changes_nothing(t, fn, bad):
    make, cls, match = BAD_DATA[bad]
    before = state(t)
    with pytest.raises(cls, match=match):
        DATA_FUNCTIONS[fn](t, make())
    assert state(t)[0] == before[0] and state(t)[1].equals(before[1])


def test_the_good_row_passes_every_function(t):
    """The bad inputs differ from this row in one thing only: it is what makes them fail."""
    for fn, call in DATA_FUNCTIONS.items():
        if fn.startswith(("Table.insert", "Snapshot.write_insert")) or fn == "RollingRowSetWriter.write":
            call(t, rows(k=100 + len(fn)))      # a new key (the writer's tablet may not be the key's)
        else:
            call(t, rows())


# Every public function taking column names: name -> call(table, names).
NAME_FUNCTIONS = {
    "Table.scan": lambda t, c: t.scan(columns=c).to_arrow(),
    "Snapshot.scan": lambda t, c: t.snapshot().scan(columns=c).to_arrow(),
    "Snapshot.read_plan": lambda t, c: t.snapshot().read_plan(columns=c),
    "Table.lookup": lambda t, c: t.lookup(rows(), columns=c),
    "Snapshot.lookup": lambda t, c: t.snapshot().lookup(rows(), columns=c),
    "Table.update": lambda t, c: t.update(rows(), columns=c),
    "Table.update_ignore": lambda t, c: t.update_ignore(rows(), columns=c),
    "Table.upsert": lambda t, c: t.upsert(rows(), columns=c),
    "Snapshot.write_mutation": lambda t, c: t.snapshot().write_mutation(rows(), op="update", columns=c),
}


@pytest.mark.parametrize("fn", list(NAME_FUNCTIONS))
@pytest.mark.parametrize("names", [["s", "s"], ["s", "k", "s"]])
def test_a_column_named_twice_is_a_typed_error(t, fn, names):
    before = state(t)
    with pytest.raises(tf.InvalidOptionError, match=r"each column once, got \['s'\] more than once"):
        NAME_FUNCTIONS[fn](t, names)
    assert state(t)[0] == before[0] and state(t)[1].equals(before[1])


def test_describe_rows_of_a_bad_batch_is_typed(t):
    snap = t.snapshot()
    with pytest.raises(tf.InvalidDataError, match="duplicate column names"):
        snap.describe_rows(dup_table("k"), [0])
    with pytest.raises(tf.MissingColumnError, match="'ts'"):
        snap.describe_rows(pa.table({"k": [1], "d": pa.array([D(1)], pa.decimal128(5, 2))}), [0])


# Filters compare exactly (specs/format.md §13): a value beyond the column's range is an answer,
# not an error; a value of no number, time or text at all is a typed error.
@pytest.mark.parametrize("flt,expected", [
    (("k", "<", 2**70), [0, 1, 2]),
    (("k", ">", -2**80), [0, 1, 2]),
    (("k", "in", [1, 2**64]), [1]),
    (("k", "=", 10**23), []),
    (("d", "<", D("1e40")), [0, 1, 2]),
    (("d", ">", 10**40), []),
    (("ts", "<", 10**30), [0, 1, 2]),
    (("ts", ">", -10**30), [0, 1, 2]),
    (("n", ">=", 2**31), []),
])
def test_filter_values_beyond_the_range_compare_exactly(t, flt, expected):
    for scan in (t.scan, t.snapshot().scan):
        assert sorted(scan(filter=[flt]).to_arrow().column("k").to_pylist()) == expected


@pytest.mark.parametrize("flt", [("k", "=", [1]), ("k", "<", {"a": 1}), ("ts", "<", "not a time"),
                                 ("d", "=", object()), ("s", "=", 5)])
def test_filter_values_of_no_comparable_kind_are_typed(t, flt):
    with pytest.raises(tf.InvalidFilterError, match="filter on"):
        t.scan(filter=[flt]).to_arrow()


# --- the CLI: one `error: <Type>: ...` line, exit 1, the table unchanged ------------------------

def cli(capsys, *argv):
    code = cli_main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def files(tmp_path):
    """Bad input files, by name: (file name, content, error class, match)."""
    dup_pq = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array([1]), pa.array(["1.5"]), pa.array([T0], TS), pa.array([T0], TS)],
                                        names=["k", "d", "ts", "ts"]), dup_pq)
    return {
        "csv with a repeated header": ("dup.csv", f"k,d,ts,s,s\n1,1.5,{TS_TEXT},a,b\n", "SchemaMismatchError",
                                       r"duplicate column names \['s'\]"),
        "csv with the key twice": ("dupk.csv", f"k,k,d,ts\n1,1,1.5,{TS_TEXT}\n", "SchemaMismatchError",
                                   r"duplicate column names \['k'\]"),
        "parquet with a column twice": (dup_pq, None, "SchemaMismatchError", r"duplicate column names \['ts'\]"),
        "csv int beyond int64": ("big.csv", f"k,d,ts\n100000000000000000000000,1.5,{TS_TEXT}\n", "SchemaMismatchError",
                                 "100000000000000000000000"),
        "csv decimal beyond precision": ("dec.csv", f"k,d,ts\n1,123456.7,{TS_TEXT}\n", "SchemaMismatchError", "123456.7"),
        "csv timestamp beyond range": ("ts.csv", "k,d,ts\n1,1.5,100000000000000000000000\n", "SchemaMismatchError",
                                       "100000000000000000000000"),
        "jsonl int beyond int64": ("big.jsonl", '{"k": 100000000000000000000000, "d": "1.5", "ts": "%s"}\n' % TS_TEXT,
                                   "SchemaMismatchError", "big.jsonl"),
        "jsonl year 99999": ("year.jsonl", '{"k": 1, "d": "1.5", "ts": "99999-01-01T00:00:00"}\n',
                             "SchemaMismatchError", "99999"),
        "jsonl first line a number": ("five.jsonl", "5\n", "SchemaMismatchError", "line 1 is not a JSON object.*int 5"),
        "jsonl first line a string": ("str.jsonl", '"abc"\n', "SchemaMismatchError", "not a JSON object.*str"),
        "jsonl first line an array": ("arr.jsonl", '["k"]\n', "SchemaMismatchError", "not a JSON object.*list"),
        "jsonl first line null": ("null.jsonl", "null\n", "SchemaMismatchError", "not a JSON object.*NoneType"),
        "jsonl later line a number": ("later.jsonl", '{"k": 1, "d": "1.5", "ts": "%s"}\n5\n' % TS_TEXT, "SchemaMismatchError",
                                      "changed from object"),
        "jsonl a key twice": ("dupkey.jsonl", '{"k": 1, "k": 2, "d": "1.5", "ts": "%s"}\n' % TS_TEXT, "SchemaMismatchError",
                              "specified twice"),
    }


def one_error(code, out, err, cls, match):
    import re
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, (code, out, err)
    assert lines[0].startswith(f"error: {cls}: "), lines[0]
    assert re.search(match, lines[0]), lines[0]


@pytest.mark.parametrize("command", ["insert", "upsert", "update", "delete"])
def test_cli_bad_files_are_one_typed_line(t, tmp_path, capsys, command):
    before = state(t)
    for name, (path, text, cls, match) in files(tmp_path).items():
        p = tmp_path / path
        if text is not None:
            p.write_text(text)
        for on_error in ("fail", f"collect={tmp_path / 'rejects.parquet'}"):
            code, out, err = cli(capsys, command, t.uri, "--input", p, "--on-error", on_error)
            one_error(code, out, err, cls, match)
            assert not (tmp_path / "rejects.parquet").exists(), name
            assert state(t)[0] == before[0] and state(t)[1].equals(before[1]), name


@pytest.mark.parametrize("argv,cls,match", [
    (["lookup", "--key", "k=100000000000000000000000,d=1.5,ts=1"], "TypeMismatchError", "column 'k'.*64-bit"),
    (["lookup", "--key", "k=1,d=123456.7,ts=1"], "DecimalOutOfRangeError", "'d'"),
    (["lookup", "--key", "k=1,d=1e40,ts=1"], "DecimalOutOfRangeError", "'d'"),
    (["lookup", "--key", "k=1,d=1.5,ts=100000000000000000000000"], "TypeMismatchError", "column 'ts'.*64-bit"),
    (["lookup", "--key", "k=1,d=1.5,ts=99999-01-01"], "InvalidDataError", "--key ts"),
    (["lookup", "--key", "k=1,d=1.5,ts=1", "--columns", "s,s"], "InvalidOptionError", "more than once"),
    (["lookup", "--key", "k=1,d=1.5,ts=1,k=2"], "InvalidOptionError", "gives column 'k' twice"),
    (["scan", "--columns", "s,k,s"], "InvalidOptionError", "more than once"),
    (["scan", "--where", "ts < 99999-01-01"], "InvalidFilterError", "'ts'"),
    (["scan", "--where", "n = 1.5.5"], "InvalidFilterError", "'n'"),
    (["upsert", "--input", "{good}", "--columns", "s,s"], "InvalidOptionError", "more than once"),
    (["update", "--input", "{good}", "--columns", "s,s", "--on-error", "collect={rejects}"], "InvalidOptionError",
     "more than once"),
])
def test_cli_lookup_scan_and_columns_are_one_typed_line(t, tmp_path, capsys, argv, cls, match):
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"k": 1, "d": "1.5", "ts": TS_TEXT, "s": "z"}) + "\n")
    argv = [a.format(good=good, rejects=tmp_path / "rejects.parquet") for a in argv]
    before = state(t)
    code, out, err = cli(capsys, argv[0], t.uri, *argv[1:])
    one_error(code, out, err, cls, match)
    assert state(t)[0] == before[0] and state(t)[1].equals(before[1])


def test_cli_where_beyond_the_range_compares_exactly(t, capsys):
    code, out, err = cli(capsys, "scan", t.uri, "--where", "k < 100000000000000000000000", "--format", "csv")
    assert code == 0 and out.splitlines()[1:] and len(out.splitlines()) == 4, (out, err)
    code, out, err = cli(capsys, "scan", t.uri, "--where", "ts > 100000000000000000000000", "--format", "csv")
    assert code == 0 and len(out.splitlines()) == 1, (out, err)


@pytest.mark.parametrize("rows", [np.array([[0]]), [[0]], (0, [0])], ids=["2-d array", "nested list", "a list inside"])
def test_describe_rows_of_rows_that_are_not_a_flat_list_is_typed(t, rows):
    """Row numbers nested one level deeper passed the check (it looked at the flattened values)
    and raised a bare ArrowInvalid or TypeError from the key formatting."""
    with pytest.raises(tf.InvalidOptionError, match="rows must be row numbers"):
        t.snapshot().describe_rows(good_rows(1), rows)


# One condition, one class, on the engine's side and the JVM's (specs/format.md §9.5).
@pytest.mark.parametrize("as_of,cls,match", [
    (-1, tf.VersionNotFoundError, r"^version -1 does not exist; versions are 0\.\.1$"),
    (" -1 ", tf.VersionNotFoundError, r"^version -1 does not exist; versions are 0\.\.1$"),
    (99, tf.VersionNotFoundError, r"^version 99 does not exist; versions are 0\.\.1$"),
    ("nosuch", tf.TagNotFoundError, r"^as_of 'nosuch' is not a version number, .* nor a tag: no tag of that name "
                                    r"in this table \(tags: none\)$"),
    ("tag:nosuch", tf.TagNotFoundError, r"^no tag 'nosuch' in this table \(tags: none\)$"),
])
def test_an_as_of_the_log_does_not_hold_is_one_class_per_condition(t, as_of, cls, match):
    with pytest.raises(cls, match=match):
        t.scan(as_of=as_of)


def test_a_missing_commit_zero_is_named_not_taken_for_no_table(t, tmp_path):
    t.delete(good_rows(1).select(["k", "d", "ts"]))
    (tmp_path / "t" / "_log" / f"{0:020d}.json").unlink()
    with pytest.raises(tf.CorruptFileError, match=r"^commit file _log/0{20}\.json of the table at .* is missing, "
                                                  r"while _log/ holds 2 commits \(versions 1\.\.2\) and no usable "
                                                  r"checkpoint to start from: the log is damaged; restore"):
        tf.open_table(t.uri)
    with pytest.raises(tf.TableNotFoundError, match=r"no table at .* \(no _log/ commits\)"):
        tf.open_table(str(tmp_path / "none"))


@pytest.mark.parametrize("text", ["-0", " -000 "])
def test_minus_zero_is_version_not_found_not_version_0(text):
    """'-0' read version 0; any leading '-' is a version no log holds (AsOf.java refuses it alike)."""
    with pytest.raises(tf.VersionNotFoundError, match=rf"^version {text.strip()} does not exist; versions start at 0$"):
        tf.parse_as_of(text)


def test_a_negative_version_too_long_for_any_log_keeps_its_sign():
    with pytest.raises(tf.VersionNotFoundError, match=r"^as_of: version -99999999999999999999\.\.\. \(45 digits\) "
                                                      r"does not exist$"):
        tf.parse_as_of("-" + "9" * 45)
    with pytest.raises(tf.VersionNotFoundError, match=r"^as_of: version 99999999999999999999\.\.\. \(45 digits\)"):
        tf.parse_as_of("000" + "9" * 45)
