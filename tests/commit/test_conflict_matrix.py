"""Every cell of the conflict matrix, from the matrix the code uses (tableformat.conflicts.MATRIX).

For each pair (later, earlier): the later writer plans its write on a snapshot, the earlier
one commits, then the later one commits. Both touch the same rows: key 1..5 live in one
rowset R of tablet r0; inserts add key 50 to r0; a mutation deletes key 1, upserts key 50
and updates key 2; an alter drops r0's range and adds a column; compactions work on R;
vacuum records a history horizon. The outcome must be the cell's: REBASE (the later write
commits), RESTART (RestartRequired: plan again) or FAIL (a typed error). specs/format.md §10
prints the same matrix, and this test checks that it does.
"""
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import tableformat as tf
from tableformat.conflicts import MATRIX, OPERATIONS, Outcome

pytest.importorskip("pyspark")
from spark_jobs.merge import merge_partition  # noqa: E402
from spark_jobs.writes import commit_fragments, write_partition  # noqa: E402

SPEC = Path(__file__).resolve().parents[2] / "specs" / "format.md"


def _schema():
    return tf.Schema([tf.Column("key", "int64"), tf.Column("val", "int64", nullable=True)], primary_key="key")


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """Rowset R (keys 1..5) with two REDO files, one REDO-bearing column, and an ancient UNDO file."""
    uri = str(tmp_path_factory.mktemp("matrix") / "template")
    t = tf.create_table(uri, _schema(), tf.PartitionSchema(range=tf.RangePartition("key", bounds=[(0, 100), (100, 200)])),
                        properties={"history_max_age": 3600})
    t.insert(pa.table({"key": [1, 2, 3, 4, 5], "val": [0] * 5}))
    t.update(pa.table({"key": [1, 2, 3, 4, 5], "val": [1] * 5}))
    (rid,) = t.state.rowsets
    assert t.compact_action(_action(t, "major_delta")) is not None          # writes an UNDO file
    with t.alter() as a:
        a.set_property("history_max_age", 0)                                # that UNDO is now ancient
    t.update(pa.table({"key": [2], "val": [2]}))
    t.update(pa.table({"key": [3], "val": [3]}))
    return uri


def _action(t, kind):
    st = t.state
    (rid,) = [r for r in st.rowsets if st.rowsets[r].num_rows == 5]
    cols = (st.schema.column("val").id,) if kind == "major_delta" else ()
    return tf.CompactionAction(kind, st.rowsets[rid].tablet, (rid,), 1.0, "conflict matrix", 0, cols)


INSERT = pa.table({"key": [50], "val": [9]})
INSERT_IGNORE = pa.table({"key": [50, 1], "val": [9, 9]})
MUTATION = pa.table({"key": [1, 50, 2], "val": [None, 9, 7], "op": ["delete", "upsert", "update"]})


def _alter(t):
    return t.alter().drop_range_partition(0, 100).add_column("extra", "int64")


def plan_later(op, t):
    """The later writer's fragment, planned on the current snapshot (what each write path commits)."""
    snap = t.snapshot()
    if op == "insert":
        return snap.write_insert(INSERT)
    if op == "insert_ignore":
        return snap.write_insert(INSERT_IGNORE, "ignore")
    if op == "mutation":
        return snap.write_mutation(MUTATION, op_column="op", operation="APPLY")
    if op == "alter":
        return snap.write_alter(_alter(t))
    if op in ("minor_delta", "major_delta", "merge", "undo_gc"):
        frag = snap.write_compaction(_action(t, op))
        assert frag is not None and not frag.empty
        return frag
    if op == "vacuum":
        plan = t.vacuum_plan(retain_seconds=0)
        assert plan.history is not None
        return plan.fragment()
    if op == "spark_insert":
        return write_partition(t.uri, None, snap.version, INSERT)["fragment"]
    if op == "spark_merge":
        return merge_partition(t.uri, None, snap.version, MUTATION, None, "op", None, "ignore", None)["fragment"]
    raise AssertionError(op)


def commit_later(op, t, frag):
    if op == "spark_insert":
        return commit_fragments(t.uri, None, [frag], "INSERT", {"inserted": 1})
    if op in ("minor_delta", "major_delta", "merge", "undo_gc"):
        return t.commit_fragments([frag], properties=tf.CommitProperties(max_attempts=30))
    return t.commit_fragments([frag])


def run_earlier(op, t):
    """The earlier writer, run to its commit the way users run it."""
    v = t.version
    if op == "insert":
        t.insert(INSERT)
    elif op == "insert_ignore":
        t.insert_ignore(INSERT_IGNORE)
    elif op == "mutation":
        t.apply(MUTATION)
    elif op == "alter":
        with _alter(t):
            pass
    elif op in ("minor_delta", "major_delta", "merge", "undo_gc"):
        assert t.compact_action(_action(t, op)) is not None
    elif op == "vacuum":
        t.vacuum(retain_seconds=0)
    elif op == "spark_insert":
        commit_fragments(t.uri, None, [write_partition(t.uri, None, v, INSERT)["fragment"]], "INSERT", {})
    elif op == "spark_merge":
        frag = merge_partition(t.uri, None, v, MUTATION, None, "op", None, "ignore", None)["fragment"]
        t.commit_fragments([frag], "MERGE")
    assert t.version == v + 1, f"{op} did not commit"


def outcome(later, earlier, uri):
    t = tf.open_table(uri)
    frag = plan_later(later, t)
    run_earlier(earlier, t)
    before = t.version
    try:
        commit_later(later, t, frag)
    except tf.RestartRequired:
        assert t.version == before
        return Outcome.RESTART
    except tf.TableFormatError:
        assert t.version == before
        return Outcome.FAIL
    assert t.version == before + 1
    return Outcome.REBASE


CELLS = [(later, earlier) for later in OPERATIONS for earlier in OPERATIONS]


@pytest.mark.parametrize("later,earlier", CELLS, ids=[f"{a}-after-{b}" for a, b in CELLS])
def test_matrix_cell(later, earlier, template, tmp_path):
    uri = str(tmp_path / "t")
    shutil.copytree(template, uri)
    got = outcome(later, earlier, uri)
    assert got is MATRIX[later][earlier], f"{later} after {earlier}: {got.value}, the matrix says " \
                                          f"{MATRIX[later][earlier].value}"
    assert tf.open_table(uri).check().ok


def test_the_spec_prints_the_same_matrix():
    text = SPEC.read_text()
    section = text[text.index("## 10."):text.index("## 11.")]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip().strip("*`") for c in line.strip().strip("|").split("|")]
        if len(cells) == len(OPERATIONS) + 1 and cells[0] in OPERATIONS:
            rows[cells[0]] = [re.sub(r"[^a-z]", "", c.lower()) for c in cells[1:]]
    assert set(rows) == set(OPERATIONS), "specs/format.md §10 lacks matrix rows"
    for later in OPERATIONS:
        assert rows[later] == [MATRIX[later][e].value for e in OPERATIONS], later
