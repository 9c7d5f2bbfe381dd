"""The JVM's own log reader and planner (spark_jobs/connector/src/main/java/tableformat/{log,plan}), a second
implementation of specs/format.md §8 and §9.4's planning, against the engine's: for the same
table, as_of, columns and filter, the plan the JVM computes from the log equals
`Snapshot.read_plan` in the shape the connector takes today (spark_jobs/connector/plan.py), and
every refusal has the engine's error name. The JVM runs as `tableformat.plan.PlanCli` (one
process per module, one JSON request a line) from the connector jar, on pyspark's jars."""
from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import random
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import tableformat as tf
from tableformat.read.keyprobe import seek
from tableformat.read.predicate import column_bounds, key_range, parse_filter

pytest.importorskip("pyspark")
from spark_jobs import connector  # noqa: E402
from spark_jobs.connector.plan import connector_plan  # noqa: E402

from test_spark_connector import CASES, small_rows, small_schema  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK")


class Jvm:
    """The JVM planner as a subprocess: one JSON request a line, one answer a line."""

    def __init__(self):
        jar, why = connector.jar_or_reason()
        if jar is None:
            pytest.skip(f"the connector jar cannot be built: {why}")
        import pyspark
        jars = Path(pyspark.__file__).resolve().parent / "jars"
        self.proc = subprocess.Popen(["java", "-cp", f"{jar}:{jars}/*", "tableformat.plan.PlanCli"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")

    def ask(self, req: dict) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the JVM planner died"
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def jvm():
    j = Jvm()
    yield j
    j.close()


# --- the request and the engine's answer in the same shape ----------------------------------------

def json_value(v):
    """A filter value as the JVM planner takes it (FilterParser, Locate.java)."""
    if isinstance(v, (list, tuple)):
        return [json_value(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return {"float": repr(v)}
    if isinstance(v, decimal.Decimal):
        return {"decimal": str(v)}
    if isinstance(v, dt.datetime):
        raise NotImplementedError("datetimes are sent as integer micros")
    if isinstance(v, dt.date):
        return {"date": v.isoformat()}
    if isinstance(v, bytes):
        return {"binary": base64.b64encode(v).decode()}
    if isinstance(v, np.floating):
        return json_value(float(v))
    return v


def as_of_text(as_of):
    if as_of is None:
        return None
    if isinstance(as_of, tf.Timestamp):
        return f"ts:{int(as_of)}"
    return str(as_of)


def request(uri, read: dict) -> dict:
    flt = read.get("filter")
    if isinstance(flt, tuple):
        flt = [flt]
    return {"table": uri, "as_of": as_of_text(read.get("as_of")), "columns": read.get("columns"),
            "filter": None if flt is None else [[t[0], t[1], *(json_value(x) for x in t[2:])] for t in flt]}


def engine_plan(uri, read: dict):
    """(the engine's plan in the connector's JSON shape, the rowsets it read) or the error's name."""
    try:
        snap = tf.open_table(uri).snapshot(read.get("as_of"))
        plan = snap.read_plan(read.get("columns"), read.get("filter"))
    except tf.TableFormatError as e:
        return {"error": type(e).__name__}, snap if "snap" in locals() else None
    d = json.loads(json.dumps(connector_plan(snap.storage, plan, plan.rowsets)))
    for r, rs in zip(d["rowsets"], plan.rowsets):
        r["tablet"], r["native"] = rs.tablet, rs.native
    return d, snap


def check_same_plan(jvm, uri, read: dict) -> dict:
    """The JVM's plan equals the engine's. The engine also seeks each rowset's PK index for a key
    interval (keyprobe.seek) and drops a rowset whose keys all fall outside it: so does the JVM
    asked to seek (PkIndexSeek), exactly; by default it plans from the log alone, and a rowset it
    then keeps beyond the engine's must be exactly such a one."""
    expect, snap = engine_plan(uri, read)
    sought = jvm.ask({**request(uri, read), "seek": True})
    if "error" in expect or "error" in sought:
        assert sought.get("error") == expect.get("error"), (read, sought, expect)
    else:
        assert sought == expect, read
    got = jvm.ask(request(uri, read))
    if "error" in expect or "error" in got:
        assert got.get("error") == expect.get("error"), (read, got, expect)
        return got
    ids = [r["id"] for r in expect["rowsets"]]
    extra = [r for r in got["rowsets"] if r["id"] not in ids]
    if extra:
        schema = snap.state.schema
        lo, hi = key_range(schema.key_columns, column_bounds(parse_filter(schema, read.get("filter"))))
        assert lo is not None or hi is not None, (read, extra)
        for r in extra:
            start, stop = seek(snap.storage, snap.state.rowsets[r["id"]], lo, hi)
            assert start >= stop, (read, r["id"])
        got["rowsets"] = [r for r in got["rowsets"] if r["id"] in ids]
    assert got == expect, read
    return got


# --- (a) the connector's conformance cases ---------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_the_jvm_plan_equals_the_engines_on_the_conformance_cases(jvm, tmp_path, case):
    t, _key, reads = case(tmp_path)
    for read in reads:
        if isinstance(read.get("filter"), (tuple, list)) and any(
                isinstance(x, dt.datetime) for term in ([read["filter"]] if isinstance(read["filter"], tuple)
                                                        else read["filter"]) for x in term[2:]):
            continue
        check_same_plan(jvm, t.uri, read)
    extra = [{"columns": []}, {"filter": ("value", "<", float("nan"))}, {"filter": ("value", ">=", float("inf"))},
             {"filter": ("k", "in", [1, 2, 2**70])}, {"filter": ("k", ">=", 1.5)}, {"filter": ("k", "=", 2.7)},
             {"filter": ("host", "in", ["h001", "h002"])}, {"filter": [("host", "=", "h003"), ("metric", "=", "cpu")]},
             {"filter": ("price", ">", decimal.Decimal("9999.995"))}, {"filter": ("tag", "is not null")},
             {"filter": ("dt", ">=", dt.date(2000, 1, 1))}, {"filter": ("ts", "<", 1_700_000_100_000_000)},
             {"filter": ("bin", "=", b"\x05\x00\xff")}, {"filter": ("b", "=", True)}, {"filter": ("i8", ">", 1000)},
             {"filter": ("d9", "<", decimal.Decimal("-5.005"))}, {"filter": ("f", ">", 0.1)},
             {"filter": ("d38", "in", [decimal.Decimal("1e30"), decimal.Decimal("-1e40")])},
             {"filter": ("vc", "<", "v2")}, {"filter": ("i16", "<=", float("nan"))}]
    names = set(t.schema.names)
    for read in extra:
        flt = read.get("filter")
        if flt is None or all(term[0] in names for term in ([flt] if isinstance(flt, tuple) else flt)):
            check_same_plan(jvm, t.uri, read)


def test_the_jvm_plan_equals_the_engines_on_updates_deletes_and_reinserts(jvm, tmp_path):
    t = tf.create_table(str(tmp_path / "t"), small_schema(), properties={"row_group_rows": 128})
    k = np.arange(600)
    t.insert(small_rows(k))
    t.update(small_rows(k[::3], salt=1).select(["k", "v"]))
    t.delete(pa.table({"k": pa.array(k[::6], pa.int64())}))
    t.insert(small_rows(k[::6], salt=2))
    t.update(small_rows(k[::12], salt=3).select(["k", "g"]))
    t.upsert(small_rows(k[::48], salt=4))
    for read in [{}, {"columns": ["g"]}, {"filter": ("g", "=", 3)}, {"filter": ("g", "!=", 3)},
                 {"filter": ("g", "is null")}, {"filter": ("g", "in", [1, 2])}, {"filter": ("s", "=", "é1\x000")},
                 {"filter": ("s", ">", "é2")}, {"columns": ["s"], "filter": ("v", ">", 300.0)},
                 {"filter": ("k", ">=", 700)}, {"filter": [("k", ">", 100), ("k", "<=", 120)]}]:
        check_same_plan(jvm, t.uri, read)


def test_a_delta_compaction_landing_after_a_newer_update_ranks_below_it(jvm, tmp_path):
    """A REDO file later in the log with older records ranks first (§9.4 rule 3: max_ts, then log order)."""
    t = tf.create_table(str(tmp_path / "t"), small_schema(), properties={"row_group_rows": 128})
    k = np.arange(400)
    t.insert(small_rows(k))
    for salt in range(1, 4):
        t.update(small_rows(k[::salt + 1], salt=salt * 10).select(["k", "v"]))
    (rs,) = t.state.rowsets.values()
    frag = t.snapshot().write_compaction(tf.CompactionAction("minor_delta", rs.tablet, (rs.id,), 1.0, "test", 0))
    t.update(small_rows(k[::5], salt=500).select(["k", "v"]))
    t.commit_fragments([frag])
    logged = [d.max_ts for d in t.state.deltas_of(rs.id)]
    assert logged != sorted(logged)                     # the log order is not the rank order
    got = check_same_plan(jvm, t.uri, {})
    assert [f["max_ts"] for f in got["rowsets"][0]["redo"]] == sorted(logged)


# --- (b) random histories -------------------------------------------------------------------------

def _history_schema():
    return tf.Schema([tf.Column("k", "int64"), tf.Column("s", "string"), tf.Column("v", "double", nullable=True),
                      tf.Column("n", "int32", nullable=True), tf.Column("d", "decimal(12,3)", nullable=True)],
                     ["k", "s"])


def _rows(keys, rng: random.Random, salt: int):
    keys = sorted(keys)
    specials = [float("nan"), -0.0, float("inf"), None, 1e-5, 1e16]
    return pa.table({
        "k": pa.array([k for k, _ in keys], pa.int64()), "s": pa.array([s for _, s in keys]),
        "v": pa.array([rng.choice(specials) if rng.random() < 0.2 else rng.uniform(-100, 100) + salt
                       for _ in keys], pa.float64()),
        "n": pa.array([None if rng.random() < 0.1 else rng.randint(-5, 5) for _ in keys], pa.int32()),
        "d": pa.array([decimal.Decimal(rng.randint(-10**6, 10**6)).scaleb(-3) for _ in keys], pa.decimal128(12, 3)),
    })


def random_history(path, seed: int):
    """A table through a seeded random history: inserts, updates, deletes, reinserts, upserts,
    compactions of each kind, alters (columns added, dropped, renamed), range partitions added
    and dropped, tags and untags, and vacuums that move the history horizon. Returns the table
    and the as_of values worth reading (versions, timestamps between and at commits, tags)."""
    rng = random.Random(seed)
    t = tf.create_table(str(path), _history_schema(),
                        partitioning=tf.PartitionSchema(hash=[tf.HashPartition(["s"], buckets=2)],
                                                        range=tf.RangePartition(["k"], bounds=[(0, 1000)],
                                                                                splits=[500])),
                        properties={"row_group_rows": 128, "checkpoint_interval": 4})
    live: set = set()
    dead: set = set()
    upper = 1000
    ranges = [(0, 500), (500, 1000)]
    extra_cols: list[str] = []
    tags: list[str] = []
    salt = 0

    def fresh(n):
        lo, hi = rng.choice(ranges)
        out = set()
        for _ in range(n):
            key = (rng.randrange(lo, hi), rng.choice(["a", "b", "é", "zz"]))
            if key not in live and key not in dead:
                out.add(key)
        return out

    def cols_for(table):
        for c in extra_cols:
            table = table.append_column(c, pa.array([rng.randint(0, 9) for _ in range(table.num_rows)], pa.int32()))
        return table

    # a prologue before any ALTER (the history horizon never passes one within the history, §12):
    # updates and deletes compacted into UNDO records and history-only rowsets, then a vacuum
    first = fresh(120)
    t.insert(_rows(first, rng, 0))
    t.update(_rows(set(rng.sample(sorted(first), 30)), rng, 1).select(["k", "s", "v"]))
    gone = set(rng.sample(sorted(first), 20))
    t.delete(pa.table({"k": pa.array([k for k, _ in sorted(gone)], pa.int64()), "s": pa.array([s for _, s in sorted(gone)])}))
    live, dead = first - gone, gone
    t.compact()
    t.update(_rows(set(rng.sample(sorted(live), 10)), rng, 2).select(["k", "s", "n"]))
    t.vacuum(retain_seconds=0, grace_seconds=0)
    for _ in range(rng.randint(18, 26)):
        salt += 1
        op = rng.choice(["insert", "insert", "update", "delete", "reinsert", "upsert", "compact", "alter",
                         "range", "tag", "vacuum"])
        try:
            if op == "insert" or not live:
                keys = fresh(rng.randint(5, 60))
                if keys:
                    t.insert(cols_for(_rows(keys, rng, salt)))
                    live |= keys
            elif op == "update":
                keys = set(rng.sample(sorted(live), min(len(live), rng.randint(1, 20))))
                t.update(_rows(keys, rng, salt).select(["k", "s", rng.choice(["v", "n", "d"])]))
            elif op == "delete":
                keys = set(rng.sample(sorted(live), min(len(live), rng.randint(1, 15))))
                t.delete(pa.table({"k": pa.array([k for k, _ in sorted(keys)], pa.int64()),
                                   "s": pa.array([s for _, s in sorted(keys)])}))
                live -= keys
                dead |= keys
            elif op == "reinsert" and dead:
                keys = set(rng.sample(sorted(dead), min(len(dead), rng.randint(1, 10))))
                t.insert(cols_for(_rows(keys, rng, salt)))
                live |= keys
                dead -= keys
            elif op == "upsert":
                keys = set(rng.sample(sorted(live), min(len(live), 5))) | fresh(5)
                t.upsert(cols_for(_rows(keys, rng, salt)))
                live |= keys
                dead -= keys
            elif op == "compact":
                kind = rng.choice(["policy", "minor_delta", "major_delta", "merge", "undo_gc", "concurrent"])
                if kind == "concurrent" and live:
                    # a delta compaction planned before an update commits after it: its REDO file
                    # is later in the log but older (ranked by max_ts, §9.4 rule 3)
                    rs = rng.choice([r for r in t.state.rowsets.values() if r.live_until is None])
                    frag = t.snapshot().write_compaction(tf.CompactionAction(
                        rng.choice(["minor_delta", "major_delta"]), rs.tablet, (rs.id,), 1.0, "test", 0,
                        (t.schema.column("v").id,)))
                    t.update(_rows(set(rng.sample(sorted(live), min(len(live), 20))), rng, salt).select(["k", "s", "v"]))
                    t.commit_fragments([frag])
                elif kind == "policy":
                    t.compact()
                else:
                    by_tablet: dict = {}
                    for r in t.state.rowsets.values():
                        if r.live_until is None:
                            by_tablet.setdefault(r.tablet, []).append(r)
                    if by_tablet:
                        tablet, rss = rng.choice(sorted(by_tablet.items()))
                        ids = tuple(r.id for r in rss) if kind == "merge" else (rng.choice(rss).id,)
                        cols = (t.schema.column("v").id,) if kind == "major_delta" else ()
                        t.compact_action(tf.CompactionAction(kind, tablet, ids, 1.0, "test", 0, cols))
            elif op == "alter":
                choice = rng.choice(["add", "drop", "rename"])
                with t.alter() as a:
                    if choice == "add" or not extra_cols:
                        name = f"x{salt}"
                        a.add_column(name, "int32", nullable=True, default=rng.randint(0, 3))
                        extra_cols.append(name)
                    elif choice == "drop":
                        a.drop_column(extra_cols.pop(rng.randrange(len(extra_cols))))
                    else:
                        old = extra_cols.pop(rng.randrange(len(extra_cols)))
                        a.rename_column(old, f"{old}r")
                        extra_cols.append(f"{old}r")
            elif op == "range":
                if rng.random() < 0.6 or len(ranges) < 3:
                    with t.alter() as a:
                        a.add_range_partition(upper, upper + 500)
                    ranges.append((upper, upper + 500))
                    upper += 500
                else:
                    lo, hi = ranges.pop(rng.randrange(2, len(ranges)))
                    with t.alter() as a:
                        a.drop_range_partition(lo, hi)
                    live = {key for key in live if not lo <= key[0] < hi}
                    dead = {key for key in dead if not lo <= key[0] < hi}     # no partition to reinsert into
            elif op == "tag":
                if tags and rng.random() < 0.3:
                    t.untag(tags.pop(rng.randrange(len(tags))))
                else:
                    name = f"t{salt}"
                    t.tag(name, as_of=rng.randrange(max(0, t.version - 3), t.version + 1))
                    tags.append(name)
            elif op == "vacuum":
                t.vacuum(retain_seconds=0, grace_seconds=0)
        except (tf.HistoryExpiredError, tf.CommitConflictError):
            pass
    history = t.history()
    as_ofs: list = [None, *range(len(history)), len(history)]
    for h in rng.sample(history, min(6, len(history))):
        as_ofs += [tf.Timestamp(h.timestamp), tf.Timestamp(h.timestamp + 1), tf.Timestamp(h.timestamp - 1)]
    as_ofs += [tf.Timestamp(history[-1].timestamp + 1), dt.datetime.fromtimestamp(history[1].timestamp / 1e6,
                                                                                  dt.timezone.utc).isoformat()]
    as_ofs += [*tags, *(f"tag:{x}" for x in tags), "tag:nope", "nope", "not a version"]
    return t, as_ofs


FILTERS = [None, ("k", "<", 300), ("k", ">=", 700), [("k", ">", 100), ("k", "<=", 420)], ("k", "=", 5),
           ("k", "in", [3, 600, 1200]), ("s", "=", "é"), [("s", "=", "a"), ("k", "<", 500)], ("v", ">", 50.0),
           ("v", "=", float("nan")), ("v", "<", -0.0), ("n", "is null"), ("n", "in", [1, 2]), ("n", ">=", 4.5),
           ("d", "<", decimal.Decimal("-500.0005")), ("k", ">", 2**70), ("k", "<", -1.5), ("v", ">=", float("inf"))]


@pytest.mark.parametrize("seed", range(4))
def test_the_jvm_plan_equals_the_engines_over_a_random_history(jvm, tmp_path, seed):
    t, as_ofs = random_history(tmp_path / f"h{seed}", seed)
    rng = random.Random(100 + seed)
    seen: dict = {}
    for as_of in as_ofs:
        for _ in range(3):
            names = t.snapshot(as_of).schema.names if _readable(t, as_of) else t.schema.names
            columns = None if rng.random() < 0.4 else rng.sample(names, rng.randint(0, len(names)))
            flt = rng.choice(FILTERS)
            got = check_same_plan(jvm, t.uri, {"as_of": as_of, "columns": columns, "filter": flt})
            key = got.get("error") or ("behind" if got.get("read_ts") is not None else "own")
            seen[key] = seen.get(key, 0) + 1
    # the history reached each kind of read: its own files, behind the horizon, and refusals
    assert seen.get("own") and seen.get("TimestampAfterLatestError") and seen.get("TagNotFoundError"), seen


def _readable(t, as_of) -> bool:
    try:
        t.snapshot(as_of)
        return True
    except tf.TableFormatError:
        return False


def test_random_histories_reach_behind_the_horizon_and_history_only_rowsets(jvm, tmp_path):
    """At least one seeded history must read versions behind the horizon with UNDO files planned
    (native false) and hold history-only rowsets, or the property test above proves little."""
    behind = undo = history_only = 0
    for seed in range(4):
        t, as_ofs = random_history(tmp_path / f"b{seed}", seed)
        for v in range(len(t.history())):
            got = check_same_plan(jvm, t.uri, {"as_of": v})
            if got.get("read_ts") is not None:
                behind += 1
                undo += sum(1 for r in got["rowsets"] if not r["native"])
        history_only += sum(1 for r in t.state.rowsets.values() if r.live_until is not None)
    assert behind and undo and history_only, (behind, undo, history_only)


@pytest.mark.parametrize("fv", [1, 2, 3, 4])
def test_older_format_versions_are_read(jvm, tmp_path, fv):
    """A log labelled as written by format 1-4, each with its own checksum rule (§8.1): `actions`
    and `state` only (1, 2; format 1 without a checksum), the whole file (3, 4)."""
    t = tf.create_table(str(tmp_path / "t"), small_schema(), properties={"checkpoint_interval": 3})
    for i in range(4):
        t.insert(small_rows(np.arange(i * 10, i * 10 + 10)))
    t.update(small_rows(np.arange(0, 40, 4), salt=3).select(["k", "v"]))
    t.delete(pa.table({"k": pa.array([1, 2], pa.int64())}))
    for p in (Path(t.uri) / "_log").iterdir():
        if not p.name.endswith(".json"):
            continue
        d = json.loads(p.read_text())
        d.pop("checksum", None)
        d["format_version"] = fv
        part = "state" if p.name.endswith(".checkpoint.json") else "actions"
        if part == "state":
            d["state"]["format_version"] = fv
        for a in d.get("actions", []):
            if "metadata" in a:
                a["metadata"]["format_version"] = fv
        if fv >= 3:
            d["checksum"] = zlib.crc32(json.dumps(d, sort_keys=True, separators=(",", ":")).encode())
        elif fv == 2 or part == "state":
            d["checksum"] = zlib.crc32(json.dumps(d[part], sort_keys=True, separators=(",", ":")).encode())
        p.write_text(json.dumps(d))
    for v in [None, *range(t.version + 1)]:
        got = check_same_plan(jvm, t.uri, {"as_of": v})
        assert "error" not in got and (v == 0 or got["rowsets"])
    if fv == 2:           # the old rule still guards the actions
        path = Path(t.uri) / "_log" / f"{2:020d}.json"
        d = json.loads(path.read_text())
        d["actions"][0]["add_rowset"]["num_rows"] = 11
        path.write_text(json.dumps(d))
        assert jvm.ask(request(t.uri, {"as_of": 2}))["error"] == "CorruptFileError"


# --- refusals -------------------------------------------------------------------------------------

def _table(tmp_path, name="e", **props):
    t = tf.create_table(str(tmp_path / name), small_schema(), properties={"checkpoint_interval": 100, **props})
    t.insert(small_rows(np.arange(50)))
    t.update(small_rows(np.arange(0, 50, 5), salt=1).select(["k", "v"]))
    return t


def test_a_corrupted_commit_is_refused(jvm, tmp_path):
    t = _table(tmp_path)
    assert "error" not in jvm.ask(request(t.uri, {}))
    path = Path(t.uri) / "_log" / f"{1:020d}.json"
    raw = path.read_text()
    path.write_text(raw.replace('"num_rows":50', '"num_rows":51'))      # valid JSON, wrong checksum
    assert raw != path.read_text()
    got = jvm.ask(request(t.uri, {}))
    assert got["error"] == "CorruptFileError" and "00000000000000000001.json" in got["message"]
    assert engine_plan(t.uri, {})[0] == {"error": "CorruptFileError"}
    path.write_text(raw[: len(raw) // 2])                                # truncated
    assert jvm.ask(request(t.uri, {}))["error"] == "CorruptFileError"


def test_a_commit_with_trailing_bytes_is_corrupt_for_both(jvm, tmp_path):
    """json.loads refuses data after the value ("Extra data"); Jackson's readTree ignored it."""
    t = _table(tmp_path)
    path = Path(t.uri) / "_log" / f"{2:020d}.json"
    path.write_text(path.read_text() + '{"junk": 1}')
    assert engine_plan(t.uri, {})[0].get("error") == "CorruptFileError"
    assert jvm.ask(request(t.uri, {})).get("error") == "CorruptFileError"
    path.write_text(path.read_text().removesuffix('{"junk": 1}') + " \n\t")     # whitespace is no data
    check_same_plan(jvm, t.uri, {})


def test_a_commit_without_its_checksum_or_relabelled_to_an_older_format_is_refused(jvm, tmp_path):
    t = _table(tmp_path)
    path = Path(t.uri) / "_log" / f"{2:020d}.json"
    d = json.loads(path.read_text())
    path.write_text(json.dumps({k: v for k, v in d.items() if k != "checksum"}))
    assert jvm.ask(request(t.uri, {}))["error"] == "CorruptFileError"
    old = {**d, "format_version": 2}
    old["checksum"] = zlib.crc32(json.dumps(old["actions"], sort_keys=True, separators=(",", ":")).encode())
    path.write_text(json.dumps(old))
    got = jvm.ask(request(t.uri, {}))
    assert got["error"] == "CorruptFileError" and "format version" in got["message"]


def test_a_broken_checkpoint_falls_back_to_replay(jvm, tmp_path):
    t = tf.create_table(str(tmp_path / "c"), small_schema(), properties={"checkpoint_interval": 2})
    for i in range(5):
        t.insert(small_rows(np.arange(i * 10, i * 10 + 10)))
    cps = sorted((Path(t.uri) / "_log").glob("*.checkpoint.json"))
    assert cps
    before = check_same_plan(jvm, t.uri, {})
    for cp in cps:
        cp.write_text(cp.read_text().replace('"num_rows": 10', '"num_rows": 11'))
    assert check_same_plan(jvm, t.uri, {}) == before


def test_txn_records_of_format_6_are_read_in_commits_and_checkpoints(jvm, tmp_path):
    """A streaming sink's `txn` actions (format 6, §8.2) and the checkpoint's `txns` change no read:
    the JVM takes the commits and checkpoints that carry them, at every version."""
    t = tf.create_table(str(tmp_path / "x"), small_schema(), properties={"checkpoint_interval": 2})
    for batch in range(3):
        frag = t.snapshot().write_mutation(small_rows(np.arange(batch * 10, batch * 10 + 15), salt=batch),
                                           "upsert", operation="STREAM UPSERT")
        t.commit_fragments([frag], txn=("query", batch))
    assert json.loads((Path(t.uri) / "_log" / f"{2:020d}.checkpoint.json").read_text())["state"]["txns"]
    assert LogReaderVersion.of(jvm) == tf.FORMAT_VERSION == 6
    for v in [None, *range(t.version + 1)]:
        check_same_plan(jvm, t.uri, {"as_of": v})


class LogReaderVersion:
    """The newest format the JVM reads: a log labelled one newer is refused, this one is read."""

    @staticmethod
    def of(jvm) -> int:
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            t = tf.create_table(f"{d}/v", small_schema())
            t.insert(small_rows(np.arange(3)))
            path = Path(t.uri) / "_log" / f"{1:020d}.json"
            for fv in range(tf.FORMAT_VERSION, tf.FORMAT_VERSION + 2):
                doc = json.loads(path.read_text())
                doc["format_version"] = fv
                doc.pop("checksum")
                doc["checksum"] = zlib.crc32(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode())
                path.write_text(json.dumps(doc))
                if "error" in jvm.ask(request(t.uri, {})):
                    return fv - 1
            return fv


def test_a_newer_format_version_is_refused_clearly(jvm, tmp_path):
    t = _table(tmp_path)
    path = Path(t.uri) / "_log" / f"{2:020d}.json"
    d = json.loads(path.read_text())
    d["format_version"] = 99
    d.pop("checksum")
    d["checksum"] = zlib.crc32(json.dumps(d, sort_keys=True, separators=(",", ":")).encode())
    path.write_text(json.dumps(d))
    got = jvm.ask(request(t.uri, {}))
    assert got["error"] == "UnsupportedFormatVersionError" and "format version 99" in got["message"]
    assert engine_plan(t.uri, {})[0] == {"error": "UnsupportedFormatVersionError"}


def test_a_replaced_table_is_refused(jvm, tmp_path):
    t = _table(tmp_path)
    other = _table(tmp_path, "other")
    # the table at the path was deleted and re-created: a later commit of another table follows
    src = Path(other.uri) / "_log" / f"{2:020d}.json"
    d = json.loads(src.read_text())
    d["version"] = t.version + 1
    d["read_version"] = t.version
    d.pop("checksum")
    d["checksum"] = zlib.crc32(json.dumps(d, sort_keys=True, separators=(",", ":")).encode())
    (Path(t.uri) / "_log" / f"{t.version + 1:020d}.json").write_text(json.dumps(d))
    got = jvm.ask(request(t.uri, {}))
    assert got["error"] == "TableReplacedError", got
    assert engine_plan(t.uri, {})[0] == {"error": "TableReplacedError"}


def test_each_as_of_refusal_has_the_engines_name(jvm, tmp_path):
    t = _table(tmp_path)
    t.tag("kept", as_of=1)
    last = t.history()[-1].timestamp
    cases = {f"ts:{last + 1}": "TimestampAfterLatestError", "tag:missing": "TagNotFoundError",
             "missing": "TagNotFoundError", "-1": "VersionNotFoundError", "tag:9bad": "InvalidTagNameError", "99": "VersionNotFoundError",
             "ts:1": "VersionNotFoundError"}
    for as_of, name in cases.items():
        assert jvm.ask(request(t.uri, {"as_of": as_of})).get("error") == name, as_of
        assert engine_plan(t.uri, {"as_of": as_of})[0] == {"error": name}, as_of
    for read in [{"columns": ["nope"]}, {"filter": ("nope", "=", 1)}, {"filter": ("k", "=", "text")},
                 {"filter": ("k", "~", 1)}, {"filter": ("k", "=", None)}]:
        check_same_plan(jvm, t.uri, read)
    assert jvm.ask(request(str(tmp_path / "none"), {}))["error"] == "TableNotFoundError"


def test_as_of_an_iso_date_time_in_each_form(jvm, tmp_path):
    t = _table(tmp_path)
    t.insert(small_rows(np.arange(100, 120)))
    at = dt.datetime.fromtimestamp(t.history()[2].timestamp / 1e6, dt.timezone.utc)
    forms = [at.isoformat(), at.isoformat().replace("+00:00", "Z"), at.replace(tzinfo=None).isoformat(),
             at.replace(tzinfo=None).isoformat(sep=" "), at.astimezone(dt.timezone(dt.timedelta(hours=2))).isoformat(),
             at.replace(microsecond=0).isoformat(), at.date().isoformat(), "2020-01-01T00:00:00Z"]
    for form in forms:
        check_same_plan(jvm, t.uri, {"as_of": form})
    assert jvm.ask(request(t.uri, {"as_of": at.isoformat()}))["version"] == 2


def test_as_of_one_grammar_on_both_sides(jvm, tmp_path):
    """specs/format.md §9.1 pins the ISO grammar: forms some Python's fromisoformat reads and Java's
    did not (or the reverse) are InvalidOptionError on both; numbers past a long are the engine's errors."""
    t = _table(tmp_path)
    t.insert(small_rows(np.arange(100, 120)))
    at = dt.datetime.fromtimestamp(t.history()[-1].timestamp / 1e6, dt.timezone.utc)
    read = [at.strftime("%Y-%m-%dT%H:%M:%S.%f+0000"), at.strftime("%Y-%m-%dt%H:%M:%S.%f") + "000z",
            at.strftime("%Y-%m-%d %H:%M:%S.%f") + "999", at.strftime("%Y-%m-%dT%H:%M"), at.strftime("%Y-%m-%dT%H:%M-0130")]
    refused = [at.strftime("%Y%m%dT%H%M%S.%f"), at.strftime("%Y-%m-%dT%H%M%S.%f"), at.strftime("%Y-%m-%d_%H:%M:%S.%f"),
               "2024-W18-3", "2024-05-01T12", "2024-05-01+02:00", "2024-02-30", "2024-05-01T24:00", "0000-01-01",
               "2024-05-01T12:00+18:30", "\u0663", "ts:\u0663"]
    for form in read + refused:
        want = engine_plan(t.uri, {"as_of": form})[0]
        got = jvm.ask(request(t.uri, {"as_of": form}))
        assert got.get("error") == want.get("error") and got.get("version") == want.get("version"), (form, want, got)
        assert (form in read) == ("error" not in got or got["error"] != "InvalidOptionError"), (form, got)
    for form, error in [("99999999999999999999", "VersionNotFoundError"), ("9" * 5000, "VersionNotFoundError"),
                        ("ts:99999999999999999999", "TimestampAfterLatestError"),
                        ("ts:" + "9" * 5000, "TimestampAfterLatestError")]:
        assert engine_plan(t.uri, {"as_of": form})[0].get("error") == error
        assert jvm.ask(request(t.uri, {"as_of": form})).get("error") == error, form


def test_history_past_max_age_is_expired_except_tagged_versions(jvm, tmp_path):
    t = _table(tmp_path)
    t.tag("kept", as_of=1)
    t.update(small_rows(np.arange(0, 50, 7), salt=2).select(["k", "v"]))
    with t.alter() as a:
        a.set_property("history_max_age", 0)       # every version but the latest and tagged ones is too old
    for as_of in [0, 1, 2, "kept", None]:
        check_same_plan(jvm, t.uri, {"as_of": as_of})
    assert jvm.ask(request(t.uri, {"as_of": 2}))["error"] == "HistoryExpiredError"
    assert "error" not in jvm.ask(request(t.uri, {"as_of": "kept"}))


# --- the checksum's canonical serialization (specs/format.md §8.1) --------------------------------

def _canonical(jvm, value) -> dict:
    text = json.dumps(value)
    got = jvm.ask({"canonical": text})
    expect = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    assert got["text"] == expect
    assert got["crc32"] == zlib.crc32(expect.encode())
    return got


def test_canonical_json_matches_pythons_on_every_float_shape_string_and_integer(jvm):
    rng = random.Random(7)
    floats = [0.0, -0.0, 1e16, 1e15, 1e-5, 1e-4, 123456789012345678.0, 5e-324, 2.2250738585072014e-308,
              1.7976931348623157e308, 1 / 3, 0.1, 0.3, 2.0 ** 63, 9007199254740993.0, 1e22, 1e23, 4.35, 2.5e-7,
              float("inf"), float("-inf"), float("nan")]
    floats += [struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(20000)]
    floats += [rng.uniform(-1e6, 1e6) for _ in range(5000)] + [round(rng.random(), rng.randint(0, 8))
                                                               for _ in range(5000)]
    floats += [2.0 ** e for e in range(-1074, 1024, 7)] + [float(f"1e{e}") for e in range(-320, 309)]
    strings = ["é", "\u2028", "\x7f", "\x00\x1f", "\"\\/", "\ud83d\ude00", "\ud800", "日本", "\t\n\r\b\f"]
    ints = [0, -1, 2**63, -2**63 - 1, 2**200, 10**30]
    _canonical(jvm, {"floats": floats, "strings": strings, "ints": ints,
                     "keys": {"b": 1, "a": 2, "é": 3, "Z": 4, "\U0001f600": 5, "\uffff": 6, "": 7}})


def test_canonical_json_matches_at_int_and_long_bounds_and_on_subnormal_floats(jvm):
    """Integers are parsed as the smallest exact node (int, long, BigInteger) and floats of at
    most 15 digits take a fast path that subnormals (fewer digits) must not."""
    ints = [2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**63 - 1, -2**63, 2**63, -2**63 - 1, 2**64]
    floats = [49.5, 5e-324, 1e-310, 2.5e-320, 4.9e-324, 2.2250738585072014e-308, 2.225073858507201e-308,
              1.5e300, 123456789012345.6, 0.1 + 0.2, 1e-7, 9.999999999999999e22]
    _canonical(jvm, {"ints": ints, "floats": floats})


def test_canonical_json_matches_on_the_log_files_of_random_histories(jvm, tmp_path):
    """Every commit and checkpoint the engine wrote through a random history (stats with NaN,
    ±inf, -0.0, 1e16, 1e-05, non-ASCII keys) reads back with the JVM's checksum."""
    for seed in range(2):
        t, _ = random_history(tmp_path / f"c{seed}", seed)
        files = sorted((Path(t.uri) / "_log").glob("*.json"))
        assert any(f.name.endswith(".checkpoint.json") for f in files)
        for f in files:
            d = json.loads(f.read_text())
            got = _canonical(jvm, {k: v for k, v in d.items() if k != "checksum"})
            assert got["crc32"] == d["checksum"], f.name


def test_a_malformed_action_is_a_corrupt_file(jvm, tmp_path):
    t = _table(tmp_path)
    path = Path(t.uri) / "_log" / f"{2:020d}.json"
    d = json.loads(path.read_text())
    d["actions"][0]["add_delta"]["update_counts"] = "not an object"
    d.pop("checksum")
    d["checksum"] = zlib.crc32(json.dumps(d, sort_keys=True, separators=(",", ":")).encode())
    path.write_text(json.dumps(d))
    got = jvm.ask(request(t.uri, {}))
    assert got["error"] == "CorruptFileError" and "00000000000000000002.json" in got["message"], got


def test_a_key_interval_between_a_rowsets_keys_is_pruned_by_the_pk_index_seek(jvm, tmp_path):
    """Bounds straddle the interval but no key falls in it: only the PK index says so (§6)."""
    t = tf.create_table(str(tmp_path / "g"), small_schema())
    t.insert(small_rows(np.r_[np.arange(10), np.arange(100, 110)]))
    read = {"filter": [("k", ">=", 50), ("k", "<", 60)]}
    assert engine_plan(t.uri, read)[0]["rowsets"] == []
    assert jvm.ask({**request(t.uri, read), "seek": True})["rowsets"] == []
    assert len(jvm.ask(request(t.uri, read))["rowsets"]) == 1      # from the log alone: kept
    check_same_plan(jvm, t.uri, read)
    check_same_plan(jvm, t.uri, {"filter": [("k", ">=", 5), ("k", "<", 60)]})    # a key in it: kept
    # the index is read whole and checked against the log's size and CRC-32
    (rs,) = t.state.rowsets.values()
    path = Path(t.uri) / rs.pk_index.path
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    got = jvm.ask({**request(t.uri, read), "seek": True})
    assert got["error"] == "CorruptFileError" and rs.pk_index.path in got["message"], got


# --- a damaged log: both readers open the same state, or refuse with the same error (§8.3) ---------

def _cp(v):
    return f"_log/{v:020d}.checkpoint.json"


def _c(v):
    return f"_log/{v:020d}.json"


def _alter(root, rel, text):
    """Valid JSON, the checksum no longer matching (v becomes v + 0.5 in a count)."""
    p = root / rel
    raw = p.read_text()
    p.write_text(raw.replace('"inserted":1', '"inserted":2', 1) if text is None else text(raw))
    assert p.read_text() != raw


def _damage(root: Path, case: str):
    hint = root / "_log" / "_last_checkpoint"
    steps = {
        "intact": [],
        "issue_gap_between_checkpoints_hint_10": [lambda: (root / _c(15)).unlink(),
                                                  lambda: hint.write_text('{"version": 10}')],
        "gap_between_checkpoints_no_hint": [lambda: (root / _c(15)).unlink(), hint.unlink],
        "gap_before_first_checkpoint": [lambda: (root / _c(5)).unlink()],
        "gap_after_last_checkpoint": [lambda: (root / _c(22)).unlink()],
        "gap_behind_a_broken_checkpoint": [lambda: (root / _c(15)).unlink(),
                                           lambda: _alter(root, _cp(20), lambda r: r[: len(r) // 2])],
        "last_commit_missing": [lambda: (root / _c(25)).unlink()],
        "commit_0_missing": [lambda: (root / _c(0)).unlink()],
        "commit_0_missing_no_checkpoint": [lambda: (root / _c(0)).unlink(), lambda: (root / _cp(10)).unlink(),
                                           lambda: (root / _cp(20)).unlink()],
        "checkpoints_commit_missing": [lambda: (root / _c(20)).unlink()],
        "hint_missing": [hint.unlink],
        "hint_stale": [lambda: hint.write_text('{"version": 10}')],
        "hint_lying_past_the_log": [lambda: hint.write_text('{"version": 90}')],
        "hint_naming_no_checkpoint": [lambda: hint.write_text('{"version": 15}')],
        "hint_garbage": [lambda: hint.write_text("{not json")],
        "checkpoint_fails_checksum": [lambda: _alter(root, _cp(20), lambda r: r.replace('"num_rows": 1,', '"num_rows": 2,', 1))],
        "checkpoint_truncated": [lambda: _alter(root, _cp(20), lambda r: r[:100])],
        "checkpoint_misnamed_version": [lambda: (root / _cp(20)).rename(root / _cp(21))],
        "altered_commit_behind_a_stale_hint": [lambda: _alter(root, _c(15), None),
                                               lambda: hint.write_text('{"version": 10}')],
        "altered_commit_after_the_checkpoint": [lambda: _alter(root, _c(23), None)],
        "truncated_commit_after_the_checkpoint": [lambda: _alter(root, _c(23), lambda r: r[:40])],
        "stray_files": [lambda: (root / "_log" / ".tmp-1234").write_text("x"),
                        lambda: (root / "_log" / "26.json").write_text((root / _c(25)).read_text()),
                        lambda: (root / "_log" / (_c(26)[5:] + ".tmp")).write_text("{}"),
                        lambda: (root / "_log" / "x.checkpoint.json").write_text("{}"),
                        lambda: (root / "_log" / "0000000000000000030.checkpoint.json").write_text("{}"),
                        lambda: (root / "_log" / "sub").mkdir()],
    }
    for step in steps[case]:
        step()


# the latest state each case opens (its version), or the error both readers raise
DAMAGED_LOGS = {
    "intact": 25, "issue_gap_between_checkpoints_hint_10": 25, "gap_between_checkpoints_no_hint": 25,
    "gap_before_first_checkpoint": 25, "gap_after_last_checkpoint": "CorruptFileError",
    "gap_behind_a_broken_checkpoint": "CorruptFileError", "last_commit_missing": 24, "commit_0_missing": 25,
    "commit_0_missing_no_checkpoint": "CorruptFileError", "checkpoints_commit_missing": 25, "hint_missing": 25,
    "hint_stale": 25, "hint_lying_past_the_log": 25, "hint_naming_no_checkpoint": 25, "hint_garbage": 25,
    "checkpoint_fails_checksum": 25, "checkpoint_truncated": 25, "checkpoint_misnamed_version": 25,
    "altered_commit_behind_a_stale_hint": 25, "altered_commit_after_the_checkpoint": "CorruptFileError",
    "truncated_commit_after_the_checkpoint": "CorruptFileError", "stray_files": 25,
}


@pytest.fixture(scope="module")
def pristine_log(tmp_path_factory):
    """Versions 0..25 (one key inserted per version), checkpoints at 10 and 20, the hint naming 20."""
    root = tmp_path_factory.mktemp("pristine") / "t"
    t = tf.create_table(str(root), small_schema(), properties={"checkpoint_interval": 10})
    for i in range(25):
        t.insert(small_rows([i]))
    assert json.loads((root / "_log" / "_last_checkpoint").read_text()) == {"version": 20}
    return root


@pytest.mark.parametrize("case", list(DAMAGED_LOGS))
def test_a_damaged_log_opens_the_same_state_or_error_in_both_readers(jvm, pristine_log, tmp_path, case):
    root = tmp_path / "t"
    shutil.copytree(pristine_log, root)
    _damage(root, case)
    latest = check_same_plan(jvm, str(root), {})
    expect = DAMAGED_LOGS[case]
    if isinstance(expect, str):
        assert latest.get("error") == expect, latest
        assert "00000000000000000" in latest["message"], latest     # the file is named
    else:
        assert latest["version"] == expect, latest
        assert tf.open_table(str(root)).scan().count() == expect
    for as_of in (0, 5, 12, 15, 17, 20, 22, 25, 26):
        check_same_plan(jvm, str(root), {"as_of": as_of})


def test_as_of_refusals_show_times_as_iso_8601_as_the_engine_does(jvm, tmp_path):
    """A refused time reads as a date-time, never as raw microseconds, in the JVM's message and the
    engine's alike: the asked time and the commit's time it is compared with, at any int64."""
    t = _table(tmp_path)
    first, last = t.history()[0].timestamp, t.history()[-1].timestamp
    for asked, shown in [(last + 1, last), (1, first), (10**18, last),
                         (-46_388_678_400_000_000, first)]:                # year 500: "0500-…" on both sides
        as_of = f"ts:{asked}" if asked >= 0 else tf.Timestamp(asked).iso()  # the ISO form shown reads back
        got = jvm.ask(request(t.uri, {"as_of": as_of}))
        with pytest.raises(tf.VersionNotFoundError) as e:
            tf.open_table(t.uri).snapshot(as_of)
        for message in (got["message"], str(e.value)):
            assert f"timestamp {tf.Timestamp(asked).iso()} is " in message, message
            assert f"{tf.Timestamp(shown).iso()})" in message and str(shown) not in message, message
