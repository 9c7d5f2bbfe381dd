"""Unit checks of the JVM connector's package-private classes (tests/spark/java/, one check per package),
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
from tableformat.format.types import TYPE_NAMES, parse_type  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK")


@pytest.fixture(scope="module")
def checks(tmp_path_factory) -> dict[str, str]:
    jar = connector.build_jar()
    jars, _ = connector._pyspark_jars()
    out = tmp_path_factory.mktemp("units")
    cp = os.pathsep.join([jar, str(jars / "*")])
    srcs = sorted(str(p) for p in (Path(__file__).parent / "java").rglob("*.java"))
    subprocess.run(["javac", "-nowarn", "--release", "17", "-d", str(out), "-cp", cp, *srcs], check=True)
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


def test_rowids_are_unsigned_32_bit(checks):
    """The format's rowids are uint32 (specs/format.md §9): deleted rows past 2^31 are kept,
    found and dropped from a batch; 2^32 is refused."""
    past = 2**31 + 5
    assert checks["rowids.unsigned"] == f"true,false,{past},{2**32 - 1},-1,yes"
    assert checks["rowids.live"] == "[0, 1, 3][0, 1]"


def test_a_plan_missing_or_adding_a_field_is_refused(checks):
    """Every field of the read plan is required and no other is allowed: a missing size no
    longer turns the size check off, a missing max_ts or order no longer reads as 0."""
    assert checks["plan.good"] == "10,2,t"
    refused = dict(x.split(":", 1) for x in checks["plan.refused"].rstrip(";").split(";"))
    assert refused["size"] == 'a delta lacks the field "size"'
    assert refused["max_ts"] == 'a delta lacks the field "max_ts"'
    assert refused["order"] == 'a delta lacks the field "order"'
    assert refused["base.size"] == 'a base lacks the field "size"'
    assert refused["unknown"] == 'a delta has the unknown field "num_records"'
    assert refused["top"] == 'a plan has the unknown field "extra"'
    assert refused["type"].startswith("delta.size is")
    assert refused["rows"].startswith("rowset.num_rows is 4294967297")


# one column type of every logical type (specs/format.md §2.1)
SAMPLE_TYPES = [parse_type(k) for k in TYPE_NAMES if k not in ("decimal", "varchar")] + \
    [parse_type("decimal(18,2)"), parse_type("decimal(38,10)"), parse_type("varchar(8)")]


@pytest.fixture(scope="module")
def contract() -> dict:
    import json
    jars, _ = connector._pyspark_jars()
    cp = os.pathsep.join([connector.build_jar(), str(jars / "*")])
    run = subprocess.run(["java", "-cp", cp, "tableformat.connector.Contract", *[t.spark_name for t in SAMPLE_TYPES]],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def test_the_jvm_delta_op_codes_are_the_engines(contract):
    from tableformat.format.constants import DeltaOp
    assert contract["delta_ops"] == {op.name: int(op) for op in DeltaOp}


def test_the_plan_python_sends_has_exactly_the_fields_the_jvm_takes(contract, tmp_path):
    """connector_plan's objects, at every level, hold the fields ReadPlan.FIELDS requires, no more."""
    import pyarrow as pa

    import tableformat as tf
    from helpers import metrics_partitioning, metrics_rows, metrics_schema
    from spark_jobs.connector.plan import connector_plan
    t = tf.create_table(str(tmp_path / "t"), metrics_schema(), partitioning=metrics_partitioning())
    data = metrics_rows(200)
    t.insert(data)
    t.update(data.select(["host", "metric", "time"]).slice(0, 10).append_column("value", pa.array([1.5] * 10)))
    t.delete(data.select(["host", "metric", "time"]).slice(20, 5))
    snap = t.snapshot()
    plan = snap.read_plan()
    d = connector_plan(snap.storage, plan, plan.rowsets)
    fields = contract["plan_fields"]
    assert sorted(d) == sorted(fields["plan"])
    assert all(sorted(c) == sorted(fields["column"]) for c in d["columns"])
    assert all(sorted(r) == sorted(fields["rowset"]) for r in d["rowsets"])
    assert all(sorted(b) == sorted(fields["base"]) for r in d["rowsets"] for b in r["base"])
    deltas = [f for r in d["rowsets"] for f in r["redo"] + r["undo"]]
    assert deltas and all(sorted(f) == sorted(fields["delta"]) for f in deltas)


def test_the_delta_cache_is_bounded_by_bytes_least_recently_used_first(checks):
    assert checks["bytes.ordered"] == "true"
    assert checks["cache.afterBig"] == "3,true"
    assert checks["cache.lru"] == "true,true,true"
    assert checks["cache.tooBig"] == "true"


def test_the_jvm_copies_each_type_as_the_engines_table_says(contract):
    """CellCopy's kind of the Spark type a plan names for a column is the kind `TYPE_NAMES`
    gives its logical type (format/types.py owns the mapping; the JVM follows it)."""
    assert {t.name for t in SAMPLE_TYPES} >= set(TYPE_NAMES) - {"decimal", "varchar"}
    assert contract["physical"] == {t.spark_name: t.physical for t in SAMPLE_TYPES}


def test_spark_types_derive_from_the_engines_table():
    """The Spark jobs' type of a column (built from its Delta/JSON name) is the Spark SQL type
    `TYPE_NAMES` names, and the Delta mirror's name is Spark's JSON name of it."""
    from spark_jobs.snapshots import spark_type
    for t in SAMPLE_TYPES:
        assert spark_type(t).simpleString() == t.spark_name
        assert spark_type(t).typeName() == t.delta_name.split("(")[0]
