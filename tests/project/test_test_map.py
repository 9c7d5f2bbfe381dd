"""The tests mirror the engine (tests/README.md, "Module → tests"): each engine module has a test file named
after it in its wing's folder, or a row of the table naming the concept files that test it; the table names
only modules and files that exist."""
import re

from helpers import ROOT, TESTS

ROW = re.compile(r"^\| `([^`]+\.py)` \| (.+) \|$")


def engine_modules() -> list[str]:
    pkg = ROOT / "tableformat"
    return sorted(str(p.relative_to(pkg)) for p in pkg.rglob("*.py") if p.name not in ("__init__.py", "__main__.py"))


def own_test_file(module: str):
    """tests/<wing>/test_<m>.py for tableformat/<wing>/.../<m>.py, if it exists (the facade has no wing)."""
    parts = module.split("/")
    f = TESTS / parts[0] / f"test_{parts[-1][:-3]}.py"
    return f if len(parts) > 1 and f.exists() else None


def readme_map() -> dict[str, list[str]]:
    """The README's module → tests table: module → the test files it names ([] for "none yet")."""
    text = (TESTS / "README.md").read_text()
    section = text.split("## Module → tests", 1)[1]
    rows = {}
    for line in section.splitlines():
        m = ROW.match(line)
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} has two rows"
            rows[m.group(1)] = re.findall(r"`([^`]+)`", m.group(2))
    return rows


def test_every_engine_module_has_its_test_file_or_a_row():
    rows = readme_map()
    missing = [m for m in engine_modules() if own_test_file(m) is None and m not in rows]
    assert missing == [], f"no tests/<wing>/test_<module>.py and no row in tests/README.md: {missing}"


def test_the_table_names_only_modules_and_files_that_exist():
    rows = readme_map()
    modules = set(engine_modules())
    assert sorted(set(rows) - modules) == [], "rows for modules that no longer exist"
    gone = sorted(f for files in rows.values() for f in files if not (TESTS / f).is_file())
    assert gone == [], f"rows name test files that do not exist: {gone}"
    for m, files in rows.items():
        own = own_test_file(m)
        if own is not None:
            assert str(own.relative_to(TESTS)) in files, f"{m}: its row must name {own.relative_to(TESTS)}"
