"""The per-layer lines at the end of a run (conftest.py) add up to pytest's own summary: a module
skipped as a whole at collection (a module-level importorskip) counts in its directory's layer."""
import re
import shutil
import subprocess
import sys

from helpers import ROOT


def test_layer_lines_add_up_to_the_summary_with_a_module_skipped_at_collection(tmp_path):
    tests = tmp_path / "tests"
    (tests / "api").mkdir(parents=True)
    (tests / "hdfs").mkdir()
    shutil.copy(ROOT / "tests" / "conftest.py", tests / "conftest.py")
    (tests / "api" / "test_a.py").write_text(
        "import pytest\n\ndef test_ok():\n    pass\n\ndef test_skip():\n    pytest.skip('no')\n")
    (tests / "hdfs" / "test_b.py").write_text(
        "import pytest\n\npytest.importorskip('no_such_module_here')\n\ndef test_never():\n    pass\n")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300,
                       env={**__import__("os").environ, "PYTHONPATH": str(ROOT / "tests")})
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    layers = dict(re.findall(r"layer (\w+)\s+ok\s+\d+ passed, \d+ failed, (\d+) skipped", p.stdout))
    summary = re.search(r"(\d+) skipped", p.stdout.splitlines()[-1])
    assert layers == {"engine": "1", "hdfs": "1"}, p.stdout
    assert sum(map(int, layers.values())) == int(summary.group(1)) == 2, p.stdout
