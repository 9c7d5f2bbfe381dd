"""Every public argument of a wrong type is a typed error, raised before anything is written or
committed: a table of (what, call, error) rows over the whole public API, then a
sweep of odd values through every parameter of every public method.

Convention (tableformat/format/arguments.py): a single string where a list of column names is expected
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
    # --- the first examples -----------------------------------------------------------------
    ("update(columns=5)", lambda t: t.update(ROW, columns=5), E,
     "columns must be a list of column names or None, got int 5"),
    ("scan(columns=5)", lambda t: t.scan(columns=5), E, "columns must be a list of column names or None, got int 5"),
    ("compact(plan='x')", lambda t: t.compact(plan="x"), E,
     r"plan must be a tf\.CompactionPlan \(from Table\.compaction_plan\) or"),
    ("vacuum(retain_seconds=inf)", lambda t: t.vacuum(retain_seconds=INF), E,
     r"retain_seconds must be a finite number in \[0, 3153600000\] or None"),
    ("create_table(properties=[...])", lambda t: tf.create_table(t.uri + "2", schema(), properties=[("a", 1)]), E,
     r"properties must be a dict or None, got list \[\('a', 1\)\]"),
    ("Column(encoding=5)", lambda t: col(encoding=5), S, "column 'c': encoding must be a string or None, got int 5"),
    ("Schema(primary_key=5)", lambda t: tf.Schema([tf.Column("a", "int32")], primary_key=5), S,
     "primary_key must be a list of column names or None, got int 5"),
    ("compact(progress=5) fails before the first action commits", lambda t: t.compact(progress=5), E,
     "progress must be a callable or None, got int 5"),
    # --- Table: reads ---------------------------------------------------------------------
    ("scan(columns=[5])", lambda t: t.scan(columns=[5]), E,
     r"columns must be a list of column names \(strings\), got int 5 in list"),
    ("scan(columns={'host': 1})", lambda t: t.scan(columns={"host": 1}), E,
     r"columns must be a list of column names or None, got dict \{'host': 1\}"),
    ("scan(ordered='yes')", lambda t: t.scan(ordered="yes"), E, "ordered must be True or False, got str 'yes'"),
    ("scan(ordered=1)", lambda t: t.scan(ordered=1), E, "ordered must be True or False, got int 1"),
    ("scan(as_of=1.5)", lambda t: t.scan(as_of=1.5), E,
     r"as_of must be a version \(int\), a tf\.Timestamp, a datetime or an ISO"),
    ("scan(as_of=True)", lambda t: t.scan(as_of=True), E,
     "as_of must be a version, a timestamp or a datetime, not a bool"),
    ("scan(as_of=[1])", lambda t: t.scan(as_of=[1]), E,
     r"as_of must be a version \(int\), a tf\.Timestamp, a datetime or an ISO"),
    ("scan(as_of=huge)", lambda t: t.scan(as_of=HUGE), tf.VersionNotFoundError, r"does not exist; versions are 0\.\.3"),
    ("scan(filter=5)", lambda t: t.scan(filter=5), tf.InvalidFilterError,
     r"filter must be a \(column, op, value\) tuple or a list of them, got int"),
    ("snapshot(as_of={})", lambda t: t.snapshot(as_of={}), E,
     r"as_of must be a version \(int\), a tf\.Timestamp, a datetime or an ISO"),
    ("to_arrow(as_of=inf)", lambda t: t.to_arrow(as_of=INF), E,
     r"as_of must be a version \(int\), a tf\.Timestamp, a datetime or an ISO"),
    ("changes(None)", lambda t: t.changes(None), E,
     r"start must be a version, a tf\.Timestamp, a datetime or an ISO string"),
    ("changes(1.5)", lambda t: t.changes(1.5), E,
     r"start must be a version \(int\), a tf\.Timestamp, a datetime or an ISO"),
    ("changes(0, end=[2])", lambda t: t.changes(0, end=[2]), E,
     r"end must be a version \(int\), a tf\.Timestamp, a datetime or an ISO"),
    ("changes(mode=5)", lambda t: t.changes(0, mode=5), E, "mode must be one of 'all', 'net', got int 5"),
    ("changes(mode=['all'])", lambda t: t.changes(0, mode=["all"]), E,
     r"mode must be one of 'all', 'net', got list \['all'\]"),
    ("changes(images=None)", lambda t: t.changes(0, images=None), E,
     "images must be one of 'full', 'changed', got NoneType None"),
    ("changes(before_image='no')", lambda t: t.changes(0, before_image="no"), E,
     "before_image must be True or False, got str 'no'"),
    ("column(5)", lambda t: t.column(5), E, "name must be a string, got int 5"),
    ("column(type=5)", lambda t: t.column("value", type=5), E, "type must be a string or None, got int 5"),
    ("column(nullable='yes')", lambda t: t.column("value", nullable="yes"), E,
     "nullable must be True or False or None, got str 'yes'"),
    ("check(deep='no')", lambda t: t.check(deep="no"), E, "deep must be True or False, got str 'no'"),
    # --- Table: writes ---------------------------------------------------------------------
    ("insert(5)", lambda t: t.insert(5), tf.InvalidDataError,
     "input must be a pyarrow Table, RecordBatch, RecordBatchReader, pandas"),
    ("insert(None)", lambda t: t.insert(None), tf.InvalidDataError,
     "input must be a pyarrow Table, RecordBatch, RecordBatchReader, pandas"),
    ("insert_ignore({'a': 1})", lambda t: t.insert_ignore({"a": 1}), tf.InvalidDataError,
     "input must be a pyarrow Table, RecordBatch, RecordBatchReader, pandas"),
    ("update(columns='nope')", lambda t: t.update(ROW, columns="nope"), tf.InvalidDataError,
     r"columns to update \['nope'\] are not in the input"),
    ("update(columns=[1.5])", lambda t: t.update(ROW, columns=[1.5]), E,
     r"columns must be a list of column names \(strings\), got float 1\.5 in"),
    ("update_ignore(columns=True)", lambda t: t.update_ignore(ROW, columns=True), E,
     "columns must be a list of column names or None, got bool True"),
    ("upsert(columns=5)", lambda t: t.upsert(ROW, columns=5), E,
     "columns must be a list of column names or None, got int 5"),
    ("upsert(columns={'value'})", lambda t: t.upsert(ROW, columns={"value"}), E,
     r"columns must be a list of column names or None, got set \{'value'\}"),
    ("delete(5)", lambda t: t.delete(5), tf.InvalidDataError,
     "input must be a pyarrow Table, RecordBatch, RecordBatchReader, pandas"),
    ("delete_ignore('x')", lambda t: t.delete_ignore("x"), tf.InvalidDataError,
     "input must be a pyarrow Table, RecordBatch, RecordBatchReader, pandas"),
    ("apply(op_column=5)", lambda t: t.apply(ROW, op_column=5), E, "op_column must be a string, got int 5"),
    ("apply(op_column=None)", lambda t: t.apply(ROW, op_column=None), E,
     "op_column must be a string, got NoneType None"),
    ("commit_fragments(5)", lambda t: t.commit_fragments(5), E, "fragments must be a list or tuple, got int 5"),
    ("commit_fragments([])", lambda t: t.commit_fragments([]), E,
     r"fragments must be a non-empty list of write fragments, got list \[\]"),
    ("commit_fragments(['x'])", lambda t: t.commit_fragments(["x"]), E,
     r"fragments must be tf\.WriteFragment \(or their to_json\(\) dicts\), got str"),
    ("commit_fragments([{}])", lambda t: t.commit_fragments([{}]), E,
     r"not a write fragment's to_json\(\): KeyError 'operation'"),
    ("commit_fragments(operation=5)", lambda t: t.commit_fragments([tf.WriteFragment("INSERT", t.version)], operation=5),
     E, "operation must be a string or None, got int 5"),
    ("commit_fragments(properties=5)",
     lambda t: t.commit_fragments([tf.WriteFragment("INSERT", t.version)], properties=5), E,
     r"properties must be a tf\.CommitProperties or None, got int 5"),
    # --- Table: compaction and vacuum ------------------------------------------------------
    ("compaction_plan(budget_bytes=1.5)", lambda t: t.compaction_plan(budget_bytes=1.5), E,
     r"budget_bytes must be an integer in \[1"),
    ("compaction_plan(budget_bytes=True)", lambda t: t.compaction_plan(budget_bytes=True), E,
     r"budget_bytes must be an integer in \[1"),
    ("compaction_plan(budget_bytes=huge)", lambda t: t.compaction_plan(budget_bytes=HUGE), E,
     r"budget_bytes must be an integer in \[1"),
    ("compaction_plan(budget_bytes='1')", lambda t: t.compaction_plan(budget_bytes="1"), E,
     r"budget_bytes must be an integer in \[1"),
    ("compaction_plan(policy=5)", lambda t: t.compaction_plan(policy=5), E,
     r"policy must be a compaction policy \(an object with pick\(\), such as"),
    ("compact(plan=NotAPlan())", lambda t: t.compact(plan=NotAPlan()), E,
     r"plan must be a tf\.CompactionPlan \(from Table\.compaction_plan\) or"),
    ("compact(plan with a non-action)",
     lambda t: t.compact(plan=tf.CompactionPlan(("x",), 1, t.version)), E,
     r"each action of the plan must be a tf\.CompactionAction, got str 'x'"),
    ("compact(budget_bytes=-1)", lambda t: t.compact(budget_bytes=-1), E, r"budget_bytes must be an integer in \[1"),
    ("compact(budget_bytes=inf)", lambda t: t.compact(budget_bytes=INF), E, r"budget_bytes must be an integer in \[1"),
    ("compact(a plan, progress='x')", lambda t: t.compact(t.compaction_plan(), progress="x"), E,
     "progress must be a callable or None, got str 'x'"),
    ("compact_action('merge')", lambda t: t.compact_action("merge"), E,
     r"action must be a tf\.CompactionAction \(from a CompactionPlan\), got str"),
    ("compact_action(None)", lambda t: t.compact_action(None), E,
     r"action must be a tf\.CompactionAction \(from a CompactionPlan\), got"),
    ("vacuum(retain_seconds=nan)", lambda t: t.vacuum(retain_seconds=NAN), E,
     r"retain_seconds must be a finite number in \[0, 3153600000\] or None"),
    ("vacuum(retain_seconds=huge)", lambda t: t.vacuum(retain_seconds=HUGE), E,
     r"retain_seconds must be a finite number in \[0, 3153600000\] or None"),
    ("vacuum(retain_seconds='1')", lambda t: t.vacuum(retain_seconds="1"), E,
     r"retain_seconds must be a finite number in \[0, 3153600000\] or None"),
    ("vacuum(retain_seconds=True)", lambda t: t.vacuum(retain_seconds=True), E,
     r"retain_seconds must be a finite number in \[0, 3153600000\] or None"),
    ("vacuum(grace_seconds=inf)", lambda t: t.vacuum(grace_seconds=INF), E,
     r"grace_seconds must be a finite number in \[0, 3153600000\], got float"),
    ("vacuum(grace_seconds=None)", lambda t: t.vacuum(grace_seconds=None), E,
     r"grace_seconds must be a finite number in \[0, 3153600000\], got"),
    ("vacuum(dry_run='no')", lambda t: t.vacuum(dry_run="no"), E, "dry_run must be True or False, got str 'no'"),
    ("vacuum_plan(retain_seconds=-inf)", lambda t: t.vacuum_plan(retain_seconds=-INF), E,
     r"retain_seconds must be a finite number in \[0, 3153600000\] or None"),
    ("vacuum_plan(grace_seconds=[1])", lambda t: t.vacuum_plan(grace_seconds=[1]), E,
     r"grace_seconds must be a finite number in \[0, 3153600000\], got list \[1\]"),
    # --- AlterTable -----------------------------------------------------------------------------
    ("add_column(name=5)", lambda t: t.alter().add_column(5, "int32"), ID, "column name must be a string, got int"),
    ("add_column(type=5)", lambda t: t.alter().add_column("c", 5), S,
     "column type must be a string such as 'int64', got 5"),
    ("add_column(nullable='yes')", lambda t: t.alter().add_column("c", "int32", nullable="yes"), S,
     "column 'c': nullable must be True or False, got str 'yes'"),
    ("add_column(encoding=5)", lambda t: t.alter().add_column("c", "int32", encoding=5), S,
     "column 'c': encoding must be a string or None, got int 5"),
    ("add_column(compression=['lz4'])", lambda t: t.alter().add_column("c", "int32", compression=["lz4"]), S,
     r"column 'c': compression must be a string or None, got list \['lz4'\]"),
    ("add_column(default=object())", lambda t: t.alter().add_column("c", "int32", default=object()), S,
     r"default of column 'c': <object object at 0x[0-9a-f]+> \(object\) is"),
    ("drop_column(5)", lambda t: t.alter().drop_column(5), S, "drop_column: name must be a string, got int 5"),
    ("rename_column(5, 'x')", lambda t: t.alter().rename_column(5, "x"), S,
     "rename_column: old must be a string, got int 5"),
    ("rename_column('tag', 5)", lambda t: t.alter().rename_column("tag", 5), ID,
     "column name must be a string, got int"),
    ("set_default(5, 1)", lambda t: t.alter().set_default(5, 1), S, "set default: name must be a string, got int 5"),
    ("set_encoding('value', 5)", lambda t: t.alter().set_encoding("value", 5), S,
     "set encoding of value: encoding must be a string or None, got int 5"),
    ("set_compression('value', 5)", lambda t: t.alter().set_compression("value", 5), S,
     "set compression of value: compression must be a string or None, got"),
    ("set_property(5, 1)", lambda t: t.alter().set_property(5, 1), E, "set_property: name must be a string, got int 5"),
    ("set_property(['x'], 1)", lambda t: t.alter().set_property(["x"], 1), E,
     r"set_property: name must be a string, got list \['x'\]"),
    ("set_property('history_max_age', 1.5)", lambda t: t.alter().set_property("history_max_age", 1.5), E,
     r"table property history_max_age must be an integer in \[-1, 315360000\]"),
    ("set_property('history_max_age', True)", lambda t: t.alter().set_property("history_max_age", True), E,
     r"table property history_max_age must be an integer in \[-1, 315360000\]"),
    ("set_property('history_max_age', huge)", lambda t: t.alter().set_property("history_max_age", HUGE), E,
     r"table property history_max_age must be an integer in \[-1, 315360000\]"),
    ("rename_table(5)", lambda t: t.alter().rename_table(5), ID, "table name must be a string, got int"),
    ("add_range_partition({}, 5) committed", lambda t: t.alter().add_range_partition({}, 5).commit(), P,
     r"lower bound for 'time': \{\} \(dict\) is not a valid unixtime_micros; use"),
    ("drop_range_partition('x', 'y') committed", lambda t: t.alter().drop_range_partition("x", "y").commit(), P,
     r"lower bound for 'time': 'x' \(str\) is not a valid unixtime_micros; use"),
    # --- Snapshot --------------------------------------------------------------------------------
    ("Snapshot.scan(columns=5)", lambda t: t.snapshot().scan(columns=5), E,
     "columns must be a list of column names or None, got int 5"),
    ("Snapshot.scan(ordered=None)", lambda t: t.snapshot().scan(ordered=None), E,
     "ordered must be True or False, got NoneType None"),
    ("write_insert(on_duplicate=5)", lambda t: t.snapshot().write_insert(ROW, on_duplicate=5), E,
     r"on_duplicate must be one of \('fail', 'ignore'\), got 5"),
    ("write_insert(report='yes')", lambda t: t.snapshot().write_insert(ROW, report="yes"), E,
     "report must be True or False, got str 'yes'"),
    ("write_insert(distributed=1)", lambda t: t.snapshot().write_insert(ROW, distributed=1), E,
     "distributed must be True or False, got int 1"),
    ("write_insert(write_when_rejected=None)",
     lambda t: t.snapshot().write_insert(ROW, write_when_rejected=None), E,
     "write_when_rejected must be True or False, got NoneType None"),
    ("write_mutation(op=5)", lambda t: t.snapshot().write_mutation(ROW, op=5), E,
     "op must be one of 'insert', 'insert_ignore', 'update'"),
    ("write_mutation(op=['update'])", lambda t: t.snapshot().write_mutation(ROW, op=["update"]), E,
     "op must be one of 'insert', 'insert_ignore', 'update'"),
    ("write_mutation(op_column=5)", lambda t: t.snapshot().write_mutation(ROW, op_column=5), E,
     "op_column must be a string or None, got int 5"),
    ("write_mutation(columns=5)", lambda t: t.snapshot().write_mutation(ROW, op="update", columns=5), E,
     "columns must be a list of column names or None, got int 5"),
    ("write_mutation(on_error=None)", lambda t: t.snapshot().write_mutation(ROW, op="update", on_error=None), E,
     "on_error must be one of 'fail', 'report', got NoneType None"),
    ("write_mutation(operation=5)", lambda t: t.snapshot().write_mutation(ROW, op="update", operation=5), E,
     "operation must be a string, got int 5"),
    ("write_compaction('x')", lambda t: t.snapshot().write_compaction("x"), E,
     r"action must be a tf\.CompactionAction \(from a CompactionPlan\), got str"),
    ("write_alter('x')", lambda t: t.snapshot().write_alter("x"), E,
     r"alter must be a tf\.AlterTable \(from Table\.alter\(\)\), got str 'x'"),
    ("route(strict='no')", lambda t: t.snapshot().route(ROW, strict="no"), E,
     "strict must be True or False, got str 'no'"),
    ("route(5)", lambda t: t.snapshot().route(5), tf.InvalidDataError,
     "input must be a pyarrow Table, RecordBatch, RecordBatchReader, pandas"),
    ("describe_rows(limit='3')", lambda t: t.snapshot().describe_rows(ROW, [0], limit="3"), E,
     r"limit must be an integer in \[0, 1000000\], got str '3'"),
    ("describe_rows(batch=5)", lambda t: t.snapshot().describe_rows(5, [0]), E,
     "batch must be a pyarrow Table, got int 5"),
    # --- Scanner ---------------------------------------------------------------------------------
    ("Scanner.run_task('x')", lambda t: t.scan().run_task("x"), E,
     r"task must be a tf\.ScanTask \(from Scanner\.plan or Scanner\.task\), got"),
    ("Scanner.read_task(None)", lambda t: t.scan().read_task(None), E,
     r"task must be a tf\.ScanTask \(from Scanner\.plan or Scanner\.task\), got"),
    ("Scanner.task(5, 0, 1)", lambda t: t.scan().task(5, 0, 1), E, "rowset_id must be a string, got int 5"),
    ("Scanner.task('nope', 0, 1)", lambda t: t.scan().task("nope", 0, 1), E,
     "rowset 'nope' is not in version 3 of the table"),
    ("Scanner.task(rowset, 0, huge)",
     lambda t: t.scan().task(next(iter(t.state.rowsets)), 0, HUGE), E, r"stop must be an integer in \[0, 6\], got int"),
    ("Scanner.task(rowset, 1.5, 2)", lambda t: t.scan().task(next(iter(t.state.rowsets)), 1.5, 2), E,
     r"start must be an integer in \[0, 6\], got float 1\.5"),
    # --- create_table / open_table -------------------------------------------------------------
    ("create_table(uri=5)", lambda t: tf.create_table(5, schema()), tf.InvalidURIError,
     "table URI must be a non-empty string without NUL, got 5"),
    ("create_table(schema=5)", lambda t: tf.create_table(t.uri + "2", 5), S, r"schema must be a tf\.Schema, got int 5"),
    ("create_table(schema=[...])", lambda t: tf.create_table(t.uri + "2", [tf.Column("a", "int32")]), S,
     r"schema must be a tf\.Schema, got list \[Column\(name='a'"),
    ("create_table(partitioning=5)", lambda t: tf.create_table(t.uri + "2", schema(), partitioning=5), P,
     r"partitioning must be a tf\.PartitionSchema, got int"),
    ("create_table(properties='x')", lambda t: tf.create_table(t.uri + "2", schema(), properties="x"), E,
     "properties must be a dict or None, got str 'x'"),
    ("create_table(properties={5: 1})", lambda t: tf.create_table(t.uri + "2", schema(), properties={5: 1}), E,
     "unknown table property 5; known: checkpoint_interval"),
    ("create_table(properties={'history_max_age': inf})",
     lambda t: tf.create_table(t.uri + "2", schema(), properties={"history_max_age": INF}), E,
     r"table property history_max_age must be an integer in \[-1, 315360000\]"),
    ("create_table(storage_options=[...])",
     lambda t: tf.create_table(t.uri + "2", schema(), storage_options=[("a", 1)]), tf.InvalidURIError,
     "storage_options must be a dict"),
    ("create_table(name=5)", lambda t: tf.create_table(t.uri + "2", schema(), name=5), ID,
     "table name must be a string, got int"),
    ("open_table(uri=5)", lambda t: tf.open_table(5), tf.InvalidURIError,
     "table URI must be a non-empty string without NUL, got 5"),
    ("open_table(storage_options='x')", lambda t: tf.open_table(t.uri, storage_options="x"), tf.InvalidURIError,
     "storage_options must be a dict"),
    # --- Column / Schema ----------------------------------------------------------------------------
    ("Column(name=5)", lambda t: tf.Column(5, "int32"), ID, "column name must be a string, got int"),
    ("Column(type=None)", lambda t: tf.Column("c", None), S, "column type must be a string such as 'int64', got None"),
    ("Column(nullable='no')", lambda t: col(nullable="no"), S,
     "column 'c': nullable must be True or False, got str 'no'"),
    ("Column(nullable=1)", lambda t: col(nullable=1), S, "column 'c': nullable must be True or False, got int 1"),
    ("Column(compression=5)", lambda t: col(compression=5), S,
     "column 'c': compression must be a string or None, got int 5"),
    ("Column(encoding=['plain'])", lambda t: col(encoding=["plain"]), S,
     r"column 'c': encoding must be a string or None, got list \['plain'\]"),
    ("Column(id='1')", lambda t: col(id="1"), S,
     r"column 'c': id must be an integer in \[0, inf\] or None, got str '1'"),
    ("Column(id=-1)", lambda t: col(id=-1), S, r"column 'c': id must be an integer in \[0, inf\] or None, got int -1"),
    ("Column(default='x')", lambda t: col(default="x"), S,
     r"default of column 'c': 'x' \(str\) is not a valid int32; use a number"),
    ("Schema(columns=5)", lambda t: tf.Schema(5, ["a"]), S, "schema columns must be a list or tuple, got int 5"),
    ("Schema(columns='abc')", lambda t: tf.Schema("abc", ["a"]), S,
     "schema columns must be a list or tuple, got str 'abc'"),
    ("Schema(columns=[5])", lambda t: tf.Schema([5], ["a"]), S, r"schema columns must be tf\.Column, got int"),
    ("Schema(primary_key=[5])", lambda t: tf.Schema([tf.Column("a", "int32")], [5]), S,
     r"primary_key must be a list of column names \(strings\), got int 5 in"),
    ("Schema(primary_key=[['a']])", lambda t: tf.Schema([tf.Column("a", "int32")], [["a"]]), S,
     r"primary_key must be a list of column names \(strings\), got list \['a'\]"),
    ("Schema(next_column_id='1')", lambda t: tf.Schema([tf.Column("a", "int32")], ["a"], "1"), S,
     r"next_column_id must be an integer in \[0, inf\] or None, got str '1'"),
    # --- partitions ------------------------------------------------------------------------------------
    ("HashPartition(columns=5)", lambda t: tf.HashPartition(5, 2), P,
     "hash partition columns must be a list of column names, got int 5"),
    ("HashPartition(columns=[5])", lambda t: tf.HashPartition([5], 2), P,
     r"hash partition columns must be a list of column names \(strings\), got"),
    ("HashPartition(buckets=2.5) at create",
     lambda t: tf.create_table(t.uri + "2", schema(), tf.PartitionSchema(hash=[tf.HashPartition("host", 2.5)])),
     P, r"hash buckets must be an integer 2\.\.1024, got 2\.5"),
    ("HashPartition(seed=True) at create",
     lambda t: tf.create_table(t.uri + "2", schema(),
                               tf.PartitionSchema(hash=[tf.HashPartition("host", 2, seed=True)])), P,
     "hash seed must be a uint32, got True"),
    ("HashPartition(seed='x') at create",
     lambda t: tf.create_table(t.uri + "2", schema(),
                               tf.PartitionSchema(hash=[tf.HashPartition("host", 2, seed="x")])), P,
     "hash seed must be a uint32, got 'x'"),
    ("RangePartition(columns=5)", lambda t: tf.RangePartition(5), P,
     "range partition columns must be a list of column names or None, got"),
    ("RangePartition(bounds=5)", lambda t: tf.RangePartition(["time"], bounds=5), P,
     "range partition bounds must be a list or tuple, got int 5"),
    ("RangePartition(splits='abc')", lambda t: tf.RangePartition(["time"], splits="abc"), P,
     "range partition splits must be a list or tuple, got str 'abc'"),
    ("PartitionSchema(hash=5)", lambda t: tf.PartitionSchema(hash=5), P, "hash must be a list or tuple, got int 5"),
    ("PartitionSchema(hash=['x'])", lambda t: tf.PartitionSchema(hash=["x"]), P,
     r"each hash level must be a tf\.HashPartition, got str 'x'"),
    ("PartitionSchema(range=5)", lambda t: tf.PartitionSchema(range=5), P,
     r"range must be a tf\.RangePartition or None, got int 5"),
    # --- CommitProperties, Timestamp, parse_as_of, WriteFragment, Storage ----------------------------
    ("CommitProperties(max_attempts=True)", lambda t: tf.CommitProperties(max_attempts=True), E,
     r"CommitProperties\.max_attempts must be an integer in \[1, 1000000000\]"),
    ("CommitProperties(max_attempts=huge)", lambda t: tf.CommitProperties(max_attempts=HUGE), E,
     r"CommitProperties\.max_attempts must be an integer in \[1, 1000000000\]"),
    ("CommitProperties(max_restarts='3')", lambda t: tf.CommitProperties(max_restarts="3"), E,
     r"CommitProperties\.max_restarts must be an integer in \[1, 1000000000\]"),
    ("CommitProperties(max_backoff_seconds=nan)", lambda t: tf.CommitProperties(max_backoff_seconds=NAN), E,
     r"CommitProperties\.max_backoff_seconds must be a finite number in \[0"),
    ("CommitProperties(max_backoff_seconds=True)", lambda t: tf.CommitProperties(max_backoff_seconds=True), E,
     r"CommitProperties\.max_backoff_seconds must be a finite number in \[0"),
    ("CommitProperties(checkpoint_interval=0)", lambda t: tf.CommitProperties(checkpoint_interval=0), E,
     r"CommitProperties\.checkpoint_interval must be an integer in \[1"),
    ("CommitProperties(checkpoint_interval='x')", lambda t: tf.CommitProperties(checkpoint_interval="x"), E,
     r"CommitProperties\.checkpoint_interval must be an integer in \[1"),
    ("Timestamp('x')", lambda t: tf.Timestamp("x"), E,
     "a Timestamp is an integer of microseconds since the epoch, got str 'x'"),
    ("Timestamp(1.5)", lambda t: tf.Timestamp(1.5), E,
     "a Timestamp is an integer of microseconds since the epoch, got float"),
    ("Timestamp(True)", lambda t: tf.Timestamp(True), E,
     "a Timestamp is an integer of microseconds since the epoch, got bool"),
    ("parse_as_of(1.5)", lambda t: tf.parse_as_of(1.5), E,
     r"as_of must be a version \(int\), a tf\.Timestamp, a datetime or an ISO"),
    ("parse_as_of(object())", lambda t: tf.parse_as_of(object()), E,
     r"as_of must be a version \(int\), a tf\.Timestamp, a datetime or an ISO"),
    ("WriteFragment.from_json({})", lambda t: tf.WriteFragment.from_json({}), E,
     r"not a write fragment's to_json\(\): KeyError 'operation'"),
    ("WriteFragment.from_json(5)", lambda t: tf.WriteFragment.from_json(5), E,
     r"not a write fragment's to_json\(\): TypeError 'int' object is not"),
    ("WriteFragment.combine(5)", lambda t: tf.WriteFragment.combine(5), E,
     "fragments must be a non-empty list of write fragments, got int 5"),
    ("WriteFragment.combine([5])", lambda t: tf.WriteFragment.combine([5]), E,
     r"fragments must be tf\.WriteFragment \(or their to_json\(\) dicts\), got int"),
    ("Storage(5)", lambda t: tf.Storage(5), tf.InvalidURIError,
     "table URI must be a non-empty string without NUL, got 5"),
    ("Storage(storage_options=5)", lambda t: tf.Storage(t.uri, 5), tf.InvalidURIError,
     "storage_options must be a dict"),
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


@pytest.mark.parametrize("what,call,err,msg", ROWS, ids=[r[0] for r in ROWS])
def test_wrong_argument_is_a_typed_error_and_changes_nothing(table, what, call, err, msg):
    t, root = table
    before = _state(t, root)
    with pytest.raises(err, match=msg) as e:
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
