"""Writing a rowset's files (base data, PK index, bloom filter): what a bulk load does."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import tableformat as tf
from tableformat.cfile_set import _footer_min_max, column_stats, footer_chunks
from tableformat.diskrowset import write_base_file
from tableformat.storage import Storage


def _strings(rng, n, alphabet):
    return [None if rng.random() < 0.2 else "".join(rng.choice(alphabet, int(rng.integers(0, 6))))
            for _ in range(n)]


@pytest.mark.parametrize("kind", ["string", "varchar(8)", "binary"])
def test_string_stats_from_the_footer_equal_a_pass_over_the_values(tmp_path, kind):
    """String and binary min/max come from the Parquet footer the writer computed: the same
    as Arrow's min_max over the values (bytes compared unsigned: 00, 7f, 80, ff, non-ASCII),
    with NULLs, row groups that are all NULL, and a column all NULL."""
    rng = np.random.default_rng(1)
    alphabet = ["\x00", "a", "z", "\x7f", "\x80", "\u00e9", "\u4e2d", "\U0001f600"]
    n, rg = 4000, 256
    values = _strings(rng, n, alphabet)
    values[512:1024] = [None] * 512                         # two row groups all NULL
    if kind == "binary":
        values = [None if v is None else v.encode("utf-8") + bytes([0xFF, 0x00][len(v) % 2:]) for v in values]
    cols = [tf.Column("s", kind, nullable=True, id=0), tf.Column("nothing", kind, nullable=True, id=1),
            tf.Column("i", "int64", nullable=True, id=2)]
    arr = pa.array(values, cols[0].arrow_type)
    arrays = [arr, pa.nulls(n, cols[1].arrow_type), pa.array(rng.integers(-5, 5, n))]
    ref, stats = write_base_file(Storage(str(tmp_path)), "r", cols, arrays, rg)
    assert stats == {c.id: column_stats(c, a) for c, a in zip(cols, arrays)}
    footer = pq.read_metadata(str(tmp_path / ref.path))               # the footer does hold them
    assert _footer_min_max(footer_chunks(footer, 0)) == (pc.min_max(arr)["min"].as_py(), pc.min_max(arr)["max"].as_py())
    assert stats[0]["min"] is not None and stats[0]["nulls"] == arr.null_count
    assert stats[1] == {"nulls": n}


def test_stats_of_very_long_strings_fall_back_to_the_values(tmp_path):
    """Parquet writes no min/max for a chunk with a value over 4 KiB: min and max are then
    computed from the values, and (over 256 bytes) left out as before."""
    col = tf.Column("s", "string", nullable=True, id=0)
    storage = Storage(str(tmp_path))
    arr = pa.array(["b", "m" * 5000, None, "a"] * 50)
    _, stats = write_base_file(storage, "r", [col], [arr], 64)
    assert stats == {0: column_stats(col, arr)} == {0: {"nulls": 50}}
    arr = pa.array(["b", "c", None, "a"] * 50)
    _, stats = write_base_file(storage, "r", [col], [arr], 64)
    assert stats == {0: {"nulls": 50, "min": "a", "max": "c"}}
