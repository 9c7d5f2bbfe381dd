"""Building the JVM connector's jar: compiled with javac against the installed pyspark at first use,
cached by a hash of its sources and the Spark version; without a JDK, a clear reason."""
import shutil
import subprocess
import sys
import zipfile

import pytest

pytest.importorskip("pyspark")
from spark_jobs import connector  # noqa: E402


def test_without_a_jdk_the_reason_is_given(tmp_path, monkeypatch):
    monkeypatch.setenv("TABLEFORMAT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))          # no javac anywhere
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(connector.ConnectorUnavailable, match="javac"):
        connector.build_jar()


@pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK")
def test_jar_is_built_once_per_source_hash_and_printed(tmp_path, monkeypatch):
    monkeypatch.setenv("TABLEFORMAT_CACHE_DIR", str(tmp_path / "cache"))
    jar = connector.build_jar()
    assert jar.endswith(connector.jar_name()) and "spark" in connector.jar_name()
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
    assert "tableformat/connector/TableFormatSource.class" in names
    # every package of the source tree is compiled: the JVM's own log reader and planner too
    assert {"tableformat/log/LogReader.class", "tableformat/plan/Planner.class"} <= names
    assert "META-INF/services/org.apache.spark.sql.sources.DataSourceRegister" in names
    mtime = (tmp_path / "cache" / "tableformat" / "connector" / connector.jar_name()).stat().st_mtime_ns
    assert connector.build_jar() == jar                   # cached: never rebuilt nor overwritten
    assert (tmp_path / "cache" / "tableformat" / "connector" / connector.jar_name()).stat().st_mtime_ns == mtime
    out = subprocess.run([sys.executable, "-m", "spark_jobs.connector"], capture_output=True, text=True,
                         env={**__import__("os").environ, "TABLEFORMAT_CACHE_DIR": str(tmp_path / "cache")})
    assert out.returncode == 0 and out.stdout.strip() == jar


@pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK")
def test_an_unwritable_cache_is_a_reason_not_a_crash(tmp_path, monkeypatch):
    """get_spark builds the jar at session start: a cache directory it cannot create must leave
    the connector unavailable (Spark reads take the other paths), not fail the session."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory would go")
    monkeypatch.setenv("TABLEFORMAT_CACHE_DIR", str(blocker))
    with pytest.raises(connector.ConnectorUnavailable, match="cannot write the connector jar"):
        connector.build_jar()
    monkeypatch.setattr(connector, "_BUILT", {})
    jar, why = connector.jar_or_reason()
    assert jar is None and "cannot write the connector jar" in why


@pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK")
def test_two_threads_building_at_once_both_get_the_jar(tmp_path, monkeypatch):
    """Threads of one process (an Airflow worker, a notebook) build concurrently: each stages its
    own temporary jar, so neither moves the other's half-written file into place."""
    import threading
    monkeypatch.setenv("TABLEFORMAT_CACHE_DIR", str(tmp_path / "cache"))
    both_staged = threading.Barrier(2, timeout=120)
    real_copy = connector.shutil.copyfile

    def copy_then_wait(src, dst):                   # forces the interleaving: both copy before either renames
        out = real_copy(src, dst)
        both_staged.wait()
        return out
    monkeypatch.setattr(connector.shutil, "copyfile", copy_then_wait)
    results = []

    def build():
        try:
            results.append(connector.build_jar())
        except connector.ConnectorUnavailable as e:
            results.append(e)
    threads = [threading.Thread(target=build) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert all(isinstance(r, str) for r in results) and len(set(results)) == 1, results
    with zipfile.ZipFile(results[0]) as z:
        assert z.testzip() is None
    assert not [p for p in (tmp_path / "cache" / "tableformat" / "connector").iterdir() if p.name.endswith(".tmp")]
