"""Fixtures for every test, a layer marker per test from its directory, and one pass/fail line
per layer at the end of a run (CI reads them). The layout is in tests/README.md; helpers that
are not fixtures are in tests/helpers.py."""
import os

import pytest

import tableformat as tf
from helpers import metrics_partitioning, metrics_schema, start_moto


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


@pytest.fixture(scope="module")
def jvm_connector(spark):
    """The JVM connector (spark_jobs/connector) loaded into the session; a module that needs it
    (`pytestmark = pytest.mark.usefixtures("jvm_connector")`) is skipped where it cannot be built."""
    from spark_jobs.connector import loaded
    why = loaded(spark)
    if why:
        pytest.skip(f"the JVM connector is unavailable: {why}")


@pytest.fixture(scope="session")
def connector_jar():
    """The connector jar that `bin/spark-sql --jars` takes; skips where it cannot be built."""
    from spark_jobs.connector import ConnectorUnavailable, build_jar
    try:
        return build_jar()
    except ConnectorUnavailable as e:
        pytest.skip(f"the JVM connector is unavailable: {e}")


@pytest.fixture
def table_uri(tmp_path):
    return str(tmp_path / "metrics")


@pytest.fixture
def metrics_table(table_uri):
    return tf.create_table(table_uri, metrics_schema(), partitioning=metrics_partitioning())


@pytest.fixture(scope="session")
def s3_endpoint():
    proc, url = start_moto()
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


@pytest.fixture
def logged_s3_root(tmp_path, request):
    """A loopback S3 server of this test's own, logging every request it answers (method, path,
    status: `helpers.server_requests`) to a file, and a bucket on it: (s3://bucket, storage options,
    the log's path). The JVM's requests (s3a) are counted there, where no client hook reaches."""
    s3fs = pytest.importorskip("s3fs")
    log = tmp_path / "s3-requests.log"
    with open(log, "w") as f:
        proc, url = start_moto(stderr=f)
    request.addfinalizer(lambda: (proc.terminate(), proc.wait(10)))
    opts = {"endpoint_url": url, "key": "testing", "secret": "sekrit-do-not-print"}
    s3fs.S3FileSystem(client_kwargs={"endpoint_url": url}, key="testing", secret="sekrit-do-not-print",
                      skip_instance_cache=True).mkdir("logged")
    return "s3://logged", opts, log


@pytest.fixture(scope="session")
def hdfs(tmp_path_factory):
    """A real HDFS (Hadoop's MiniDFSCluster: a NameNode and two DataNodes, WebHDFS on) in a JVM of its
    own for the whole run, started by the launcher users run (`python -m spark_jobs.minihdfs`); its jars
    come from Maven Central once per machine."""
    pytest.importorskip("pyspark")          # the Hadoop version to run is pyspark's
    from spark_jobs.minihdfs import MiniHdfs
    cluster = MiniHdfs(tmp_path_factory.mktemp("minihdfs"))
    yield cluster
    cluster.stop()


@pytest.fixture
def hdfs_table_root(hdfs, request):
    """(hdfs://127.0.0.1:<port>/<a directory of this test's own>, storage options)."""
    return f"{hdfs.uri}/t{abs(hash(request.node.nodeid)) % 10**10}", dict(hdfs.storage_options)


# --- layers: a marker per test from its directory, and one pass/fail line per layer ----------
LAYERS = {"engine": "the pure-Python engine", "cli": "the command line", "spark": "runs local Spark",
          "s3": "runs against the loopback S3 server", "hdfs": "runs against a MiniDFSCluster (a real HDFS)",
          "airflow": "runs real Airflow DAGs"}
# tests/<dir>/ -> its layer; the engine's tests mirror its wings (tableformat/format/ -> tests/format/, ...)
DIR_LAYER = {"format": "engine", "read": "engine", "log": "engine", "write": "engine", "maintenance": "engine",
             "interop": "engine", "api": "engine", "project": "engine", "cli": "cli", "spark": "spark", "s3": "s3",
             "hdfs": "hdfs",
             "airflow": "airflow"}
TESTS = os.path.dirname(os.path.abspath(__file__))
LAYER_OF: dict = {}         # test id -> its layer (a test's keywords also hold its directory's name)
LAYER_COUNTS: dict = {}     # layer -> outcome -> count, for the summary


def pytest_configure(config):
    for name, doc in LAYERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")


def _layer(item) -> str:
    """The layer a test guards: its directory's, unless it needs the S3 server or Spark outside
    tests/s3/ and tests/spark/ (an engine concept checked on S3 too), whose layer it is then.
    A red run then says which layer broke (`pytest -m spark` runs one layer)."""
    top = os.path.relpath(str(item.path), TESTS).split(os.sep)[0]
    if top not in DIR_LAYER:
        raise pytest.UsageError(f"{item.nodeid}: tests/{top}/ has no layer (conftest.py DIR_LAYER)")
    fixtures = set(item.fixturenames)
    if DIR_LAYER[top] == "airflow":
        return "airflow"
    if fixtures & {"s3_endpoint", "s3_table_root", "logged_s3_root"}:
        return "s3"
    if fixtures & {"hdfs", "hdfs_table_root"}:
        return "hdfs"
    if "spark" in fixtures:
        return "spark"
    return DIR_LAYER[top]


def pytest_collection_modifyitems(config, items):
    for item in items:
        LAYER_OF[item.nodeid] = layer = _layer(item)
        item.add_marker(getattr(pytest.mark, layer))


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and not report.passed):
        layer = LAYER_OF.get(report.nodeid, "engine")
        counts = LAYER_COUNTS.setdefault(layer, {})
        counts[report.outcome] = counts.get(report.outcome, 0) + 1


def pytest_collectreport(report):
    """A module skipped as a whole (a module-level importorskip) is one skip in pytest's summary:
    count it in its directory's layer too, so the layer lines add up to the summary."""
    if report.skipped:
        top = report.nodeid.split("::")[0].split("/")
        layer = DIR_LAYER.get(top[1] if len(top) > 2 and top[0] == "tests" else "", "engine")
        counts = LAYER_COUNTS.setdefault(layer, {})
        counts["skipped"] = counts.get("skipped", 0) + 1


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
