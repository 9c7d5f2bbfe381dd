"""`python -m spark_jobs.minihdfs`: start a MiniDFSCluster, print the settings, run until stopped."""
from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
import threading

from . import MiniHdfs, MiniHdfsUnavailable


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m spark_jobs.minihdfs",
                                description="Start a real HDFS on this machine (Hadoop's MiniDFSCluster) and print "
                                            "the settings to export; Ctrl-C or SIGTERM stops it.")
    p.add_argument("--dir", help="where its NameNode and DataNodes keep their data (default: a new temporary "
                                 "directory); the data is formatted away at each start")
    p.add_argument("--datanodes", type=int, default=2, help="how many DataNodes (default 2)")
    args = p.parse_args(argv)
    if args.datanodes < 1:
        p.error(f"--datanodes must be 1 or more, got {args.datanodes}")
    base = args.dir or tempfile.mkdtemp(prefix="minihdfs-")
    try:
        return run(base, args.datanodes)
    finally:
        if not args.dir:                  # a directory of its own: removed with the cluster
            shutil.rmtree(base, ignore_errors=True)


def _interrupt(*_) -> None:
    raise KeyboardInterrupt


def run(base: str, datanodes: int) -> int:
    """Start the cluster in `base` (Ctrl-C while it starts stops it: KeyboardInterrupt), then
    serve until SIGINT or SIGTERM."""
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        cluster = MiniHdfs(base, datanodes=datanodes)
    except MiniHdfsUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("# stopped before it was up", file=sys.stderr)
        return 130
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        print(f"# a MiniDFSCluster is up: {cluster.uri} (a NameNode and {datanodes} DataNode(s); "
              f"log {cluster.log_path}). Ctrl-C stops it.")
        for k, v in cluster.settings().items():
            print(f"export {k}={v}")
        print(f"# tables: {cluster.uri}/warehouse/<name>, with "
              f"storage_options={json.dumps(cluster.storage_options)}")
        print("# Spark needs nothing more for these URIs; to make it the default file system: "
              + " ".join(f"--conf {k}={v}" for k, v in cluster.spark_conf().items()))
        sys.stdout.flush()
        while not stop.wait(0.5) and cluster.proc.poll() is None:
            pass
        crashed = cluster.proc.poll() is not None
    finally:
        cluster.stop()
    if crashed:
        print(f"error: the MiniDFSCluster stopped on its own; its log: {cluster.log_path}", file=sys.stderr)
        return 1
    print("# stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
