"""A warm JVM plans from what it already read of the log (issue #47 item 4; specs/format.md §8.3,
"a reader that keeps what it read for a later query"): `tableformat.log.LogCache` keeps each
table's reader, a later query lists `_log/` once and reads only the files that are new. Its plan
must be the cold plan, whatever happened in between: commits of the engine, compactions, ALTERs,
tags, vacuums, a table dropped and created again at the same path, and every damaged log of
test_jvm_planner's matrix. The JVM is one long `PlanCli` process: `"warm": true` reads through its
cache (and says the listings and reads it cost), a plain request reads the log cold."""
from __future__ import annotations

import random
import shutil

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf

pytest.importorskip("pyspark")

from test_jvm_planner import DAMAGED_LOGS, FILTERS, Jvm, _damage, _history_schema, _rows, request  # noqa: E402
from test_jvm_planner import pristine_log  # noqa: E402,F401  (the fixture)
from test_spark_connector import small_rows, small_schema  # noqa: E402


@pytest.fixture(scope="module")
def jvm():
    j = Jvm()
    yield j
    j.close()


def warm_and_cold(jvm, uri, read: dict) -> tuple[dict, dict]:
    """(the warm answer, the cost it said), checked equal to the cold answer."""
    warm = jvm.ask({**request(uri, read), "warm": True})
    cost = {k: warm.pop(k) for k in ("log_lists", "log_reads") if k in warm}
    cold = jvm.ask(request(uri, read))
    if "error" in cold or "error" in warm:
        assert (warm.get("error"), warm.get("message")) == (cold.get("error"), cold.get("message")), read
    else:
        assert warm == cold, read
    return warm, cost


def _step(t, rng: random.Random, live: set, extra: list, salt: int):
    """One random commit (or a few) of the engine on `t`."""
    op = rng.choice(["insert", "insert", "update", "delete", "upsert", "compact", "alter", "tag", "vacuum"])
    if op == "insert" or len(live) < 10:
        keys = {(rng.randrange(0, 1000), rng.choice("abc")) for _ in range(rng.randint(5, 40))} - live
        if keys:
            t.insert(_with(extra, _rows(keys, rng, salt), rng))
            live |= keys
    elif op == "update":
        keys = set(rng.sample(sorted(live), rng.randint(1, 10)))
        t.update(_rows(keys, rng, salt).select(["k", "s", rng.choice(["v", "n"])]))
    elif op == "delete":
        keys = set(rng.sample(sorted(live), rng.randint(1, 8)))
        t.delete(pa.table({"k": pa.array([k for k, _ in sorted(keys)], pa.int64()),
                           "s": pa.array([s for _, s in sorted(keys)])}))
        live -= keys
    elif op == "upsert":
        keys = set(rng.sample(sorted(live), 3)) | {(rng.randrange(1000, 2000), "a")}
        t.upsert(_with(extra, _rows(keys, rng, salt), rng))
        live |= keys
    elif op == "compact":
        t.compact()
    elif op == "alter":
        with t.alter() as a:
            if extra and rng.random() < 0.4:
                old = extra.pop()
                a.rename_column(old, f"{old}r")
                extra.append(f"{old}r")
            else:
                extra.append(f"x{salt}")
                a.add_column(extra[-1], "int32", nullable=True)
    elif op == "tag":
        t.tag(f"t{salt}", as_of=rng.randrange(0, t.version + 1))
    else:
        t.vacuum(retain_seconds=0, grace_seconds=0)


def _with(extra, table, rng):
    for c in extra:
        table = table.append_column(c, pa.array([rng.randint(0, 9) for _ in range(table.num_rows)], pa.int32()))
    return table


@pytest.mark.parametrize("seed", range(2))
def test_a_warm_plan_equals_the_cold_plan_after_each_commit(jvm, tmp_path, seed):
    rng = random.Random(seed)
    path = tmp_path / "t"
    props = {"row_group_rows": 128, "checkpoint_interval": 4, "history_max_age": -1}
    t = tf.create_table(str(path), _history_schema(), properties=props)
    live: set = set()
    extra: list = []
    costs = []
    for salt in range(40):
        if salt == 25:                            # dropped and created again at the same path
            shutil.rmtree(path)
            t = tf.create_table(str(path), _history_schema(), properties=props)
            live, extra = set(), []
        before = t.version
        _step(t, rng, live, extra, salt)
        got, cost = warm_and_cold(jvm, t.uri, {})
        assert got["version"] == t.version
        if salt not in (0, 25) and t.version == before + 1:
            costs.append(cost)
        for _ in range(2):                        # time travel through the same warm reader stays exact
            read = {"as_of": rng.randrange(0, t.version + 1), "filter": rng.choice(FILTERS)}
            if extra and rng.random() < 0.5:
                read["columns"] = ["k", extra[-1]]
            warm_and_cold(jvm, t.uri, read)
        again, cost = warm_and_cold(jvm, t.uri, {})
        assert cost == {"log_lists": 1, "log_reads": 0}, cost     # no new commit: one listing, no read
    # one new commit: one listing and that commit read (a checkpoint written beside it is not needed)
    assert costs and all(c == {"log_lists": 1, "log_reads": 1} for c in costs), costs


WARM_AT = (12, 25)


@pytest.mark.parametrize("warm_at", WARM_AT)
@pytest.mark.parametrize("case", list(DAMAGED_LOGS))
def test_a_damaged_log_gives_a_warm_reader_the_cold_answer(jvm, pristine_log, tmp_path, case, warm_at):  # noqa: F811
    """The reader was warmed when the log ended at `warm_at` (later files not yet there), then the
    rest of the log appears and is damaged: commits and a checkpoint that appear, a commit that
    goes missing or is altered, all answer as a cold read does, at the latest and as of each version."""
    root = tmp_path / "t"
    shutil.copytree(pristine_log, root)
    held = tmp_path / "held"
    held.mkdir()
    for f in (root / "_log").iterdir():
        if f.name[:20].isdigit() and int(f.name[:20]) > warm_at:
            shutil.move(f, held / f.name)
    first, _ = warm_and_cold(jvm, str(root), {})
    assert first["version"] == warm_at
    for f in held.iterdir():
        shutil.move(f, root / "_log" / f.name)
    _damage(root, case)
    latest, _ = warm_and_cold(jvm, str(root), {})
    expect = DAMAGED_LOGS[case]
    assert (latest.get("error") or latest["version"]) == expect, latest
    for as_of in (0, 5, 12, 15, 17, 20, 22, 25, 26):
        warm_and_cold(jvm, str(root), {"as_of": as_of})


def test_a_table_replaced_by_one_of_the_same_length_is_not_mixed(jvm, tmp_path):
    """A table created again at the path with as many commits, of the same lengths: the listed
    modification times differ, so nothing kept of the old table is used (§8.1 table_id)."""
    path = tmp_path / "t"

    def make(salt):
        t = tf.create_table(str(path), small_schema())
        t.insert(small_rows(np.arange(10), salt=salt))
        return t

    make(1)
    first, _ = warm_and_cold(jvm, str(path), {})
    shutil.rmtree(path)
    t = make(2)
    second, _ = warm_and_cold(jvm, str(path), {})
    assert first["version"] == second["version"] == t.version
    assert {r["id"] for r in first["rowsets"]}.isdisjoint(r["id"] for r in second["rowsets"])


def test_review1_a_query_defined_before_a_commit_and_run_after_it_sees_the_commit(spark, jvm_connector, tmp_path):
    """On main a DataFrame or spark.sql query reads the latest version when its action plans the scan
    (CatalogTable.latest lists again); a commit of another process between the definition and the action
    must be seen, as a cold reader sees it."""
    from helpers import spark_catalog
    t = tf.create_table(str(tmp_path / "wh" / "ns" / "t"),
                        tf.Schema([tf.Column("k", "int64"), tf.Column("v", "double", nullable=True)], ["k"]))
    t.insert(pa.table({"k": pa.array(range(100), pa.int64()), "v": [1.0] * 100}))
    c = spark_catalog(spark, tmp_path / "wh")
    q = spark.sql(f"SELECT count(*) AS n FROM {c}.ns.t")
    df = spark.table(f"{c}.ns.t")
    t.insert(pa.table({"k": pa.array(range(100, 150), pa.int64()), "v": [2.0] * 50}))
    assert spark.sql(f"SELECT count(*) AS n FROM {c}.ns.t").collect()[0].n == 150     # a new query sees it
    assert q.collect()[0].n == 150
    assert len(df.collect()) == 150


def test_review1_a_checkpoint_of_a_newer_format_appearing_after_warm_gives_the_cold_error(jvm, pristine_log, tmp_path):  # noqa: F811  (the fixture)
    """review1: the reader was warmed at version 12; then commits 13..25 and the checkpoint at 20
    appear, the checkpoint written in a format newer than this reader's. A cold reader starts from
    that checkpoint and refuses it (UnsupportedFormatVersionError, §8.1); a warm one must not answer
    from the commits after its head instead (§8.3: the warm answer or error is the cold one)."""
    root = tmp_path / "t"
    shutil.copytree(pristine_log, root)
    held = tmp_path / "held"
    held.mkdir()
    for f in (root / "_log").iterdir():
        if f.name[:20].isdigit() and int(f.name[:20]) > 12:
            shutil.move(f, held / f.name)
    first, _ = warm_and_cold(jvm, str(root), {})
    assert first["version"] == 12
    for f in held.iterdir():
        shutil.move(f, root / "_log" / f.name)
    cp = root / "_log" / f"{20:020d}.checkpoint.json"
    text = cp.read_text()
    assert text.startswith('{"format_version": ')
    cp.write_text('{"format_version": 99' + text[text.index(","):])
    latest, _ = warm_and_cold(jvm, str(root), {})
    assert latest.get("error") == "UnsupportedFormatVersionError", latest
