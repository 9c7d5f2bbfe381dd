"""The table handle shared by threads (Kudu keeps `mt-*` tests for concurrency): time travel
through its LRU of older states from many threads at once, and refreshes that race."""
import sys
import threading

import pyarrow as pa

import tableformat as tf
from tableformat.log.handle import STATE_CACHE_SIZE


def _versions(path, n):
    t = tf.create_table(str(path), tf.Schema([tf.Column("k", "int64"), tf.Column("v", "int64")], primary_key=["k"]))
    for i in range(n):
        t.insert(pa.table({"k": [i], "v": [i]}))
    return t


def test_threads_share_the_lru_of_older_states(tmp_path):
    """Eight threads load older versions (more than the LRU holds, so it evicts all the time):
    each gets the state it asked for, and none trips over another's eviction."""
    n = 3 * STATE_CACHE_SIZE
    t = _versions(tmp_path / "t", n)
    handle = tf.open_table(t.uri).handle
    errors, wrong = [], []
    start = threading.Barrier(8)

    def reader(seed):
        start.wait()
        try:
            for i in range(300):
                v = 1 + (seed * 7 + i * 13) % n
                if handle.load(v).version != v:
                    wrong.append(v)
        except Exception as e:       # noqa: BLE001  (the assertion below names it)
            errors.append(repr(e))
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)      # switch threads as often as the interpreter can
    try:
        threads = [threading.Thread(target=reader, args=(s,)) for s in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == [] and wrong == []


def test_a_slower_refresh_never_moves_the_handle_back(tmp_path):
    """A refresh that read the log before another thread's newer one does not replace it."""
    t = _versions(tmp_path / "t", 3)
    handle = tf.open_table(t.uri).handle
    stale = tf.open_table(t.uri).handle.state
    t.insert(pa.table({"k": [99], "v": [99]}))
    assert handle.refresh().version == 4
    handle.log.load = lambda version, cached=None: (stale, handle.history[:stale.version + 1])
    assert handle.refresh().version == 4 and handle.state.version == 4


def test_a_refresh_reads_the_state_and_its_history_together(tmp_path):
    """Thread A reads the cached state; before it reads the history, thread B refreshes to a newer
    version. A must not load on top of (old state, newer history): that appended B's commit a
    second time and misindexed `handle.history` (what tags and time travel index by version)."""
    from tableformat.log.handle import TableHandle

    t = _versions(tmp_path / "t", 1)
    h0 = tf.open_table(t.uri).handle

    class Interleaved(TableHandle):
        hook = False

        @property
        def _state(self):
            s = self.__dict__["_s"]
            if self.hook and threading.current_thread().name == "A":
                self.hook = False
                b = threading.Thread(target=self.refresh, name="B")
                b.start()
                b.join(timeout=2)        # B waits for A's lock where the pair is read under it
            return s

        @_state.setter
        def _state(self, v):
            self.__dict__["_s"] = v

    h = Interleaved(h0.storage, h0.state, h0.history, h0.log)
    t.insert(pa.table({"k": [7], "v": [7]}))
    h.hook = True
    a = threading.Thread(target=h.refresh, name="A")
    a.start()
    a.join()
    h.refresh()
    assert h.state.version == 2
    assert [c.version for c in h.history] == [0, 1, 2]


def test_a_table_and_its_handle_pickle_as_before_the_lock(tmp_path):
    """Spark functions capture Tables (cloudpickle): the handle's lock stays behind, and the copy
    reads and refreshes with a lock of its own."""
    import pickle

    import pytest
    cloudpickle = pytest.importorskip("pyspark.cloudpickle")       # what Spark pickles functions with
    t = _versions(tmp_path / "t", 2)
    copy = pickle.loads(cloudpickle.dumps(t))
    t.insert(pa.table({"k": [5], "v": [5]}))
    assert copy.handle.refresh().version == 3 and copy.to_arrow().num_rows == 3
