"""README.md runs as written.

Every fenced ```python block runs, in README order, in one namespace, in a
fresh directory (the README defines the data it uses); every ```bash block
runs there too, with `tableformat` on the PATH; the Airflow configuration
```yaml block is parsed by the DAGs' own parser. A block is left out only when
the comment line right above it says why, for blocks that need what a test
machine lacks (a network install, an S3 bucket, a YARN cluster):

    <!-- readme: skip - needs a YARN cluster -->

Blocks marked `<!-- readme: spark -->` run with the suite's Spark session
(get_spark() returns it), and are skipped when pyspark or Java is missing
(so no other block may depend on one). Blocks marked `<!-- readme: hdfs -->` run against
the suite's MiniDFSCluster (the `hdfs` fixture), its addresses in HDFS_NAMENODE and
HDFS_NAMENODE_HTTP, and are skipped when pyspark, Java or Maven is missing. Each such block
says so to a reader too, on its first line (`# needs Spark`, `# needs HDFS`).
A block added later to README is run by default.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT

README = ROOT / "README.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_MARK = re.compile(r"<!--\s*readme:\s*(.*?)\s*-->\s*$")
HAS_SPARK = shutil.which("java") is not None and __import__("importlib").util.find_spec("pyspark") is not None
HAS_HDFS = HAS_SPARK and shutil.which("javac") is not None and shutil.which("mvn") is not None


def blocks(text: str) -> list[dict]:
    """The fenced blocks: language, code, line number and the marker on the line above, if any."""
    out = []
    for m in _FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        above = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _MARK.search(above)
        out.append({"lang": m.group(1), "code": m.group(2), "line": line, "mark": mark.group(1) if mark else ""})
    return out


def test_markers_are_known_and_skips_say_why():
    for b in blocks(README.read_text()):
        mark = b["mark"]
        assert mark in ("", "spark", "hdfs") or re.fullmatch(r"skip - \S.{9,}", mark), \
            f"README.md:{b['line']}: unknown marker {mark!r} (use 'spark', 'hdfs' or 'skip - <why>')"
        if mark in ("spark", "hdfs"):         # the hidden marker, said where a reader sees it
            need = {"spark": "# needs Spark", "hdfs": "# needs HDFS"}[mark]
            assert b["code"].startswith(need), f"README.md:{b['line']}: a {mark} block starts with {need!r}"
    skipped = [b for b in blocks(README.read_text()) if b["mark"].startswith("skip")]
    assert len(skipped) <= 8, "skip is for blocks that need a network install, a bucket or a cluster"


def test_readme_blocks_run_as_written(tmp_path, monkeypatch, request):
    work = tmp_path / "work"
    work.mkdir()
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "tableformat").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tableformat.cli "$@"\n')
    (shim / "tableformat").chmod(0o755)
    env = {**os.environ, "PATH": f"{shim}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    monkeypatch.chdir(work)
    namespace = {"__name__": "__readme__"}
    ran = {"python": 0, "bash": 0}
    for b in blocks(README.read_text()):
        where = f"README.md:{b['line']}"
        if b["mark"].startswith("skip"):
            continue
        if b["lang"] == "yaml" and "tables:" in b["code"]:        # the Airflow configuration example
            sys.path.insert(0, str(ROOT / "airflow" / "dags"))
            import tableformat_config
            assert tableformat_config.parse_config_text(b["code"]), where
            continue
        if b["lang"] not in ("python", "bash"):
            continue
        if b["mark"] == "spark":
            if not HAS_SPARK:
                continue                                # blocks after a Spark block must not need it
            request.getfixturevalue("spark")            # the suite's session: get_spark() returns it
        if b["mark"] == "hdfs":
            if not HAS_HDFS:
                continue
            hdfs = request.getfixturevalue("hdfs")      # the suite's MiniDFSCluster
            monkeypatch.setenv("HDFS_NAMENODE", hdfs.uri.split("://", 1)[1])
            monkeypatch.setenv("HDFS_NAMENODE_HTTP", hdfs.storage_options["namenode_http_address"])
        if b["lang"] == "python":
            try:
                exec(compile(b["code"], where, "exec"), namespace)     # noqa: S102 - README's own code
            except Exception as e:
                pytest.fail(f"{where}: the python block fails: {type(e).__name__}: {e}")
        else:
            r = subprocess.run(["bash", "-euo", "pipefail", "-c", b["code"]], cwd=work, env=env, capture_output=True,
                               text=True, timeout=600)
            assert r.returncode == 0, f"{where}: the bash block exits {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        ran[b["lang"]] += 1
    assert ran["python"] >= 8 and ran["bash"] >= 2, ran
