"""The default encoding of numbers (issue 34, item 6): BYTE_STREAM_SPLIT or PLAIN, on the peer data.

    python -m benchmarks.bench_encoding [--rows 1000000]

A Delta mirror references our base files in place, and Spark 4.2's vectorized reader (every
delta-spark user's) cannot decode BYTE_STREAM_SPLIT. Two ways out, measured here on the peer
benchmark's load (bench_peers: the metrics schema, time-major):

- `plain`: numbers default to PLAIN (bitshuffle stays an explicit per-column choice);
- `rewrite`: the default stays BYTE_STREAM_SPLIT and the mirror writes a PLAIN copy of each
  file it references: the copy's bytes and write time come on top of `bitshuffle`'s.

Each is printed beside pyarrow's own default (`pq.write_table`, lz4: the peer benchmark's
floor): bytes of the base files, and reads of every base file (all columns; `value` alone)
by pyarrow and by DuckDB, best of READS.
"""
from __future__ import annotations

import argparse
import glob
import os
import tempfile
import time

import pyarrow.parquet as pq

from .bench_core import generate, in_order, metrics_schema

READS = 5
NUMBERS = ("value", "price", "count", "time")


def best(fn, repeat: int = READS) -> float:
    b = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        b = min(b, time.perf_counter() - t0)
    return b


def schema_with(encoding: str | None):
    """The metrics schema, its numbers in `encoding` (None: the type's default)."""
    import tableformat as tf
    s = metrics_schema()
    if encoding is None:
        return s
    cols = [tf.Column(c.name, c.type, c.nullable, c.default, encoding if c.name in NUMBERS else c.encoding,
                      c.compression) for c in s.columns]
    return tf.Schema(cols, s.primary_key)


def reads(files: list[str]) -> dict[str, float]:
    import duckdb
    con = duckdb.connect()
    lst = "[" + ", ".join(f"'{f}'" for f in files) + "]"
    return {
        "pyarrow all": best(lambda: [pq.read_table(f) for f in files]),
        "pyarrow value": best(lambda: [pq.read_table(f, columns=[pq.read_schema(f).names[3]]) for f in files]),
        "duckdb all": best(lambda: con.sql(f"SELECT * FROM read_parquet({lst})").to_arrow_table()),
        "duckdb sum": best(lambda: con.sql(f"SELECT sum(#4) FROM read_parquet({lst})").fetchall()),
    }


def main() -> None:
    import tableformat as tf
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    data = in_order(generate(args.rows), "time")
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as work:
        floor = os.path.join(work, "floor.parquet")
        pq.write_table(data, floor, compression="lz4")
        out["pyarrow default"] = {"bytes": os.path.getsize(floor), **reads([floor])}
        files_by = {}
        for name, enc in (("bitshuffle", "bitshuffle"), ("plain", "plain")):
            uri = os.path.join(work, name)
            t = tf.create_table(uri, schema_with(enc))
            t.insert(data)
            files = sorted(glob.glob(os.path.join(uri, "tablets", "*", "*", "base-*.parquet")))
            files_by[name] = files
            out[name] = {"bytes": sum(os.path.getsize(f) for f in files), **reads(files)}
        # the mirror's rewrite: each bitshuffle file copied with its BYTE_STREAM_SPLIT columns PLAIN
        copies = []

        def rewrite():
            copies.clear()
            for i, f in enumerate(files_by["bitshuffle"]):
                pf = pq.ParquetFile(f)
                tab = pf.read()
                enc = {c: pf.metadata.row_group(0).column(j).encodings for j, c in enumerate(tab.column_names)}
                dst = os.path.join(work, f"copy{i}.parquet")      # every other column as it was
                pq.write_table(tab, dst, compression="lz4", data_page_version="2.0",
                               use_dictionary=[c for c, e in enc.items() if "RLE_DICTIONARY" in e] or False,
                               column_encoding={c: "RLE" if e == ("RLE",) else "PLAIN" for c, e in enc.items()
                                                if "RLE_DICTIONARY" not in e} or None)
                copies.append(dst)
        w = best(rewrite, 1)
        out["rewrite"] = {"bytes": out["bitshuffle"]["bytes"] + sum(os.path.getsize(f) for f in copies),
                          "rewrite s": w, **reads(copies)}
    base = out["pyarrow default"]
    print(f"{args.rows:,} rows of the peer benchmark's data (time-major); reads best of {READS}, seconds")
    keys = ["bytes", "pyarrow all", "pyarrow value", "duckdb all", "duckdb sum"]
    print(f"{'':18}" + "".join(f"{k:>22}" for k in keys))
    for name, r in out.items():
        cells = []
        for k in keys:
            v, b = r[k], base[k]
            cells.append(f"{v / 1e6:10.1f} MB ({v / b:4.2f}x)" if k == "bytes" else f"{v:11.4f} ({v / b:4.2f}x)")
        print(f"{name:18}" + "".join(f"{c:>22}" for c in cells) +
              (f"   + mirror rewrite {r['rewrite s']:.2f} s" if "rewrite s" in r else ""))
    print("rewrite: bytes = the table's bitshuffle files + the mirror's PLAIN copies; reads are of the copies")


if __name__ == "__main__":
    main()
