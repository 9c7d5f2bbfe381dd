"""Unit checks of the JVM connector's package-private classes (tests/spark/java/VectorsCheck.java),
compiled against the connector jar and run in a JVM of their own: batch views that count their
NULLs exactly, deletes and updates applied in place where that stays exact, and the executor's
delta cache bounded by bytes."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
from spark_jobs import connector  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK")


@pytest.fixture(scope="module")
def checks(tmp_path_factory) -> dict[str, str]:
    jar = connector.build_jar()
    jars, _ = connector._pyspark_jars()
    out = tmp_path_factory.mktemp("units")
    cp = os.pathsep.join([jar, str(jars / "*")])
    src = Path(__file__).parent / "java" / "VectorsCheck.java"
    subprocess.run(["javac", "-nowarn", "--release", "17", "-d", str(out), "-cp", cp, str(src)], check=True)
    import pyarrow as pa
    import pyarrow.parquet as pq
    parquet = out / "one.parquet"
    pq.write_table(pa.table({"c1": pa.array([1, 2, 3], pa.int32())}), parquet)
    run = subprocess.run(["java", "-cp", os.pathsep.join([str(out), cp]), "tableformat.connector.VectorsCheck",
                          str(parquet)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    return dict(line.split("=", 1) for line in run.stdout.splitlines() if "=" in line)


def test_a_patched_vector_counts_the_nulls_of_its_batch(checks):
    """A patch turns a NULL into a value and a value into NULL: one NULL in the batch, whatever
    the base's and the delta values' own counts are (3 between them)."""
    assert checks["patched.numNulls"] == "1" and checks["patched.hasNull"] == "true"
    assert checks["patchedNone.numNulls"] == "0" and checks["patchedNone.hasNull"] == "false"


def test_a_compacted_vector_counts_only_the_rows_it_shows(checks):
    assert checks["remapped.numNulls"] == "0" and checks["remapped.hasNull"] == "false"
    assert checks["remappedPatched.numNulls"] == "1"


def test_deleted_rows_are_compacted_in_place_where_the_null_count_stays_exact(checks):
    """Rows of a NULL-free reader vector move down in place (strings and wide decimals by their
    offsets); a vector holding NULLs is left to a row map."""
    assert checks["inPlace.moved"] == "true"
    assert checks["inPlace.rows"] == ("s0/1234567890123456789012345.0000000000/true "
                                      "s2/1234567890123456789012345.2000000000/true "
                                      "s4/1234567890123456789012345.4000000000/true")
    assert checks["inPlace.withNulls"] == "false"


def test_updates_are_written_in_place_unless_they_bring_a_null(checks):
    assert checks["patch.inPlace"] == "true,7.5,2.0,7.5,0"
    assert checks["patch.toNull"] == "true,true,1,0"


def test_closing_a_slice_closes_every_reader_and_rethrows_the_first_failure(checks):
    """RowSetBatchReader closes its slice's readers through Closer: a close() that throws does
    not leave the others open; the first failure surfaces, the second rides along suppressed."""
    assert checks["close.all"] == "3,first+1:second"


def test_a_reader_whose_constructor_fails_closes_its_file(checks):
    """ParquetColumnsReader opens the file, then fails on a type it cannot copy: the stream it
    opened is closed before the error leaves the constructor."""
    assert checks["ctor.leak"] == "1,0,UnsupportedOperationException"


def test_the_delta_cache_is_bounded_by_bytes_least_recently_used_first(checks):
    assert checks["bytes.ordered"] == "true"
    assert checks["cache.afterBig"] == "3,true"
    assert checks["cache.lru"] == "true,true,true"
    assert checks["cache.tooBig"] == "true"
