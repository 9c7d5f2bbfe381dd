"""The steering check (issue #38 item 6): no Python module over 450 lines and no function over 60
in the engine (tableformat/), the jobs (spark_jobs/, airflow/) and the benchmarks. A module or
function past the limit is split along a concept, not squeezed."""
import ast

import pytest

from helpers import ROOT

FOLDERS = ("tableformat", "spark_jobs", "airflow", "benchmarks")
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 60


def _modules():
    return sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))


def test_the_folders_hold_python():
    assert all(any((ROOT / f).rglob("*.py")) for f in FOLDERS)


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_module_is_over_the_limit(folder):
    long = {str(p.relative_to(ROOT)): n for p in _modules() if p.is_relative_to(ROOT / folder)
            for n in [len(p.read_text().splitlines())] if n > MAX_MODULE_LINES}
    assert long == {}


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_function_is_over_the_limit(folder):
    long = {}
    for p in _modules():
        if not p.is_relative_to(ROOT / folder):
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{p.relative_to(ROOT)}:{node.name}"] = n
    assert long == {}
