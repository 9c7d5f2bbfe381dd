"""One function a command: `cmd_x(args, storage_options) -> exit status`.

The work is the library's; a command turns its arguments into one call and
prints the result.
"""
from __future__ import annotations

import argparse
import json
import sys

import tableformat as tf

from ..format.errors import InvalidOptionError
from .alter import apply_steps
from .describe import describe, render
from .display import grid, iso
from .options import options_for, safe_uri
from .output import emit
from .schemafile import load_schema_file
from .values import parse_as_of
from .where import parse_where

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_VIOLATIONS = 0, 1, 2, 3
MIB = 1 << 20


def _open(args: argparse.Namespace, opts: dict) -> tf.Table:
    return tf.open_table(args.uri, storage_options=options_for(args.uri, opts))


def _columns(text: str | None) -> list[str] | None:
    if text is None:
        return None
    cols = [c.strip() for c in text.split(",")]
    if not all(cols):
        raise InvalidOptionError(f"--columns {text!r}: give column names separated by commas")
    return cols


def cmd_create(args, opts) -> int:
    schema, parts, props, name = load_schema_file(args.schema)
    t = tf.create_table(args.uri, schema, partitioning=parts, properties=props,
                        storage_options=options_for(args.uri, opts), name=args.name or name)
    st = t.state
    print(f"created table {t.name!r} at {safe_uri(args.uri)}: version 0, {len(st.schema.columns)} columns, "
          f"{len(st.partitioning.tablet_ids())} tablet(s)")
    return EXIT_OK


def cmd_describe(args, opts) -> int:
    t = _open(args, opts)
    snap = t.snapshot(parse_as_of(args.as_of))
    info = describe(t, snap)
    print(json.dumps(info, indent=2) if args.json else render(info, snap, args.brief))
    return EXIT_OK


def cmd_history(args, opts) -> int:
    hist = list(reversed(_open(args, opts).history()))[:args.limit]
    if args.json:
        print(json.dumps([{"version": h.version, "timestamp": h.timestamp, "time": iso(h.timestamp),
                           "operation": h.operation, "counts": dict(h.counts), "read_version": h.read_version}
                          for h in hist], indent=2))
    else:
        rows = [[str(h.version), iso(h.timestamp), h.operation, " ".join(f"{k}={v}" for k, v in h.counts.items())]
                for h in hist]
        print(grid(["VERSION", "TIMESTAMP", "OPERATION", "COUNTS"], rows))
    return EXIT_OK


def cmd_scan(args, opts) -> int:
    snap = _open(args, opts).snapshot(parse_as_of(args.as_of))
    filters = [term for w in args.where for term in parse_where(w, snap.schema)]
    sc = snap.scan(_columns(args.columns), filters or None, ordered=args.ordered)
    if args.count:
        print(sc.count())
    else:
        emit(sc.output_schema, sc.to_reader(), args.format, args.output, args.limit)
    return EXIT_OK


def cmd_changes(args, opts) -> int:
    ch = _open(args, opts).changes(parse_as_of(args.start, "--start"), parse_as_of(args.end, "--end"),
                                   mode=args.mode, before_image=args.before_image, skipped=args.skipped)
    emit(ch.schema, ch.to_batches(max_chunksize=65536), args.format, args.output, args.limit)
    return EXIT_OK


def cmd_compact(args, opts) -> int:
    t = _open(args, opts)
    if not args.budget_mb > 0:
        raise InvalidOptionError(f"--budget-mb must be positive, got {args.budget_mb}")
    plan = t.compaction_plan(budget_bytes=max(1, int(args.budget_mb * MIB)))
    print(plan.explain())
    if not args.run:
        return EXIT_OK
    if not plan.actions:
        print("nothing to compact")
        return EXIT_OK
    from tqdm import tqdm
    disable = {"auto": None, "always": False, "never": True}[args.progress]
    with tqdm(total=len(plan.actions), desc="compacting", unit="action", file=sys.stderr, disable=disable) as bar:
        def progress(i: int, n: int, action) -> None:
            bar.set_postfix_str(f"{action.kind} {action.tablet}", refresh=False)
            bar.update(i - bar.n)
        results = t.compact(plan, progress=progress)
    skipped = len(plan.actions) - len(results)
    done = f"compacted: {len(results)} of {len(plan.actions)} action(s) committed"
    if results:
        done += f", versions {results[0].version}..{results[-1].version}"
    if skipped:
        done += f"; {skipped} skipped (their rowsets changed meanwhile; run again)"
    print(done)
    return EXIT_OK


def cmd_vacuum(args, opts) -> int:
    res = _open(args, opts).vacuum(retain_seconds=args.retain_seconds, dry_run=args.dry_run,
                                   grace_seconds=args.grace_seconds)
    for f in res.files:
        print(f"  {f}")
    print(res)
    return EXIT_OK


def cmd_mirror(args, opts) -> int:
    mopts = {}
    for kv in args.mirror_option:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            raise tf.InvalidOptionError(f"--mirror-option must be KEY=VALUE, got {kv!r}")
        try:
            mopts[k] = json.loads(v)
        except ValueError:
            mopts[k] = v
    t = _open(args, opts)
    if args.iceberg is not None:
        res = t.mirror_iceberg(args.iceberg, mopts or None, compact=not args.no_compact,
                               keep_snapshots=args.keep_snapshots)
    elif args.keep_snapshots is not None:
        raise tf.InvalidOptionError("--keep-snapshots is for --iceberg (a Delta mirror keeps one version)")
    else:
        res = t.mirror_delta(args.delta, mopts or None, compact=not args.no_compact)
    for rid, why in sorted(res.compacted.items()):
        print(f"  compacted rowset {rid}: {why}")
    print(res)
    return EXIT_OK


def cmd_check(args, opts) -> int:
    rep = _open(args, opts).check(deep=not args.shallow)
    print(rep)
    return EXIT_OK if rep.ok else EXIT_VIOLATIONS


def cmd_alter(args, opts) -> int:
    t = _open(args, opts)
    state = t.state
    with t.alter() as a:
        done = apply_steps(a, state, getattr(args, "steps", []))
        if not done:
            raise InvalidOptionError("alter needs at least one change, e.g. --add-column NAME:TYPE:nullable "
                                     "(see 'tableformat alter --help')")
    print(f"altered table {t.name!r}: version {a.result.version}")
    for d in done:
        print(f"  {d}")
    return EXIT_OK
