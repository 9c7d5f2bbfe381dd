"""Eight processes write one table at once; every version must equal a serial replay of the commits."""
import json
import multiprocessing as mp
import os
import random
import time

import pyarrow as pa

import tableformat as tf

SECONDS = float(os.environ.get("TF_CONCURRENCY_SECONDS", "4"))
# each worker goes on past its time (up to GRACE more seconds) until it has made this many data
# commits, so that a loaded machine slows the test down instead of starving it of commits
MIN_COMMITS, GRACE = 4, 40
KEYS = [f"k{i:03d}" for i in range(120)]


def schema():
    return tf.Schema([tf.Column("key", "string"), tf.Column("val", "int64", nullable=True)], primary_key="key")


def worker(uri, opts, wid, out_path, seconds, compactor):
    import faulthandler
    import sys
    faulthandler.dump_traceback_later(seconds + GRACE + 60, exit=True, file=sys.stderr)   # a hang shows where
    rnd = random.Random(wid)
    t = tf.open_table(uri, storage_options=opts)
    deadline = time.time() + seconds
    n = made = 0
    with open(out_path, "w") as out:
        while time.time() < deadline or (made < MIN_COMMITS and time.time() < deadline + GRACE):
            n += 1
            if compactor and n % 3 == 0:
                for r in t.compact():
                    out.write(json.dumps({"version": r.version, "op": "compact"}) + "\n")
                continue
            op = rnd.choice(["insert", "update", "delete", "upsert", "update_ignore", "delete_ignore"])
            keys = sorted(rnd.sample(KEYS, rnd.randint(1, 4)))
            vals = [wid * 1000 + n] * len(keys)
            data = pa.table({"key": keys} if op.startswith("delete") else {"key": keys, "val": vals})
            try:
                r = getattr(t, op)(data)
            except (tf.DuplicateKeyError, tf.KeyNotFoundError):
                continue
            if r.inserted + r.updated + r.deleted == 0:
                continue        # nothing to do: no commit
            out.write(json.dumps({"version": r.version, "op": op, "keys": keys, "vals": vals}) + "\n")
            out.flush()
            made += 1


def apply(model, rec):
    op, keys, vals = rec["op"], rec.get("keys", []), rec.get("vals", [])
    for k, v in zip(keys, vals or [None] * len(keys)):
        if op == "insert":
            assert k not in model, rec
            model[k] = v
        elif op in ("update", "update_ignore"):
            if op == "update":
                assert k in model, rec
            if k in model:
                model[k] = v
        elif op in ("delete", "delete_ignore"):
            if op == "delete":
                assert k in model, rec
            model.pop(k, None)
        elif op == "upsert":
            model[k] = v


def run_writers(uri, opts, tmp_path, n=8, seconds=SECONDS):
    t = tf.create_table(uri, schema(), storage_options=opts, properties={"rowset_target_bytes": 1 << 16})
    t.insert(pa.table({"key": KEYS[::2], "val": [0] * len(KEYS[::2])}))
    ctx = mp.get_context("spawn")
    outs = [str(tmp_path / f"w{i}.jsonl") for i in range(n)]
    procs = [ctx.Process(target=worker, args=(uri, opts, i, outs[i], seconds, i == 0)) for i in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(seconds + GRACE + 90)
        assert p.exitcode == 0
    recs = [json.loads(line) for o in outs for line in open(o)]
    t = tf.open_table(uri, storage_options=opts)
    versions = [r["version"] for r in recs]
    assert len(versions) == len(set(versions))                    # no version claimed twice
    by_version = {r["version"]: r for r in recs}
    history = {h.version: h for h in t.history()}
    model = {k: 0 for k in KEYS[::2]}
    assert {r["key"]: r["val"] for r in t.scan(as_of=1).to_arrow().to_pylist()} == model
    data_commits = 0
    for v in range(2, t.version + 1):
        rec = by_version.get(v)
        assert rec is not None, f"version {v} ({history[v].operation}) was not reported by any writer"
        if rec["op"] != "compact":
            assert history[v].operation == rec["op"].upper()
            apply(model, rec)
            data_commits += 1
        got = {r["key"]: r["val"] for r in t.scan(as_of=v).to_arrow().to_pylist()}
        if got != model:
            diff = {k: (got.get(k), model.get(k)) for k in set(got) | set(model) if got.get(k) != model.get(k)}
            related = [(w, by_version[w]) for w in range(2, v + 1) if w in by_version and
                       any(k in by_version[w].get("keys", []) for k in diff)]
            raise AssertionError(f"version {v}: {diff}; commits touching those keys: {related}")
    assert t.check().ok
    return data_commits, t.version


def test_eight_processes_on_local_disk(tmp_path):
    commits, latest = run_writers(str(tmp_path / "t"), None, tmp_path)
    assert commits > 20
    print(f"local: {commits} data commits, {latest} versions")


def test_eight_processes_on_s3(tmp_path, s3_table_root):
    root, opts = s3_table_root
    commits, latest = run_writers(f"{root}/t", opts, tmp_path, seconds=min(SECONDS, 3))
    assert commits > 5
    print(f"s3: {commits} data commits, {latest} versions")


def test_eight_processes_on_hdfs(tmp_path, hdfs_table_root):
    root, opts = hdfs_table_root
    commits, latest = run_writers(f"{root}/t", opts, tmp_path, seconds=min(SECONDS, 3))
    assert commits > 5
    print(f"hdfs: {commits} data commits, {latest} versions")
