import os
import shutil
import socket
import subprocess
import sys
import time
import decimal

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf

T0 = 1_700_000_000_000_000


def metrics_schema():
    return tf.Schema([
        tf.Column("host", "string"), tf.Column("metric", "string"), tf.Column("time", "unixtime_micros"),
        tf.Column("value", "double", nullable=True, encoding="bitshuffle", compression="lz4"),
        tf.Column("price", "decimal(18,2)", nullable=True),
        tf.Column("tag", "varchar(16)", nullable=True, default="none"),
    ], primary_key=["host", "metric", "time"])


def metrics_partitioning():
    return tf.PartitionSchema(hash=[tf.HashPartition(["host", "metric"], buckets=4)],
                              range=tf.RangePartition(["time"], bounds=[(T0, T0 + 10**12)], splits=[T0 + 10**11]))


def metrics_rows(n, seed=0, hosts=20, start=0):
    rng = np.random.default_rng(seed)
    i = np.arange(start, start + n)
    return pa.table({
        "host": pa.array([f"h{x % hosts:03d}" for x in i]),
        "metric": pa.array(np.array(["cpu", "mem", "disk"], dtype=object)[(i // hosts) % 3]),
        "time": pa.array(T0 + (i // (hosts * 3)) * 3_000_000_000, pa.timestamp("us", tz="UTC")),
        "value": pa.array(np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n))).cast(pa.float64()),
        "price": pa.array([decimal.Decimal(int(x)).scaleb(-2) if x % 7 else None
                           for x in rng.integers(0, 10**6, n)], pa.decimal128(18, 2)),
        "tag": pa.array([["a", "b", None, "c"][x % 4] for x in i]),
    })


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession for the whole run (starting one takes 10-19 s)."""
    pytest.importorskip("pyspark")
    from spark_jobs.session import delta_available, get_spark
    # Delta's jars and SQL extension must be there when the JVM starts, so the one
    # session has them whenever delta-spark is installed (about 8 s of Ivy resolution).
    s = get_spark("tableformat-tests", "local[2]", delta=delta_available())
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture
def table_uri(tmp_path):
    return str(tmp_path / "metrics")


@pytest.fixture
def metrics_table(table_uri):
    return tf.create_table(table_uri, metrics_schema(), partitioning=metrics_partitioning())


def sort_rows(t: pa.Table, keys=("host", "metric", "time")) -> pa.Table:
    return t.sort_by([(k, "ascending") for k in keys]) if t.num_rows else t


def table_files(root) -> set:
    import os
    out = set()
    for d, _, files in os.walk(root):
        for f in files:
            out.add(os.path.join(d, f))
    return out


def _norm(v):
    return "NaN" if isinstance(v, float) and v != v else v


def assert_same_rows(got: pa.Table, expect: pa.Table, keys=("host", "metric", "time")):
    """Same rows regardless of order (NaN equal to NaN)."""
    got, expect = sort_rows(got, keys), sort_rows(expect, keys)
    assert got.num_rows == expect.num_rows
    assert got.column_names == expect.column_names
    for c in expect.column_names:
        assert [_norm(v) for v in got[c].to_pylist()] == [_norm(v) for v in expect[c].to_pylist()], c


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3_endpoint():
    exe = shutil.which("moto_server") or os.path.join(os.path.dirname(sys.executable), "moto_server")
    if not os.path.exists(exe):
        pytest.skip("moto_server is not installed (pip install -e '.[dev]')")
    port = _free_port()
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
def s3_table_root(s3_endpoint, request):
    """(s3://bucket, storage options) on a real S3-compatible server on 127.0.0.1."""
    s3fs = pytest.importorskip("s3fs")
    opts = {"endpoint_url": s3_endpoint, "key": "testing", "secret": "sekrit-do-not-print"}
    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": s3_endpoint}, key="testing", secret="sekrit-do-not-print")
    bucket = f"b{abs(hash(request.node.name)) % 10**8}"
    fs.mkdir(bucket)
    return f"s3://{bucket}", opts




# --- layers: a marker per test from what it runs, and one pass/fail line per layer -----------
LAYERS = {"engine": "the pure-Python engine", "cli": "the command line", "spark": "runs local Spark",
          "s3": "runs against the loopback S3 server", "airflow": "runs real Airflow DAGs"}
LAYER_COUNTS: dict = {}     # layer -> outcome -> count, for the summary


def pytest_configure(config):
    for name, doc in LAYERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")


def _layer(item) -> str:
    """The layer a test guards, from the fixtures it uses and its file: a red run then says
    which layer broke (`pytest -m spark` runs one)."""
    fixtures, name = set(item.fixturenames), item.path.name
    if "airflow" in name:
        return "airflow"
    if fixtures & {"s3_endpoint", "s3_table_root"}:
        return "s3"
    if "spark" in fixtures or "spark" in name:
        return "spark"
    return "cli" if name.startswith("test_cli") else "engine"


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(getattr(pytest.mark, _layer(item)))


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and not report.passed):
        layer = next((m for m in LAYERS if m in report.keywords), "engine")
        counts = LAYER_COUNTS.setdefault(layer, {})
        counts[report.outcome] = counts.get(report.outcome, 0) + 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    counts = LAYER_COUNTS
    if not counts:
        return
    terminalreporter.section("layers")
    for layer in LAYERS:
        c = counts.get(layer)
        if c:
            verdict = "FAIL" if c.get("failed") else "ok"
            terminalreporter.write_line(f"layer {layer:8s} {verdict:4s} {c.get('passed', 0)} passed, "
                                        f"{c.get('failed', 0)} failed, {c.get('skipped', 0)} skipped")
