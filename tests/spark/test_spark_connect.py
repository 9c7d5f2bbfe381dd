"""The jobs, the data source, the stream source and the sinks over Spark Connect (README "Spark
Connect"): `get_spark(remote="local[2]")` in a driver of its own (tests/spark/connect_child.py; a
Connect session and this run's classic one cannot share a process) runs each entry point, and
what it read or wrote equals the engine's own reads of the same tables."""
import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tableformat as tf

pytest.importorskip("pyspark")
for _dep in ("grpc", "grpc_status", "google.rpc", "zstandard"):       # pyspark[connect], the `spark` extra
    pytest.importorskip(_dep)

from helpers import ROOT, TESTS  # noqa: E402

CHILD = TESTS / "spark" / "connect_child.py"


def kv(path, keys=(), a=None, tablets=4):
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("a", "int64", nullable=True)], primary_key="k")
    t = tf.create_table(str(path), sch, partitioning=tf.PartitionSchema(hash=[tf.HashPartition(["k"], tablets)]))
    if len(keys):
        t.insert(rows(keys, a if a is not None else keys))
    return t


def rows(ks, a):
    return pa.table({"k": pa.array(list(ks), pa.int64()), "a": pa.array(list(a), pa.int64())})


def ops(ks, a, op):
    return pa.table({"k": pa.array(ks, pa.int64()), "a": pa.array(a, pa.int64()), "op": pa.array(op)})


def canon(t: pa.Table) -> list:
    """Rows as sorted reprs, timestamps as UTC microseconds (Spark returns them in its session zone)."""
    cols = {n: (c.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()) if pa.types.is_timestamp(c.type) else c)
            for n, c in zip(t.column_names, t.columns)}
    return sorted(repr(sorted(r.items())) for r in pa.table(cols).to_pylist())


def engine(uri) -> pa.Table:
    return tf.open_table(uri).scan().to_arrow()


SINK_BATCHES = [ops([1, 2, 20, 21], [10, 20, 200, 210], ["upsert", "delete", "upsert", "insert"]),
                ops([3, 20, 22], [30, 201, 220], ["update", "upsert", "upsert"])]
MERGE_OPS = ops([0, 1, 5, 6, 18, 19, 24, 30], [-1, -1, 0, 0, 7, 7, 7, 3],
                ["update", "update", "delete", "delete", "upsert", "upsert", "upsert", "insert"])


def model(keys, batches) -> pa.Table:
    """What the op-column batches leave in a table of `keys` (a = k): the rows, as the engine applies them."""
    state = {k: k for k in keys}
    for b in batches:
        for r in b.to_pylist():
            if r["op"] == "delete":
                state.pop(r["k"], None)
            else:
                state[r["k"]] = r["a"]
    return rows(sorted(state), [state[k] for k in sorted(state)])


@pytest.fixture(scope="module")
def connect_run(tmp_path_factory):
    """The tables, one run of the child over them, and its outcomes: (config, steps)."""
    d = tmp_path_factory.mktemp("connect")
    out = d / "out"
    out.mkdir()
    src = kv(d / "wh" / "src", range(40))                                 # v1: insert
    src.update(rows(range(0, 40, 3), [-1] * 14))                          # v2
    src.delete(pa.table({"k": pa.array(range(1, 40, 5), pa.int64())}))   # v3
    src.upsert(rows(range(35, 50), range(100, 115)))                      # v4
    cmp = kv(d / "compact")
    for i in range(3):
        cmp.insert(rows(range(i, 300, 3), range(i, 300, 3)))
    cfg = {"out": str(out), "src": src.uri, "compact": cmp.uri,
           "insert": kv(d / "insert").uri, "format_write": kv(d / "format_write").uri,
           "merge": kv(d / "merge", range(20)).uri, "merge_input": str(d / "merge.parquet"),
           "insert_input": str(d / "insert.parquet"), "sink_input": str(d / "sink_in")}
    for name in ("sink", "upsert_sink", "upsert_sink_query_id"):
        cfg[name] = kv(d / name, range(10)).uri
    pq.write_table(rows(range(100, 160), range(60)), cfg["insert_input"])
    pq.write_table(MERGE_OPS, cfg["merge_input"])
    os.mkdir(cfg["sink_input"])
    for i, b in enumerate(SINK_BATCHES):       # the file source takes them oldest first: one batch each, in order
        pq.write_table(b, os.path.join(cfg["sink_input"], f"part-{i}.parquet"))
        os.utime(os.path.join(cfg["sink_input"], f"part-{i}.parquet"), (1_700_000_000 + i, 1_700_000_000 + i))
    env = dict(os.environ, PYTHONPATH=f"{ROOT}:{TESTS}", PYSPARK_PYTHON=sys.executable)
    proc = subprocess.run([sys.executable, str(CHILD), json.dumps(cfg)], env=env, cwd=str(ROOT),
                          capture_output=True, text=True, timeout=1500)
    steps = out / "steps.json"
    assert steps.exists(), f"the Connect driver exited {proc.returncode}:\n{proc.stderr[-6000:]}"
    return cfg, json.loads(steps.read_text())


def result(connect_run, step):
    """What the step read (a Table) or returned (JSON), once it ran without an error."""
    cfg, steps = connect_run
    assert steps[step] == "ok", f"{step} over Spark Connect: {steps[step]}"
    base = os.path.join(cfg["out"], step)
    if os.path.exists(base + ".parquet"):
        return pq.read_table(base + ".parquet")
    if os.path.exists(base + ".json"):
        with open(base + ".json") as f:
            return json.load(f)
    return None


def test_get_spark_remote_gives_a_connect_session(connect_run):
    assert result(connect_run, "session") == {"connect": True, "class": "pyspark.sql.connect.session.SparkSession"}


@pytest.mark.parametrize("step", ["read_table", "format_read", "catalog"])
def test_reads_equal_the_engine(connect_run, step):
    got = result(connect_run, step)
    assert got.num_rows > 0 and canon(got) == canon(engine(connect_run[0]["src"]))


def test_spark_jobs_register_makes_the_format_known_on_a_connect_session(connect_run):
    got = result(connect_run, "register")
    assert "DATA_SOURCE_NOT_FOUND" in got["before"]
    assert canon(pa.Table.from_pylist(got["rows"])) == canon(engine(connect_run[0]["src"]))


@pytest.mark.parametrize("step", ["insert", "format_write"])
def test_inserts_land_the_rows(connect_run, step):
    result(connect_run, step)
    cfg = connect_run[0]
    assert canon(engine(cfg[step])) == canon(pq.read_table(cfg["insert_input"]))


def test_mutation_merge_applies_each_rows_op(connect_run):
    result(connect_run, "merge")
    assert canon(engine(connect_run[0]["merge"])) == canon(model(range(20), [MERGE_OPS]))


def test_change_feed_stream_and_read_changes_equal_table_changes(connect_run):
    cfg = connect_run[0]
    expect = canon(tf.open_table(cfg["src"]).changes(0))
    assert result(connect_run, "stream_source") is None
    assert canon(pq.read_table(os.path.join(cfg["out"], "stream_source"))) == expect
    assert canon(result(connect_run, "read_changes")) == expect


@pytest.mark.parametrize("step", ["sink", "upsert_sink"])
def test_sinks_commit_each_batch_once(connect_run, step):
    result(connect_run, step)
    t = tf.open_table(connect_run[0][step])
    assert canon(t.scan().to_arrow()) == canon(model(range(10), SINK_BATCHES))
    assert t.version == 1 + len(SINK_BATCHES)          # one commit per micro-batch


def test_upsert_sink_without_app_id_says_to_give_one(connect_run):
    """UpsertSink names its batches by the query's id, which a Connect session cannot read: a typed
    error that says what to do, and nothing written."""
    cfg, steps = connect_run
    assert "InvalidOptionError" in steps["upsert_sink_query_id"]
    assert "give it an app_id" in steps["upsert_sink_query_id"]
    assert tf.open_table(cfg["upsert_sink_query_id"]).version == 1


def test_compaction_job_runs_over_connect(connect_run):
    res = result(connect_run, "compact")
    t = tf.open_table(connect_run[0]["compact"])
    assert res["actions"] >= 2 and res["committed"] == res["actions"]
    assert canon(t.scan().to_arrow()) == canon(rows(range(300), range(300))) and t.check().ok


def test_change_export_over_connect(connect_run):
    cfg = connect_run[0]
    res = result(connect_run, "change_export")
    src = tf.open_table(cfg["src"])
    assert res["start"] == 0 and res["end"] == src.version and res["rows"] == src.changes(0).num_rows
    exported = pq.read_table(os.path.join(cfg["out"], "exported"))
    assert exported.num_rows == res["rows"]


def test_stream_export_over_connect(connect_run):
    got = result(connect_run, "stream_export")
    n = tf.open_table(connect_run[0]["src"]).changes(0).num_rows
    assert got["result"]["rows"] == got["rows"] == n


def test_backfill_and_metadata_views_over_connect(connect_run):
    src = tf.open_table(connect_run[0]["src"])
    v1 = src.scan(as_of=1).to_arrow()
    assert canon(result(connect_run, "backfill")) == canon(v1)
    assert sorted(result(connect_run, "metadata_views")["version"].to_pylist()) == \
        [h.version for h in sorted(src.history(), key=lambda h: h.version)]


def test_a_jvm_error_over_connect_is_typed(connect_run):
    """typed_error of the catalog's error on a Connect session: the text names tableformat.log.X."""
    got = result(connect_run, "typed_jvm_error")
    assert got["type"] == "TagNotFoundError", got
    assert got["message"].startswith("no tag 'nope' in this table"), got
