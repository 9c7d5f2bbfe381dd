"""Storage (`format/storage.py`): which URIs open a table (typed errors for the rest), file:// URIs, and a
table's repr without its storage options."""
import pytest

import tableformat as tf

from helpers import int_string_schema


@pytest.mark.parametrize("uri", ["", "   ", None, 42, "nosuchproto://bucket/x", "a\x00b"])
def test_malformed_uris(uri):
    with pytest.raises(tf.InvalidURIError,
                       match=("table URI must be a non-empty string without NUL|"
                              "cannot open table URI 'nosuchproto://bucket/x': Protocol not known")):
        tf.open_table(uri)


def test_file_uri_and_repr_hide_options(tmp_path):
    t = tf.create_table("file://" + str(tmp_path / "t"), int_string_schema(), name="events")
    assert t.name == "events"
    assert tf.open_table(str(tmp_path / "t")).name == "events"
    assert tf.open_table(str(tmp_path / "t")).table_id == t.table_id and len(t.table_id) == 32
    assert "events" in repr(t)


def test_read_buffer_reads_a_local_file_into_arrows_pool(tmp_path):
    """A whole-file read (CRC check, then decode) allocates from Arrow's pool, which the decoded
    columns reuse once it is freed (issue 39), where Python bytes are fresh pages each time."""
    import pyarrow as pa
    from tableformat.format.storage import Storage
    s = Storage(str(tmp_path))
    payload = bytes(range(256)) * 4096
    s.write("f.bin", payload)
    before = pa.total_allocated_bytes()
    buf = s.read_buffer("f.bin")
    assert isinstance(buf, pa.Buffer) and buf.to_pybytes() == payload
    assert pa.total_allocated_bytes() - before >= len(payload)
    with pytest.raises(FileNotFoundError):
        s.read_buffer("missing.bin")
