"""The `tableformat` command: create, inspect, read, maintain and alter tables from a shell.

    tableformat create   URI --schema metrics.yaml
    tableformat describe URI [--as-of V] [--json] [--brief]
    tableformat history  URI [--limit N] [--json]
    tableformat scan     URI [--as-of V] [--columns a,b] [--where EXPR]... [--limit N]
                             [--format table|csv|json|parquet] [--output FILE] [--count]
    tableformat changes  URI --start V [--end V] [--mode all|net] [--format ...] [--output FILE]
    tableformat compact  URI [--plan | --run] [--budget-mb MB]
    tableformat vacuum   URI [--retain-seconds S] [--grace-seconds S] [--dry-run]
    tableformat mirror   URI (--delta PATH | --iceberg PATH [--keep-snapshots N]) [--no-compact]
                             [--mirror-option KEY=VALUE]...
    tableformat check    URI [--shallow]
    tableformat alter    URI --add-column c:int32:nullable --drop-column b --rename-column a:b ...
    tableformat restore  URI --as-of V
    tableformat tag      URI NAME [--as-of V]   |   untag URI NAME   |   tags URI [--json]
    tableformat lookup   URI --key col=v,col=v ... [--as-of V] [--columns a,b] [--format ...]
    tableformat insert|upsert|update|delete URI --input FILE|- [--format parquet|csv|jsonl]
                             [--on-error fail|ignore|collect=PATH]
    tableformat inspect  URI history|tablets|rowsets|deltas|files|tags [--format ...]

URI is any table URI (a local path, file://, s3://, hdfs://). Every command
takes the global options --debug, --storage-option KEY=VALUE (repeatable)
and --storage-options-json FILE, before or after the command name
(`options.py`).

Exit status: 0 success, 1 error (one line on stderr, `error: <ErrorClass>:
<message>`, the classes of `tableformat/format/errors.py`; --debug adds the
traceback), 2 bad usage, 3 `check` found violations.
"""
from __future__ import annotations

import argparse
from typing import Callable

import tableformat as tf

from . import commands, data, versions
from .output import TABLE_ROWS
from .schemafile import example


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line too, pointing at the right --help."""

    def error(self, message: str):
        self.exit(commands.EXIT_USAGE, f"error: {message} (see '{self.prog} --help')\n")


class _Step(argparse.Action):
    """Alter steps keep their command-line order across different options."""

    def __call__(self, parser, namespace, values, option_string=None):
        namespace.steps = list(getattr(namespace, "steps", None) or []) + [(self.dest, values)]


def _non_negative(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return n


def _add_globals(p: argparse.ArgumentParser, sub: bool) -> None:
    """The global options, accepted before and after the command name.

    After it they must not overwrite what was given before it, hence SUPPRESS
    defaults and a separate list for --storage-option.
    """
    d = argparse.SUPPRESS if sub else None
    g = p.add_argument_group("global options")
    g.add_argument("--debug", action="store_true", default=d if sub else False,
                   help="print the full traceback of an error")
    g.add_argument("--storage-option", dest="storage_option_sub" if sub else "storage_option", action="append",
                   metavar="KEY=VALUE", default=d,
                   help="an fsspec storage option, e.g. endpoint_url=http://host:9000 (repeatable; "
                        "values are parsed as JSON when they can be, credentials never)")
    g.add_argument("--storage-options-json", metavar="FILE", default=d,
                   help="a JSON file holding an object of storage options (keeps secrets off the command line)")


def _output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["table", "csv", "json", "parquet"], default="table",
                   help="table (aligned text, default), csv, json (JSON Lines) or parquet (needs --output)")
    p.add_argument("--output", metavar="FILE", help="write to FILE (a path or fsspec URI) instead of stdout")
    p.add_argument("--limit", type=_non_negative, metavar="N",
                   help=f"at most N rows (the table format shows {TABLE_ROWS} by default)")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; subcommands appear in --help in the order they are added."""
    fmt = argparse.RawDescriptionHelpFormatter
    summary, synopsis = __doc__.split("\n\n")[:2]
    p = _Parser(prog="tableformat", description=summary + "\n\n" + synopsis, formatter_class=fmt,
                epilog="Run 'tableformat COMMAND --help' for a command's options. Exit status: 0 ok, 1 error, "
                       "2 bad usage, 3 check found violations.")
    p.add_argument("--version", action="version", version=f"tableformat {tf.__version__}")
    _add_globals(p, sub=False)
    sp = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    cmd = _command_adder(sp, fmt)
    _add_read_commands(cmd)
    _add_maintenance_commands(cmd)
    _add_alter_command(cmd)
    versions.register(cmd, _output_options)     # restore, tag, untag, tags, lookup
    data.add_commands(cmd, _output_options)       # insert, upsert, update, delete, inspect

    for sub in sp.choices.values():
        _add_globals(sub, sub=True)
    return p


def _command_adder(sp, fmt) -> Callable[..., argparse.ArgumentParser]:
    """One way to add a subcommand, so every command takes URI first and describes itself alike."""
    def cmd(name: str, func, help: str, desc: str = "") -> argparse.ArgumentParser:
        sub = sp.add_parser(name, help=help, description=help[:1].upper() + help[1:] + "." + desc,
                            formatter_class=fmt)
        sub.add_argument("uri", metavar="URI", help="the table: a local path, file://, s3://, hdfs:// ...")
        sub.set_defaults(func=func)
        return sub
    return cmd


def _add_read_commands(cmd: Callable[..., argparse.ArgumentParser]) -> None:
    """create, describe, history, scan and changes."""
    s = cmd("create", commands.cmd_create, "create a table from a schema file",
            "\n\nThe schema file (YAML, or JSON if it ends in .json):\n\n" + example())
    s.add_argument("--schema", required=True, metavar="FILE", help="the schema file (YAML or JSON)")
    s.add_argument("--name", help="the table name (default: the file's 'name', else the URI's last segment)")

    s = cmd("describe", commands.cmd_describe, "show the schema, partitioning, tablets, rowsets, deltas and sizes")
    s.add_argument("--as-of", metavar="V", help="a version, ts:<microseconds>, an ISO date-time or a tag name")
    s.add_argument("--json", action="store_true", help="machine-readable JSON")
    s.add_argument("--brief", action="store_true", help="tablets only, not each rowset")

    s = cmd("history", commands.cmd_history, "list the commits: version, timestamp, operation, counts (newest first)")
    s.add_argument("--limit", type=_non_negative, metavar="N", help="the N newest commits")
    s.add_argument("--json", action="store_true", help="machine-readable JSON")

    s = cmd("scan", commands.cmd_scan, "read rows, optionally filtered, projected and as of a past version",
            "\n\nWHERE: column OP value (OP: = != < <= > >=), column in (v1, v2), column is [not] null;\n"
            "repeat --where or join with 'and'. Example: --where \"host = 'h1'\" --where 'value >= 3.5'")
    s.add_argument("--as-of", metavar="V", help="a version, ts:<microseconds>, an ISO date-time or a tag name")
    s.add_argument("--columns", metavar="A,B", help="the columns to read (default: all)")
    s.add_argument("--where", action="append", default=[], metavar="EXPR", help="a filter (repeatable; ANDed)")
    s.add_argument("--ordered", action="store_true", help="rows in primary-key order")
    s.add_argument("--count", action="store_true", help="print only the number of matching rows")
    _output_options(s)

    s = cmd("changes", commands.cmd_changes, "list the changes committed after --start up to --end",
            "\n\nColumns: _op (insert/update/delete), _version, _timestamp, the row's after-image,\n"
            "_changed_columns (updates), _commit_order (0: a change to a row the commit found,\n"
            "1: a row it inserted) and, with --before-image, _before_<column>.")
    s.add_argument("--start", required=True, metavar="V", help="changes after this version / ts:<micros> / time")
    s.add_argument("--end", metavar="V", help="up to this version (default: the latest)")
    s.add_argument("--mode", choices=["all", "net"], default="all",
                   help="all: every change in commit order; net: one net change per key")
    s.add_argument("--before-image", action="store_true", help="add _before_<column> columns")
    s.add_argument("--skipped", action="store_true",
                   help="add the input rows writes skipped (_op skipped, with a _reason; --mode all)")
    _output_options(s)


def _add_maintenance_commands(cmd: Callable[..., argparse.ArgumentParser]) -> None:
    """compact, mirror, vacuum and check."""
    s = cmd("compact", commands.cmd_compact,
            "show or run the compaction plan (minor/major delta and merging compactions)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--plan", action="store_true", help="print the scored plan and why (the default)")
    g.add_argument("--run", action="store_true", help="run the plan; each action commits on its own")
    s.add_argument("--budget-mb", type=float, default=256.0, metavar="MB", help="bytes to read at most (256)")
    s.add_argument("--progress", choices=["auto", "always", "never"], default="auto",
                   help="the progress bar on stderr (auto: on a terminal)")

    s = cmd("mirror", commands.cmd_mirror, "write a zero-copy Delta Lake or Iceberg mirror of the latest version",
            "\n\n--delta: one Delta commit at PATH, deletes as deletion vectors. --iceberg: one Iceberg\n"
            "snapshot (format v2, Hadoop-catalog layout) at PATH, deletes as position-delete files.\n"
            "Both reference our base files by absolute path; rowsets the format cannot express are\n"
            "compacted first (listed in the output). PATH must lie outside the table. Readers:\n"
            "spark.read.format('delta').load(PATH), deltalake; pyiceberg StaticTable.from_metadata(PATH),\n"
            "Trino/Spark Iceberg (register PATH/metadata/v<N>.metadata.json).")
    g = s.add_mutually_exclusive_group(required=True)
    g.add_argument("--delta", metavar="PATH", help="the Delta table's directory (URI)")
    g.add_argument("--iceberg", metavar="PATH", help="the Iceberg table's directory (URI)")
    s.add_argument("--no-compact", action="store_true",
                   help="refuse (exit 1) instead of compacting rowsets the mirror cannot express")
    s.add_argument("--keep-snapshots", type=int, metavar="N",
                   help="--iceberg: keep only the N newest snapshots (our vacuum may then free the files "
                        "only older ones read)")
    s.add_argument("--mirror-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an fsspec storage option of PATH (repeatable; JSON values)")

    s = cmd("vacuum", commands.cmd_vacuum, "delete files no snapshot within the retained history needs")
    s.add_argument("--retain-seconds", type=float, metavar="S",
                   help="history to keep (default: the table's history_max_age)")
    s.add_argument("--grace-seconds", type=float, default=3600.0, metavar="S",
                   help="never delete files younger than this: writers may still commit them (3600)")
    s.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")

    s = cmd("check", commands.cmd_check, "verify every invariant of the table; exit 3 when a violation is found")
    s.add_argument("--shallow", action="store_true", help="do not decode every data page")


def _add_alter_command(cmd: Callable[..., argparse.ArgumentParser]) -> None:
    """alter: every step option appends to one ordered list (`_Step`)."""
    s = cmd("alter", commands.cmd_alter, "change the schema, properties and range partitions in one atomic commit",
            "\n\nSteps apply in the order given, and commit together or not at all.")
    step = {"action": _Step, "default": argparse.SUPPRESS}
    s.add_argument("--add-column", metavar="NAME:TYPE[:nullable][:ENC][:COMP][=DEFAULT]", **step,
                   help="add a column; non-null needs =DEFAULT, which rows already there read")
    s.add_argument("--drop-column", metavar="NAME", **step, help="drop a column (its ID is never reused)")
    s.add_argument("--rename-column", metavar="OLD:NEW", **step, help="rename a column")
    s.add_argument("--rename-table", metavar="NAME", **step, help="rename the table (not its path)")
    s.add_argument("--set-property", metavar="KEY=VALUE", **step,
                   help="set a table property: an integer (history_max_age=86400) or, for sequence_column, a "
                        "column name (sequence_column=lsn; empty or null unsets it)")
    s.add_argument("--set-default", metavar="COLUMN=VALUE", **step, help="change a column's write default")
    s.add_argument("--set-encoding", metavar="COLUMN=ENCODING", **step, help="for files written from now on")
    s.add_argument("--set-compression", metavar="COLUMN=CODEC", **step, help="for files written from now on")
    s.add_argument("--add-range-partition", metavar="LOWER,UPPER", **step,
                   help="add [LOWER, UPPER); an empty side is unbounded; (a,b) for several range columns")
    s.add_argument("--drop-range-partition", metavar="LOWER,UPPER", **step,
                   help="drop the range partition with exactly these bounds (its rows leave the table)")
