"""Whole columns as text: cells for csv and table output, JSON literals for JSON Lines.

Everything is Arrow compute and numpy over a batch; nothing is formatted row by
row. JSON follows `specs/format.md` §2.2 except that timestamps are ISO-8601,
NaN/inf are the strings "nan"/"inf"/"-inf" and binary is hex.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def _offsets(arr: pa.Array) -> np.ndarray:
    return np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset:arr.offset + len(arr) + 1]


def _hex(arr: pa.Array) -> pa.Array:
    """Binary cells as lowercase hex text, with numpy over the whole data buffer."""
    arr = arr.cast(pa.binary())
    n = len(arr)
    offs = _offsets(arr)
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8)[offs[0]:offs[-1]] if data_buf is not None and n else \
        np.empty(0, np.uint8)
    out = np.empty(2 * len(data), dtype=np.uint8)
    out[0::2] = _HEX[data >> 4]
    out[1::2] = _HEX[data & 15]
    res = pa.StringArray.from_buffers(n, pa.py_buffer(((offs - offs[0]) * 2).astype(np.int32)), pa.py_buffer(out))
    return pc.if_else(pc.is_valid(arr), res, pa.scalar(None, pa.string()))


def _iso_text(arr: pa.Array) -> pa.Array:
    """ISO-8601 UTC text, microseconds only when there are some (as `display.iso`)."""
    text = pc.replace_substring_regex(pc.strftime(arr, format="%Y-%m-%dT%H:%M:%S"), r"\.0+$", "")
    return pc.binary_join_element_wise(text, "Z", "")


def plain_text(arr: pa.Array) -> pa.Array:
    """One column as text for csv and table output (nulls stay null)."""
    t = arr.type
    if pa.types.is_timestamp(t):
        return _iso_text(arr)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return _hex(arr)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pc.binary_join(arr.cast(pa.list_(pa.string())), ",")
    return arr


def text_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([plain_text(c) for c in batch.columns], names=batch.schema.names)


def escape_controls(s: pa.Array, fmt: str = "\\u{:04x}") -> pa.Array:
    """Control characters as escapes; a pass per character, only when there are any."""
    if len(s) and pc.any(pc.match_substring_regex(s, r"[\x00-\x1f]")).as_py():
        for i in range(32):
            s = pc.replace_substring(s, chr(i), fmt.format(i))
    return s


def _quote(s: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise('"', s, '"', "")


def _json_string(s: pa.Array) -> pa.Array:
    s = pc.replace_substring(s, "\\", "\\\\")
    s = pc.replace_substring(s, '"', '\\"')
    return _quote(escape_controls(s))


def _json_cells(arr: pa.Array) -> pa.Array:
    """Each cell as a JSON literal (NULL as null)."""
    t = arr.type
    if pa.types.is_boolean(t):
        s = pc.if_else(arr, "true", "false")
    elif pa.types.is_integer(t):
        s = arr.cast(pa.string())
    elif pa.types.is_floating(t):
        text = arr.cast(pa.string())
        s = pc.if_else(pc.is_finite(arr), text, _quote(text))
    elif pa.types.is_timestamp(t):
        s = _quote(_iso_text(arr))
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
        s = _quote(_hex(arr))
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        flat = arr.flatten()
        quoted = _json_cells(flat) if len(flat) else flat.cast(pa.string())
        lens = pc.list_value_length(arr).fill_null(0).to_numpy(zero_copy_only=False)
        offsets = np.zeros(len(arr) + 1, dtype=np.int32)
        np.cumsum(lens, out=offsets[1:])
        joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), quoted), ",")
        s = pc.if_else(pc.is_valid(arr), pc.binary_join_element_wise("[", joined, "]", ""),
                       pa.scalar(None, pa.string()))
    else:   # strings; decimal, date and anything else as the string of their text
        s = _json_string(arr.cast(pa.string()))
    return s.fill_null("null")


def json_lines(batch: pa.RecordBatch) -> bytes | memoryview:
    """A batch as JSON Lines, built column by column."""
    n = batch.num_rows
    if n == 0:
        return b""
    if batch.num_columns == 0:
        return b"{}\n" * n
    parts = [pc.binary_join_element_wise(json.dumps(name) + ":", _json_cells(col), "")
             for name, col in zip(batch.schema.names, batch.columns)]
    body = pc.binary_join_element_wise(*parts, ",") if len(parts) > 1 else parts[0]
    rows = pc.binary_join_element_wise("{", body, "}\n", "")
    if isinstance(rows, pa.ChunkedArray):
        rows = rows.combine_chunks()
    offs = _offsets(rows)         # no nulls: the data buffer is the text of all rows
    return memoryview(rows.buffers()[2])[offs[0]:offs[-1]]
