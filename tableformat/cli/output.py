"""Rows out of `scan` and `changes`, to stdout or --output FILE (any fsspec URI).

Output formats: `table` (aligned text, at most --limit or 100 rows), `csv`
(header row), `json` (JSON Lines: one object per row; `celltext.py` says how
each type is written) and `parquet` (needs --output). Rows are converted and
written a batch at a time.
"""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator

import pyarrow as pa

from ..format.errors import InvalidOptionError
from .celltext import escape_controls, json_lines, plain_text, text_batch
from .display import grid
from .options import safe_uri

TABLE_ROWS = 100          # rows the `table` format shows when no --limit is given


def _limited(batches: Iterable[pa.RecordBatch], limit: int | None) -> Iterator[pa.RecordBatch]:
    left = limit
    for b in batches:
        if left is not None:
            if left <= 0:
                return
            if b.num_rows > left:
                b = b.slice(0, left)
            left -= b.num_rows
        yield b


@contextlib.contextmanager
def _sink(output: str | None):
    """A binary stream: the file, or stdout (flushed around our bytes, which bypass its text layer)."""
    if output is not None:
        import fsspec
        with fsspec.open(output, "wb") as f:
            yield f
        return
    sys.stdout.flush()
    try:
        yield sys.stdout.buffer
    finally:
        sys.stdout.buffer.flush()


def emit(schema: pa.Schema, batches: Iterable[pa.RecordBatch], fmt: str, output: str | None,
         limit: int | None) -> int:
    """Write rows in the chosen format; returns the number of rows written."""
    if fmt == "parquet" and not output:
        raise InvalidOptionError("--format parquet needs --output FILE")
    if fmt == "table":
        rows = _table(schema, batches, output, limit)
    else:
        rows = 0
        with _sink(output) as sink:
            if fmt == "parquet":
                import pyarrow.parquet as pq
                with pq.ParquetWriter(sink, schema, compression="zstd") as w:
                    for b in _limited(batches, limit):
                        w.write_batch(b)
                        rows += b.num_rows
            elif fmt == "csv":
                import pyarrow.csv as pcsv
                header = text_batch(pa.RecordBatch.from_pylist([], schema=schema)).schema
                with pcsv.CSVWriter(sink, header) as w:
                    for b in _limited(batches, limit):
                        w.write_batch(text_batch(b).cast(header))
                        rows += b.num_rows
            else:
                for b in _limited(batches, limit):
                    sink.write(json_lines(b))
                    rows += b.num_rows
    if output:
        print(f"wrote {rows} row(s) to {safe_uri(output)} as {fmt}")
    return rows


def _table(schema: pa.Schema, batches: Iterable[pa.RecordBatch], output: str | None, limit: int | None) -> int:
    """Aligned text of the first rows; a display, so its cells may be Python strings."""
    cap = limit if limit is not None else TABLE_ROWS
    got, n, more = [], 0, False
    for b in batches:
        if b.num_rows == 0:
            continue
        if n + b.num_rows > cap:
            got.append(b.slice(0, cap - n))
            more = True
            break
        got.append(b)
        n += b.num_rows
    t = pa.Table.from_batches(got, schema=schema) if got else schema.empty_table()
    cols = []
    for name in t.column_names:
        text = plain_text(t.column(name).combine_chunks()).cast(pa.string())
        cells = escape_controls(text, "\\x{:02x}").fill_null("NULL").to_pylist()     # one line per row
        cols.append([c if len(c) <= 48 else c[:47] + "…" for c in cells])
    rows = [list(r) for r in zip(*cols)] if cols else [[] for _ in range(t.num_rows)]
    text = grid(t.column_names, rows) if t.column_names else ""
    footer = f"({t.num_rows} row{'s' if t.num_rows != 1 else ''}"
    if more and limit is None:
        footer += "; more not shown: use --limit N, or --format csv/json/parquet for all rows"
    text = f"{text}\n{footer})\n" if text else f"{footer})\n"
    if output:
        with _sink(output) as sink:
            sink.write(text.encode("utf-8"))
    else:
        sys.stdout.write(text)
    return t.num_rows
