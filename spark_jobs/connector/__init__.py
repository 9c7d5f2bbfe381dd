"""The JVM connector: a Spark DataSource V2 source (`tableformat-jvm`) that reads a table's base
files with Spark's own vectorized Parquet reader and applies REDO (and UNDO) records inside each
ColumnarBatch. The JVM plans the read itself from the log (`src/main/java/tableformat/{log,plan}`,
a second implementation of specs/format.md §8 and §9.4): `read_table`, `register_view` and the
catalog hand it a table path; a plan as JSON (`plan.py`, Python's `Snapshot.read_plan`) is still taken.

Its Java sources (`src/main/java/`, Maven's layout) ship with the package and are compiled at first
use with the JDK's `javac` against the *installed* pyspark's jars, so one source tree serves each Spark version;
the jar is cached under the user's cache directory, named by a hash of the sources and the Spark
version (a jar a running JVM loaded is never overwritten). No binary is committed.

    python -m spark_jobs.connector        # prints the jar's path, for spark-submit --jars
"""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

log = logging.getLogger(__name__)

NAME = "tableformat-jvm"
SOURCE_CLASS = "tableformat.connector.TableFormatSource"
_HERE = Path(__file__).resolve().parent
_SOURCES = _HERE / "src" / "main" / "java"
_RESOURCES = _HERE / "src" / "main" / "resources"
_BUILT: dict[str, tuple[str | None, str | None]] = {}


class ConnectorUnavailable(Exception):
    """The connector jar cannot be built here (the message says why)."""


def _pyspark_jars() -> tuple[Path, str]:
    import pyspark
    return Path(pyspark.__file__).resolve().parent / "jars", pyspark.__version__


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").exists():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def _files() -> list[Path]:
    return sorted(p for d in (_SOURCES, _RESOURCES) for p in d.rglob("*") if p.is_file())


def cache_dir() -> Path:
    base = os.environ.get("TABLEFORMAT_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tableformat" / "connector"


def jar_name() -> str:
    """The jar's file name: the Spark version and a hash of every source and resource file."""
    jars, version = _pyspark_jars()
    h = hashlib.sha256(version.encode())
    for p in _files():
        h.update(str(p.relative_to(_HERE)).encode())
        h.update(p.read_bytes())
    return f"tableformat-connector-spark{version}-{h.hexdigest()[:16]}.jar"


def build_jar() -> str:
    """The connector jar's path, compiling it first if this Spark and these sources have none
    cached yet. Raises ConnectorUnavailable (no JDK, no pyspark, a compile error)."""
    try:
        jars, version = _pyspark_jars()
    except ImportError as e:
        raise ConnectorUnavailable(f"pyspark is not installed ({e})") from e
    out = cache_dir() / jar_name()
    if out.exists():
        return str(out)
    javac = _javac()
    if javac is None:
        raise ConnectorUnavailable("no Java compiler (javac) on PATH or in JAVA_HOME: install a JDK 17+")
    try:
        _compile(javac, jars, version, out)
    except OSError as e:     # an unwritable cache, a full disk, a javac that cannot run: a reason, not a crash
        raise ConnectorUnavailable(f"cannot write the connector jar {out} ({e}); set TABLEFORMAT_CACHE_DIR "
                                   "to a writable directory") from e
    log.info("built the tableformat connector for Spark %s: %s", version, out)
    return str(out)


def _compile(javac: str, jars: Path, version: str, out: Path) -> None:
    """javac into a temporary directory, then the jar moved into the cache atomically."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tf-connector-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        sources = [str(p) for p in sorted(_SOURCES.rglob("*.java"))]
        proc = subprocess.run([javac, "-nowarn", "-encoding", "UTF-8", "--release", "17", "-d", str(classes),
                               "-cp", str(jars / "*"), *sources], capture_output=True, text=True)
        if proc.returncode != 0:
            raise ConnectorUnavailable(f"javac failed against pyspark {version}:\n{proc.stderr[-4000:]}")
        staged = Path(tmp) / out.name
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: tableformat\n")
            for p in sorted(classes.rglob("*")):
                if p.is_file():
                    z.write(p, str(p.relative_to(classes)))
            for p in sorted(_RESOURCES.rglob("*")):
                if p.is_file():
                    z.write(p, str(p.relative_to(_RESOURCES)))
        # a staging name of its own (not just the pid: threads of one process build at once too),
        # then an atomic rename: a concurrent build of the same sources writes the same bytes
        fd, tmp_out = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
        os.close(fd)
        try:
            shutil.copyfile(staged, tmp_out)
            os.chmod(tmp_out, 0o644)        # mkstemp's 0600 would hide the jar from other users of the cache
            os.replace(tmp_out, out)
        finally:
            if os.path.exists(tmp_out):
                os.unlink(tmp_out)


def jar_or_reason() -> tuple[str | None, str | None]:
    """(jar path, None) or (None, why the connector is unavailable); computed once per process."""
    if "jar" not in _BUILT:
        try:
            _BUILT["jar"] = (build_jar(), None)
        except ConnectorUnavailable as e:
            _BUILT["jar"] = (None, str(e))
    return _BUILT["jar"]


def loaded(spark) -> str | None:
    """Why this session cannot use the connector (None: it can): its JVM loads the jar only when
    the jar is on `spark.jars` at start (get_spark does that)."""
    jar, why = jar_or_reason()
    if jar is None:
        return why
    jars = [j for j in (spark.conf.get("spark.jars", "") or "").split(",") if j]
    if any(Path(j.split(":", 1)[-1] if j.startswith("file:") else j).name == Path(jar).name for j in jars):
        return None
    return ("the Spark session was started without the connector jar (start it with "
            "spark_jobs.session.get_spark(), or pass --jars $(python -m spark_jobs.connector))")


def gateway(spark):
    """The session's py4j view of the JVM, or None for a Spark Connect session (it has none).
    pyspark names the gateway privately (`_jvm`); this module is the one place that reaches it."""
    try:
        return spark._jvm
    except Exception:           # Spark Connect: no py4j gateway
        return None


def spark_insert_available(spark) -> bool:
    """Whether the loaded connector has the JVM rowset writers (`tableformat.write.SparkInsert`)."""
    jvm = gateway(spark)
    return jvm is not None and bool(jvm.tableformat.write.SparkInsert.available())


def spark_insert(spark, df, root: str, version: int, table_id: str | None, on_duplicate: str,
                 partitions: int) -> list[str]:
    """`tableformat.write.SparkInsert.run` over the DataFrame's JVM plan: one JSON result per task."""
    return list(gateway(spark).tableformat.write.SparkInsert.run(df._jdf, root, version, table_id, on_duplicate,
                                                                 partitions))
