"""The `tableformat` command, run as a real process: what it prints, and what it did to the table.

Tables are built with the Python API and checked with it, so the command is
judged against the library rather than against itself.
"""
import datetime as dt
import decimal
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from helpers import (
    T0,
    assert_same_rows,
    metrics_partitioning,
    metrics_rows,
    metrics_schema,
    one_line_error,
    run,
    run_many,
    sort_rows,
    txn_behind_the_horizon,
)

import tableformat as tf

COMMANDS = ["create", "describe", "history", "scan", "changes", "compact", "vacuum", "check", "alter"]
KEY = ["host", "metric", "time"]


def same(a, b):
    """Equal rows, NaN equal to NaN."""
    return json.dumps(a, default=str) == json.dumps(b, default=str)


def iso(micros):
    return (dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=micros)).isoformat()


def micros(text):
    d = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (d - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """Versions 1 insert 300, 2 update 10 values to 9.0, 3 delete 5 rows. Read-only for the tests."""
    uri = str(tmp_path_factory.mktemp("cli") / "metrics")
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(300)
    keys = data.select(KEY)
    t.insert(data)
    t.update(keys.slice(0, 10).append_column("value", pa.array([9.0] * 10)))
    t.delete(keys.slice(10, 5))
    return uri


def fresh_rows():
    """Two hosts, so the rows reach both range partitions."""
    return metrics_rows(300, hosts=2)


@pytest.fixture
def fresh(tmp_path):
    """A table the test may change."""
    t = tf.create_table(str(tmp_path / "m"), metrics_schema(), partitioning=metrics_partitioning())
    t.insert(fresh_rows())
    return t


# --- the console script and help ----------------------------------------------------------

def test_console_script_is_installed_next_to_python():
    """Users run `tableformat`, not `python -m`: the entry point must be installed."""
    script = Path(sys.executable).parent / "tableformat"
    assert script.exists(), "pip install -e . installs the console script"
    r = subprocess.run([str(script), "--help"], check=False, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert all(c in r.stdout for c in COMMANDS)


def test_every_command_has_help():
    """Global options are accepted after the command too, so every command lists them."""
    for command, r in zip(COMMANDS, run_many(*[((c, "--help"), 0) for c in COMMANDS])):
        out = r.stdout
        assert out.startswith(f"usage: tableformat {command}") and "URI" in out and "--storage-option" in out


# --- create -------------------------------------------------------------------------------

SCHEMA_YAML = """\
name: metrics_yaml
columns:
  - {{name: host, type: string}}
  - {{name: metric, type: string}}
  - {{name: time, type: unixtime_micros}}
  - {{name: value, type: double, nullable: true, encoding: bitshuffle, compression: lz4}}
  - {{name: price, type: "decimal(18,2)", nullable: true}}
  - name: tag
    type: varchar(16)
    nullable: true
    default: none
primary_key: [host, metric, time]
partitioning:
  hash:
    - {{columns: [host, metric], buckets: 4}}
  range:
    columns: [time]
    bounds: [[{lo}, {hi}]]
    splits: [{split}]
properties:
  history_max_age: 259200
"""


def schema_json(lo, hi, split):
    return {"name": "metrics_json",
            "columns": [{"name": "host", "type": "string"}, {"name": "metric", "type": "string"},
                        {"name": "time", "type": "unixtime_micros"},
                        {"name": "value", "type": "double", "nullable": True, "encoding": "bitshuffle",
                         "compression": "lz4"},
                        {"name": "price", "type": "decimal(18,2)", "nullable": True},
                        {"name": "tag", "type": "varchar(16)", "nullable": True, "default": "none"}],
            "primary_key": ["host", "metric", "time"],
            "partitioning": {"hash": [{"columns": ["host", "metric"], "buckets": 4, "seed": 0}],
                             "range": {"columns": ["time"], "bounds": [[lo, hi]], "splits": [split]}},
            "properties": {"history_max_age": 259200}}


@pytest.mark.parametrize("kind", ["yaml", "json"])
def test_create_from_a_schema_file_matches_the_api(tmp_path, kind):
    """ISO times in YAML and integer microseconds in JSON give the table the API builds."""
    lo, hi, split = T0, T0 + 10**12, T0 + 10**11
    f = tmp_path / f"schema.{kind}"
    if kind == "yaml":
        f.write_text(SCHEMA_YAML.format(lo=iso(lo), hi=iso(hi), split=iso(split)))
    else:
        f.write_text(json.dumps(schema_json(lo, hi, split)))
    uri = tmp_path / "t"
    out = run("create", uri, "--schema", f).stdout
    assert f"created table 'metrics_{kind}'" in out and "8 tablet(s)" in out
    t = tf.open_table(str(uri))
    ref = tf.create_table(str(tmp_path / "ref"), metrics_schema(), partitioning=metrics_partitioning())
    assert t.state.schema.to_json() == ref.state.schema.to_json()
    assert t.state.partitioning.to_json(t.schema) == ref.state.partitioning.to_json(ref.schema)
    assert t.properties["history_max_age"] == 259200 and t.name == f"metrics_{kind}"
    data = metrics_rows(200)
    t.insert(data)
    assert_same_rows(t.to_arrow(), data)


def test_create_refuses_bad_schema_files_and_existing_tables(tmp_path):
    """A typo in a schema file fails loudly, names the key, and creates nothing."""
    good = tmp_path / "s.json"
    good.write_text(json.dumps({"columns": [{"name": "k", "type": "int64"}], "primary_key": "k"}))
    cases = [
        ({"columns": [{"name": "k", "type": "int64"}], "primary_keys": ["k"]}, "SchemaError", "primary_keys"),
        ({"columns": [{"name": "k", "type": "int99"}], "primary_key": "k"}, "SchemaError", "unknown column type"),
        ({"columns": [{"name": "k", "type": "int64"}], "primary_key": "k",
          "partitioning": {"hash": [{"columns": ["k"], "buckets": 1}]}}, "PartitionSchemaError", "buckets"),
        ("columns: [unclosed", "SchemaError", "cannot parse schema file"),
    ]
    for i, (text, _, _) in enumerate(cases):
        (tmp_path / f"bad{i}.yaml").write_text(text if isinstance(text, str) else json.dumps(text))
    results = run_many(*[(("create", tmp_path / "nope", "--schema", tmp_path / f"bad{i}.yaml"), 1)
                         for i in range(len(cases))], (("create", tmp_path / "t", "--schema", good, "--name", "kv"), 0))
    for (_, cls, words), r in zip(cases, results):
        assert words in one_line_error(r, cls)
    assert not (tmp_path / "nope" / "_log").exists()
    assert tf.open_table(str(tmp_path / "t")).name == "kv"
    one_line_error(run("create", tmp_path / "t", "--schema", good, code=1), "TableExistsError")


# --- describe and history ---------------------------------------------------------------------

def test_describe_shows_schema_partitioning_rowsets_and_deltas(table):
    """Every number in describe --json comes from the log state, so it must match it exactly."""
    t = tf.open_table(table)
    st = t.state
    text = run("describe", table).stdout
    for words in ["table 'metrics'", "unixtime_micros", "bitshuffle", "decimal(18,2)", "primary key: (host, metric, time)",
                  "hash (host, metric) into 4 buckets", "range (time): 2 partition(s)", "tablets: 8",
                  "REDO", "updates per column: value=10", "300 rows (5 deleted, 295 live)"]:
        assert words in text, words
    info = json.loads(run("describe", table, "--json").stdout)
    assert info["version"] == 3 and info["name"] == "metrics"
    assert [(c["id"], c["name"], c["type"], c["nullable"], c["key"]) for c in info["schema"]["columns"]] == \
        [(c.id, c.name, c.type.name, c.nullable, c.name in st.schema.primary_key) for c in st.schema.columns]
    tot = info["totals"]
    assert tot["rowsets"] == len(st.rowsets) == sum(len(x["rowsets"]) for x in info["tablets"])
    assert tot["rows"] == 300 and tot["live_rows"] == t.scan().count() == 295
    assert tot["redo"]["files"] == sum(len(st.deltas_of(r)) for r in st.rowsets) and tot["undo"]["files"] == 0
    assert tot["redo"]["records"] == 15 and tot["redo"]["deletes"] == 5 and tot["redo"]["updates"] == {"value": 10}
    assert tot["bytes"] == sum(r.size_bytes for r in st.rowsets.values()) + \
        sum(d.size for r in st.rowsets for d in st.deltas_of(r))
    keys = {(r["host"], r["metric"], r["time"]) for r in metrics_rows(300).to_pylist()}
    for tablet in info["tablets"]:
        for r in tablet["rowsets"]:     # key bounds decode to real keys of the rowset's own rows
            lo, hi = (tuple(r[k][:2]) + (iso(r[k][2]),) for k in ("min_key", "max_key"))
            assert lo in {(h, m, x.isoformat()) for h, m, x in keys} and lo <= hi
            assert r["rows"] == st.rowsets[r["id"]].num_rows
    old = json.loads(run("describe", table, "--as-of", "1", "--json").stdout)
    assert old["version"] == 1 and old["totals"]["redo"]["files"] == 0
    assert info["history"] == {"horizon_version": 0, "gc_before": None}


def test_describe_after_compaction_and_vacuum_shows_undo_history(tmp_path):
    table = str(tmp_path / "m")
    t = tf.create_table(table, metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(300)
    for i in range(3):
        t.insert(data.take(pa.array(list(range(i, 300, 3)))))
    t.update(data.select(KEY).slice(0, 10).append_column("value", pa.array([9.0] * 10)))
    run("compact", table, "--run", "--progress", "never")
    run("vacuum", table, "--retain-seconds", "0", "--grace-seconds", "0")
    t = tf.open_table(table)
    info = json.loads(run("describe", table, "--json").stdout)
    undo = [d for ds in t.state.deltas.values() for d in ds if d.kind == "undo"]
    assert info["totals"]["undo"]["files"] == len(undo) > 0
    assert info["totals"]["undo"]["records"] == sum(d.num_records for d in undo)
    assert info["history"]["horizon_version"] == t.state.history_horizon > 0
    text = run("describe", table).stdout
    assert "UNDO (history)" in text and f"versions before {t.state.history_horizon} read through UNDO" in text


def test_history_lists_newest_first(table):
    hist = tf.open_table(table).history()
    lines = run("history", table).stdout.splitlines()
    assert lines[0].split() == ["VERSION", "TIMESTAMP", "OPERATION", "COUNTS"]
    assert [ln.split()[0] for ln in lines[2:]] == ["3", "2", "1", "0"]
    assert "deleted=5" in lines[2] and "UPDATE" in lines[3] and "inserted=300" in lines[4]
    got = json.loads(run("history", table, "--limit", "2", "--json").stdout)
    assert [(h["version"], h["timestamp"], h["operation"], h["counts"]) for h in got] == \
        [(h.version, h.timestamp, h.operation, dict(h.counts)) for h in reversed(hist)][:2]


# --- scan ------------------------------------------------------------------------------------------

def test_scan_formats_carry_the_same_rows_as_the_api(table, tmp_path):
    """Each format, read back by a standard reader, gives exactly the API's rows."""
    expect = tf.open_table(table).to_arrow()
    out = tmp_path / "rows.parquet"
    parquet, csv, jsonl, text = run_many((("scan", table, "--format", "parquet", "--output", out), 0),
                                         (("scan", table, "--format", "csv"), 0),
                                         (("scan", table, "--format", "json"), 0), (("scan", table), 0))
    assert "wrote 295 row(s)" in parquet.stdout
    got = pq.read_table(out)
    assert got.schema == expect.schema
    assert_same_rows(got, expect)

    types = {f.name: f.type for f in expect.schema}
    got = pcsv.read_csv(pa.py_buffer(csv.stdout.encode()), convert_options=pcsv.ConvertOptions(
        column_types=types, strings_can_be_null=True, null_values=[""]))
    assert_same_rows(got, expect)

    rows = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert len(rows) == 295 and list(rows[0]) == expect.column_names
    by_key = {(r["host"], r["metric"], micros(r["time"])): r for r in rows}
    for e in expect.to_pylist():
        r = by_key[(e["host"], e["metric"], micros(e["time"].isoformat()))]
        assert r["value"] == ("nan" if e["value"] != e["value"] else e["value"])
        assert r["price"] == (None if e["price"] is None else str(e["price"]))
        assert r["tag"] == e["tag"]

    lines = text.stdout.splitlines()
    assert lines[0].split() == expect.column_names and len(lines) == 2 + 100 + 1
    assert lines[-1].startswith("(100 rows; more not shown")


def test_json_output_encodes_every_type(tmp_path):
    """The JSON writer is built from Arrow compute, not json.dumps: check the awkward cells."""
    s = tf.Schema([tf.Column("k", "int32"), tf.Column("b", "bool", nullable=True),
                   tf.Column("i8", "int8", nullable=True), tf.Column("d", "date", nullable=True),
                   tf.Column("bin", "binary", nullable=True), tf.Column("s", "string", nullable=True),
                   tf.Column("f", "float", nullable=True), tf.Column("dec", "decimal(18,4)", nullable=True),
                   tf.Column("ts", "unixtime_micros", nullable=True)], "k")
    t = tf.create_table(str(tmp_path / "types"), s)
    t.insert(pa.table({"k": [1, 2, 3], "b": [True, None, False], "i8": [-128, None, 127],
                       "d": [dt.date(2020, 1, 2), None, dt.date(1969, 12, 31)], "bin": [b"\x00\xff", None, b""],
                       "s": ['a"b\\c\n\t\x01é', None, ""], "f": [float("inf"), None, 1.5],
                       "dec": [decimal.Decimal("-1.5"), None, decimal.Decimal("12345678901234.0123")],
                       "ts": pa.array([1_500_000, None, -315_619_200_000_000], pa.timestamp("us", tz="UTC"))}))
    rows = [json.loads(x) for x in run("scan", t.uri, "--ordered", "--format", "json").stdout.splitlines()]
    assert rows == [
        {"k": 1, "b": True, "i8": -128, "d": "2020-01-02", "bin": "00ff", "s": 'a"b\\c\n\t\x01é', "f": "inf",
         "dec": "-1.5000", "ts": "1970-01-01T00:00:01.500000Z"},
        {"k": 2, "b": None, "i8": None, "d": None, "bin": None, "s": None, "f": None, "dec": None, "ts": None},
        {"k": 3, "b": False, "i8": 127, "d": "1969-12-31", "bin": "", "s": "", "f": 1.5,
         "dec": "12345678901234.0123", "ts": "1960-01-01T00:00:00Z"}]


def test_scan_as_of_columns_order_and_limit(table):
    """The three spellings of --as-of name the same snapshot."""
    t = tf.open_table(table)
    created = t.history()[1].timestamp
    version, ts, when, ordered = run_many(
        (("scan", table, "--as-of", "1", "--limit", "5"), 0), (("scan", table, "--as-of", f"ts:{created}", "--count"), 0),
        (("scan", table, "--as-of", iso(created), "--count"), 0),
        (("scan", table, "--ordered", "--limit", "4", "--columns", "host,value", "--format", "json"), 0))
    lines = version.stdout.splitlines()
    assert len(lines) == 2 + 5 + 1 and lines[-1] == "(5 rows)"
    assert ts.stdout.strip() == "300" and when.stdout.strip() == "300"
    rows = [json.loads(x) for x in ordered.stdout.splitlines()]
    expect = t.scan(columns=["host", "value"], ordered=True).to_arrow().slice(0, 4).to_pylist()
    assert rows == [{**e, "value": "nan" if e["value"] != e["value"] else e["value"]} for e in expect]


@pytest.mark.parametrize("where,api", [
    (["host = 'h001'", "value >= 0.5 and price is not null"],
     [("host", "=", "h001"), ("value", ">=", 0.5), ("price", "is not null")]),
    (["tag is null and metric != cpu"], [("tag", "is null"), ("metric", "!=", "cpu")]),
    (["metric in ('cpu', \"mem\")", "`value` <> 9"], [("metric", "in", ["cpu", "mem"]), ("value", "!=", 9.0)]),
    (["time >= 2023-11-15T00:00:00Z", "price < 1000.5"],
     [("time", ">=", dt.datetime(2023, 11, 15, tzinfo=dt.timezone.utc)), ("price", "<", decimal.Decimal("1000.5"))]),
])
def test_where_clauses_select_what_the_api_filters_select(table, where, api):
    """Text is parsed into the API's filter tuples, with values typed by the column."""
    args = [a for w in where for a in ("--where", w)]
    got = run("scan", table, *args, "--columns", "host,metric,time", "--format", "parquet", "--output",
              Path(table).parent / "w.parquet")
    assert got.returncode == 0
    expect = tf.open_table(table).scan(columns=KEY, filter=api).to_arrow()
    assert expect.num_rows > 0
    assert_same_rows(pq.read_table(Path(table).parent / "w.parquet"), expect)


def test_bad_where_clauses_fail_in_one_line(table):
    cases = [("host = ", "InvalidFilterError", "expected a value"),
             ("nohost = 1", "UnknownScanColumnError", "unknown column 'nohost'"),
             ("value >= abc", "InvalidFilterError", "not a valid double"),
             ("host = 'h1' or host = 'h2'", "InvalidFilterError", "OR is not supported"),
             ("host = 'unterminated", "InvalidFilterError", "quote"),
             ("host in 'h1'", "InvalidFilterError", "parenthesised list"),
             ("value >> 3", "InvalidFilterError", "unknown operator '>>'"),
             ("value =< 3", "InvalidFilterError", "unknown operator '=<'")]
    for (where, cls, words), r in zip(cases, run_many(*[(("scan", table, "--where", w), 1) for w, _, _ in cases])):
        assert words in one_line_error(r, cls), where


# --- changes ---------------------------------------------------------------------------------------

def test_changes_all_and_net_in_every_format(table, tmp_path):
    t = tf.open_table(table)
    out = tmp_path / "ch.parquet"
    jsonl, net, csv, text = run_many(
        (("changes", table, "--start", "1", "--format", "json"), 0),
        (("changes", table, "--start", "1", "--end", "2", "--mode", "net", "--before-image", "--format", "parquet",
          "--output", out), 0),
        (("changes", table, "--start", "2", "--format", "csv"), 0), (("changes", table, "--start", "1", "--limit", "3"), 0))
    rows = [json.loads(x) for x in jsonl.stdout.splitlines()]
    assert [r["_op"] for r in rows] == t.changes(1).column("_op").to_pylist()
    assert sum(r["_op"] == "update" and r["_changed_columns"] == ["value"] and r["value"] == 9.0 for r in rows) == 10
    assert sum(r["_op"] == "delete" for r in rows) == 5
    got, expect = pq.read_table(out), t.changes(1, 2, mode="net", before_image=True)   # same rows; in a
    assert same(sort_rows(got).to_pylist(), sort_rows(expect).to_pylist())              # commit, any order
    csv = csv.stdout.splitlines()
    assert csv[0].startswith('"_op","_version","_timestamp","host"') and len(csv) == 1 + 5
    assert "wrote 10 row(s)" in net.stdout and len(text.stdout.splitlines()) == 2 + 3 + 1


# --- compact, vacuum, check ------------------------------------------------------------------------------

def test_compact_plan_prints_and_run_commits_each_action(tmp_path):
    """--plan changes nothing; --run commits one version per action and keeps the rows."""
    t = tf.create_table(str(tmp_path / "kv"), tf.Schema([tf.Column("key", "string"),
                                                        tf.Column("val", "int64", nullable=True)], "key"))
    for i in range(6):     # overlapping small rowsets: the policy merges them
        t.insert(pa.table({"key": [f"k{j:03d}" for j in range(i, 300, 6)], "val": [i] * 50}))
    before, v = t.scan(ordered=True).to_arrow(), t.version
    plan = run("compact", t.uri, "--plan").stdout
    assert plan.startswith(f"Compaction plan at version {v}") and "why:" in plan and "merge" in plan
    assert tf.open_table(t.uri).version == v
    n = len(tf.open_table(t.uri).compaction_plan(64 << 20).actions)
    r = run("compact", t.uri, "--run", "--progress", "always", "--budget-mb", "64")
    assert "compacting" in r.stderr and "100%" in r.stderr
    assert f"compacted: {n} of {n} action(s) committed, versions {v + 1}..{v + n}" in r.stdout
    after = tf.open_table(t.uri)
    assert n and all(h.operation.startswith("COMPACT") for h in after.history()[v + 1:])
    assert after.scan(ordered=True).to_arrow().equals(before) and len(after.state.rowsets) < 6


def test_vacuum_lists_then_deletes_unreferenced_files(fresh):
    """Only files no commit references go, and only once older than the grace period."""
    root = Path(fresh.uri)
    expect = fresh.to_arrow()
    orphans = ["tablets/r0-h0/orphan-a.parquet", "tablets/r1-h2/orphan-b.parquet"]   # no commit names them
    for f in orphans:
        (root / f).write_bytes(b"x" * 100)
    dry = run("vacuum", fresh.uri, "--grace-seconds", "0", "--dry-run").stdout.splitlines()
    assert [x.strip() for x in dry[:-1]] == orphans and dry[-1].startswith("vacuum would delete 2 file(s)")
    assert all((root / f).exists() for f in orphans)
    assert run("vacuum", fresh.uri).stdout.startswith("vacuum deleted 0 file(s)")     # too young: in flight?
    res = run("vacuum", fresh.uri, "--grace-seconds", "0").stdout.splitlines()
    assert [x.strip() for x in res[:-1]] == orphans and res[-1].startswith("vacuum deleted 2 file(s)")
    assert not any((root / f).exists() for f in orphans)
    assert_same_rows(tf.open_table(fresh.uri).to_arrow(), expect)


def test_check_exits_3_and_lists_violations(fresh):
    """A distinct exit status lets a scheduler tell a damaged table from a failed run."""
    assert "0 violation(s)" in run("check", fresh.uri).stdout
    rs = next(iter(fresh.state.rowsets.values()))
    os.remove(Path(fresh.uri) / rs.bloom.path)
    out = run("check", fresh.uri, "--shallow", code=3).stdout
    assert "1 violation(s)" in out and f"file {rs.bloom.path} is missing" in out


# --- alter -----------------------------------------------------------------------------------------------

def test_alter_applies_every_step_in_one_commit(fresh):
    t = fresh
    v = t.version
    lo, split, hi = T0, T0 + 10**11, T0 + 10**12
    out = run("alter", t.uri, "--add-column", "note:string:nullable", "--add-column", "level:int32:plain=7",
              "--drop-column", "price", "--rename-column", "tag:label", "--set-default", "label='n/a'",
              "--set-compression", "value=zstd", "--rename-table", "metrics2",
              "--set-property", "history_max_age=86400",
              "--add-range-partition", f"{iso(hi)},{iso(hi + 10**9)}",
              "--drop-range-partition", f"{lo},{split}").stdout
    assert out.startswith(f"altered table 'metrics2': version {v + 1}") and "drop range partition" in out
    t = tf.open_table(t.uri)
    assert t.version == v + 1 and t.history()[-1].operation == "ALTER TABLE"
    assert t.schema.names == ["host", "metric", "time", "value", "label", "note", "level"]
    assert t.schema.column("label").default == "n/a" and t.schema.column("value").compression == "zstd"
    assert t.schema.column("level").encoding == "plain" and not t.schema.column("level").nullable
    assert t.name == "metrics2" and t.properties["history_max_age"] == 86400
    assert [(r.lower_values, r.upper_values) for r in t.state.partitioning.ranges] == \
        [((dt.datetime.fromisoformat(iso(split)),), (dt.datetime.fromisoformat(iso(hi)),)),
         ((dt.datetime.fromisoformat(iso(hi)),), (dt.datetime.fromisoformat(iso(hi + 10**9)),))]
    rows = t.to_arrow()
    kept = pc.sum(pc.greater_equal(fresh_rows()["time"].cast(pa.int64()), split)).as_py()
    assert 0 < kept < 300 and rows.num_rows == kept
    assert set(rows["level"].to_pylist()) == {7} and set(rows["note"].to_pylist()) == {None}


def test_a_failing_alter_step_commits_nothing(fresh):
    """One bad step (here a duplicate column) aborts the whole alter."""
    v = fresh.version
    dup, no_default, overlap, nothing = run_many(
        (("alter", fresh.uri, "--add-column", "newc:int32:nullable", "--add-column", "host:string:nullable"), 1),
        (("alter", fresh.uri, "--add-column", "x:int32"), 1),
        (("alter", fresh.uri, "--add-range-partition", f"{T0},{T0 + 5}"), 1), (("alter", fresh.uri), 1))
    assert "'host' already exists" in one_line_error(dup, "SchemaError")
    assert "needs a default" in one_line_error(no_default, "SchemaError")
    assert "overlaps" in one_line_error(overlap, "PartitionSchemaError")
    one_line_error(nothing, "InvalidOptionError")
    t = tf.open_table(fresh.uri)
    assert t.version == v and not t.schema.has_column("newc")


# --- errors ---------------------------------------------------------------------------------------------------

def test_errors_are_one_line_and_debug_adds_the_traceback(table, tmp_path):
    uri, missing, version, when, debug, usage = run_many(
        (("describe", "nosuch://bucket/t"), 1), (("describe", tmp_path), 1), (("scan", table, "--as-of", "99"), 1),
        (("scan", table, "--as-of", "yesterday"), 1),
        (("history", tmp_path, "--debug"), 1),              # global options go after the command too
        (("scan",), 2))
    one_line_error(uri, "InvalidURIError")
    one_line_error(missing, "TableNotFoundError")
    one_line_error(version, "VersionNotFoundError")
    assert "nor a tag" in one_line_error(when, "TagNotFoundError")     # 'yesterday' could be a tag (§9.5)
    assert debug.stderr.startswith("Traceback") and debug.stderr.strip().splitlines()[-1].startswith(
        "error: TableNotFoundError: ")
    lines = usage.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "tableformat scan --help" in lines[0]


# --- object storage ---------------------------------------------------------------------------------------------

def test_every_kind_of_command_on_s3_without_printing_credentials(s3_table_root, tmp_path):
    """The secret goes in through a file or the AWS environment, and never comes out, even with --debug."""
    root, opts = s3_table_root
    uri = f"{root}/metrics"
    secret_file = tmp_path / "s3.json"
    secret_file.write_text(json.dumps({"key": opts["key"], "secret": opts["secret"]}))
    s3 = ["--storage-options-json", secret_file, "--storage-option", f"endpoint_url={opts['endpoint_url']}"]
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(schema_json(T0, T0 + 10**12, T0 + 10**11)))
    outputs = [run(*s3, "create", uri, "--schema", schema)]
    t = tf.open_table(uri, storage_options=opts)
    data = metrics_rows(120)
    t.insert(data)
    t.update(data.select(KEY).slice(0, 4).append_column("value", pa.array([2.5] * 4)))
    aws_env = {"AWS_ENDPOINT_URL": opts["endpoint_url"], "AWS_ACCESS_KEY_ID": opts["key"],
               "AWS_SECRET_ACCESS_KEY": opts["secret"]}
    scan, describe, vacuum, check, count, missing = run_many(
        (("scan", uri, *s3, "--format", "csv"), 0),            # global options after the command too
        ((*s3, "describe", uri, "--json"), 0), ((*s3, "vacuum", uri, "--dry-run"), 0), ((*s3, "check", uri), 0),
        (("scan", uri, "--count"), 0, aws_env),                # the usual AWS environment works
        (("--debug", *s3, "describe", f"{root}/missing"), 1))
    got = pcsv.read_csv(pa.py_buffer(scan.stdout.encode()), convert_options=pcsv.ConvertOptions(
        column_types={f.name: f.type for f in t.to_arrow().schema}, strings_can_be_null=True, null_values=[""]))
    assert_same_rows(got, t.to_arrow())
    assert json.loads(describe.stdout)["totals"]["redo"]["updates"] == {"value": 4}
    assert "vacuum would delete 0 file(s)" in vacuum.stdout and "0 violation(s)" in check.stdout
    assert count.stdout.strip() == "120" and "TableNotFoundError" in missing.stderr
    outputs += [scan, describe, vacuum, check, count, missing, run(*s3, "alter", uri, "--add-column", "note:string:nullable")]
    assert tf.open_table(uri, storage_options=opts).schema.has_column("note")
    for r in outputs:
        assert opts["secret"] not in r.stdout + r.stderr


def test_describe_shows_the_created_and_the_log_format_versions_and_no_history_of_a_new_table(tmp_path):
    """A new table: the format it was created in and what its log needs (specs/format.md, "Format
    versions of commits and checkpoints"), and no history line, since vacuum and compaction never ran.
    A `txn` raises what the log needs to 6; the created format stays."""
    from tableformat.format.metadata import FORMAT_VERSION, WRITE_FORMAT_FLOOR
    t = tf.create_table(str(tmp_path / "t"), tf.Schema([tf.Column("k", "int64"), tf.Column("v", "string")],
                                                       primary_key=["k"]))
    t.insert(pa.table({"k": pa.array([1], pa.int64()), "v": ["a"]}))
    info = json.loads(run("describe", t.uri, "--json").stdout)
    assert (info["created_format_version"], info["min_reader_format_version"]) == (WRITE_FORMAT_FLOOR,) * 2
    text = run("describe", t.uri).stdout
    assert (f"format: created in format version {WRITE_FORMAT_FLOOR}; its log needs a reader of format version "
            f"{WRITE_FORMAT_FLOOR} or later") in text
    assert "history:" not in text and "UNDO records" not in text
    frag = t.snapshot().write_mutation(pa.table({"k": pa.array([2], pa.int64()), "v": ["b"]}), "upsert")
    t.commit_fragments([frag], txn=("app", 0))
    info = json.loads(run("describe", t.uri, "--json").stdout)
    assert (info["created_format_version"], info["min_reader_format_version"]) == (WRITE_FORMAT_FLOOR, FORMAT_VERSION)
    assert f"its log needs a reader of format version {FORMAT_VERSION} or later" in run("describe", t.uri).stdout


def test_describe_at_a_version_behind_the_vacuum_horizon_shows_that_versions_log_format(tmp_path):
    """A version read from the horizon's files (specs/format.md §8.3) keeps its own log format:
    versions before a txn commit need the created format, not the horizon's."""
    from tableformat.cli.describe import describe
    from tableformat.format.metadata import FORMAT_VERSION, WRITE_FORMAT_FLOOR
    t = txn_behind_the_horizon(tmp_path / "t")
    got = [describe(t, t.snapshot(as_of=v))["min_reader_format_version"] for v in range(4)]
    assert got == [WRITE_FORMAT_FLOOR, WRITE_FORMAT_FLOOR, FORMAT_VERSION, FORMAT_VERSION]
