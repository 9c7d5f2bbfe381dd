"""Issue #45's differential random history: the JVM writer (SQL INSERT through the catalog, and
`partitioned_insert` on its JVM path) and the Python writers (`partitioned_insert` on its Python path,
the engine's own insert, update, delete, upsert and compaction) take turns on one table made by SQL
CREATE, with an ALTER from SQL midway. After every step, every version reads the same through the
engine, the connector and the catalog; `check()` is ok; and `changes()` between two versions, replayed
on the earlier version's rows, gives exactly the later version's rows."""
import logging

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import tableformat as tf  # noqa: E402

from helpers import spark_catalog  # noqa: E402

pytestmark = pytest.mark.usefixtures("jvm_connector")

STEPS = ["sql", "jvm", "python", "engine_insert", "update", "delete", "upsert", "compact"]


def _norm(v):
    return None if v is None or (isinstance(v, float) and v != v) else v


def _rows_of(table: pa.Table, cols) -> dict:
    """key (k, s) -> the row's other columns, as a tuple in `cols` order."""
    d = table.select(cols).to_pydict()
    return {(k, s): tuple(_norm(d[c][i]) for c in cols[2:]) for i, (k, s) in enumerate(zip(d["k"], d["s"]))}


def _replay(before: dict, ch: pa.Table, cols) -> dict:
    """`before` with the changes of one commit applied in (version, commit order)."""
    out = dict(before)
    ch = ch.sort_by([("_version", "ascending"), ("_commit_order", "ascending")]).to_pydict()
    for i, op in enumerate(ch["_op"]):
        key = (ch["k"][i], ch["s"][i])
        if op == "delete":
            assert key in out, f"a delete of {key}, which the version before did not hold"
            del out[key]
        else:
            assert (key in out) == (op == "update"), f"{op} of {key}"
            out[key] = tuple(_norm(ch[c][i]) if c in ch else None for c in cols[2:])
    return out


def test_jvm_and_python_writers_take_turns_and_every_reader_agrees(spark, tmp_path, caplog):
    from spark_jobs.insert import partitioned_insert
    caplog.set_level(logging.INFO, logger="spark_jobs.insert")
    c = spark_catalog(spark, tmp_path / "wh")
    spark.sql(f"CREATE TABLE {c}.t (k BIGINT NOT NULL, s STRING NOT NULL, v DOUBLE, PRIMARY KEY (k, s)) "
              "PARTITIONED BY (bucket(3, s)) TBLPROPERTIES ('row_group_rows' = '128', 'pk_index_block_rows' = '128', "
              "'rowset_target_bytes' = '65536')")
    uri = str(tmp_path / "wh" / "t")
    rng = np.random.default_rng(45)
    cols = ["k", "s", "v"]
    live: set = set()
    ran: list = []

    def rows(keys, salt):
        keys = np.asarray(sorted(keys), np.int64)
        out = {"k": keys, "s": pa.array([f"s{x % 5}" for x in keys]),
               "v": pa.array([None if x % 11 == 0 else float(x) + salt for x in keys], pa.float64())}
        if "n" in cols:
            out["n"] = pa.array([int(x + salt) % 9 for x in keys], pa.int32())
        return pa.table(out)

    def fresh(count):
        free = np.setdiff1d(np.arange(2000), np.array(sorted(live), np.int64))
        return rng.choice(free, count, replace=False)

    for step in range(16):
        if step == 8:                                    # ALTER from SQL: every writer after it writes `n`
            spark.sql(f"ALTER TABLE {c}.t ADD COLUMN n INT")
            cols.append("n")
        kind = STEPS[step % len(STEPS)] if step < len(STEPS) else STEPS[int(rng.integers(len(STEPS)))]
        ran.append(kind)
        t = tf.open_table(uri)
        salt = step * 0.25
        if kind == "sql":
            data = rows(fresh(150), salt)
            spark.createDataFrame(data.to_pandas()).createOrReplaceTempView("turn_src")
            spark.sql(f"INSERT INTO {c}.t SELECT {', '.join(cols)} FROM turn_src")
            live |= set(data["k"].to_pylist())
        elif kind in ("jvm", "python"):
            ks = fresh(150)
            if live:                                     # some live keys: ignore skips exactly those
                ks = np.concatenate([ks, rng.choice(sorted(live), min(20, len(live)), replace=False)])
            data = rows(ks, salt)
            res = partitioned_insert(spark, spark.createDataFrame(data.to_pandas()), uri,
                                     on_duplicate="ignore", path=kind)
            new = set(data["k"].to_pylist()) - live
            assert (res.inserted, res.ignored) == (len(new), data.num_rows - len(new))
            live |= new
        elif kind == "engine_insert":
            data = rows(fresh(100), salt)
            t.insert(data)
            live |= set(data["k"].to_pylist())
        elif kind in ("update", "delete", "upsert") and live:
            ks = rng.choice(sorted(live), min(60, len(live)), replace=False)
            if kind == "update":
                t.update(rows(ks, salt + 1000))
            elif kind == "delete":
                t.delete(rows(ks, 0).select(["k", "s"]))
                live -= set(int(k) for k in ks)
            else:
                data = rows(np.concatenate([ks[:30], fresh(30)]), salt + 2000)
                t.upsert(data)
                live |= set(data["k"].to_pylist())
        elif kind == "compact":
            t.compact(t.compaction_plan())

    t = tf.open_table(uri)
    assert t.check().ok
    assert t.version >= 14
    by_version = {}
    for v in range(t.version + 1):
        eng = t.scan(as_of=v).to_arrow()
        have = [c for c in cols if c in eng.column_names]
        engine = _rows_of(eng, have)
        conn = _rows_of(spark.read.format("tableformat-jvm").option("versionAsOf", v).load(uri).toArrow(), have)
        cat = _rows_of(spark.sql(f"SELECT * FROM {c}.t VERSION AS OF {v}").toArrow(), have)
        assert conn == engine, f"the connector at version {v}"
        assert cat == engine, f"the catalog at version {v}"
        by_version[v] = (engine, have)
    assert {k for k, _ in by_version[t.version][0]} == live and len(live) > 300
    for v in range(1, t.version + 1):
        before, _ = by_version[v - 1]
        after, have = by_version[v]
        before = {k: r + (None,) * (len(have) - 2 - len(r)) for k, r in before.items()}   # a column added at v
        assert _replay(before, t.changes(v - 1, v), have) == after, f"changes() into version {v}"
    assert set(ran) == set(STEPS)
    lines = [r.getMessage() for r in caplog.records if "partitioned_insert" in r.getMessage()]
    assert sum("JVM path" in m for m in lines) == ran.count("jvm")
    assert sum("Python path" in m for m in lines) == ran.count("python")
