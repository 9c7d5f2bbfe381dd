"""The module map stays a map: no import cycles, no private names across modules, and the jobs
(spark_jobs/, airflow/) use only what `tableformat/__init__.py` exports."""
import ast
import re
from pathlib import Path

import tableformat as tf
from helpers import ROOT

PUBLIC = set(tf.__all__) | {n for n in dir(tf) if isinstance(getattr(tf, n), type)
                            and issubclass(getattr(tf, n), tf.TableFormatError)}


def _modules(package: str) -> dict[str, Path]:
    out = {}
    for p in (ROOT / package).rglob("*.py"):
        rel = p.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _imports(name: str, path: Path, known: set[str]):
    """(imported module, imported names) for every import in the file, at any depth."""
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                pkg = base[: len(base) - node.level + 1]
                mod = ".".join(pkg + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = [a.name for a in node.names]
            if not node.module:                      # from . import x: x is a module
                for n in names:
                    yield f"{mod}.{n}", []
            elif mod in known:
                yield mod, names
            else:
                yield mod, names


def _graph(packages):
    mods = {}
    for p in packages:
        mods.update(_modules(p))
    graph = {m: set() for m in mods}
    private = []
    for m, path in mods.items():
        for target, names in _imports(m, path, set(mods)):
            if target in mods and target != m:
                graph[m].add(target)
                private += [f"{m} imports {target}.{n}" for n in names
                            if n.startswith("_") and not n.startswith("__")]
    return graph, private


def _cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _edges_without_package_root(graph):
    """A submodule importing its package's __init__ (as `import tableformat as tf` in the CLI)
    is not a cycle of the module map: the root only re-exports."""
    return {m: {t for t in ts if t not in ("tableformat", "spark_jobs")} for m, ts in graph.items()}


def test_no_import_cycles_in_the_engine_or_the_spark_jobs():
    graph, _ = _graph(["tableformat", "spark_jobs"])
    assert _cycles(_edges_without_package_root(graph)) == []


def test_no_private_name_is_imported_from_another_module():
    _, private = _graph(["tableformat", "spark_jobs"])
    assert private == []


def _job_files():
    return sorted((ROOT / "spark_jobs").rglob("*.py")) + sorted((ROOT / "airflow").rglob("*.py"))


def test_jobs_import_only_the_public_package():
    bad = []
    for path in _job_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("tableformat."):
                bad.append(f"{path.relative_to(ROOT)}: from {node.module} import ...")
            if isinstance(node, ast.ImportFrom) and node.module == "tableformat":
                bad += [f"{path.relative_to(ROOT)}: tableformat.{a.name} is not public"
                        for a in node.names if a.name not in PUBLIC]
            if isinstance(node, ast.Import):
                bad += [f"{path.relative_to(ROOT)}: import {a.name}" for a in node.names
                        if a.name.startswith("tableformat.")]
    assert bad == []


# a standard-library function whose name starts with an underscore and is public API
STDLIB_PUBLIC = {("os", "_exit")}
# pyspark's py4j gateway has only private names (a session's `_jvm`, a DataFrame's `_jdf`): one
# module reaches it, for the JVM jobs the Python jobs call (tableformat.write.SparkInsert)
PY4J_GATEWAY = ("spark_jobs/connector/__init__.py", {("spark", "_jvm"), ("df", "_jdf")})


def test_no_module_touches_another_objects_private_attribute():
    """Only `self` and `cls` reach `_name`s: an object's private state is its module's alone."""
    bad = []
    for package in ("tableformat", "spark_jobs", "airflow"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or \
                        node.attr.startswith("__"):
                    continue
                owner = node.value.id if isinstance(node.value, ast.Name) else None
                gateway = str(path.relative_to(ROOT)) == PY4J_GATEWAY[0] and (owner, node.attr) in PY4J_GATEWAY[1]
                if owner not in ("self", "cls") and (owner, node.attr) not in STDLIB_PUBLIC and not gateway:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert bad == []


def test_jobs_read_snapshots_not_engine_state():
    """The jobs use a Snapshot's public properties (table_id, properties, history_horizon,
    tablet_ids), never the engine's TableState behind `.state`."""
    bad = [f"{p.relative_to(ROOT)}:{n.lineno}" for p in _job_files() for n in ast.walk(ast.parse(p.read_text()))
           if isinstance(n, ast.Attribute) and n.attr == "state"]
    assert bad == []


def test_jobs_touch_no_private_attribute_and_only_exported_names():
    bad = []
    for path in _job_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute):
                continue
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            gateway = str(path.relative_to(ROOT)) == PY4J_GATEWAY[0] and (owner, node.attr) in PY4J_GATEWAY[1]
            if node.attr.startswith("_") and not node.attr.startswith("__") and owner not in ("self", "cls") \
                    and not gateway:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
            if owner == "tf" and node.attr not in PUBLIC:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: tf.{node.attr} is not exported")
    assert bad == []


def test_the_checks_see_a_cycle_and_a_private_import(tmp_path):
    """The checks themselves work: a two-module cycle is found."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


def test_readme_layout_names_every_module():
    """README's Layout is the module map: every engine and Spark module is in it, by name."""
    text = (ROOT / "README.md").read_text()
    layout = text[text.index("## Layout"):]
    named = set(re.findall(r"`([a-z_]+)`", layout))
    missing = [f"{p.parent.relative_to(ROOT)}/{p.stem}" for pkg in ("tableformat", "spark_jobs")
               for p in sorted((ROOT / pkg).glob("*.py"))
               + [q for w in WINGS for q in sorted((ROOT / pkg / w).glob("*.py"))]
               if p.stem not in ("__init__", "__main__", "common") and p.stem not in named]
    assert missing == []
    assert [w for w in WINGS if f"`{w}/`" not in layout] == []


# --- the engine's wings (README's Layout): lowest first -----------------------------------------
# A wing's modules import only their own wing and the wings before it. The facade (`table`,
# `snapshot`, `demo`, the package root) may import every wing; `cli` sits above the facade.
# Reads take a table state and never the log; the log's requirements probe keys, so `read` is
# below `log`.
WINGS = ["format", "read", "log", "write", "maintenance", "interop"]
FACADE = {"tableformat", "tableformat.table", "tableformat.snapshot", "tableformat.demo"}
# The arrows that run upward: none is left (the facade hands the wings what they plan on); a new
# one fails the test below.
UPWARD_EXCEPTIONS: set[tuple[str, str]] = set()


def _rank(module: str) -> float:
    """A module's floor in the wing order: a wing's index, the facade above every wing, the CLI above it."""
    parts = module.split(".")
    if module in FACADE:
        return len(WINGS)
    if parts[1] == "cli":
        return len(WINGS) + 1
    return WINGS.index(parts[1])


def _upward(graph):
    """The arrows from a module to one of a higher rank; the package root has the facade's rank
    (it re-exports the table and snapshot), so a wing importing it points upward too."""
    return sorted((m, t) for m, ts in graph.items() if m.startswith("tableformat.") or m in FACADE
                  for t in ts if (t == "tableformat" or t.startswith("tableformat.")) and _rank(t) > _rank(m))


def test_every_engine_module_sits_in_a_wing_or_the_facade():
    graph, _ = _graph(["tableformat"])
    stray = [m for m in graph if m not in FACADE and m.split(".")[1] not in WINGS + ["cli"]]
    assert stray == []


def test_the_wings_arrows_run_one_way():
    """Each wing imports only its own wing and lower ones, but for the listed exceptions."""
    graph, _ = _graph(["tableformat"])
    assert [e for e in _upward(graph) if e not in UPWARD_EXCEPTIONS] == []
    assert sorted(UPWARD_EXCEPTIONS - set(_upward(graph))) == []   # an exception that no longer holds goes


def test_the_wing_check_sees_an_upward_import():
    graph = {"tableformat.format.schema": {"tableformat.read.scan"},
             "tableformat.read.scan": {"tableformat.format.schema"},
             "tableformat.table": {"tableformat.log.txlog"}, "tableformat.cli.run": {"tableformat.table"}}
    assert _upward(graph) == [("tableformat.format.schema", "tableformat.read.scan")]


def test_the_wing_check_sees_a_wing_importing_the_package_root(tmp_path):
    p = tmp_path / "schema.py"
    p.write_text("import tableformat as tf\nfrom tableformat import open_table\n")
    graph = {"tableformat.format.schema": {t for t, _ in _imports("tableformat.format.schema", p, set())},
             "tableformat.cli.run": {"tableformat"}, "tableformat.table": {"tableformat"}}
    assert graph["tableformat.format.schema"] == {"tableformat"}
    assert _upward(graph) == [("tableformat.format.schema", "tableformat")]   # the CLI and facade may


def test_no_wing_drives_the_facade_through_an_untyped_parameter():
    """An upward dependency that imports cannot show: a wing's function taking the Table (or a
    Snapshot) as `Any` and calling its methods. The wings take a TableHandle or a TableState."""
    bad = [f"{p.relative_to(ROOT)}:{n.lineno}: {n.name}({a.arg}: Any)"
           for w in WINGS for p in sorted((ROOT / "tableformat" / w).rglob("*.py"))
           for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
           for a in n.args.args + n.args.kwonlyargs
           if a.arg in ("table", "snapshot", "snap", "handle", "t", "s") and a.annotation is not None
           and ast.unparse(a.annotation) in ("Any", "object")]
    assert bad == []


def test_only_the_handle_writes_its_fields():
    """`TableHandle` is the one owner of what a process has read of a table (log/handle.py):
    other modules call its methods, never assign its attributes."""
    bad = [f"{p.relative_to(ROOT)}:{n.lineno}: {ast.unparse(t)}" for pkg in ("tableformat", "spark_jobs")
           for p in sorted((ROOT / pkg).rglob("*.py")) if p.name != "handle.py"
           for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
           for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
           if isinstance(t, ast.Attribute) and ast.unparse(t.value).split(".")[-1] == "handle"]
    assert bad == []
