"""The data source writer's task (`TableFormatWriter.write`): rows in any order, sorted and streamed
in chunks of bounded bytes through the rowset writers, never held whole; keys repeated across
chunks fail at commit like keys repeated across tasks."""
import json

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import tableformat as tf  # noqa: E402
from spark_jobs.datasource import TableFormatWriter  # noqa: E402

from helpers import assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema, table_files  # noqa: E402


def _writer(uri, **options):
    return TableFormatWriter({"path": uri, **{k: str(v) for k, v in options.items()}}, overwrite=False)


def _shuffled(rows, seed=5):
    return rows.take(pa.array(np.random.default_rng(seed).permutation(rows.num_rows)))


def test_a_task_writes_chunk_by_chunk_before_its_input_ends(tmp_path):
    uri = str(tmp_path / "m")
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    rows = _shuffled(metrics_rows(6000, hosts=50))
    batches = rows.to_batches(max_chunksize=500)
    files_seen_before_last = []

    def feed():
        for i, b in enumerate(batches):
            if i == len(batches) - 1:
                files_seen_before_last.extend(table_files(uri))
            yield b

    w = _writer(uri, write_chunk_bytes=rows.nbytes // 6)
    msg = w.write(feed())
    assert any("/base-" in f for f in files_seen_before_last)       # chunks were written as they filled
    assert msg.rows == 6000 and msg.duplicates == 0
    w.commit([msg])
    assert_same_rows(t.to_arrow(), rows, keys=("host", "metric", "time"))
    assert t.check().ok
    # each chunk wrote its own rowsets: more rowsets than tablets hit, all keys checked at commit
    assert len(t.state.rowsets) > len({r.tablet for r in t.state.rowsets.values()})


def test_a_key_repeated_across_chunks_fails_the_commit_and_leaves_no_files(tmp_path):
    uri = str(tmp_path / "m")
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    t.insert(metrics_rows(10, start=5000))
    before, files = t.version, table_files(uri)
    rows = metrics_rows(3000, hosts=30)
    w = _writer(uri, write_chunk_bytes=rows.nbytes // 3)
    msg = w.write(iter(pa.concat_tables([rows, rows.slice(0, 1)]).to_batches(max_chunksize=300)))
    assert msg.duplicates == 0                  # the repeat sits in another chunk: the commit finds it
    assert json.loads(msg.files)
    with pytest.raises(tf.DuplicateKeyError,
                       match=r"1 key\(s\) appear more than once in the input of table 'm'; use insert_ignore"):
        w.commit([msg])
    w.abort([msg])
    t = tf.open_table(uri)
    assert t.version == before and table_files(uri) == files


def test_a_repeat_within_a_chunk_fails_in_the_task(tmp_path):
    uri = str(tmp_path / "m")
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    files = table_files(uri)
    rows = _shuffled(metrics_rows(2000))
    w = _writer(uri)
    msg = w.write(iter(pa.concat_tables([rows, rows.slice(7, 1)]).to_batches(max_chunksize=256)))
    assert msg.duplicates == 1
    with pytest.raises(tf.DuplicateKeyError, match=r"1 key\(s\) already exist in table at '"):
        w.commit([msg])
    assert t.version == 0 and table_files(uri) == files


@pytest.mark.parametrize("bad", ["0", "-5", "many"])
def test_bad_chunk_size_is_a_typed_error(tmp_path, bad):
    uri = str(tmp_path / "m")
    tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    with pytest.raises(tf.InvalidOptionError, match="write_chunk_bytes"):
        _writer(uri, write_chunk_bytes=bad)


def test_a_task_failing_after_its_first_chunk_leaves_no_files(tmp_path):
    """A failed task reports nothing to the driver: it deletes its finished chunks' files itself
    (found by the adversarial review)."""
    uri = str(tmp_path / "m")
    t = tf.create_table(uri, metrics_schema(), partitioning=metrics_partitioning())
    files = table_files(uri)
    rows = _shuffled(metrics_rows(3000, hosts=30))
    bad = rows.slice(0, 1).set_column(0, "host", pa.array([None], pa.string()))
    w = _writer(uri, write_chunk_bytes=rows.nbytes // 4)
    with pytest.raises(tf.NullValueError,
                       match=r"rows to route: key column 'host' has 1 NULL value\(s\); a primary key is never"):
        w.write(iter(pa.concat_tables([rows, bad]).to_batches(max_chunksize=300)))
    assert t.version == 0 and table_files(uri) == files
