"""Data from the shell: `insert`, `upsert`, `update`, `delete` from a file, and `inspect`.

    tableformat upsert /data/metrics --input changes.csv --on-error collect=rejects.parquet

The input (Parquet, CSV or JSON Lines, by extension or --format; `-` is stdin)
is read in batches, each parsed with the table's column types and checked
against the schema as it arrives, behind a progress bar. The write is one
commit, so a bad file anywhere leaves the table unchanged; the batches are
held (as Arrow) until it. One summary line gives the counts.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
from typing import Iterator

import pyarrow as pa

import tableformat as tf

from ..format.errors import InvalidOptionError, SchemaMismatchError
from ..log.transaction import committed
from .display import fitted_grid
from .options import options_for, safe_uri
from .output import emit
from .values import TIME_TYPE, parse_times

EXIT_OK = 0
FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
           ".json": "jsonl"}
OUT_FORMATS = {"parquet": "parquet", "csv": "csv", "jsonl": "json"}
BATCH_ROWS = 65536
OPS = {"insert": ("INSERT", "insert_ignore"), "upsert": ("UPSERT", None), "update": ("UPDATE", "update_ignore"),
       "delete": ("DELETE", "delete_ignore")}


def input_format(path: str, given: str | None) -> str:
    if given:
        return given
    for ext, fmt in FORMATS.items():
        if path.lower().endswith(ext):
            return fmt
    raise InvalidOptionError(f"cannot tell the format of {path!r} from its name; give --format parquet, csv or "
                             "jsonl" + (" (stdin has no name)" if path == "-" else ""))


def _open_input(path: str) -> pa.NativeFile:
    """The input as an Arrow-native stream.

    Never a Python file object: Arrow's CSV and JSON readers read ahead on
    their own I/O threads, and a read-ahead still calling into Python when a
    bad first block ends the command made the interpreter abort at exit
    (`terminate called without an active exception`, exit 134). A local file
    is streamed natively; stdin, pipes and remote inputs are fetched whole first.
    """
    if path == "-":
        return pa.BufferReader(sys.stdin.buffer.read())
    import fsspec
    from fsspec.implementations.local import LocalFileSystem
    try:
        fs, p = fsspec.core.url_to_fs(path)
        if isinstance(fs, LocalFileSystem) and os.path.isfile(p):
            return pa.OSFile(p)
        return pa.BufferReader(fs.cat_file(p))
    except FileNotFoundError:
        raise InvalidOptionError(f"--input {path!r}: no such file") from None


def _first_line(f: pa.NativeFile) -> bytes:
    """The first line of a seekable stream, which is left at its start."""
    line = b""
    while b"\n" not in line:
        chunk = f.read(1 << 16)
        if not chunk:
            break
        line += chunk
    f.seek(0)
    return line.split(b"\n", 1)[0]


def _check_columns(names: list[str], schema: tf.Schema, table: str) -> None:
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise SchemaMismatchError(f"input has duplicate column names {dups}: each column may be given once "
                                  f"(columns: {names})")
    unknown = [n for n in names if not schema.has_column(n)]
    if unknown:
        raise SchemaMismatchError(f"input column(s) {unknown} are not in table {table!r}; its columns are "
                                  f"{schema.names}")


def read_batches(path: str, fmt: str, schema: tf.Schema, table: str) -> tuple[Iterator[pa.RecordBatch], int | None]:
    """The input as record batches parsed with the table's types, and its row count when known."""
    f = _open_input(path)
    types = {c.name: c.arrow_type for c in schema.columns}
    times = [c.name for c in schema.columns if c.type.kind == "unixtime_micros"]
    batches, total = _read_batches(f, path, fmt, schema, table, types, times)
    return _parsed_times(batches, times, path), total


def _parsed_times(batches, times: list[str], path: str) -> Iterator[pa.RecordBatch]:
    """Time columns through the CLI's one time parser (values.parse_times, as `--key`), whatever the
    format: CSV reads them as text, JSON Lines as numbers or strings, Parquet as given."""
    for b in batches:
        for name in times:
            i = b.schema.get_field_index(name)
            if i >= 0 and b.schema.field(i).type != TIME_TYPE:
                try:
                    b = b.set_column(i, pa.field(name, TIME_TYPE), parse_times(b.column(i)))
                except ValueError as e:
                    raise SchemaMismatchError(f"{path}: column {name!r}: {e}") from None
        yield b


def _read_batches(f, path, fmt, schema, table, types, times):
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq
            pf = pq.ParquetFile(f)
            _check_columns(pf.schema_arrow.names, schema, table)
            return pf.iter_batches(batch_size=BATCH_ROWS), pf.metadata.num_rows
        if fmt == "csv":
            import pyarrow.csv as pcsv
            reader = pcsv.open_csv(f, read_options=pcsv.ReadOptions(block_size=8 << 20),
                                   convert_options=pcsv.ConvertOptions(column_types={**types, **{
                                                                           n: pa.string() for n in times}},
                                                                       strings_can_be_null=True))
            _check_columns(reader.schema.names, schema, table)
            return reader, None
        import pyarrow.json as pj
        first = _first_line(f)
        try:
            obj = json.loads(first) if first.strip() else {}
        except ValueError as e:
            raise SchemaMismatchError(f"{path}: line 1 is not a JSON object: {e}") from None
        if not isinstance(obj, dict):        # a row is an object; 5, "x" or [1] would be iterated as names
            raise SchemaMismatchError(f"{path}: line 1 is not a JSON object (one object per row), got "
                                      f"{type(obj).__name__} {first.strip()[:40].decode('utf-8', 'replace')}")
        names = list(obj)
        _check_columns(names, schema, table)
        # time columns are inferred (JSON numbers or strings) and parsed after, as from CSV
        explicit = pa.schema([pa.field(n, types[n]) for n in names if n not in times])
        timed = any(n in times for n in names)
        reader = pj.open_json(f, read_options=pj.ReadOptions(block_size=8 << 20),
                              parse_options=pj.ParseOptions(explicit_schema=explicit,
                                                            unexpected_field_behavior="infer" if timed else "error"))
        return (_known_columns(reader, schema, table) if timed else reader), None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise input_error(path, e, schema, table) from None


# pyarrow's JSON reader: "Column(/store) changed from number to string in row 0" (a JSON pointer,
# the type the column was read as, the type a value had, the row within the block being read)
_JSON_TYPE = re.compile(r"Column\((/[^)]*)\) changed from (\w+) to (\w+) in row (\d+)")


def input_error(path: str, e: Exception, schema: tf.Schema, table: str) -> SchemaMismatchError:
    """A reader's error as one typed line; a JSON value of the wrong type names the column's
    declared type (pyarrow's own message names neither it nor which type is wanted)."""
    msg = " ".join(str(e).split())
    m = _JSON_TYPE.search(msg)
    name = m.group(1)[1:].replace("~1", "/").replace("~0", "~") if m else None
    if name is not None and schema.has_column(name):
        return SchemaMismatchError(
            f"{path}: column {name!r} of table {table!r} is {schema.column(name).type}, read from JSON "
            f"{m.group(2)}s, but a value is a JSON {m.group(3)} (row {m.group(4)} of the block being read)")
    return SchemaMismatchError(f"{path}: {msg}")


def _known_columns(batches, schema: tf.Schema, table: str) -> Iterator[pa.RecordBatch]:
    for b in batches:
        _check_columns(b.schema.names, schema, table)
        yield b


def load(args, schema: tf.Schema, table: str) -> pa.Table:
    """Read the whole input, batch by batch, with a progress bar on stderr."""
    from tqdm import tqdm
    fmt = input_format(args.input, args.format)
    batches, total = read_batches(args.input, fmt, schema, table)
    disable = {"auto": None, "always": False, "never": True}[args.progress]
    got = []
    with tqdm(total=total, desc=f"reading {fmt}", unit="row", unit_scale=True, file=sys.stderr,
              disable=disable) as bar:
        try:
            for b in batches:
                got.append(b)
                bar.update(b.num_rows)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise input_error(args.input, e, schema, table) from None
    if not got:
        return pa.table({n: pa.array([], schema.column(n).arrow_type) for n in schema.names})
    return pa.Table.from_batches(got)


def _on_error(text: str) -> tuple[str, str | None]:
    if text in ("fail", "ignore"):
        return text, None
    if text.startswith("collect="):
        path = text[len("collect="):]
        if path:
            return "collect", path
    raise argparse.ArgumentTypeError(f"{text!r}: use fail, ignore or collect=PATH")


def cmd_write(args, opts) -> int:
    t = tf.open_table(args.uri, storage_options=options_for(args.uri, opts))
    mode, collect_to = args.on_error
    operation, ignoring = OPS[args.command]
    data = load(args, t.schema, t.name)
    if args.command == "delete":
        data = data.select([k for k in t.schema.primary_key if k in data.column_names])   # a delete needs the key
    columns = [c.strip() for c in args.columns.split(",")] if getattr(args, "columns", None) else None
    rejected = 0
    if mode == "collect":
        _refuse_existing(collect_to)
        res, rejected = _write_collecting(t, args.command, data, columns, collect_to)
    else:
        name = ignoring if mode == "ignore" and ignoring else args.command
        fn = getattr(t, name)
        res = fn(data, columns) if args.command in ("update", "upsert") else fn(data)
    line = (f"{args.command}: version {res.version}, {data.num_rows} row(s) read, {res.inserted} inserted, "
            f"{res.updated} updated, {res.deleted} deleted, {res.ignored} ignored")
    if mode == "collect":
        line += f", {rejected} rejected to {safe_uri(collect_to)}"
    cut = _truncated_cells(t.schema, data, columns) if args.command != "delete" else 0
    if cut:
        line += f", {cut} varchar cell(s) truncated to their column's length"
    print(line)
    return EXIT_OK


def _truncated_cells(schema: tf.Schema, data: pa.Table, columns) -> int:
    """Input cells longer than their varchar(n) column (the engine truncates them, as Kudu does)."""
    import pyarrow.compute as pc
    n = 0
    for name in data.column_names:
        if not schema.has_column(name) or (columns and name not in columns and name not in schema.primary_key):
            continue
        ctype = schema.column(name).type
        if ctype.kind == "varchar" and pa.types.is_string(data.column(name).type):
            n += pc.sum(pc.greater(pc.utf8_length(data.column(name)), ctype.length)).as_py() or 0
    return n


def _write_collecting(t: tf.Table, command: str, data: pa.Table, columns, path: str):
    """Skip the rows a strict operation rejects and write them to `path`; one commit.

    The rejected rows are written to `path` before the commit, so nothing that can fail
    follows it: a rejects file that cannot be written leaves the table unchanged, and a commit
    that fails (or restarts, which may reject other rows) removes the file it was written
    with. Exit 0: the commit landed and `path` holds its rejected rows (no file when there
    are none). Exit 1: nothing was committed and this run left no rejects file."""
    for _ in range(10):
        snap = t.snapshot()
        if command == "insert":
            frag = snap.write_insert(data, "fail", report=True)
            batch, rows = frag.rejected
        else:
            frag = snap.write_mutation(data, op=command, columns=columns, on_error="report",
                                       operation=command.upper())
            batch, rows, _ops = frag.rejected
        try:
            if len(rows):
                _write_rejects(batch.take(pa.array(rows)), path)
        except BaseException:
            t.storage.delete_quietly(frag.files)            # the fragment's files, never committed
            raise
        try:
            res = t.commit_fragments([frag], command.upper())
        except BaseException as e:
            if len(rows) and not committed(e):        # landed, then a later step failed: the rows stay
                _remove_rejects(path, e)
            if isinstance(e, tf.RestartRequired):
                continue
            raise
        return res, len(rows)
    raise tf.CommitConflictError(f"{command} restarted 10 times under concurrent writes; run it again")


def _refuse_existing(path: str) -> None:
    """The rejects file is this run's own: it is written before the commit and removed when the
    commit fails, so a file already at `path` (an earlier run's rejects, the input itself) would
    be overwritten and then deleted by a run that committed nothing."""
    import fsspec
    try:
        fs, p = fsspec.core.url_to_fs(path)
        exists = fs.exists(p)
    except (OSError, ValueError, ImportError) as e:
        raise InvalidOptionError(f"--on-error collect={safe_uri(path)}: cannot check the path "
                                 f"({type(e).__name__}: {e})") from None
    if exists:
        raise InvalidOptionError(f"--on-error collect={safe_uri(path)}: the path exists; give a new path for the "
                                 "rejected rows (they are written before the commit, and a failed commit "
                                 "removes them)")


def _write_rejects(bad: pa.Table, path: str) -> None:
    fmt = OUT_FORMATS[input_format(path, None) if any(path.lower().endswith(e) for e in FORMATS) else "parquet"]
    import contextlib
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            emit(bad.schema, bad.to_batches(), fmt, path, None)
    except OSError as e:
        raise InvalidOptionError(f"--on-error collect={safe_uri(path)}: cannot write the rejected rows there "
                                 f"({type(e).__name__}: {e}); nothing was committed") from None


def _remove_rejects(path: str, cause: BaseException) -> None:
    """The commit failed: the rejects file written for it must not stay behind."""
    import fsspec
    try:
        fs, p = fsspec.core.url_to_fs(path)
        fs.rm(p)
    except FileNotFoundError:
        pass
    except Exception as e:  # noqa: BLE001  the commit's own error is the one to report
        cause.add_note(f"the rejects file {safe_uri(path)} of the failed commit could not be removed: {e}")


def cmd_inspect(args, opts) -> int:
    from .values import parse_as_of
    data = tf.open_table(args.uri, storage_options=options_for(args.uri, opts)).inspect(args.kind, as_of=parse_as_of(args.as_of))
    if args.kind == "history":                 # newest first, as `history`: --limit N gives the N newest
        data = data.take(pa.array(range(data.num_rows - 1, -1, -1), pa.int64()))
    if args.format == "table" and not args.output:
        import shutil
        rows = [[_cell(v) for v in r.values()] for r in data.to_pylist()[:args.limit]]
        print(fitted_grid([n.upper() for n in data.column_names], rows, shutil.get_terminal_size((120, 24)).columns))
        return EXIT_OK
    if args.format == "json":                  # nested JSON: key ranges as objects, lists as arrays
        text = "".join(json.dumps(r, default=str) + "\n" for r in data.to_pylist()[:args.limit])
        if args.output:
            import fsspec
            with fsspec.open(args.output, "w") as f:
                f.write(text)
            print(f"wrote {min(data.num_rows, args.limit or data.num_rows)} row(s) to {safe_uri(args.output)} as json")
        else:
            sys.stdout.write(text)
        return EXIT_OK
    if args.format in ("csv", "table"):        # text cells: key ranges and column lists as strings
        data = pa.table({n: pa.array([_cell(v) if v is not None else None for v in data.column(n).to_pylist()],
                                     pa.string())
                         if pa.types.is_struct(data.column(n).type) or pa.types.is_list(data.column(n).type)
                         else data.column(n) for n in data.column_names})
    emit(data.schema, data.to_batches(), args.format, args.output, args.limit)
    return EXIT_OK


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, dict):
        return "(" + ", ".join(str(x) for x in v.values()) + ")"
    if isinstance(v, list):
        return ",".join(map(str, v))
    return str(v)


def add_commands(cmd, output_options) -> None:
    """Register the data commands and `inspect` on the parser (`parser.build_parser`)."""
    from ..read.inspect import KINDS
    for name, (_op, _ignoring) in OPS.items():
        s = cmd(name, cmd_write, f"{name} rows from a Parquet, CSV or JSON Lines file, in one commit",
                "\n\nColumns are matched by name and parsed with the table's types. A bad file changes "
                "nothing.\nPrints one line: version and counts.")
        s.add_argument("--input", required=True, metavar="FILE", help="the input file or URI; - for stdin")
        s.add_argument("--format", choices=["parquet", "csv", "jsonl"],
                       help="the input format (default: from the extension: .parquet, .csv, .jsonl/.json)")
        s.add_argument("--on-error", type=_on_error, default=("fail", None), metavar="fail|ignore|collect=PATH",
                       help="rows a strict operation rejects (existing key on insert, missing key on update or "
                            "delete): fail (default, nothing is written), ignore (skip and count), collect=PATH "
                            "(skip and write them to PATH, a new file)")
        if name in ("update", "upsert"):
            s.add_argument("--columns", metavar="A,B", help="only these columns are updated (default: all given)")
        s.add_argument("--progress", choices=["auto", "always", "never"], default="auto",
                       help="the progress bar on stderr (auto: on a terminal)")
    s = cmd("inspect", cmd_inspect, "show a metadata table: " + ", ".join(KINDS),
            "\n\nOne row per commit, tablet, rowset, delta file, live file or tag, from the log alone.")
    s.add_argument("kind", choices=KINDS, metavar="KIND", help=", ".join(KINDS))
    s.add_argument("--as-of", metavar="V", help="a version, ts:<microseconds> or an ISO date-time")
    output_options(s)
