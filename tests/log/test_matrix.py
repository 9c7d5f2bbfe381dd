"""Every cell of the conflict matrix, which the code reads to decide (tableformat.log.matrix.MATRIX).

For each pair (later, earlier): the later writer plans its write on a snapshot, the earlier
one commits, then the later one commits. Both touch the same data: key 1..5 live in one
rowset R of tablet r0; inserts add key 50 to r0; a mutation deletes key 1, upserts key 50
and updates key 2; an alter drops r0's range and adds a column; compactions work on R;
vacuum records a history horizon; a restore sets key 2 back to tag "r"; tags name "t2" (the
tagged version then stops being the newest), untags remove "t1". Every writer plans and
commits through the code production runs: the Spark insert and merge through the functions
Spark runs in each task (`insert_task`, `merge_task`) and the driver's `commit_fragments`.
The outcome must be the cell's: REBASE (the later write commits), RESTART (RestartRequired:
plan again) or FAIL (a typed error). specs/format.md §10 prints the same matrix, and this
test checks that it does.
"""
import json
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import tableformat as tf
from tableformat.log.matrix import MATRIX, OPERATIONS, WINNERS, Outcome, winner_kind
from tableformat.maintenance.restore import plan_restore
from tableformat.maintenance.tags import plan_tag, plan_untag

pytest.importorskip("pyspark")
from spark_jobs.merge import merge_task  # noqa: E402
from spark_jobs.writes import commit_fragments, insert_task  # noqa: E402

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
    t.tag("t1")
    return uri


def _action(t, kind):
    st = t.state
    (rid,) = [r for r in st.rowsets if st.rowsets[r].num_rows == 5]
    cols = (st.schema.column("val").id,) if kind == "major_delta" else ()
    return tf.CompactionAction(kind, st.rowsets[rid].tablet, (rid,), 1.0, "conflict matrix", 0, cols)


INSERT = pa.table({"key": [50], "val": [9]})
INSERT_IGNORE = pa.table({"key": [50, 1], "val": [9, 9]})
MUTATION = pa.table({"key": [1, 50, 2], "val": [None, 9, 7], "op": ["delete", "upsert", "update"]})


def spark_insert(t, version):
    """A Spark insert task's fragment: what `insert_task` yields for one partition."""
    (batch,) = insert_task(t.uri, None, version, t.table_id, "fail", None)(iter(INSERT.to_batches()))
    return json.loads(batch.to_pylist()[0]["fragment"])


def spark_merge(t, version):
    """A Spark merge task's fragment: `merge_task` over the rows laid out by key, as Spark does."""
    rows = MUTATION.sort_by("key")
    (batch,) = merge_task(t.uri, None, version, t.table_id, None, "op", None, "ignore", None)(
        iter(rows.to_batches()))
    return json.loads(batch.to_pylist()[0]["fragment"])


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
        return spark_insert(t, snap.version)
    if op == "spark_merge":
        return spark_merge(t, snap.version)
    if op == "restore":
        t.tag("r")
        t.update(pa.table({"key": [2], "val": [8]}))
        return plan_restore(t.handle, "r")(t.snapshot().state)
    if op == "tag":
        frag = plan_tag(t.handle, "t2")(t.snapshot().state)
        t.update(pa.table({"key": [3], "val": [33]}))        # the tagged version stops being the newest
        return frag
    if op == "untag":
        return plan_untag("t1")(t.snapshot().state)
    raise AssertionError(op)


def commit_later(op, t, frag):
    if op == "spark_insert":
        return commit_fragments(t.uri, None, [frag], "INSERT", {"inserted": 1})
    if op == "spark_merge":
        return commit_fragments(t.uri, None, [frag], "MERGE", {"updated": 1})
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
        commit_fragments(t.uri, None, [spark_insert(t, v)], "INSERT", {})
    elif op == "spark_merge":
        commit_fragments(t.uri, None, [spark_merge(t, v)], "MERGE", {})
    elif op == "tag":
        t.tag("t2")
    elif op == "untag":
        t.untag("t1")
    assert t.version == v + 1, f"{op} did not commit"
    assert winner_kind(t.log.read_commit(t.version)) == \
        ("mutation" if op in ("insert", "insert_ignore", "spark_insert", "spark_merge") else op)


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


CELLS = [(later, earlier) for later in OPERATIONS for earlier in WINNERS]
# A vacuum drops history only when its horizon passes an aged-out ALTER, which this scenario's
# vacuum does not: these cells rebase here, and test_vacuum_history_gc_is_decided_by_the_matrix
# drives their clash through the requirements.
NO_CLASH_HERE = {("tag", "vacuum"), ("vacuum", "tag")}


@pytest.mark.parametrize("later,earlier", CELLS, ids=[f"{a}-after-{b}" for a, b in CELLS])
def test_matrix_cell(later, earlier, template, tmp_path):
    uri = str(tmp_path / "t")
    shutil.copytree(template, uri)
    got = outcome(later, earlier, uri)
    want = Outcome.REBASE if (later, earlier) in NO_CLASH_HERE else MATRIX[later][earlier]
    assert got is want, f"{later} after {earlier}: {got.value}, the matrix says {MATRIX[later][earlier].value}"
    assert tf.open_table(uri).check().ok


def test_the_spec_prints_the_same_matrix():
    text = SPEC.read_text()
    section = text[text.index("## 10."):text.index("## 11.")]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip().strip("*`") for c in line.strip().strip("|").split("|")]
        if len(cells) == len(WINNERS) + 1 and cells[0] in OPERATIONS:
            rows[cells[0]] = [re.sub(r"[^a-z]", "", c.lower()) for c in cells[1:]]
    assert set(rows) == set(OPERATIONS), "specs/format.md §10 lacks matrix rows"
    for later in OPERATIONS:
        assert rows[later] == [MATRIX[later][e].value for e in WINNERS], later


def test_data_writes_share_one_column():
    """A winner's kind is read from its actions, which do not tell the data writes apart: the
    matrix may treat them as one column only because their columns are equal."""
    data = ("insert", "insert_ignore", "mutation", "spark_insert", "spark_merge")
    for later in OPERATIONS:
        assert len({MATRIX[later][e] for e in data}) == 1, later


@pytest.mark.parametrize("later", ["tag", "vacuum"])
def test_vacuum_history_gc_is_decided_by_the_matrix(later, template, tmp_path):
    """A vacuum that drops history (SetHistory with gc_before_ts) against a tag that needs it,
    either way round: the requirement finds the clash, the matrix's cell decides (FAIL)."""
    from tableformat.log.actions import AddTag, Commit, SetHistory
    from tableformat.log.requirements import Context, HistoryKept, TagsRetained, check_all
    uri = str(tmp_path / "t")
    shutil.copytree(template, uri)
    t = tf.open_table(uri)
    st = t.state
    now = st.timestamp + 10
    if later == "tag":
        winner = Commit(st.version + 1, now, "VACUUM", (SetHistory(st.version, now),), data_change=False)
        req = HistoryKept(st.timestamp + 1)
    else:
        winner = Commit(st.version + 1, now, "TAG", (AddTag("t2", st.version, st.timestamp),), data_change=False)
        req = TagsRetained(now)
    ctx = Context(t.storage, st, st, [winner], [], [], later)
    v = check_all([req], ctx)
    assert v.outcome is MATRIX[later]["vacuum" if later == "tag" else "tag"] is Outcome.FAIL
    assert isinstance(v.error, tf.TableFormatError)


@pytest.mark.parametrize("winner,want", [(None, Outcome.REBASE), ("insert 60", Outcome.RESTART),
                                         ("delete 2", Outcome.RESTART), ("insert 70", Outcome.REBASE)])
def test_spark_insert_and_merge_tasks_share_one_commit(winner, want, template, tmp_path):
    """A distributed job inserting on some executors and updating on others: the fragments of
    `insert_task` (spark_insert) and `merge_task` (spark_merge) commit atomically through the
    driver's `commit_fragments`, each fragment answering as its own row of the matrix."""
    uri = str(tmp_path / "t")
    shutil.copytree(template, uri)
    t = tf.open_table(uri)
    v = t.version
    (ins,) = insert_task(t.uri, None, v, t.table_id, "fail", None)(
        iter(pa.table({"key": [60], "val": [6]}).to_batches()))
    (mrg,) = merge_task(t.uri, None, v, t.table_id, None, "op", None, "ignore", None)(
        iter(pa.table({"key": [1, 2], "val": [None, 7], "op": ["delete", "update"]}).to_batches()))
    frags = [json.loads(b.to_pylist()[0]["fragment"]) for b in (ins, mrg)]
    assert [f["kind"] for f in frags] == ["spark_insert", "spark_merge"]
    if winner is not None:
        other = tf.open_table(uri)
        k = int(winner.split()[1])
        other.delete(pa.table({"key": [k]})) if winner.startswith("delete") else \
            other.insert(pa.table({"key": [k], "val": [0]}))
    before, live = t.refresh().version, {r["key"]: r["val"] for r in t.scan().to_arrow().to_pylist()}
    if want is Outcome.RESTART:
        with pytest.raises(tf.RestartRequired):
            commit_fragments(uri, None, frags, "MERGE", {"inserted": 1, "updated": 1, "deleted": 1})
        assert t.refresh().version == before
    else:
        res = commit_fragments(uri, None, frags, "MERGE", {"inserted": 1, "updated": 1, "deleted": 1})
        assert res.version == before + 1
        got = {r["key"]: r["val"] for r in t.scan().to_arrow().to_pylist()}
        assert got == {**{k: x for k, x in live.items() if k != 1}, 60: 6, 2: 7}
        h = t.history()[-1]
        assert {k: h.counts[k] for k in ("inserted", "updated", "deleted")} == {"inserted": 1, "updated": 1,
                                                                              "deleted": 1}
    assert tf.open_table(uri).check().ok
