"""Request economy on HDFS, as tests/s3/test_s3_requests.py counts S3 requests: per operation, the
WebHDFS HTTP requests the engine sends (to the NameNode, and to DataNodes after a redirect), and
what the NameNode does for them, from its own metrics over JMX: file operations (NameNodeActivity's
TotalFileOps, WebHDFS's in-process calls included) and client RPCs on its RPC port (the DataNodes'
HDFS clients: open, create, addBlock, complete)."""
import collections
import time
import urllib.parse

import pyarrow as pa

import tableformat as tf
from tableformat.format.cfile_set import FILE_CACHE

from helpers import metrics_rows, metrics_schema

TABLETS = 4
KEYS = ["host", "metric", "time"]
CLIENT_RPCS = ("GetBlockLocations", "Create", "AddBlock", "Complete", "Rename", "Rename2", "Delete", "GetListing",
               "GetFileInfo", "Mkdirs", "RenewLease", "Fsync", "GetServerDefaults", "GetAdditionalDatanode",
               "UpdateBlockForPipeline", "UpdatePipeline", "Append", "AbandonBlock")


class Counter:
    """WebHDFS requests of one client (a `requests` response hook: the session is public), by where
    they went and their op, and the NameNode's counters read before and after."""

    def __init__(self, hdfs, fs):
        self.hdfs, self.http = hdfs, collections.Counter()
        self.nn_port = str(hdfs.http_port)
        fs.session.hooks["response"].append(self._seen)
        self.reset()

    def _seen(self, r, *args, **kwargs):
        u = urllib.parse.urlsplit(r.request.url)
        op = urllib.parse.parse_qs(u.query).get("op", ["?"])[0]
        self.http[("nn" if str(u.port) == self.nn_port else "dn", op)] += 1

    def _nn(self):
        time.sleep(1.1)     # the metrics' period (tests/hdfs/hadoop-metrics2.properties)
        ops = self.hdfs.jmx("Hadoop:service=NameNode,name=NameNodeActivity")["TotalFileOps"]
        rpc = self.hdfs.jmx(f"Hadoop:service=NameNode,name=RpcDetailedActivityForPort{self.hdfs.rpc_port}")
        return ops, sum(rpc.get(f"{m}NumOps", 0) for m in CLIENT_RPCS)

    def reset(self):
        self.http.clear()
        self.start = self._nn()

    def figures(self, per: int = 1) -> dict:
        ops, rpcs = self._nn()
        nn = sum(v for (where, _), v in self.http.items() if where == "nn")
        dn = sum(v for (where, _), v in self.http.items() if where == "dn")
        return {"http_namenode": nn / per, "http_datanode": dn / per, "namenode_ops": (ops - self.start[0]) / per,
                "namenode_rpcs": (rpcs - self.start[1]) / per,
                "by_op": {f"{w}:{op}": v / per for (w, op), v in sorted(self.http.items())}}


def _table(root, opts, name, **properties):
    parts = tf.PartitionSchema(hash=[tf.HashPartition(["host", "metric"], buckets=TABLETS)])
    return tf.create_table(f"{root}/{name}", metrics_schema(), partitioning=parts, storage_options=opts,
                           properties=properties or None)


def _cold_open(t, opts, counter):
    FILE_CACHE.clear()      # a new process: nothing cached
    counter.reset()
    t2 = tf.open_table(t.uri, storage_options=opts)
    assert t2.storage.fs is t.storage.fs      # fsspec's instance cache: the same, counted, client
    return t2


def test_hdfs_request_budget(hdfs, hdfs_table_root, capsys):
    """The S3 test's table (4 tablets, two inserts, a checkpoint at version 2, a 5-key update): a cold
    open, an open and a one-column scan, a 5-key update of one tablet (mean of 10 from one handle),
    and a commit alone."""
    root, opts = hdfs_table_root
    t = _table(root, opts, "r", checkpoint_interval=2)
    data = metrics_rows(4000)
    t.insert(data.slice(0, 2000))
    t.insert(data.slice(2000))
    t.update(data.select(KEYS).slice(0, 5).append_column("value", pa.array([1.0] * 5)))
    counter = Counter(hdfs, t.storage.fs)
    figures = {}

    _cold_open(t, opts, counter)
    figures["open"] = opened = counter.figures()
    t2 = _cold_open(t, opts, counter)
    assert t2.scan(columns=["value"]).count() == 4000
    figures["open + scan(value)"] = scanned = counter.figures()
    rowsets = len(t2.state.rowsets)

    u = _table(root, opts, "u")
    more = metrics_rows(6000)
    u.insert(more)
    u2 = _cold_open(u, opts, counter)
    keys = more.select(KEYS).take(pa.array(list(range(0, 6000, 60))))     # one tablet
    counter.reset()
    for i in range(10):
        u2.update(keys.slice(5 * i, 5).append_column("value", pa.array([float(i)] * 5)))
    figures["5-key update (mean of 10)"] = updated = counter.figures(per=10)

    st = u2.state
    counter.reset()
    assert u2.log.try_commit(st, "NOOP", [], {}, st.version) is not None
    figures["commit alone"] = committed = counter.figures()

    with capsys.disabled():
        for name, f in figures.items():
            print(f"\nhdfs {name}: {f}")
    # a cold open: one LISTSTATUS of _log/, the checkpoint and commit 3 (an OPEN each; §8.3)
    assert opened["http_namenode"] <= 4 and opened["namenode_ops"] <= 12, opened      # measured: 4, 10
    assert "nn:GETFILESTATUS" not in opened["by_op"], opened
    # a scan opens each rowset's base file by its logged size: no GETFILESTATUS, no LISTSTATUS
    # (the one LISTSTATUS is the open's listing of _log/, §8.3)
    assert scanned["http_namenode"] <= 4 + 2 * rowsets, scanned
    assert {k: n for k, n in scanned["by_op"].items() if "STATUS" in k} == {"nn:LISTSTATUS": 1}, scanned
    assert scanned["namenode_ops"] <= 3 * (4 + 2 * rowsets), scanned                  # measured: 16, 44
    # an update: its delta file (CREATE), the commit it builds on (OPEN), the commit (CREATE, RENAME)
    assert updated["http_namenode"] <= 5 and updated["namenode_ops"] <= 12, updated   # measured: 4.5, 9.1
    # a commit: the temporary file (CREATE at the NameNode, then a DataNode), its rename
    assert committed["by_op"] == {"dn:CREATE": 1, "nn:CREATE": 1, "nn:RENAME": 1}, committed
    assert committed["namenode_ops"] <= 4 and committed["namenode_rpcs"] <= 5, committed    # measured: 3, 4
