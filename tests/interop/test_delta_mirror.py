"""The zero-copy Delta mirror (Table.mirror_delta, `tableformat mirror URI --delta PATH`).

Each mirrored version is read back by delta-spark (load, and SQL VERSION AS OF)
and by delta-rs, and compared with the engine's own scan() of the version it
describes. delta-rs 1.6 refuses the mirror's reader features (columnMapping,
deletionVectors) in `DeltaTable.to_pyarrow_table()`; its DataFusion reader
(`deltalake.QueryBuilder`, delta-kernel) reads both, so that is the one used.
"""
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tableformat as tf
from tableformat.cli import main as cli_main
from helpers import norm_table, small_rows, small_schema

deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyroaring")


def history_ops(t):
    """Operations after which the mirror is written: every kind of change, schema changes included."""
    yield "insert", lambda: t.insert(small_rows(range(0, 300)))
    yield "delete", lambda: t.delete(small_rows(range(3, 300, 11)).select(["k"]))
    yield "more deletes", lambda: t.delete_ignore(small_rows(range(5, 300, 13)).select(["k"]))
    yield "update", lambda: t.update_ignore(small_rows(range(1, 300, 7), salt=1).select(["k", "v"]))
    yield "insert 2", lambda: t.insert(small_rows(range(1000, 1100)))
    yield "upsert", lambda: t.upsert(small_rows(list(range(1050, 1150)), salt=2))
    yield "rename+add+drop", lambda: t.alter().rename_column("s", "name").add_column("extra", "int32") \
        .drop_column("d").commit()
    yield "insert extra", lambda: t.insert(pa.table({
        "k": np.arange(2000, 2050, dtype=np.int64), "name": pa.array([f"n{i}" for i in range(50)]),
        "v": np.linspace(0, 1, 50), "ts": pa.array(np.arange(50) + 10**15, pa.timestamp("us", tz="UTC")),
        "extra": pa.array(np.arange(50, dtype=np.int32))}))
    yield "add column with default", lambda: t.alter().add_column("flag", "int64", nullable=False, default=7).commit()
    yield "delete 2", lambda: t.delete_ignore(pa.table({"k": np.array([0, 2000, 1060], dtype=np.int64)}))


def scan_cols(t, version):
    return [c.name for c in t.snapshot(version).schema.columns]


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory):
    root = tmp_path_factory.mktemp("mirror")
    t = tf.create_table(str(root / "t"), small_schema())
    m = str(root / "m")
    results = []
    for what, op in history_ops(t):
        op()
        results.append((what, t.mirror_delta(m)))
    return t, m, results


def test_each_call_is_one_commit_of_the_difference(mirrored):
    t, m, results = mirrored
    assert [r.delta_version for _, r in results] == list(range(len(results)))
    by = dict(results)
    assert by["insert"].added == by["insert"].files and by["insert"].deletion_vectors == 0
    assert by["delete"].deletion_vectors == 1 and by["delete"].added == 1 and by["delete"].removed == 1
    assert set(by["update"].compacted.values()) == {"pending REDO updates"}
    assert by["insert 2"].added == 1 and by["insert 2"].removed == 0        # only the new rowset
    assert "added with a read default" in " ".join(by["add column with default"].compacted.values())
    assert not by["rename+add+drop"].compacted and by["rename+add+drop"].added == 0
    assert t.mirror_delta(m).delta_version is None                          # nothing new: no commit
    log = sorted(os.listdir(os.path.join(m, "_delta_log")))
    for (_what, r), name in zip(results, log):
        actions = [json.loads(x) for x in open(os.path.join(m, "_delta_log", name))]
        info = actions[0]["commitInfo"]["tableformat"]
        assert info["version"] == r.table_version and info["timestamp"] == int(t.snapshot(r.table_version).timestamp)
        for a in actions:
            if "add" in a:
                assert a["add"]["path"].startswith("file://" + t.uri)                   # our files, in place
                st = json.loads(a["add"]["stats"])
                assert st["numRecords"] > 0 and "c0" in st["minValues"]                 # data skipping on k


def test_delta_rs_reads_every_mirrored_version(mirrored):
    t, m, results = mirrored
    for what, r in results:
        dt = deltalake.DeltaTable(m, version=r.delta_version)
        got = pa.table(deltalake.QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all())
        cols = scan_cols(t, r.table_version)
        assert got.column_names == cols, what
        assert norm_table(got, cols).equals(norm_table(t.scan(as_of=r.table_version).to_arrow(), cols)), what


@pytest.fixture
def delta_reader(spark):
    """The session, reading Parquet as delta-spark can read our files: Spark 4.2's vectorized
    reader cannot decode BYTE_STREAM_SPLIT (a column encoded bitshuffle), its row reader can, so
    there the vectorized one is turned off (README "Delta Lake")."""
    from spark_jobs.read import reads_byte_stream_split
    from spark_jobs.session import has_delta
    if not has_delta(spark):
        pytest.skip("the Spark session has no Delta Lake")
    off = not reads_byte_stream_split(spark)
    if off:
        spark.conf.set("spark.sql.parquet.enableVectorizedReader", "false")
    yield spark
    if off:
        spark.conf.unset("spark.sql.parquet.enableVectorizedReader")


def test_delta_spark_reads_every_mirrored_version(delta_reader, mirrored):
    spark = delta_reader
    t, m, results = mirrored
    latest = spark.read.format("delta").load(m).toArrow()
    cols = scan_cols(t, results[-1][1].table_version)
    assert norm_table(latest, cols).equals(norm_table(t.scan().to_arrow(), cols))
    for what, r in results:
        got = spark.sql(f"SELECT * FROM delta.`{m}` VERSION AS OF {r.delta_version}").toArrow()
        cols = scan_cols(t, r.table_version)
        assert got.column_names == cols, what
        assert norm_table(got, cols).equals(norm_table(t.scan(as_of=r.table_version).to_arrow(), cols)), what
    # data skipping: a filter on the key reads only the files whose [min, max] may match
    q = spark.read.format("delta").load(m).where("k >= 2000")
    assert sorted(x.k for x in q.select("k").collect()) == sorted(
        t.scan(filter=[("k", ">=", 2000)]).to_arrow().column("k").to_pylist())


def test_delta_vacuum_on_the_mirror_never_deletes_our_files(delta_reader, tmp_path):
    spark = delta_reader
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    m = str(tmp_path / "m")
    t.insert(small_rows(range(100)))
    t.mirror_delta(m)
    t.delete(small_rows(range(0, 100, 3)).select(["k"]))
    t.mirror_delta(m)
    t.update(small_rows(range(1, 100, 3), salt=5).select(["k", "s"]))
    t.mirror_delta(m)                                   # compacts: the first rowset leaves the mirror
    ours = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(t.uri) for f in fs)
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        spark.sql(f"VACUUM delta.`{m}` RETAIN 0 HOURS")
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert sorted(os.path.join(dp, f) for dp, _, fs in os.walk(t.uri) for f in fs) == ours
    assert t.check().ok
    assert norm_table(spark.read.format("delta").load(m).toArrow(), ["k", "s", "v", "d", "ts"]).equals(
        norm_table(t.scan().to_arrow(), ["k", "s", "v", "d", "ts"]))


def test_our_vacuum_keeps_what_the_latest_mirror_references(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    m = str(tmp_path / "m")
    t.insert(small_rows(range(100)))
    t.mirror_delta(m)
    (rs,) = t.state.rowsets.values()
    mirrored_file = rs.base[0].path
    t.update(small_rows(range(0, 100, 2), salt=3).select(["k", "v"]))
    # our compaction, outside the mirror: the mirrored file leaves our state
    assert t.compact_action(tf.CompactionAction("merge", rs.tablet, (rs.id,), 1.0, "test", 0)) is not None
    assert mirrored_file not in {r.base[0].path for r in t.state.rowsets.values()}
    res = t.vacuum(retain_seconds=0, grace_seconds=0)
    assert mirrored_file not in res.files and os.path.exists(os.path.join(t.uri, mirrored_file))
    got = pa.table(deltalake.QueryBuilder().register("t", deltalake.DeltaTable(m)).execute("SELECT * FROM t")
                   .read_all())
    assert norm_table(got, ["k", "v"]).equals(norm_table(t.scan(as_of=1).to_arrow(), ["k", "v"]))   # still readable
    t.mirror_delta(m)                                    # the mirror moves on: the old file may go
    res = t.vacuum(retain_seconds=0, grace_seconds=0)
    assert mirrored_file in res.files and not os.path.exists(os.path.join(t.uri, mirrored_file))


def test_a_mirrored_table_is_format_5_and_an_older_engine_refuses_it(tmp_path, monkeypatch):
    """`_mirrors/` came with format 5 (spec §15): an engine of format 4 does not know it, so its
    vacuum would delete the files a mirror reads; it must refuse the table instead."""
    from tableformat.log.txlog import commit_path
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    t.insert(small_rows(range(50)))
    t.mirror_delta(str(tmp_path / "m"))
    assert os.listdir(tmp_path / "t" / "_mirrors")
    assert tf.FORMAT_VERSION >= 5
    assert {json.loads(t.storage.read(commit_path(v)))["format_version"] for v in range(t.version + 1)} == {5}
    import tableformat.format.metadata as md
    import tableformat.log.txlog as tl
    for mod in (md, tl):
        monkeypatch.setattr(mod, "FORMAT_VERSION", 4)
    with pytest.raises(tf.UnsupportedFormatVersionError, match="format version 5"):
        tf.open_table(t.uri).vacuum(retain_seconds=0, grace_seconds=0)


def test_mirror_on_the_loopback_s3_server(s3_table_root, s3_endpoint):
    root, opts = s3_table_root
    t = tf.create_table(f"{root}/t", small_schema(), storage_options=opts)
    m = f"{root}/mirror"
    t.insert(small_rows(range(200)))
    t.delete(small_rows(range(0, 200, 9)).select(["k"]))
    r1 = t.mirror_delta(m, storage_options=opts)
    t.update(small_rows(range(1, 200, 9), salt=4).select(["k", "d"]))
    r2 = t.mirror_delta(m, storage_options=opts)
    assert r1.deletion_vectors == 1 and r2.compacted
    rs_opts = {"AWS_ENDPOINT_URL": s3_endpoint, "AWS_ACCESS_KEY_ID": "testing",
               "AWS_SECRET_ACCESS_KEY": "sekrit-do-not-print", "AWS_REGION": "us-east-1",
               "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    for r in (r1, r2):
        dt = deltalake.DeltaTable(m, version=r.delta_version, storage_options=rs_opts)
        got = pa.table(deltalake.QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all())
        cols = ["k", "s", "v", "d", "ts"]
        assert norm_table(got, cols).equals(norm_table(t.scan(as_of=r.table_version).to_arrow(), cols))


def test_refusals_are_typed_and_leave_everything_unchanged(tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    t.insert(small_rows(range(50)))
    t.update(small_rows(range(0, 50, 5), salt=1).select(["k", "v"]))
    v = t.version
    with pytest.raises(tf.MirrorError, match="pending REDO updates"):
        t.mirror_delta(str(tmp_path / "m"), compact=False)
    with pytest.raises(tf.InvalidOptionError, match="outside the table's directory"):
        t.mirror_delta(str(tmp_path / "t" / "mirror"))
    assert t.version == v and not os.path.exists(tmp_path / "m" / "_delta_log")


def test_cli_mirror(tmp_path, capsys):
    t = tf.create_table(str(tmp_path / "t"), small_schema())
    t.insert(small_rows(range(50)))
    t.update(small_rows(range(0, 50, 5), salt=1).select(["k", "v"]))
    assert cli_main(["mirror", t.uri, "--delta", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert "compacted rowset" in out and "pending REDO updates" in out and "Delta version 0" in out
    got = pa.table(deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(tmp_path / "m")))
                   .execute("SELECT * FROM t").read_all())
    assert norm_table(got, ["k", "v"]).equals(norm_table(t.scan().to_arrow(), ["k", "v"]))


def test_delta_spark_with_default_settings_reads_a_mirror_of_a_default_table(spark, tmp_path):
    """A mirror is for readers that know nothing of us, with their defaults: Spark 4.2's vectorized
    reader (every delta-spark user's) cannot decode BYTE_STREAM_SPLIT, so a table made with
    default settings writes numbers PLAIN (§5) and the vectorized reader stays on."""
    from spark_jobs.session import has_delta
    if not has_delta(spark):
        pytest.skip("the Spark session has no Delta Lake")
    assert spark.conf.get("spark.sql.parquet.enableVectorizedReader") == "true"
    s = tf.Schema([tf.Column("k", "int64"), tf.Column("i", "int32", nullable=True), tf.Column("f", "float", nullable=True),
                   tf.Column("v", "double", nullable=True), tf.Column("d", "decimal(12,2)", nullable=True),
                   tf.Column("dt", "date", nullable=True), tf.Column("ts", "unixtime_micros", nullable=True)],
                  primary_key="k")
    t = tf.create_table(str(tmp_path / "t"), s)
    n = 500
    t.insert(pa.table({"k": np.arange(n, dtype=np.int64), "i": pa.array(np.arange(n, dtype=np.int32) * 3),
                       "f": pa.array(np.linspace(0, 1, n, dtype=np.float32)), "v": np.linspace(-5, 5, n),
                       "d": pa.array(np.arange(n), pa.int64()).cast(pa.decimal128(38, 0)).cast(pa.decimal128(12, 2)),
                       "dt": pa.array(np.arange(n, dtype=np.int32), pa.date32()),
                       "ts": pa.array(np.arange(n) + 10**15, pa.timestamp("us", tz="UTC"))}))
    m = str(tmp_path / "m")
    t.mirror_delta(m)
    got = spark.read.format("delta").load(m).toArrow()
    cols = [c.name for c in s.columns]
    assert norm_table(got, cols).equals(norm_table(t.scan().to_arrow(), cols))
    assert spark.read.format("delta").load(m).where("v > 4.5").count() == t.scan(filter=[("v", ">", 4.5)]).count()


def _nan_ranged_table(root):
    """A table with both kinds of trouble #34 found: NaN in a double, and range partitions."""
    sch = tf.Schema([tf.Column("k", "int64"), tf.Column("f", "double", nullable=True)], primary_key="k")
    part = tf.PartitionSchema(range=tf.RangePartition(["k"], bounds=[(0, 10), (10, 20)]))
    t = tf.create_table(str(root / "t"), sch, partitioning=part)
    t.insert(pa.table({"k": pa.array(range(20), pa.int64()),
                       "f": [-1.0, float("nan"), -2.0] + [-float(i) for i in range(3, 20)]}))
    return t


def test_the_nan_row_survives_footer_pruning_in_spark_and_through_the_mirror(spark, tmp_path):
    """#34.2: Spark's Parquet reader (filterPushdown on, its default) pruned the row group of
    [-1.0, NaN, -2.0] for `f > 0.0` by the footer's min/max, which leave NaN out; so did a
    delta-spark read of the mirror. The engine returns the NaN row (§13)."""
    t = _nan_ranged_table(tmp_path)
    want = t.scan(filter=[("f", ">", 0.0)]).to_arrow().column("k").to_pylist()
    assert want == [1]
    assert spark.conf.get("spark.sql.parquet.filterPushdown") == "true"
    from spark_jobs.read import reads_byte_stream_split
    vec = reads_byte_stream_split(spark)
    if not vec:
        spark.conf.set("spark.sql.parquet.enableVectorizedReader", "false")
    try:
        fid = f"c{t.schema.column('f').id}"
        kid = f"c{t.schema.column('k').id}"
        seen = []
        for rs in t.state.rowsets.values():
            path = f"{t.uri}/{rs.base[0].path}"
            rows = pq.read_table(path).to_pylist()
            expect = sorted(r[kid] for r in rows if r[fid] != r[fid] or r[fid] > 0)   # NaN ranks above 0
            got = sorted(r[0] for r in spark.read.parquet(path).where(f"{fid} > 0.0").select(kid).collect())
            assert got == expect, rs.tablet
            seen.extend(got)
        assert seen == want
        from spark_jobs.session import has_delta
        if has_delta(spark):
            m = str(tmp_path / "m")
            t.mirror_delta(m)
            got = [r.k for r in spark.read.format("delta").load(m).where("f > 0.0").collect()]
            assert got == want
    finally:
        if not vec:
            spark.conf.unset("spark.sql.parquet.enableVectorizedReader")


def test_a_mirror_holding_the_table_is_refused_and_a_delta_vacuum_of_a_right_one_keeps_check_ok(delta_reader,
                                                                                              tmp_path):
    """#34.1 as the issue ran it: a mirror at the table's parent (or `file://` + the table's
    own path) was accepted, and `VACUUM ... RETAIN 0 HOURS` there deleted our PK indexes and
    UNDO files (check() found 7 violations). Now refused before anything is written; a mirror
    beside the table survives a real Delta VACUUM with check() ok, through a range drop and NaN."""
    spark = delta_reader
    t = _nan_ranged_table(tmp_path)
    t.delete(pa.table({"k": pa.array([4, 15], pa.int64())}))
    files = {os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs}
    for bad in (str(tmp_path), f"file://{tmp_path}/", f"file://{t.uri}", f"{t.uri}/../t/mirror"):
        with pytest.raises(tf.PathOverlapError, match="outside the table's directory"):
            t.mirror_delta(bad)
    assert {os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs} == files
    m = str(tmp_path / "m")
    t.mirror_delta(m)
    t.update(pa.table({"k": pa.array([5], pa.int64()), "f": [float("nan")]}))
    with t.alter() as a:
        a.drop_range_partition(10, 20)
    t.mirror_delta(m)                                   # compacts the REDO update first
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        spark.sql(f"VACUUM delta.`{m}` RETAIN 0 HOURS")
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert t.check().ok
    got = spark.read.format("delta").load(m)
    rows = lambda tb: sorted((r["k"], "NaN" if r["f"] != r["f"] else r["f"]) for r in tb.to_pylist())  # noqa: E731
    assert rows(got.toArrow()) == rows(t.scan().to_arrow())
    assert sorted(r.k for r in got.where("f > 0.0").collect()) == [1, 5]


def test_a_base_file_whose_old_footer_hides_nan_is_rewritten_before_it_is_mirrored(tmp_path, monkeypatch):
    """Files written before §5's footer rule carry float min/max that leave NaN out; Delta's
    readers would prune their NaN rows. The mirror rewrites them first (a merging compaction,
    named in the result); a file without NaN, or written by the rule, is mirrored in place."""
    import tableformat.format.diskrowset as drs
    t = _nan_ranged_table(tmp_path)                      # by the rule: no float min/max
    with monkeypatch.context() as mp:                    # the writer before the rule
        mp.setattr(drs, "footer_statistics_safe", lambda col, arr, whole: True)
        with t.alter() as a:
            a.add_range_partition(20, 40)
        t.insert(pa.table({"k": pa.array([21, 22, 30], pa.int64()), "f": [-1.0, float("nan"), -5.0]}))
        t.insert(pa.table({"k": pa.array([35], pa.int64()), "f": [-1.0]}))
    old = {rs.id for rs in t.state.rowsets.values() if rs.tablet.startswith("r2")}
    r = t.mirror_delta(str(tmp_path / "m"))
    assert len(r.compacted) == 1 and "footer" in next(iter(r.compacted.values()))
    assert r.compacted.keys() < old                      # only the file that holds the NaN
    for rs in t.refresh().rowsets.values():
        md = pq.read_metadata(f"{t.uri}/{rs.base[0].path}")
        f = f"c{t.schema.column('f').id}"
        has_nan = rs.stats[t.schema.column("f").id].get("nan")
        assert not has_nan or all(md.row_group(g).column(i).statistics is None for g in range(md.num_row_groups)
                                  for i in range(md.num_columns) if md.row_group(g).column(i).path_in_schema == f)
