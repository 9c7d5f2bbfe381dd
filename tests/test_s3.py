"""The whole API against a real S3-compatible server (moto_server) on 127.0.0.1."""
import os
import shutil
import socket
import subprocess
import sys
import time

import pyarrow as pa
import pytest

s3fs = pytest.importorskip("s3fs")
if not shutil.which("moto_server") and not os.path.exists(os.path.join(os.path.dirname(sys.executable), "moto_server")):
    pytest.skip("moto_server is not installed", allow_module_level=True)

import tableformat as tf  # noqa: E402

from conftest import assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema  # noqa: E402


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3_endpoint():
    port = _free_port()
    exe = shutil.which("moto_server") or os.path.join(os.path.dirname(sys.executable), "moto_server")
    proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def s3(s3_endpoint, request):
    opts = {"endpoint_url": s3_endpoint, "key": "testing", "secret": "sekrit-do-not-print"}
    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": s3_endpoint}, key="testing", secret="sekrit-do-not-print")
    bucket = f"b{abs(hash(request.node.name)) % 10**8}"
    fs.mkdir(bucket)
    return f"s3://{bucket}", opts


def test_table_life_cycle_on_s3(s3):
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
    with pytest.raises(tf.DuplicateKeyError):
        again.insert(data.slice(100, 1))


def test_commits_are_conditional_puts(s3):
    root, opts = s3
    t = tf.create_table(f"{root}/t", tf.Schema([tf.Column("k", "int64")], primary_key="k"), storage_options=opts)
    st = t.state
    assert t._log.try_commit(st, "A", [], {}, 0) is not None
    assert t._log.try_commit(st, "B", [], {}, 0) is None     # If-None-Match: * refused the second put
    with pytest.raises(tf.TableExistsError):
        tf.create_table(f"{root}/t", tf.Schema([tf.Column("k", "int64")], primary_key="k"), storage_options=opts)


def test_credentials_never_leak(s3):
    root, opts = s3
    t = tf.create_table(f"{root}/c", tf.Schema([tf.Column("k", "int64")], primary_key="k"), storage_options=opts)
    t.insert(pa.table({"k": [1]}))
    assert "sekrit" not in repr(t) and "sekrit" not in repr(t._storage)
    fs = t._storage.fs
    for path in fs.find(f"{root}/c"):
        assert b"sekrit" not in fs.cat_file(path)
    with pytest.raises(tf.TableNotFoundError) as e:
        tf.open_table(f"{root}/missing", storage_options=opts)
    assert "sekrit" not in str(e.value)
