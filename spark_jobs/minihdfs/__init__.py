"""A real HDFS on one machine: Hadoop's own MiniDFSCluster (a NameNode and DataNodes, WebHDFS on,
free ports on 127.0.0.1) in a JVM of its own, for a user without a cluster and for the tests'
`hdfs` fixture (one launcher for both).

    python -m spark_jobs.minihdfs [--dir DIR] [--datanodes N]

starts it, prints the settings to export (the hdfs:// URI, the WebHDFS address the engine's
`storage_options` need, what Spark needs) and runs until Ctrl-C or SIGTERM, which stop it cleanly.
It needs a JDK and Maven: `MiniHdfs.java` is compiled once, and `pom.xml` resolves
hadoop-client-minicluster at pyspark's Hadoop version from Maven Central into ~/.m2 (about 115 MB,
once per machine). The engine itself never needs either: it reaches HDFS over WebHDFS (README, HDFS)."""
from __future__ import annotations

import getpass
import hashlib
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_SOURCES = ("MiniHdfs.java", "pom.xml", "hadoop-metrics2.properties")


class MiniHdfsUnavailable(RuntimeError):
    """The cluster cannot be built or started here (the message says why and what to install)."""


def classpath() -> str:
    """The launcher's classpath: hadoop-client-minicluster and what it needs, resolved by Maven
    into ~/.m2 and copied, with the compiled launcher, to a cache directory keyed by the Hadoop
    version and the launcher's sources."""
    from ..connector import cache_dir
    from ..session import hadoop_version
    version = hadoop_version()
    src = b"".join((_HERE / n).read_bytes() for n in _SOURCES)
    cache = cache_dir().parent / "minihdfs" / f"{version}-{hashlib.sha256(src).hexdigest()[:12]}"
    jars, classes = cache / "jars", cache / "classes"
    if not (classes / "MiniHdfs.class").exists():
        for tool in ("mvn", "javac", "java"):
            if shutil.which(tool) is None:
                raise MiniHdfsUnavailable(f"the MiniDFSCluster needs `{tool}` on PATH: install a JDK (17) and "
                                          f"Apache Maven, or use an HDFS cluster of your own")
        tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["mvn", "-q", "-B", "-f", str(_HERE / "pom.xml"), f"-Dhadoop.version={version}",
                        "dependency:copy-dependencies", f"-DoutputDirectory={tmp / 'jars'}"], check=True)
        subprocess.run(["javac", "-d", str(tmp / "classes"), "-cp", str(tmp / "jars" / "*"),
                        str(_HERE / "MiniHdfs.java")], check=True)
        shutil.copy(_HERE / "hadoop-metrics2.properties", tmp / "classes")
        shutil.rmtree(cache, ignore_errors=True)
        os.replace(tmp, cache)
    return f"{jars / '*'}{os.pathsep}{classes}"


class MiniHdfs:
    """A running MiniDFSCluster, stopped by its PID (`stop`), or when this process ends (the JVM
    waits on its stdin). `uri` is hdfs://127.0.0.1:<rpc port>; `storage_options` what the engine
    takes for it (the NameNode's WebHDFS address and the user)."""

    def __init__(self, base_dir, datanodes: int = 2, timeout: float = 180):
        base = Path(base_dir)
        base.mkdir(parents=True, exist_ok=True)
        self.log_path = base / "minihdfs.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                ["java", "-Xmx768m", "-XX:+UseSerialGC", "-cp", classpath(), "MiniHdfs", str(base / "dfs"),
                 str(datanodes)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                start_new_session=True)       # stdin: the cluster ends when this process does
        try:
            info = self._wait_for_start(timeout)
        except BaseException:             # Ctrl-C (KeyboardInterrupt) while it starts, too
            self.stop()
            raise
        self.pid = self.proc.pid
        self.rpc_port, self.http_port = info["rpc_port"], info["http_port"]
        self.uri = info["uri"]
        self.user = getpass.getuser()     # the NameNode's superuser: the JVM's user
        self.storage_options = {"namenode_http_address": f"127.0.0.1:{self.http_port}", "user": self.user}

    def _wait_for_start(self, timeout: float) -> dict:
        """The JVM's MINIHDFS line, read by a thread of its own so that the wait ends at `timeout`
        and Ctrl-C interrupts it, even while the JVM prints nothing."""
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(ln) for ln in iter(self.proc.stdout.readline, b"")] + [lines.put(b"")],
                         daemon=True).start()
        deadline = time.time() + timeout
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.time())).decode()
            except queue.Empty:
                line = ""
            if line.startswith("MINIHDFS "):
                return json.loads(line[len("MINIHDFS "):])
            if not line:
                raise MiniHdfsUnavailable(f"the MiniDFSCluster did not start within {timeout:.0f} s; its log: "
                                          f"{self.log_path}")

    def settings(self) -> dict[str, str]:
        """Environment variables for a shell (README's HDFS block reads them)."""
        return {"HDFS_NAMENODE": f"127.0.0.1:{self.rpc_port}", "HDFS_NAMENODE_HTTP": f"127.0.0.1:{self.http_port}",
                "HADOOP_USER_NAME": self.user}

    def spark_conf(self) -> dict[str, str]:
        """What a Spark session needs: nothing for full hdfs://127.0.0.1:<port>/ URIs; this makes the
        cluster the default file system, so bare paths land on it."""
        return {"spark.hadoop.fs.defaultFS": self.uri}

    def jmx(self, query: str) -> dict:
        """The NameNode's JMX bean `query` (e.g. Hadoop:service=NameNode,name=NameNodeActivity)."""
        import urllib.request
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/jmx?qry={query}") as r:
            beans = json.loads(r.read())["beans"]
        return beans[0] if beans else {}

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
