"""Every public argument of a wrong type is a typed error, raised before anything is written or
committed (issue 16 §6): a table of (what, call, error) rows over the whole public API, then a
sweep of odd values through every parameter of every public method.

Convention (tableformat/arguments.py): a single string where a list of column names is expected
is a list of that one name; a bool is never an integer; numbers must be finite and bounded."""
import datetime as dt
import inspect

import pyarrow as pa
import pytest

import tableformat as tf

from helpers import T0, assert_same_rows, metrics_partitioning, metrics_rows, metrics_schema, table_files

INF, NAN, HUGE = float("inf"), float("nan"), 10 ** 400
ROW = pa.table({"host": ["h000"], "metric": ["cpu"], "time": pa.array([T0], pa.timestamp("us", tz="UTC")),
                "value": [1.0]})


def fixture_table(root):
    """Three overlapping inserts: a compaction plan with actions to run."""
    t = tf.create_table(str(root / "t"), metrics_schema(), partitioning=metrics_partitioning())
    for i in range(3):
        t.insert(metrics_rows(40, seed=i, start=40 * i))
    return t


def schema():
    return metrics_schema()


def col(**kw):
    return tf.Column(**{"name": "c", "type": "int32", **kw})


def _action(t):
    return t.compaction_plan().actions[0]


class NotAPlan:
    actions = ("merge",)


E, S, P, ID = tf.InvalidOptionError, tf.SchemaError, tf.PartitionSchemaError, tf.InvalidIdentifierError
ROWS = [
    # --- the examples ---------------------------------------------------------------
    ("update(columns=5)", lambda t: t.update(ROW, columns=5), E),
    ("scan(columns=5)", lambda t: t.scan(columns=5), E),
    ("compact(plan='x')", lambda t: t.compact(plan="x"), E),
    ("vacuum(retain_seconds=inf)", lambda t: t.vacuum(retain_seconds=INF), E),
    ("create_table(properties=[...])", lambda t: tf.create_table(t.uri + "2", schema(), properties=[("a", 1)]), E),
    ("Column(encoding=5)", lambda t: col(encoding=5), S),
    ("Schema(primary_key=5)", lambda t: tf.Schema([tf.Column("a", "int32")], primary_key=5), S),
    ("compact(progress=5) fails before the first action commits", lambda t: t.compact(progress=5), E),
    # --- Table: reads ---------------------------------------------------------------------
    ("scan(columns=[5])", lambda t: t.scan(columns=[5]), E),
    ("scan(columns={'host': 1})", lambda t: t.scan(columns={"host": 1}), E),
    ("scan(ordered='yes')", lambda t: t.scan(ordered="yes"), E),
    ("scan(ordered=1)", lambda t: t.scan(ordered=1), E),
    ("scan(as_of=1.5)", lambda t: t.scan(as_of=1.5), E),
    ("scan(as_of=True)", lambda t: t.scan(as_of=True), E),
    ("scan(as_of=[1])", lambda t: t.scan(as_of=[1]), E),
    ("scan(as_of=huge)", lambda t: t.scan(as_of=HUGE), tf.VersionNotFoundError),
    ("scan(filter=5)", lambda t: t.scan(filter=5), tf.InvalidFilterError),
    ("snapshot(as_of={})", lambda t: t.snapshot(as_of={}), E),
    ("to_arrow(as_of=inf)", lambda t: t.to_arrow(as_of=INF), E),
    ("changes(None)", lambda t: t.changes(None), E),
    ("changes(1.5)", lambda t: t.changes(1.5), E),
    ("changes(0, end=[2])", lambda t: t.changes(0, end=[2]), E),
    ("changes(mode=5)", lambda t: t.changes(0, mode=5), E),
    ("changes(mode=['all'])", lambda t: t.changes(0, mode=["all"]), E),
    ("changes(images=None)", lambda t: t.changes(0, images=None), E),
    ("changes(before_image='no')", lambda t: t.changes(0, before_image="no"), E),
    ("column(5)", lambda t: t.column(5), E),
    ("column(type=5)", lambda t: t.column("value", type=5), E),
    ("column(nullable='yes')", lambda t: t.column("value", nullable="yes"), E),
    ("check(deep='no')", lambda t: t.check(deep="no"), E),
    # --- Table: writes ---------------------------------------------------------------------
    ("insert(5)", lambda t: t.insert(5), tf.InvalidDataError),
    ("insert(None)", lambda t: t.insert(None), tf.InvalidDataError),
    ("insert_ignore({'a': 1})", lambda t: t.insert_ignore({"a": 1}), tf.InvalidDataError),
    ("update(columns='nope')", lambda t: t.update(ROW, columns="nope"), tf.InvalidDataError),
    ("update(columns=[1.5])", lambda t: t.update(ROW, columns=[1.5]), E),
    ("update_ignore(columns=True)", lambda t: t.update_ignore(ROW, columns=True), E),
    ("upsert(columns=5)", lambda t: t.upsert(ROW, columns=5), E),
    ("upsert(columns={'value'})", lambda t: t.upsert(ROW, columns={"value"}), E),
    ("delete(5)", lambda t: t.delete(5), tf.InvalidDataError),
    ("delete_ignore('x')", lambda t: t.delete_ignore("x"), tf.InvalidDataError),
    ("apply(op_column=5)", lambda t: t.apply(ROW, op_column=5), E),
    ("apply(op_column=None)", lambda t: t.apply(ROW, op_column=None), E),
    ("commit_fragments(5)", lambda t: t.commit_fragments(5), E),
    ("commit_fragments([])", lambda t: t.commit_fragments([]), E),
    ("commit_fragments(['x'])", lambda t: t.commit_fragments(["x"]), E),
    ("commit_fragments([{}])", lambda t: t.commit_fragments([{}]), E),
    ("commit_fragments(operation=5)", lambda t: t.commit_fragments([tf.WriteFragment("INSERT", t.version)], operation=5),
     E),
    ("commit_fragments(properties=5)",
     lambda t: t.commit_fragments([tf.WriteFragment("INSERT", t.version)], properties=5), E),
    # --- Table: compaction and vacuum ------------------------------------------------------
    ("compaction_plan(budget_bytes=1.5)", lambda t: t.compaction_plan(budget_bytes=1.5), E),
    ("compaction_plan(budget_bytes=True)", lambda t: t.compaction_plan(budget_bytes=True), E),
    ("compaction_plan(budget_bytes=huge)", lambda t: t.compaction_plan(budget_bytes=HUGE), E),
    ("compaction_plan(budget_bytes='1')", lambda t: t.compaction_plan(budget_bytes="1"), E),
    ("compaction_plan(policy=5)", lambda t: t.compaction_plan(policy=5), E),
    ("compact(plan=NotAPlan())", lambda t: t.compact(plan=NotAPlan()), E),
    ("compact(plan with a non-action)",
     lambda t: t.compact(plan=tf.CompactionPlan(("x",), 1, t.version)), E),
    ("compact(budget_bytes=-1)", lambda t: t.compact(budget_bytes=-1), E),
    ("compact(budget_bytes=inf)", lambda t: t.compact(budget_bytes=INF), E),
    ("compact(a plan, progress='x')", lambda t: t.compact(t.compaction_plan(), progress="x"), E),
    ("compact_action('merge')", lambda t: t.compact_action("merge"), E),
    ("compact_action(None)", lambda t: t.compact_action(None), E),
    ("vacuum(retain_seconds=nan)", lambda t: t.vacuum(retain_seconds=NAN), E),
    ("vacuum(retain_seconds=huge)", lambda t: t.vacuum(retain_seconds=HUGE), E),
    ("vacuum(retain_seconds='1')", lambda t: t.vacuum(retain_seconds="1"), E),
    ("vacuum(retain_seconds=True)", lambda t: t.vacuum(retain_seconds=True), E),
    ("vacuum(grace_seconds=inf)", lambda t: t.vacuum(grace_seconds=INF), E),
    ("vacuum(grace_seconds=None)", lambda t: t.vacuum(grace_seconds=None), E),
    ("vacuum(dry_run='no')", lambda t: t.vacuum(dry_run="no"), E),
    ("vacuum_plan(retain_seconds=-inf)", lambda t: t.vacuum_plan(retain_seconds=-INF), E),
    ("vacuum_plan(grace_seconds=[1])", lambda t: t.vacuum_plan(grace_seconds=[1]), E),
    # --- AlterTable -----------------------------------------------------------------------------
    ("add_column(name=5)", lambda t: t.alter().add_column(5, "int32"), ID),
    ("add_column(type=5)", lambda t: t.alter().add_column("c", 5), S),
    ("add_column(nullable='yes')", lambda t: t.alter().add_column("c", "int32", nullable="yes"), S),
    ("add_column(encoding=5)", lambda t: t.alter().add_column("c", "int32", encoding=5), S),
    ("add_column(compression=['lz4'])", lambda t: t.alter().add_column("c", "int32", compression=["lz4"]), S),
    ("add_column(default=object())", lambda t: t.alter().add_column("c", "int32", default=object()), S),
    ("drop_column(5)", lambda t: t.alter().drop_column(5), S),
    ("rename_column(5, 'x')", lambda t: t.alter().rename_column(5, "x"), S),
    ("rename_column('tag', 5)", lambda t: t.alter().rename_column("tag", 5), ID),
    ("set_default(5, 1)", lambda t: t.alter().set_default(5, 1), S),
    ("set_encoding('value', 5)", lambda t: t.alter().set_encoding("value", 5), S),
    ("set_compression('value', 5)", lambda t: t.alter().set_compression("value", 5), S),
    ("set_property(5, 1)", lambda t: t.alter().set_property(5, 1), E),
    ("set_property(['x'], 1)", lambda t: t.alter().set_property(["x"], 1), E),
    ("set_property('history_max_age', 1.5)", lambda t: t.alter().set_property("history_max_age", 1.5), E),
    ("set_property('history_max_age', True)", lambda t: t.alter().set_property("history_max_age", True), E),
    ("set_property('history_max_age', huge)", lambda t: t.alter().set_property("history_max_age", HUGE), E),
    ("rename_table(5)", lambda t: t.alter().rename_table(5), ID),
    ("add_range_partition({}, 5) committed", lambda t: t.alter().add_range_partition({}, 5).commit(), P),
    ("drop_range_partition('x', 'y') committed", lambda t: t.alter().drop_range_partition("x", "y").commit(), P),
    # --- Snapshot --------------------------------------------------------------------------------
    ("Snapshot.scan(columns=5)", lambda t: t.snapshot().scan(columns=5), E),
    ("Snapshot.scan(ordered=None)", lambda t: t.snapshot().scan(ordered=None), E),
    ("write_insert(on_duplicate=5)", lambda t: t.snapshot().write_insert(ROW, on_duplicate=5), E),
    ("write_insert(report='yes')", lambda t: t.snapshot().write_insert(ROW, report="yes"), E),
    ("write_insert(distributed=1)", lambda t: t.snapshot().write_insert(ROW, distributed=1), E),
    ("write_insert(write_when_rejected=None)",
     lambda t: t.snapshot().write_insert(ROW, write_when_rejected=None), E),
    ("write_mutation(op=5)", lambda t: t.snapshot().write_mutation(ROW, op=5), E),
    ("write_mutation(op=['update'])", lambda t: t.snapshot().write_mutation(ROW, op=["update"]), E),
    ("write_mutation(op_column=5)", lambda t: t.snapshot().write_mutation(ROW, op_column=5), E),
    ("write_mutation(columns=5)", lambda t: t.snapshot().write_mutation(ROW, op="update", columns=5), E),
    ("write_mutation(on_error=None)", lambda t: t.snapshot().write_mutation(ROW, op="update", on_error=None), E),
    ("write_mutation(operation=5)", lambda t: t.snapshot().write_mutation(ROW, op="update", operation=5), E),
    ("write_compaction('x')", lambda t: t.snapshot().write_compaction("x"), E),
    ("write_alter('x')", lambda t: t.snapshot().write_alter("x"), E),
    ("route(strict='no')", lambda t: t.snapshot().route(ROW, strict="no"), E),
    ("route(5)", lambda t: t.snapshot().route(5), tf.InvalidDataError),
    ("describe_rows(limit='3')", lambda t: t.snapshot().describe_rows(ROW, [0], limit="3"), E),
    ("describe_rows(batch=5)", lambda t: t.snapshot().describe_rows(5, [0]), E),
    # --- Scanner ---------------------------------------------------------------------------------
    ("Scanner.run_task('x')", lambda t: t.scan().run_task("x"), E),
    ("Scanner.read_task(None)", lambda t: t.scan().read_task(None), E),
    ("Scanner.task(5, 0, 1)", lambda t: t.scan().task(5, 0, 1), E),
    ("Scanner.task('nope', 0, 1)", lambda t: t.scan().task("nope", 0, 1), E),
    ("Scanner.task(rowset, 0, huge)",
     lambda t: t.scan().task(next(iter(t.state.rowsets)), 0, HUGE), E),
    ("Scanner.task(rowset, 1.5, 2)", lambda t: t.scan().task(next(iter(t.state.rowsets)), 1.5, 2), E),
    # --- create_table / open_table -------------------------------------------------------------
    ("create_table(uri=5)", lambda t: tf.create_table(5, schema()), tf.InvalidURIError),
    ("create_table(schema=5)", lambda t: tf.create_table(t.uri + "2", 5), S),
    ("create_table(schema=[...])", lambda t: tf.create_table(t.uri + "2", [tf.Column("a", "int32")]), S),
    ("create_table(partitioning=5)", lambda t: tf.create_table(t.uri + "2", schema(), partitioning=5), P),
    ("create_table(properties='x')", lambda t: tf.create_table(t.uri + "2", schema(), properties="x"), E),
    ("create_table(properties={5: 1})", lambda t: tf.create_table(t.uri + "2", schema(), properties={5: 1}), E),
    ("create_table(properties={'history_max_age': inf})",
     lambda t: tf.create_table(t.uri + "2", schema(), properties={"history_max_age": INF}), E),
    ("create_table(storage_options=[...])",
     lambda t: tf.create_table(t.uri + "2", schema(), storage_options=[("a", 1)]), tf.InvalidURIError),
    ("create_table(name=5)", lambda t: tf.create_table(t.uri + "2", schema(), name=5), ID),
    ("open_table(uri=5)", lambda t: tf.open_table(5), tf.InvalidURIError),
    ("open_table(storage_options='x')", lambda t: tf.open_table(t.uri, storage_options="x"), tf.InvalidURIError),
    # --- Column / Schema ----------------------------------------------------------------------------
    ("Column(name=5)", lambda t: tf.Column(5, "int32"), ID),
    ("Column(type=None)", lambda t: tf.Column("c", None), S),
    ("Column(nullable='no')", lambda t: col(nullable="no"), S),
    ("Column(nullable=1)", lambda t: col(nullable=1), S),
    ("Column(compression=5)", lambda t: col(compression=5), S),
    ("Column(encoding=['plain'])", lambda t: col(encoding=["plain"]), S),
    ("Column(id='1')", lambda t: col(id="1"), S),
    ("Column(id=-1)", lambda t: col(id=-1), S),
    ("Column(default='x')", lambda t: col(default="x"), S),
    ("Schema(columns=5)", lambda t: tf.Schema(5, ["a"]), S),
    ("Schema(columns='abc')", lambda t: tf.Schema("abc", ["a"]), S),
    ("Schema(columns=[5])", lambda t: tf.Schema([5], ["a"]), S),
    ("Schema(primary_key=[5])", lambda t: tf.Schema([tf.Column("a", "int32")], [5]), S),
    ("Schema(primary_key=[['a']])", lambda t: tf.Schema([tf.Column("a", "int32")], [["a"]]), S),
    ("Schema(next_column_id='1')", lambda t: tf.Schema([tf.Column("a", "int32")], ["a"], "1"), S),
    # --- partitions ------------------------------------------------------------------------------------
    ("HashPartition(columns=5)", lambda t: tf.HashPartition(5, 2), P),
    ("HashPartition(columns=[5])", lambda t: tf.HashPartition([5], 2), P),
    ("HashPartition(buckets=2.5) at create",
     lambda t: tf.create_table(t.uri + "2", schema(), tf.PartitionSchema(hash=[tf.HashPartition("host", 2.5)])),
     P),
    ("HashPartition(seed=True) at create",
     lambda t: tf.create_table(t.uri + "2", schema(),
                               tf.PartitionSchema(hash=[tf.HashPartition("host", 2, seed=True)])), P),
    ("HashPartition(seed='x') at create",
     lambda t: tf.create_table(t.uri + "2", schema(),
                               tf.PartitionSchema(hash=[tf.HashPartition("host", 2, seed="x")])), P),
    ("RangePartition(columns=5)", lambda t: tf.RangePartition(5), P),
    ("RangePartition(bounds=5)", lambda t: tf.RangePartition(["time"], bounds=5), P),
    ("RangePartition(splits='abc')", lambda t: tf.RangePartition(["time"], splits="abc"), P),
    ("PartitionSchema(hash=5)", lambda t: tf.PartitionSchema(hash=5), P),
    ("PartitionSchema(hash=['x'])", lambda t: tf.PartitionSchema(hash=["x"]), P),
    ("PartitionSchema(range=5)", lambda t: tf.PartitionSchema(range=5), P),
    # --- CommitProperties, Timestamp, parse_as_of, WriteFragment, Storage ----------------------------
    ("CommitProperties(max_attempts=True)", lambda t: tf.CommitProperties(max_attempts=True), E),
    ("CommitProperties(max_attempts=huge)", lambda t: tf.CommitProperties(max_attempts=HUGE), E),
    ("CommitProperties(max_restarts='3')", lambda t: tf.CommitProperties(max_restarts="3"), E),
    ("CommitProperties(max_backoff_seconds=nan)", lambda t: tf.CommitProperties(max_backoff_seconds=NAN), E),
    ("CommitProperties(max_backoff_seconds=True)", lambda t: tf.CommitProperties(max_backoff_seconds=True), E),
    ("CommitProperties(checkpoint_interval=0)", lambda t: tf.CommitProperties(checkpoint_interval=0), E),
    ("CommitProperties(checkpoint_interval='x')", lambda t: tf.CommitProperties(checkpoint_interval="x"), E),
    ("Timestamp('x')", lambda t: tf.Timestamp("x"), E),
    ("Timestamp(1.5)", lambda t: tf.Timestamp(1.5), E),
    ("Timestamp(True)", lambda t: tf.Timestamp(True), E),
    ("parse_as_of(1.5)", lambda t: tf.parse_as_of(1.5), E),
    ("parse_as_of(object())", lambda t: tf.parse_as_of(object()), E),
    ("WriteFragment.from_json({})", lambda t: tf.WriteFragment.from_json({}), E),
    ("WriteFragment.from_json(5)", lambda t: tf.WriteFragment.from_json(5), E),
    ("WriteFragment.combine(5)", lambda t: tf.WriteFragment.combine(5), E),
    ("WriteFragment.combine([5])", lambda t: tf.WriteFragment.combine([5]), E),
    ("Storage(5)", lambda t: tf.Storage(5), tf.InvalidURIError),
    ("Storage(storage_options=5)", lambda t: tf.Storage(t.uri, 5), tf.InvalidURIError),
]


def _state(t, root):
    t.refresh()
    return t.version, t.scan(ordered=True).to_arrow(), table_files(root)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    root = tmp_path_factory.mktemp("args")
    fixture_table(root)
    return root / "t"


@pytest.fixture
def table(template, tmp_path):
    import shutil
    shutil.copytree(template, tmp_path / "t")
    return tf.open_table(str(tmp_path / "t")), tmp_path


@pytest.mark.parametrize("what,call,err", ROWS, ids=[r[0] for r in ROWS])
def test_wrong_argument_is_a_typed_error_and_changes_nothing(table, what, call, err):
    t, root = table
    before = _state(t, root)
    with pytest.raises(err) as e:
        r = call(t)
        if hasattr(r, "to_arrow"):
            r.to_arrow()
    assert isinstance(e.value, tf.TableFormatError), f"{type(e.value).__name__} escaped: {e.value}"
    assert str(e.value)
    after = _state(t, root)
    assert after[0] == before[0] and after[2] == before[2]
    assert_same_rows(after[1], before[1])
    assert not (root / "t2").exists()             # a refused create_table made nothing


def test_the_fixture_has_compactions_to_run(table):
    """compact(progress=5) must fail before its first action: there are actions to run."""
    t, _ = table
    assert len(t.compaction_plan().actions) >= 1


def test_messages_say_what_was_expected_and_what_was_given(table):
    t, _ = table
    with pytest.raises(tf.InvalidOptionError, match=r"columns must be a list of column names.*got int 5"):
        t.update(ROW, columns=5)
    with pytest.raises(tf.InvalidOptionError, match=r"plan must be a tf.CompactionPlan.*got str 'x'"):
        t.compact(plan="x")
    with pytest.raises(tf.InvalidOptionError, match=r"retain_seconds must be a finite number.*got float inf"):
        t.vacuum(retain_seconds=INF)
    with pytest.raises(tf.InvalidOptionError, match=r"progress must be a callable.*got int 5"):
        t.compact(progress=5)
    with pytest.raises(tf.SchemaError, match=r"encoding must be a string.*got int 5"):
        col(encoding=5)


def test_one_string_is_one_column_name(table):
    """`columns="value"` means `["value"]` everywhere names are expected."""
    t, _ = table
    assert t.scan(columns="value").to_arrow().column_names == ["value"]
    r = t.update(pa.table({**{k: ROW[k] for k in ("host", "metric", "time")}, "value": [2.0], "tag": ["z"]})
                 .slice(0, 0), columns="value")
    assert r.updated == 0
    assert tf.Schema([tf.Column("a", "int32")], "a").primary_key == ("a",)


# --- a sweep: odd values through every parameter of every public method --------------------------

ODD = [5, -1, 0, 1.5, HUGE, -HUGE, INF, -INF, NAN, True, "x", "", b"x", [1], ["x"], {"a": 1}, (), object(),
       dt.datetime(1990, 1, 1)]
VALID = {"data": lambda t: ROW, "start": lambda t: 0, "name": lambda t: "value", "old": lambda t: "tag",
         "new": lambda t: "tag2", "fragments": lambda t: [tf.WriteFragment("INSERT", t.version)],
         "action": lambda t: _action(t), "alter": lambda t: t.alter(), "batch": lambda t: ROW,
         "rows": lambda t: [0], "task": lambda t: t.scan().plan()[0], "rowset_id": lambda t: next(iter(t.state.rowsets)),
         "stop": lambda t: 1, "type": lambda t: "int32", "default": lambda t: None, "encoding": lambda t: "plain",
         "compression": lambda t: "lz4", "value": lambda t: 3600, "lower": lambda t: None, "upper": lambda t: None}
# writes that would succeed with odd-but-legal values are run on the table itself; what matters is
# that nothing but a TableFormatError ever escapes, and that the table stays valid
TARGETS = {
    "Table": (lambda t: t, ["scan", "snapshot", "changes", "to_arrow", "insert", "insert_ignore", "update",
                            "update_ignore", "delete", "delete_ignore", "upsert", "apply", "commit_fragments",
                            "compaction_plan", "compact", "compact_action", "vacuum_plan", "vacuum", "check",
                            "column"]),
    "Snapshot": (lambda t: t.snapshot(), ["scan", "write_insert", "write_mutation", "write_compaction",
                                          "write_alter", "route", "describe_rows"]),
    "Scanner": (lambda t: t.scan(), ["run_task", "read_task", "task"]),
    "AlterTable": (lambda t: t.alter(), ["add_column", "drop_column", "rename_column", "set_default",
                                         "set_encoding", "set_compression", "rename_table", "set_property",
                                         "add_range_partition", "drop_range_partition"]),
}


def _params(fn):
    return [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]


@pytest.mark.parametrize("target", list(TARGETS))
def test_no_bare_error_escapes_any_public_method(table, target):
    t, root = table
    make, methods = TARGETS[target]
    for m in methods:
        for p in _params(getattr(make(t), m)):
            for odd in ODD:
                obj = make(t)
                kwargs = {q.name: VALID[q.name](t) for q in _params(getattr(obj, m))
                          if q.default is inspect.Parameter.empty and q.name != p.name}
                kwargs[p.name] = odd
                try:
                    r = getattr(obj, m)(**kwargs)
                    if hasattr(r, "to_arrow"):
                        r.to_arrow()
                    if target == "AlterTable":
                        obj.commit()
                except tf.TableFormatError:
                    pass
                except Exception as e:                 # noqa: BLE001
                    pytest.fail(f"{target}.{m}({p.name}={odd!r:.40}) raised {type(e).__name__}: {e}")
    assert tf.open_table(t.uri).check().ok


CONSTRUCTORS = [
    (tf.Column, {"name": "c", "type": "int32"}),
    (tf.Schema, {"columns": [tf.Column("a", "int32")], "primary_key": ["a"]}),
    (tf.HashPartition, {"columns": ["a"], "buckets": 2}),
    (tf.RangePartition, {}),
    (tf.PartitionSchema, {}),
    (tf.CommitProperties, {}),
    (tf.Timestamp, {"micros": 1}),
    (tf.parse_as_of, {"value": 1}),
]


@pytest.mark.parametrize("ctor,base", CONSTRUCTORS, ids=[c.__name__ for c, _ in CONSTRUCTORS])
def test_no_bare_error_escapes_a_constructor(ctor, base):
    for p in _params(ctor):
        for odd in ODD:
            try:
                ctor(**{**base, p.name: odd})
            except tf.TableFormatError:
                pass
            except Exception as e:                     # noqa: BLE001
                pytest.fail(f"{ctor.__name__}({p.name}={odd!r:.40}) raised {type(e).__name__}: {e}")


def test_no_bare_error_escapes_create_or_open(tmp_path):
    base = {"uri": str(tmp_path / "n"), "schema": schema()}
    for p in _params(tf.create_table):
        for odd in ODD:
            if p.name == "uri" and isinstance(odd, str) and odd:
                continue                               # a relative path: a table in the working directory
            try:
                tf.create_table(**{**base, "uri": str(tmp_path / f"n{abs(hash((p.name, repr(odd))))}"),
                                   p.name: odd} if p.name != "uri" else {**base, "uri": odd})
            except tf.TableFormatError:
                pass
            except Exception as e:                     # noqa: BLE001
                pytest.fail(f"create_table({p.name}={odd!r:.40}) raised {type(e).__name__}: {e}")
    for p in _params(tf.open_table):
        for odd in ODD:
            try:
                tf.open_table(**{"uri": str(tmp_path / "n"), p.name: odd})
            except tf.TableFormatError:
                pass
            except Exception as e:                     # noqa: BLE001
                pytest.fail(f"open_table({p.name}={odd!r:.40}) raised {type(e).__name__}: {e}")
