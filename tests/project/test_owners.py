"""One owner per concept: a name, path or default that the format or the metadata defines is
spelled there only, and everyone else asks the owner, so a second spelling cannot drift."""
import ast
import re
from pathlib import Path

from helpers import ROOT

CONSTANTS = ROOT / "tableformat" / "format" / "constants.py"


def _code_files(*packages):
    return [p for pkg in packages for p in sorted((ROOT / pkg).rglob("*.py"))]


def _literals(path: Path):
    """(line, text) of every string literal in the code, an f-string's literal parts each;
    docstrings are prose, not spellings, and are skipped."""
    tree = ast.parse(path.read_text())
    skip = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body \
                and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant):
            skip.add(id(n.body[0].value))
    for n in ast.walk(tree):
        if isinstance(n, ast.JoinedStr):
            skip.update(id(v) for v in n.values)
            yield from ((n.lineno, v.value) for v in n.values if isinstance(v, ast.Constant))
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip:
            yield n.lineno, n.value


def _spelled(pattern: str, *packages) -> list[str]:
    return [f"{p.relative_to(ROOT)}:{line}: {text!r}" for p in _code_files(*packages) if p != CONSTANTS
            for line, text in _literals(p) if re.search(pattern, text)]


def test_log_paths_are_made_by_the_format():
    """The log's directory is `format.LOG_DIR` (specs/format.md §1), in the engine and the jobs."""
    assert _spelled(r"(^|/)_log(/|$)", "tableformat", "spark_jobs", "airflow") == []


def test_paths_under_tablets_are_made_by_the_format():
    """Every path under `tablets/` is `format.rowset_dir(tablet, rowset)` or starts from
    `format.TABLETS_DIR` (specs/format.md §1), in the engine and the jobs."""
    assert _spelled(r"(^|/)tablets/", "tableformat", "spark_jobs", "airflow") == []


def _field_name_spellings(path: Path):
    """f"c{...}" / f"u{...}" (a field or flag name built by hand) and .startswith("c") / ("u")."""
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.JoinedStr):
            for a, b in zip(n.values, n.values[1:]):
                if isinstance(a, ast.Constant) and isinstance(b, ast.FormattedValue) and \
                        re.search(r"(^|[\s/.])[cu]$", a.value):
                    yield n.lineno
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "startswith" and \
                n.args and isinstance(n.args[0], ast.Constant) and n.args[0].value in ("c", "u"):
            yield n.lineno


def test_field_names_are_made_by_the_format():
    """A column's Parquet field `c<id>` and its delta flag `u<id>` are `format.field_name` and
    `format.flag_name` (specs/format.md §5, §9), in the engine, the jobs and the mirror."""
    bad = [f"{p.relative_to(ROOT)}:{line}" for p in _code_files("tableformat", "spark_jobs", "airflow")
           if p != CONSTANTS for line in _field_name_spellings(p)]
    assert bad == []


def test_property_defaults_are_the_metadatas_alone():
    """A property's default is `metadata.DEFAULT_PROPERTIES[name]`, reached through
    `metadata.property_value`: no `.get("<property>", <default>)` spells it again elsewhere."""
    from tableformat.format.metadata import DEFAULT_PROPERTIES
    bad = [f"{p.relative_to(ROOT)}:{n.lineno}: {ast.unparse(n)}"
           for p in _code_files("tableformat", "spark_jobs", "airflow") if p.name != "metadata.py"
           for n in ast.walk(ast.parse(p.read_text()))
           if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
           and len(n.args) == 2 and isinstance(n.args[0], ast.Constant) and n.args[0].value in DEFAULT_PROPERTIES]
    assert bad == []


def test_the_spark_session_is_reached_one_way():
    """`get_spark` is `spark_jobs.session`'s, imported from there by the jobs, the DAGs, the
    benchmarks and the tests (`spark_jobs.common` no longer re-exports it)."""
    import spark_jobs.common
    assert not hasattr(spark_jobs.common, "get_spark")
    bad = [f"{p.relative_to(ROOT)}:{n.lineno}: from {'.' * n.level}{n.module} import get_spark"
           for p in _code_files("spark_jobs", "airflow", "benchmarks", "tests")
           for n in ast.walk(ast.parse(p.read_text()))
           if isinstance(n, ast.ImportFrom) and any(a.name == "get_spark" for a in n.names)
           and n.module not in ("spark_jobs.session", "session")]
    assert bad == []


def _bisections(path: Path):
    """(function, line) of each hand-written bisection loop (`while lo < hi:`) and of each use of
    the standard `bisect` module."""
    tree = ast.parse(path.read_text())
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for n in ast.walk(fn):
                if isinstance(n, ast.While) and isinstance(n.test, ast.Compare) and \
                        isinstance(n.test.ops[0], ast.Lt) and isinstance(n.test.left, ast.Name) and \
                        isinstance(n.test.comparators[0], ast.Name):
                    yield fn.name, n.lineno
    for n in ast.walk(tree):
        if isinstance(n, (ast.Import, ast.ImportFrom)) and \
                any(a.name == "bisect" for a in n.names) | ((getattr(n, "module", None) or "") == "bisect"):
            yield "import bisect", n.lineno


def test_keys_are_bisected_in_one_place():
    """A sorted run of keys (a PK index, its blocks' first keys, one block) is searched by
    `read.keyprobe.bisect_sorted` alone (specs/format.md §6)."""
    bad = [f"{p.relative_to(ROOT)}:{line}: {fn}" for p in _code_files("tableformat")
           for fn, line in _bisections(p) if (p.name, fn) != ("keyprobe.py", "bisect_sorted")]
    assert bad == []


def test_keys_are_encoded_by_the_format():
    """A row's encoded primary key is `format.keyencoder`'s (`encoded_keys`, `encode_keys`):
    the write path's modules import it from there, not from one another (specs/format.md
    "Key encoding")."""
    bad = [f"{p.relative_to(ROOT)}:{n.lineno}: from {n.module} import {a.name}"
           for p in _code_files("tableformat") if p.name != "keyencoder.py"
           for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.ImportFrom)
           for a in n.names if a.name in ("encoded_keys", "encode_keys") and not (n.module or "").endswith("keyencoder")]
    defined = [f"{p.relative_to(ROOT)}:{n.lineno}" for p in _code_files("tableformat") if p.name != "keyencoder.py"
               for n in ast.walk(ast.parse(p.read_text()))
               if isinstance(n, ast.FunctionDef) and n.name in ("encoded_keys", "encode_keys")]
    assert bad == [] and defined == []


def test_every_requirement_class_is_the_requirements_packages():
    """A requirement (what a write relies on, specs/format.md §10) is defined in
    `log/requirements/` and nowhere else, so one import registers them all for `from_json`."""
    from tableformat.log.requirements import REQUIREMENTS, Requirement
    home = ROOT / "tableformat" / "log" / "requirements"
    bad = [f"{p.relative_to(ROOT)}:{n.lineno}: {n.name}" for p in _code_files("tableformat", "spark_jobs")
           if p.parent != home for n in ast.walk(ast.parse(p.read_text()))
           if isinstance(n, ast.ClassDef) and any(ast.unparse(b).endswith("Requirement") for b in n.bases)]
    assert bad == []

    def subclasses(c):
        return {c} | {s for d in c.__subclasses__() for s in subclasses(d)}
    kinds = {c.kind for c in subclasses(Requirement) if c.kind}
    assert len(kinds) >= 16 and all(REQUIREMENTS.lookup(k) for k in kinds)


def test_a_mutation_is_converted_and_checked_once():
    """The facade turns the user's input into Arrow (`format.batch.to_arrow_table`) and checks
    `on_error`; the write and maintenance wings take Arrow tables and trust the checked options,
    so neither is done twice on one write."""
    converts = [f"{p.relative_to(ROOT)}:{n.lineno}" for p in _code_files("tableformat/write", "tableformat/maintenance")
                for n in ast.walk(ast.parse(p.read_text()))
                if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("to_arrow_table")]
    checks = [f"{p.relative_to(ROOT)}:{n.lineno}" for p in _code_files("tableformat")
              for n in ast.walk(ast.parse(p.read_text()))
              if (isinstance(n, ast.Compare) and ast.unparse(n.left) == "on_error"
                  and isinstance(n.ops[0], (ast.In, ast.NotIn)))
              or (isinstance(n, ast.Call) and ast.unparse(n.func).endswith("choice") and n.args
                  and ast.unparse(n.args[0]) == "on_error")]
    assert converts == []
    assert [c.split(":")[0] for c in checks] == ["tableformat/snapshot.py"]


def test_type_mappings_are_the_type_tables():
    """A table keyed by logical types (Arrow, Spark, Delta, physical names, widths) is
    `format/types.py`'s alone (`TYPE_NAMES`, specs/format.md §2.1); the jobs, the connector plan,
    the Delta mirror and the value checks derive theirs from a `ColumnType`."""
    from tableformat.format.types import TYPE_NAMES
    home = ROOT / "tableformat" / "format" / "types.py"
    bad = [f"{p.relative_to(ROOT)}:{n.lineno}" for p in _code_files("tableformat", "spark_jobs", "airflow")
           if p != home for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.Dict)
           and sum(isinstance(k, ast.Constant) and k.value in TYPE_NAMES for k in n.keys) >= 3]
    spark_classes = [f"{p.relative_to(ROOT)}:{n.lineno}: {n.attr}" for p in _code_files("spark_jobs")
                     for n in ast.walk(ast.parse(p.read_text()))
                     if isinstance(n, ast.Attribute) and n.attr in ("ByteType", "ShortType", "DecimalType")]
    assert bad == [] and spark_classes == []


# a citation of a document outside the repository: the design documents the project started from
# and the notes kept beside it; the repository's own are specs/ and specs/design/
_OUTSIDE = re.compile("|".join([r"\b(tablet|schema-design|schema-change|compaction|design)[ -]seed\b",
                                r"\bseed's\b", "KUDU" + "-NOTES", r"\b00\d_", r"\bthe (Kudu )?paper\b",
                                "ARCHITECTURE" + r"\.md", "STYLE" + r"\.md", "/work/" + "shared"]))


def test_comments_cite_only_the_repository():
    """Docstrings and comments cite specs/ sections and specs/design/ notes, never a document a
    reader of the repository cannot open."""
    files = [p for pkg in ("tableformat", "spark_jobs", "airflow", "tests", "benchmarks")
             for ext in ("py", "java") for p in sorted((ROOT / pkg).rglob(f"*.{ext}"))]
    bad = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in files
           for i, line in enumerate(p.read_text().splitlines(), 1) if _OUTSIDE.search(line)]
    assert bad == []


def test_the_design_notes_cited_are_in_the_repository():
    """Every `specs/...` path a docstring names exists."""
    files = [p for pkg in ("tableformat", "spark_jobs", "airflow", "tests") for p in sorted((ROOT / pkg).rglob("*.py"))]
    named = {m for p in files for m in re.findall(r"specs/[\w/.-]+\.md", p.read_text())}
    assert named and [n for n in sorted(named) if not (ROOT / n).is_file()] == []


def test_the_specs_sections_run_in_order():
    """A reader finds §12.1 before §12.2: every numbered heading of specs/ follows the one before."""
    for spec in sorted((ROOT / "specs").rglob("*.md")):
        numbers = [tuple(int(x) for x in m.split(".")) for m in
                   re.findall(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", spec.read_text(), re.M)]
        assert numbers == sorted(numbers), spec.name
