"""`main`: run one command, and turn every failure into one line on stderr and an exit status."""
from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence

from ..format.storage import check_outside_table
from .commands import EXIT_ERROR
from .options import error_line, redact, secrets, storage_options
from .parser import build_parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (the console script passes it to sys.exit)."""
    args = build_parser().parse_args(argv)
    known = secrets({})
    try:
        opts = storage_options(args)
        known = secrets(opts)
        refuse_outputs_in_table(args)
        return args.func(args, opts)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader of our stdout went away (`| head`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception as e:  # noqa: BLE001  every failure becomes one line on stderr
        if args.debug:
            sys.stderr.write(redact("".join(traceback.format_exception(e)), known))
        print(error_line(e, known), file=sys.stderr)
        return EXIT_ERROR


def refuse_outputs_in_table(args) -> None:
    """Every file a command writes (`--output`, `--on-error collect=`, a mirror's `--delta` or `--iceberg`) lies
    outside the table's directory, checked before anything runs (storage.check_outside_table)."""
    uri = getattr(args, "uri", None)
    if not isinstance(uri, str):
        return
    on_error = getattr(args, "on_error", None)
    for flag, path in (("--output", getattr(args, "output", None)), ("--delta", getattr(args, "delta", None)),
                       ("--iceberg", getattr(args, "iceberg", None)),
                       ("--on-error collect=", on_error[1] if isinstance(on_error, tuple) else None)):
        if isinstance(path, str) and path:
            check_outside_table(path, uri, flag)


def console_main() -> None:
    """The `tableformat` command: main's status as the process's exit code, leaving at once.

    Python's finalization can meet Arrow's I/O and CPU pool threads still alive (a streaming
    CSV/JSON reader's read-ahead, a pool task abandoned by an error) and abort with
    `terminate called without an active exception` (exit 134) after the error line was
    printed. Everything the command writes is closed by the time main returns, so the process
    flushes its streams and exits without finalizing."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)

