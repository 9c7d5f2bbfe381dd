"""CLI data commands (insert/upsert/update/delete --input) and `inspect`, run as real processes."""
import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

import tableformat as tf

CLI = [sys.executable, "-m", "tableformat.cli"]


def run(*args, code=0, stdin=None):
    r = subprocess.run([*CLI, *map(str, args)], check=False, capture_output=True, text=True, timeout=120,
                       input=stdin)
    assert r.returncode == code, f"exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    return r


def one_line_error(r, cls):
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"error: {cls}: "), lines[0]
    return lines[0]


SCHEMA = tf.Schema([tf.Column("id", "int64"), tf.Column("name", "string", nullable=True),
                    tf.Column("value", "double", nullable=True),
                    tf.Column("ts", "unixtime_micros", nullable=True)], primary_key=["id"])


def rows(n, start=0):
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids],
                     "value": pa.array([i * 0.5 for i in ids], pa.float64()),
                     "ts": pa.array([1_700_000_000_000_000 + i for i in ids], pa.timestamp("us", tz="UTC"))})


@pytest.fixture
def t(tmp_path):
    return tf.create_table(str(tmp_path / "t"), SCHEMA, tf.PartitionSchema(hash=[tf.HashPartition(["id"], 2)]))


def content(t):
    return t.scan().to_arrow().sort_by("id")


def write(tmp_path, data, fmt):
    p = tmp_path / f"in.{fmt}"
    if fmt == "parquet":
        pq.write_table(data, p)
    elif fmt == "csv":
        pcsv.write_csv(data, p)
    else:
        p.write_text("".join(json.dumps({k: (v.isoformat() if hasattr(v, "isoformat") else v)
                                         for k, v in r.items()}) + "\n" for r in data.to_pylist()))
    return p


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_insert_each_format(t, tmp_path, fmt):
    data = rows(500)
    r = run("insert", t.uri, "--input", write(tmp_path, data, fmt))
    assert r.stdout.strip() == "insert: version 1, 500 row(s) read, 500 inserted, 0 updated, 0 deleted, 0 ignored"
    assert content(t).equals(data.cast(content(t).schema))


def test_upsert_from_stdin_and_partial_columns(t, tmp_path):
    t.insert(rows(10))
    csv = "id,value\n3,99.5\n42,1.0\n"
    r = run("upsert", t.uri, "--input", "-", "--format", "csv", stdin=csv)
    assert "1 inserted, 1 updated" in r.stdout
    got = {x["id"]: x for x in content(t).to_pylist()}
    assert got[3]["value"] == 99.5 and got[3]["name"] == "n3" and got[42]["name"] is None


def test_update_and_delete_strict_ignore_and_collect(t, tmp_path):
    t.insert(rows(10))
    v = t.version
    upd = write(tmp_path, pa.table({"id": pa.array([1, 50], pa.int64()), "value": [7.0, 7.0]}), "csv")
    line = one_line_error(run("update", t.uri, "--input", upd, code=1), "KeyNotFoundError")
    assert "50" in line and t.refresh().version == v
    assert "1 updated, 0 deleted, 1 ignored" in run("update", t.uri, "--input", upd, "--on-error", "ignore").stdout
    rej = tmp_path / "rejects.parquet"
    dele = write(tmp_path, pa.table({"id": pa.array([2, 60, 61], pa.int64())}), "parquet")
    r = run("delete", t.uri, "--input", dele, "--on-error", f"collect={rej}")
    assert r.stdout.strip().endswith(f"1 deleted, 2 ignored, 2 rejected to {rej}")
    assert sorted(pq.read_table(rej).column("id").to_pylist()) == [60, 61]
    assert sorted(content(t).column("id").to_pylist()) == [0, 1, 3, 4, 5, 6, 7, 8, 9]
    ins = write(tmp_path, pa.table({"id": pa.array([1, 70], pa.int64())}), "jsonl")
    v = t.refresh().version
    one_line_error(run("insert", t.uri, "--input", ins, code=1), "DuplicateKeyError")
    assert t.refresh().version == v
    r = run("insert", t.uri, "--input", ins, "--on-error", "ignore")
    assert "1 inserted, 0 updated, 0 deleted, 1 ignored" in r.stdout


@pytest.mark.parametrize("text,fmt,cls", [
    ("id,name,bogus\n1,a,2\n", "csv", "SchemaMismatchError"),
    ("id,value\n1,not-a-number\n", "csv", "SchemaMismatchError"),
    ('{"id": 1, "value": "x"}\n', "jsonl", "SchemaMismatchError"),
    ('{"id": 1}\n{"id": 2, "bogus": 3}\n', "jsonl", "SchemaMismatchError"),
    ("name\nonly\n", "csv", "MissingColumnError"),
])
def test_bad_files_one_line_and_table_unchanged(t, tmp_path, text, fmt, cls):
    t.insert(rows(5))
    before = content(t)
    p = tmp_path / f"bad.{fmt}"
    p.write_text(text)
    for cmd in ("insert", "upsert"):
        one_line_error(run(cmd, t.uri, "--input", p, code=1), cls)
    assert t.refresh().version == 1 and content(t).equals(before)


@pytest.mark.parametrize("text,words", [
    ('{"id": 1, "value": "x"}\n', "column 'value' of table 't' is double, read from JSON numbers, but a value is "
                                  "a JSON string"),
    ('{"id": 1, "name": "a"}\n' * 3 + '{"id": 2, "name": 5}\n', "column 'name' of table 't' is string"),
    ('{"id": "7"}\n', "column 'id' of table 't' is int64"),
])
def test_a_json_value_of_the_wrong_type_names_the_columns_type(t, tmp_path, text, words):
    p = tmp_path / "bad.jsonl"
    p.write_text(text)
    assert words in one_line_error(run("insert", t.uri, "--input", p, code=1), "SchemaMismatchError")
    assert t.refresh().version == 0


def test_bad_rows_late_in_a_long_file_change_nothing(t, tmp_path):
    lines = ["id,value"] + [f"{i},{i}.5" for i in range(200_000)] + ["x,1"]
    p = tmp_path / "long.csv"
    p.write_text("\n".join(lines) + "\n")
    one_line_error(run("insert", t.uri, "--input", p, code=1), "SchemaMismatchError")
    assert t.refresh().version == 0


def test_usage_errors(t, tmp_path):
    one_line_error(run("insert", t.uri, "--input", "-", code=1, stdin="id\n1\n"), "InvalidOptionError")
    one_line_error(run("insert", t.uri, "--input", tmp_path / "nope.csv", code=1), "InvalidOptionError")
    one_line_error(run("insert", t.uri, "--input", tmp_path / "x.txt", code=1), "InvalidOptionError")
    r = run("insert", t.uri, "--input", "x.csv", "--on-error", "skip", code=2)
    assert "fail, ignore or collect=PATH" in r.stderr


def test_progress_bar_on_stderr(t, tmp_path):
    p = write(tmp_path, rows(70_000), "parquet")
    r = run("insert", t.uri, "--input", p, "--progress", "always")
    assert "reading parquet" in r.stderr and "70.0k" in r.stderr
    assert "70000 inserted" in r.stdout


def test_sequence_column_from_the_shell(t, tmp_path):
    t.insert(rows(3))
    run("alter", t.uri, "--add-column", "lsn:int64=0", "--set-property", "sequence_column=lsn")
    assert t.refresh().properties["sequence_column"] == "lsn"
    p = write(tmp_path, pa.table({"id": pa.array([1, 1, 2], pa.int64()), "name": ["new", "old", "x"],
                                  "lsn": pa.array([5, 3, 0], pa.int64())}), "csv")
    r = run("upsert", t.uri, "--input", p)
    assert "2 updated, 0 deleted, 1 ignored" in r.stdout
    assert {x["id"]: x["name"] for x in content(t).to_pylist()}[1] == "new"
    out = run("changes", t.uri, "--start", 2, "--skipped", "--format", "csv").stdout
    got = list(pcsv.read_csv(pa.BufferReader(out.encode())).to_pylist())
    assert [(x["_op"], x["id"], x["_reason"]) for x in got if x["_op"] == "skipped"] == [("skipped", 1, "stale_sequence")]


def test_inspect_command(t, tmp_path):
    t.insert(rows(100))
    t.delete(rows(10).select(["id"]))
    r = run("inspect", t.uri, "rowsets", "--format", "json")
    got = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(got) == len(t.state.rowsets) and sum(x["deleted_rows"] for x in got) == 10
    r = run("inspect", t.uri, "history")
    assert r.stdout.splitlines()[0].split()[:3] == ["VERSION", "TIMESTAMP", "OPERATION"]
    assert len(r.stdout.splitlines()) >= 4
    r = run("inspect", t.uri, "snapshots", code=2)
    assert "invalid choice" in r.stderr


# --- what a data command writes when it fails ----------------------------------------------------

def test_collect_to_a_path_that_cannot_be_written_commits_nothing(t, tmp_path):
    """The rejected rows were written after the commit, so a failure there exited 1 with
    the good rows committed. They are written first now."""
    t.insert(rows(3))
    before = content(t)
    ins = write(tmp_path, rows(2, start=2), "jsonl")          # key 2 exists: rejected; key 3 is new
    (tmp_path / "afile").write_text("x")
    bad = tmp_path / "afile" / "rejects.parquet"               # its parent is a file
    line = one_line_error(run("insert", t.uri, "--input", ins, "--on-error", f"collect={bad}", code=1),
                          "InvalidOptionError")
    assert "cannot write the rejected rows" in line and "nothing was committed" in line
    assert t.refresh().version == 1 and content(t).equals(before)


def test_a_failed_commit_removes_the_rejects_file_it_wrote(t, tmp_path, monkeypatch, capsys):
    """The rejects are written before the commit; a commit that then fails leaves no
    rejects file behind (and, exit 1, no version)."""
    from tableformat.cli.run import main
    from tableformat.format.storage import Storage
    t.insert(rows(3))
    before = content(t)
    ins = write(tmp_path, rows(2, start=2), "jsonl")
    rej = tmp_path / "rejects.parquet"

    def fail_the_commit(self, step, rel):
        if step == "commit":
            raise OSError("the commit's PUT failed")
    monkeypatch.setattr(Storage, "fault", fail_the_commit)
    assert main(["insert", t.uri, "--input", str(ins), "--on-error", f"collect={rej}"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: OSError: the commit's PUT failed"), err
    monkeypatch.undo()
    assert not rej.exists()
    assert t.refresh().version == 1 and content(t).equals(before)
    # and with the commit working, the same run lands and the rejects are there
    assert main(["insert", t.uri, "--input", str(ins), "--on-error", f"collect={rej}"]) == 0
    assert pq.read_table(rej).column("id").to_pylist() == [2] and t.refresh().version == 2


@pytest.mark.parametrize("cmd", ["upsert", "update", "delete", "insert"])
def test_a_csv_with_a_repeated_header_is_one_typed_line(t, tmp_path, cmd):
    """The CLI upsert of a CSV whose header repeats a column hit a bare KeyError."""
    t.insert(rows(3))
    p = tmp_path / "dup.csv"
    for header in ("id,name,name\n1,a,b\n", "id,id\n1,1\n"):
        p.write_text(header)
        line = one_line_error(run(cmd, t.uri, "--input", p, code=1), "SchemaMismatchError")
        assert "duplicate column names" in line
    assert t.refresh().version == 1


def test_lookup_of_a_key_beyond_int64_names_the_column(t):
    """`lookup --key id=10**23` printed `error: OverflowError: ...` without the column."""
    t.insert(rows(3))
    line = one_line_error(run("lookup", t.uri, "--key", "id=100000000000000000000000", code=1),
                          "TypeMismatchError")
    assert "column 'id'" in line and "64-bit" in line


@pytest.mark.parametrize("first", ["5", '"text"', "[1, 2]", "null", "true"])
def test_a_json_line_that_is_not_an_object_is_one_typed_line(t, tmp_path, first):
    """A first line `5` printed `error: TypeError: 'int' object is not iterable`."""
    p = tmp_path / "f.jsonl"
    p.write_text(first + "\n" + '{"id": 1}\n')
    line = one_line_error(run("insert", t.uri, "--input", p, code=1), "SchemaMismatchError")
    assert "line 1 is not a JSON object" in line


def test_bad_first_block_of_a_long_csv_exits_1_every_time(t, tmp_path):
    """A conversion error in the first block while Arrow reads the next ones ahead: always exit 1 and one
    line. (Read-ahead from a Python file object made 1 in 2 runs abort with exit 134 at interpreter exit.)"""
    n = 3_000_000                                               # ~50 MB: six 8 MB blocks read ahead
    body = pa.table({"id": pa.array(range(1, n), pa.int64()), "value": pa.array(range(1, n), pa.float64())})
    p = tmp_path / "bad_first.csv"
    with open(p, "wb") as f:
        f.write(b"id,value\n0,not-a-number\n")
        pcsv.write_csv(body, f, pcsv.WriteOptions(include_header=False))
    codes = []
    for _ in range(30):
        r = subprocess.run([*CLI, "insert", t.uri, "--input", str(p)], capture_output=True, text=True, timeout=300)
        codes.append(r.returncode)
        if r.returncode == 1:
            one_line_error(r, "SchemaMismatchError")
    assert codes == [1] * 30, codes
    assert t.refresh().version == 0


@pytest.mark.parametrize("target", ["an earlier rejects file", "the input file"])
def test_a_file_already_at_the_collect_path_is_never_overwritten_then_removed(t, tmp_path, monkeypatch, capsys,
                                                                               target):
    """The rejects are written before the commit and removed when it fails: a file that was at
    the collect path before the run (an earlier run's rejects, or the input itself) was
    overwritten and then deleted by a run that committed nothing. The path must be new."""
    from tableformat.cli.run import main
    from tableformat.format.storage import Storage
    t.insert(rows(3))
    ins = write(tmp_path, rows(2, start=2), "parquet")      # key 2 exists: rejected; key 3 is new
    rej = ins if target == "the input file" else tmp_path / "rejects.parquet"
    if target != "the input file":
        pq.write_table(rows(1, start=40), rej)
    before = rej.read_bytes()

    def fail_the_commit(self, step, rel):
        if step == "commit":
            raise OSError("the commit's PUT failed")
    monkeypatch.setattr(Storage, "fault", fail_the_commit)
    assert main(["insert", t.uri, "--input", str(ins), "--on-error", f"collect={rej}"]) == 1
    monkeypatch.undo()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: InvalidOptionError: ") and "exists" in err[0], err
    assert t.refresh().version == 1
    assert rej.exists() and rej.read_bytes() == before
    line = one_line_error(run("insert", t.uri, "--input", ins, "--on-error", f"collect={rej}", code=1),
                          "InvalidOptionError")                # refused up front, with the commit working too
    assert "exists" in line and t.refresh().version == 1 and rej.read_bytes() == before


def test_time_values_parse_alike_on_every_input_path(t, tmp_path):
    """Integer microseconds and ISO-8601 (UTC unless an offset; a date alone is midnight) read the same
    from --key, CSV, JSON Lines and Parquet: one parser, one error wording."""
    micros, iso = 1_700_000_000_000_123, "2023-11-14T22:13:20.000123Z"
    (tmp_path / "a.csv").write_text(f"id,ts\n1,{micros}\n2,{iso}\n3,2024-01-01\n4,2024-01-01T02:00:00+02:00\n5,\n")
    (tmp_path / "b.jsonl").write_text(f'{{"id": 11, "ts": {micros}}}\n{{"id": 12, "ts": {micros + 1}}}\n')
    (tmp_path / "c.jsonl").write_text(f'{{"id": 21, "ts": "{iso}"}}\n{{"id": 22, "ts": "2024-01-01"}}\n')
    pq.write_table(pa.table({"id": pa.array([31], pa.int64()), "ts": pa.array([micros], pa.int64())}),
                   tmp_path / "d.parquet")
    for f in ("a.csv", "b.jsonl", "c.jsonl", "d.parquet"):
        run("insert", t.uri, "--input", tmp_path / f)
    got = {r["id"]: r["ts"] for r in content(t).to_pylist()}
    micros_of = {k: None if v is None else int(v.timestamp() * 1e6 + 0.5) for k, v in got.items()}
    midnight = 1_704_067_200_000_000
    assert micros_of == {1: micros, 2: micros, 3: midnight, 4: midnight, 5: None, 11: micros, 12: micros + 1,
                         21: micros, 22: midnight, 31: micros}
    for v in (str(micros), iso):                        # the same value typed in a filter (as in --key)
        out = run("scan", t.uri, "--where", f"ts = '{v}'", "--columns", "id", "--format", "csv").stdout
        assert sorted(out.split()[1:]) == ["1", "11", "2", "21", "31"]
    bad_where = one_line_error(run("scan", t.uri, "--where", "ts = 'yesterday'", code=1), "InvalidFilterError")
    (tmp_path / "bad.csv").write_text("id,ts\n40,yesterday\n")
    (tmp_path / "bad.jsonl").write_text('{"id": 41, "ts": "yesterday"}\n')
    lines = [one_line_error(run("insert", t.uri, "--input", tmp_path / f, code=1), "SchemaMismatchError")
             for f in ("bad.csv", "bad.jsonl")]
    for line in lines + [bad_where]:
        assert "'yesterday' is not a time: expected integer microseconds or an ISO-8601" in line, line


def test_insert_says_how_many_varchar_cells_it_truncated(tmp_path):
    s = tf.Schema([tf.Column("id", "int64"), tf.Column("tag", "varchar(4)", nullable=True)], primary_key=["id"])
    t = tf.create_table(str(tmp_path / "v"), s)
    p = tmp_path / "in.csv"
    p.write_text("id,tag\n1,abcdef\n2,ab\n3,héllo\n4,\n")
    out = run("insert", t.uri, "--input", p).stdout
    assert out.strip().endswith(", 2 varchar cell(s) truncated to their column's length"), out
    assert t.scan().to_arrow().sort_by("id")["tag"].to_pylist() == ["abcd", "ab", "héll", None]
    p.write_text("id,tag\n5,ok\n")
    assert "truncated" not in run("insert", t.uri, "--input", p).stdout


def test_inspect_history_limit_agrees_with_history_and_rowsets_fit_a_terminal(t, tmp_path):
    for i in range(4):
        t.insert(rows(3, start=10 * i))
    newest = [json.loads(x)["version"] for x in run("inspect", t.uri, "history", "--limit", 2, "--format", "json")
              .stdout.splitlines()]
    hist = json.loads(run("history", t.uri, "--limit", 2, "--json").stdout)
    assert newest == [4, 3] == [h["version"] for h in hist]
    r = subprocess.run([*CLI, "inspect", t.uri, "rowsets"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "COLUMNS": "100"})
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and all(len(x) <= 100 for x in lines[:-1]), lines
    assert lines[0].startswith("ROWSET") and "more column(s) not shown" in lines[-1] and "bytes" in lines[-1]
    assert len(lines) == 2 + tf.open_table(t.uri).inspect("rowsets").num_rows + 1


def test_alter_help_names_the_property_values_it_takes():
    out = run("alter", "--help").stdout
    assert "KEY=VALUE" in out and "KEY=INT" not in out and "sequence_column=lsn" in " ".join(out.split())


def test_a_failed_insert_exits_1_every_time(t, tmp_path):
    """A DuplicateKeyError from a JSON Lines insert printed its line and then sometimes aborted
    at interpreter exit (`terminate called without an active exception`, exit -6/134, seen in
    CI): the command now leaves without finalizing once its streams are flushed."""
    t.insert(pa.table({"id": pa.array([1], pa.int64())}))
    ins = write(tmp_path, pa.table({"id": pa.array([1, 70], pa.int64())}), "jsonl")
    for _ in range(15):
        one_line_error(run("insert", t.uri, "--input", ins, code=1), "DuplicateKeyError")
    assert t.refresh().version == 1


def test_output_and_rejects_files_inside_the_table_are_refused(t, tmp_path):
    """#34.1: `--on-error collect=` and `--output` wrote wherever they were told, the table's
    own directory included (a file named like the next log entry would take its place, and our
    vacuum deletes files no commit references). Refused before anything runs."""
    from helpers import table_files
    t.insert(rows(3))
    ins = write(tmp_path, rows(2, start=2), "jsonl")
    files = table_files(t.uri)
    log_entry = f"{t.uri}/_log/{t.version + 1:020d}.json"
    for args in (["insert", t.uri, "--input", ins, "--on-error", f"collect=file://{t.uri}/rejects.parquet"],
                 ["insert", t.uri, "--input", ins, "--on-error", f"collect={log_entry}"],
                 ["scan", t.uri, "--format", "json", "--output", log_entry],
                 ["changes", t.uri, "--start", "0", "--format", "csv", "--output", f"{t.uri}/../t/c.csv"],
                 ["inspect", t.uri, "history", "--format", "json", "--output", str(tmp_path)]):
        line = one_line_error(run(*args, code=1), "PathOverlapError")
        assert "outside the table's directory" in line
    assert table_files(t.uri) == files and t.refresh().version == 1
