"""The whole API against a real S3-compatible server (moto_server) on 127.0.0.1."""

import pyarrow as pa
import pytest

s3fs = pytest.importorskip("s3fs")

import tableformat as tf  # noqa: E402

from helpers import assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema  # noqa: E402


def test_table_life_cycle_on_s3(s3_table_root):
    s3 = s3_table_root
    root, opts = s3
    t = tf.create_table(f"{root}/metrics", metrics_schema(), partitioning=metrics_partitioning(),
                        storage_options=opts)
    data = metrics_rows(1500)
    t.insert(data)
    t.update(data.select(["host", "metric", "time"]).slice(0, 10).append_column("value", pa.array([9.0] * 10)))
    t.delete(data.select(["host", "metric", "time"]).slice(10, 5))
    again = tf.open_table(f"{root}/metrics", storage_options=opts)
    assert again.scan().count() == 1495
    assert again.scan(filter=[("value", "=", 9.0)]).count() == 10
    assert again.scan(as_of=1).count() == 1500
    assert_same_rows(again.scan(as_of=1).to_arrow(), data)
    assert len(again.changes(1)) == 15
    with pytest.raises(tf.DuplicateKeyError,
                       match=r"1 key\(s\) already exist in table 'metrics' \(first: \('h000', 'disk', "):
        again.insert(data.slice(100, 1))


def test_commits_are_conditional_puts(s3_table_root):
    s3 = s3_table_root
    root, opts = s3
    t = tf.create_table(f"{root}/t", tf.Schema([tf.Column("k", "int64")], primary_key="k"), storage_options=opts)
    st = t.state
    assert t.log.try_commit(st, "A", [], {}, 0) is not None
    assert t.log.try_commit(st, "B", [], {}, 0) is None     # If-None-Match: * refused the second put
    with pytest.raises(tf.TableExistsError, match="a table already exists at"):
        tf.create_table(f"{root}/t", tf.Schema([tf.Column("k", "int64")], primary_key="k"), storage_options=opts)


def test_credentials_never_leak(s3_table_root):
    s3 = s3_table_root
    root, opts = s3
    t = tf.create_table(f"{root}/c", tf.Schema([tf.Column("k", "int64")], primary_key="k"), storage_options=opts)
    t.insert(pa.table({"k": [1]}))
    assert "sekrit" not in repr(t) and "sekrit" not in repr(t.storage)
    fs = t.storage.fs
    for path in fs.find(f"{root}/c"):
        assert b"sekrit" not in fs.cat_file(path)
    with pytest.raises(tf.TableNotFoundError, match=r"no table at 's3://\w+/missing' \(no _log/ commits\)") as e:
        tf.open_table(f"{root}/missing", storage_options=opts)
    assert "sekrit" not in str(e.value)


def test_alter_compaction_vacuum_and_check_on_s3(s3_table_root):
    root, opts = s3_table_root
    t = tf.create_table(f"{root}/m", metrics_schema(), partitioning=metrics_partitioning(), storage_options=opts)
    data = metrics_rows(900)
    for i in range(3):
        t.insert(data.take(pa.array(list(range(i, 900, 3)))))
    t.update(data.select(["host", "metric", "time"]).slice(0, 20).append_column("value", pa.array([3.0] * 20)))
    with t.alter() as a:
        a.add_column("note", "string", nullable=True, default="n/a")
    expect = t.scan().to_arrow()
    assert t.compact()
    assert_same_rows(t.scan().to_arrow(), expect)
    assert t.scan(as_of=3).count() == 900
    stray = f"{root}/m/tablets/r0-h0/stray.parquet"
    t.storage.fs.pipe_file(stray, b"orphan")
    assert t.vacuum(grace_seconds=0).files == ["tablets/r0-h0/stray.parquet"]
    assert t.check().ok
    # a lost commit race leaves no multipart upload open
    st = t.state
    assert t.log.try_commit(st, "A", [], {}, st.version) is not None
    assert t.log.try_commit(st, "B", [], {}, st.version) is None
    bucket = root[len("s3://"):]
    uploads = t.storage.fs.call_s3("list_multipart_uploads", Bucket=bucket)
    assert not uploads.get("Uploads")


def test_the_s3_fixture_starts_this_environments_moto_server(tmp_path, monkeypatch):
    """Another environment's moto_server first on PATH (a user's global install, of another
    version) must not be the one the tests start: the fixture takes the one beside sys.executable."""
    import os
    import shutil
    import sys
    from helpers import moto_command
    fake = tmp_path / "moto_server"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    assert shutil.which("moto_server") == str(fake)          # what the fixture used to start
    cmd = moto_command("127.0.0.1", 1)
    assert cmd is not None and str(fake) not in cmd
    assert cmd[0] in (os.path.join(os.path.dirname(sys.executable), "moto_server"), sys.executable)
