"""Commands on versions and keys: restore, tag, untag, tags, lookup.

    tableformat restore URI --as-of V
    tableformat tag     URI NAME [--as-of V]
    tableformat untag   URI NAME
    tableformat tags    URI [--json]
    tableformat lookup  URI --key host=h1,metric=cpu,time=2024-05-01T00:00:00Z ... [--as-of V] [--columns a,b]
"""
from __future__ import annotations

import json

import pyarrow as pa

import tableformat as tf

from ..format.batch import python_array
from ..format.errors import InvalidDataError, InvalidOptionError
from .display import grid, iso
from .options import options_for
from .output import emit
from .values import parse_as_of, typed

EXIT_OK = 0


def _open(args, opts) -> tf.Table:
    return tf.open_table(args.uri, storage_options=options_for(args.uri, opts))


def cmd_restore(args, opts) -> int:
    t = _open(args, opts)
    as_of = parse_as_of(args.as_of)
    if as_of is None:
        raise InvalidOptionError("--as-of needs a version, ts:<microseconds>, an ISO date-time or a tag name")
    target = t.snapshot(as_of).version
    r = t.restore(as_of)
    if r.version == target or (r.inserted, r.updated, r.deleted) == (0, 0, 0):
        print(f"table {t.name!r} already holds the rows of version {target}: nothing to do")
    else:
        print(f"restored table {t.name!r} to the rows of version {target}: version {r.version} "
              f"(inserted={r.inserted} updated={r.updated} deleted={r.deleted})")
    return EXIT_OK


def cmd_tag(args, opts) -> int:
    t = _open(args, opts)
    v = t.snapshot(parse_as_of(args.as_of)).version      # resolved before the commit: no read after it
    r = t.tag(args.name, v)
    print(f"tagged version {v} of table {t.name!r} as {args.name!r} (version {r.version})")
    return EXIT_OK


def cmd_untag(args, opts) -> int:
    t = _open(args, opts)
    r = t.untag(args.name)
    print(f"removed tag {args.name!r} of table {t.name!r} (version {r.version})")
    return EXIT_OK


def cmd_tags(args, opts) -> int:
    t = _open(args, opts)
    st = t.state
    items = sorted(st.tags.items(), key=lambda kv: (kv[1][0], kv[0]))
    if args.json:
        print(json.dumps([{"name": n, "version": v, "timestamp": ts, "time": iso(ts)} for n, (v, ts) in items],
                         indent=2))
    else:
        print(grid(["TAG", "VERSION", "TIMESTAMP"], [[n, str(v), iso(ts)] for n, (v, ts) in items]))
    return EXIT_OK


def _keys(specs: list[str], schema: tf.Schema) -> pa.Table:
    """--key col=value,col=value (one per key): the key columns, typed."""
    pk = list(schema.primary_key)
    values: dict[str, list] = {k: [] for k in pk}
    for spec in specs:
        given = {}
        for part in spec.split(","):
            name, sep, text = part.partition("=")
            if not sep or name.strip() not in values:
                raise InvalidOptionError(f"--key {spec!r}: give every primary key column as name=value "
                                         f"separated by commas (the key is {', '.join(pk)})")
            if name.strip() in given:          # k=1,k=2 would look up k=2 without a word
                raise InvalidOptionError(f"--key {spec!r} gives column {name.strip()!r} twice")
            given[name.strip()] = text
        missing = [k for k in pk if k not in given]
        if missing:
            raise InvalidOptionError(f"--key {spec!r} lacks primary key column(s) {missing}")
        for k in pk:
            values[k].append(typed(schema.column(k).type, given[k], f"--key {k}", InvalidDataError))
    # typed by the engine's input path: a value the column type cannot hold is its typed error
    return pa.table({k: python_array(k, v, schema.column(k).arrow_type) for k, v in values.items()})


def cmd_lookup(args, opts) -> int:
    t = _open(args, opts)
    snap = t.snapshot(parse_as_of(args.as_of))
    cols = None if args.columns is None else [c.strip() for c in args.columns.split(",")]
    got = snap.lookup(_keys(args.key, snap.schema), cols, missing="null" if args.missing else "omit")
    emit(got.schema, got.to_batches(), args.format, args.output, args.limit)
    return EXIT_OK


def register(cmd, output_options) -> None:
    """Add the commands to the parser (`cmd` makes a subcommand taking URI)."""
    as_of_help = "a version, ts:<microseconds>, an ISO date-time or a tag name"
    s = cmd("restore", cmd_restore, "make the current rows those of an earlier version, in one commit",
            "\n\nOnly rows that changed since are written; every version in between still reads back.")
    s.add_argument("--as-of", required=True, metavar="V", help=as_of_help)
    s = cmd("tag", cmd_tag, "name a version; its history is kept past history_max_age until untagged")
    s.add_argument("name", metavar="NAME", help="letters, digits, '_', '.', '-'; starting with a letter or '_'")
    s.add_argument("--as-of", metavar="V", help=as_of_help + " (default: the latest)")
    s = cmd("untag", cmd_untag, "remove a tag")
    s.add_argument("name", metavar="NAME")
    s = cmd("tags", cmd_tags, "list the tags: name, version, timestamp")
    s.add_argument("--json", action="store_true", help="machine-readable JSON")
    s = cmd("lookup", cmd_lookup, "read rows by primary key, through the PK index (no scan)")
    s.add_argument("--key", action="append", required=True, metavar="COL=V,COL=V",
                   help="one key: every primary key column as name=value (repeatable)")
    s.add_argument("--as-of", metavar="V", help=as_of_help)
    s.add_argument("--columns", metavar="A,B", help="the columns to read (default: all)")
    s.add_argument("--missing", action="store_true", help="a row of NULLs for an absent key, and a _found column")
    output_options(s)
