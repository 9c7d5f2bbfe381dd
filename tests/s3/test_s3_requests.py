"""Request economy on S3: every request tableformat sends to a real S3-compatible
server (moto_server) is counted per HTTP method, through botocore's `before-send` event on the
s3fs client, and held to a budget per operation."""

import collections

import pyarrow as pa
import pyarrow.compute  # noqa: F401
import pytest

s3fs = pytest.importorskip("s3fs")

import tableformat as tf  # noqa: E402
from tableformat.format.cfile_set import FILE_CACHE  # noqa: E402

from helpers import assert_same_rows, metrics_rows, metrics_schema  # noqa: E402


class RequestCounter:
    """Counts the HTTP requests an s3fs filesystem sends, per method (HEAD, GET, PUT, ...).

    A LIST is a GET on the bucket with `list-type=2` (or a `prefix=`) in its query."""

    def __init__(self):
        self.counts = collections.Counter()
        self.log = []

    def __call__(self, request, **kwargs):
        method = request.method.upper()
        url = request.url
        if method == "GET" and ("list-type=" in url or "prefix=" in url):
            method = "LIST"
        self.counts[method] += 1
        self.log.append((method, url))
        return None   # go on sending

    def reset(self):
        self.counts.clear()
        self.log.clear()

    @property
    def total(self):
        return sum(self.counts.values())

    def figures(self):
        return {"total": self.total, **{m: self.counts.get(m, 0) for m in ("HEAD", "GET", "LIST", "PUT")}}


def _counter_on(fs) -> RequestCounter:
    fs.connect()
    counter = RequestCounter()
    fs.s3.meta.events.register("before-send.s3", counter)
    return counter


TABLETS = 4
KEYS = ["host", "metric", "time"]


def _table(root, opts, name, **properties):
    parts = tf.PartitionSchema(hash=[tf.HashPartition(["host", "metric"], buckets=TABLETS)])
    return tf.create_table(f"{root}/{name}", metrics_schema(), partitioning=parts, storage_options=opts,
                           properties=properties or None)


def _read_table(root, opts):
    """4 tablets, two inserts (8 rowsets), a checkpoint at version 2, and a 5-key update after it."""
    t = _table(root, opts, "r", checkpoint_interval=2)
    data = metrics_rows(4000)
    t.insert(data.slice(0, 2000))                                                  # v1
    t.insert(data.slice(2000))                                                     # v2: checkpoint
    t.update(data.select(KEYS).slice(0, 5).append_column("value", pa.array([1.0] * 5)))   # v3
    return t


def _cold_open(t, opts, counter):
    FILE_CACHE.clear()      # a new process: nothing cached
    counter.reset()
    t2 = tf.open_table(t.uri, storage_options=opts)
    assert t2.storage.fs is t.storage.fs      # fsspec's instance cache: the same, counted, client
    return t2


def test_open_and_scan_request_budget(s3_table_root):
    root, opts = s3_table_root
    t = _read_table(root, opts)
    counter = _counter_on(t.storage.fs)

    t2 = _cold_open(t, opts, counter)
    opened = counter.figures()
    print("open:", opened, counter.log)
    # one LIST of _log/, the checkpoint and commit 3 (§8.3: no _last_checkpoint, no probe for commit 4)
    assert opened["total"] <= 3 and opened["LIST"] == 1 and opened["HEAD"] == 0, counter.log

    t2 = _cold_open(t, opts, counter)
    assert t2.scan(columns=["value"]).count() == 4000
    scanned = counter.figures()
    rowsets = len(t2.state.rowsets)
    print(f"open + scan(value) of {rowsets} rowsets:", scanned)
    assert scanned["HEAD"] == 0, counter.log
    assert scanned["total"] <= 4 + 2 * rowsets, counter.log


def _update_figures(t, opts, counter, key_rows, rounds=20):
    data = metrics_rows(6000)
    t.insert(data)
    t2 = _cold_open(t, opts, counter)
    counter.reset()
    keys = data.select(KEYS).take(pa.array(key_rows))
    # the first update reads each rowset's bloom filter and PK index; later ones reuse them
    for i in range(rounds):
        t2.update(keys.slice(5 * i, 5).append_column("value", pa.array([float(i)] * 5)))
    return {k: v / rounds for k, v in counter.figures().items()}


def test_small_update_request_budget(s3_table_root):
    """20 updates of 5 keys of one tablet from one handle: one delta file, the read of the commit
    it builds on (transaction.py checks that commit's table, on purpose) and the commit; every 10th
    version adds a checkpoint and its hint."""
    root, opts = s3_table_root
    t = _table(root, opts, "u")
    counter = _counter_on(t.storage.fs)
    one_tablet = list(range(0, 6000, 60))     # host h000, metric cpu: one hash bucket
    per_update = _update_figures(t, opts, counter, one_tablet[:100])
    print("5-key update of one tablet, mean of 20:", per_update)
    assert per_update["HEAD"] == 0
    assert per_update["total"] <= 6


def test_spread_update_request_budget(s3_table_root):
    """5 keys over the tablets: one delta file PUT per tablet touched, on top of the one-tablet cost."""
    root, opts = s3_table_root
    t = _table(root, opts, "s")
    counter = _counter_on(t.storage.fs)
    per_update = _update_figures(t, opts, counter, list(range(100, 200)))
    print("5-key update over the tablets, mean of 20:", per_update)
    assert per_update["HEAD"] == 0
    # commit read + commit PUT + <= 4 delta PUTs, and 0.2 for checkpoints; the first update
    # also reads 4 blooms and 4 PK indexes (8 GETs once per process: 0.4 on the mean)
    assert per_update["total"] <= 3 + TABLETS + 0.3 + 0.4


def test_probes_reuse_cached_immutable_files(s3_table_root):
    root, opts = s3_table_root
    t = _table(root, opts, "p")
    data = metrics_rows(2000)
    t.insert(data)
    counter = _counter_on(t.storage.fs)
    t2 = _cold_open(t, opts, counter)
    keys = data.select(KEYS)
    t2.update(keys.slice(0, 40).append_column("value", pa.array([1.0] * 40)))
    counter.reset()
    t2.update(keys.slice(40, 40).append_column("value", pa.array([2.0] * 40)))
    assert not [u for _, u in counter.log if "bloom" in u or "pkindex" in u], counter.log


def test_a_replaced_file_is_refused_without_head(s3_table_root):
    """A base file of another size in place of the logged one is refused, small (read whole) or
    large (ranged GETs, whose Content-Range gives the size) alike."""
    root, opts = s3_table_root
    for n, name in ((500, "small"), (60_000, "large")):
        parts = None
        t = tf.create_table(f"{root}/{name}", metrics_schema(), partitioning=parts, storage_options=opts)
        t.insert(metrics_rows(n))
        (rs,) = t.state.rowsets.values()
        base = rs.base[0]
        fs = t.storage.fs
        good = fs.cat_file(t.storage.path(base.path))
        assert (base.size > 128 * 1024) == (name == "large")
        other = tf.create_table(f"{root}/{name}-other", metrics_schema(), partitioning=parts,
                                storage_options=opts)
        other.insert(metrics_rows(n, seed=5, start=3))
        (ors,) = other.state.rowsets.values()
        swapped = fs.cat_file(other.storage.path(ors.base[0].path))
        assert len(swapped) != len(good)
        fs.pipe_file(t.storage.path(base.path), swapped)
        FILE_CACHE.clear()
        with pytest.raises(tf.CorruptFileError, match="log recorded"):
            t.scan(columns=["value"]).to_arrow()
        fs.pipe_file(t.storage.path(base.path), good)
        FILE_CACHE.clear()
        assert t.scan(columns=["value"]).count() == n


def test_file_cache_is_keyed_by_path_and_size(tmp_path):
    """A cached immutable file is found again only under the size the log records for it."""
    from tableformat.format.cfile_set import FileCache
    from tableformat.format.storage import Storage
    st = Storage(str(tmp_path))
    cache = FileCache(max_bytes=100)
    cache.put(st, "a/bloom.bin", "A", 40, 123)
    assert cache.get(st, "a/bloom.bin", 123) == "A"
    assert cache.get(st, "a/bloom.bin", 124) is None
    cache.put(st, "b/bloom.bin", "B", 40, 1)
    cache.put(st, "c/bloom.bin", "C", 40, 1)       # over 100 bytes: the least recently used goes
    assert cache.get(st, "a/bloom.bin", 123) is None and cache.get(st, "c/bloom.bin", 1) == "C"


def test_a_large_file_scans_with_its_footer_and_one_coalesced_get(s3_table_root):
    """A base file too big to fetch whole: one ranged GET for the footer, one for the column chunks
    of every row group (coalesced), no HEAD; a filtered read of some row groups likewise."""
    root, opts = s3_table_root
    t = tf.create_table(f"{root}/big", metrics_schema(), storage_options=opts)
    t.insert(metrics_rows(60_000))
    (rs,) = t.state.rowsets.values()
    assert rs.base[0].size > 128 * 1024
    md_groups = -(-60_000 // t.properties["row_group_rows"])
    assert md_groups > 1
    counter = _counter_on(t.storage.fs)
    t2 = _cold_open(t, opts, counter)
    counter.reset()
    assert t2.scan(columns=["value"]).count() == 60_000
    base = [u for _, u in counter.log if "base-" in u]
    print("one-column scan of a large file:", counter.figures())
    assert counter.counts["HEAD"] == 0 and len(base) == 2, counter.log
    data = metrics_rows(60_000)
    FILE_CACHE.clear()
    cut = data["time"][30_000].as_py()
    cols = KEYS + ["value"]
    got = t2.scan(columns=cols, filter=[("time", ">=", cut)]).to_arrow()
    expect = data.filter(pa.compute.greater_equal(data["time"], pa.scalar(cut, data["time"].type)))
    assert_same_rows(got, expect.select(cols))
    assert t2.scan().to_arrow().num_rows == 60_000


def test_spread_update_within_issue_budget_of_6(s3_table_root):
    """The budget holds for keys over 3-4 of the 4 tablets too: a write plans on the
    handle's snapshot (no probe for a newer commit) and the checkpoint hint is written without
    being read first."""
    root, opts = s3_table_root
    t = _table(root, opts, "x")
    counter = _counter_on(t.storage.fs)
    per_update = _update_figures(t, opts, counter, list(range(100, 200)))
    assert per_update["total"] <= 6, per_update


def test_a_checkpoint_writes_its_hint_without_reading_it(s3_table_root):
    """The log remembers the hint it last read or wrote: a checkpoint PUTs the hint, no GET."""
    import json
    root, opts = s3_table_root
    t = _table(root, opts, "h", checkpoint_interval=5)
    counter = _counter_on(t.storage.fs)
    data = metrics_rows(200)
    for i in range(12):
        t.insert(data.slice(i * 10, 10))
    hint_gets = [u for m, u in counter.log if m == "GET" and u.endswith("_last_checkpoint")]
    hint_puts = [u for m, u in counter.log if m == "PUT" and u.endswith("_last_checkpoint")]
    assert not hint_gets and len(hint_puts) == 2, counter.log          # versions 5 and 10
    assert json.loads(t.storage.fs.cat_file(t.storage.path("_log/_last_checkpoint"))) == {"version": 10}
    t2 = _cold_open(t, opts, counter)
    assert t2.version == 12 and len(t2.scan().to_arrow()) == 120
