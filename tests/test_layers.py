"""The package's stages import only downward (issues 17, 60): a stage may import the stages
listed before it in LAYERS, never one after it, with no exceptions, so each can be read, tested
and reused without what comes later in the data flow. models/ sits below noising because
noising runs the trained LM; training sits above the summarizer and evaluation because it
decodes and scores the dev set; execution (bulk runs, worker processes) above the summarizer
that its workers load, below the service and the command line that both run on it. No module
imports the package's root (denoisesum/__init__.py re-exports; the version is version.py)."""

import ast
import os
from pathlib import Path

import denoisesum

PACKAGE = Path(denoisesum.__file__).parent
# lowest first; version/errors/extras/io/config/text/progress/processes are the shared base
# every stage may use
LAYERS = [
    "version",
    "errors",
    "extras",
    "io",
    "config",
    "text",
    "progress",
    "processes",
    "threads",
    "data",
    "models",
    "noising",
    "topics",
    "inference",
    "opinions",
    "summarizer",
    "evaluation",
    "training",
    "execution",
    "baselines",
    "fit",
    "serving",
    "cli",
    "__init__",
    "__main__",
]
BASE = {"version", "config", "io", "errors", "extras", "text", "progress", "processes"}


def stage_of(module: str) -> str:
    """'denoisesum.inference.beam' -> 'inference'; 'denoisesum.cli' -> 'cli'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports_of(path: Path) -> set[str]:
    """Every denoisesum module a file imports, at module level or inside functions."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return {m for m in out if m == "denoisesum" or m.startswith("denoisesum.")}


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    return (
        ".".join(rel.parts).removesuffix(".__init__")
        if rel.name == "__init__"
        else ".".join(rel.parts)
    )


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        stage = (
            stage_of(name) if path.name != "__init__.py" or path.parent != PACKAGE else "__init__"
        )
        if stage not in LAYERS:
            found.append(f"{name}: stage '{stage}' has no place in LAYERS")
            continue
        for target in imports_of(path):
            if target == "denoisesum" and stage != "__init__":
                found.append(f"{name} imports the package's root")
                continue
            other = stage_of(target)
            if other == stage or (other in BASE and stage not in BASE):
                continue
            if other not in LAYERS:
                found.append(f"{name} imports {target}: unknown stage")
            elif LAYERS.index(other) > LAYERS.index(stage):
                found.append(f"{name} ({stage}) imports {target} ({other}), a later stage")
    return found


def test_no_stage_imports_a_later_one():
    assert violations() == []


def test_the_check_sees_function_level_imports(tmp_path):
    source = tmp_path / "x.py"
    source.write_text("def f():\n    from denoisesum.training.lm import LMTrainer\n")
    assert imports_of(source) == {"denoisesum.training.lm"}


# ---- no import circles (issue 32): a module that imports one which imports it back (even for a
# type hint) cannot be read or loaded on its own; shared things go to a module both import


def imported_modules(node: ast.AST, modules: set[str]) -> set[str]:
    """What an import statement imports: `from a import b` is module a.b when there is one,
    else a; any other statement imports nothing."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        return {
            f"{node.module}.{alias.name}"
            if f"{node.module}.{alias.name}" in modules
            else node.module
            for alias in node.names
        }
    return set()


def load_time_imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that `path` imports when it is loaded: its top-level imports, those
    under a top-level `if` (TYPE_CHECKING included) or `try` too, never those in functions.
    `from a import b` is an import of module a.b when there is one, else of a."""
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            found.update(imported_modules(node, modules))
            if isinstance(node, ast.If | ast.Try):
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
                visit(node.body + node.orelse + getattr(node, "finalbody", []))

    visit(ast.parse(path.read_text(), str(path)).body)
    return found & modules


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
    return {name: load_time_imports(path, set(paths)) - {name} for name, path in paths.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each import circle met by a depth-first walk, as the modules around it (a -> b -> a)."""
    found, done, path = [], set(), []

    def walk(module: str) -> None:
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if target in path:
                found.append([*path[path.index(target) :], target])
            elif target not in done:
                walk(target)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            walk(module)
    return found


def test_no_module_imports_one_that_imports_it_back():
    assert [" -> ".join(circle) for circle in circles(import_graph())] == []


def every_import(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that `path` imports anywhere: at load time or inside a function
    (run later, but a circle all the same: neither module can be read without the other).
    `from a import b` is an import of module a.b when there is one, else of a."""
    tree = ast.walk(ast.parse(path.read_text(), str(path)))
    return set().union(*(imported_modules(node, modules) for node in tree)) & modules


def test_no_import_circle_even_through_function_level_imports():
    paths = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
    graph = {name: every_import(path, set(paths)) - {name} for name, path in paths.items()}
    assert len(graph) > 100 and any(graph.values())  # the walk saw the package's imports
    assert [" -> ".join(circle) for circle in circles(graph)] == []


def test_the_full_check_sees_a_circle_through_a_function(tmp_path):
    pool, worker = tmp_path / "pool.py", tmp_path / "worker.py"
    pool.write_text("def submit():\n    from denoisesum.serving.worker import QueueFull\n")
    worker.write_text("from denoisesum.serving.pool import Pool\n")
    modules = {"denoisesum.serving.pool", "denoisesum.serving.worker"}
    graph = {
        "denoisesum.serving.pool": every_import(pool, modules),
        "denoisesum.serving.worker": every_import(worker, modules),
    }
    assert load_time_imports(pool, modules) == set()  # the load-time check misses it
    assert circles(graph) == [
        ["denoisesum.serving.pool", "denoisesum.serving.worker", "denoisesum.serving.pool"]
    ]


def test_the_check_sees_a_circle_closed_by_a_type_hint(tmp_path):
    source = tmp_path / "routes.py"
    source.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from denoisesum.serving.app import ServiceLimits\n"
        "def f():\n    from denoisesum.cli import app\n"
    )
    modules = {"denoisesum.serving.app", "denoisesum.serving.routes", "denoisesum.cli"}
    imported = load_time_imports(source, modules)
    assert imported == {"denoisesum.serving.app"}  # not the one inside f
    graph = {
        "denoisesum.serving.routes": imported,
        "denoisesum.serving.app": {"denoisesum.serving.routes"},
    }
    assert circles(graph) == [
        ["denoisesum.serving.app", "denoisesum.serving.routes", "denoisesum.serving.app"]
    ]


# ---- the product apart from the lab (issues 32, 60) ------------------------------------------
# lab/ (the studies, lab-only instruments) imports the package and is never imported by it, nor by
# anything else outside lab/; no file edits sys.path (lab, scripts and benchmarks are imported as
# packages from the root)

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "lab"
NOT_SOURCE = {"runs", "build", "dist", "node_modules", "__pycache__"}
PATH_EDITS = {"insert", "append", "extend", "remove", "clear", "pop", "__setitem__"}


def python_files(root: Path) -> list[Path]:
    """The Python files under root, outside virtual environments, runs and hidden folders."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in NOT_SOURCE and not d.startswith(".") and not d.endswith(".egg-info")
        )
        found += [Path(folder) / f for f in sorted(files) if f.endswith(".py")]
    return found


def imported_names(path: Path) -> set[str]:
    """Every module a file imports by name: `import a.b`, `from a import b` (a and a.b), and
    importlib.import_module("a.b")."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.add(node.args[0].value)
    return out


def lab_imported(path: Path) -> set[str]:
    return {m for m in imported_names(path) if m == "lab" or m.startswith("lab.")}


def _is_sys_path(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def path_edits(path: Path) -> list[int]:
    """Lines that change sys.path: its methods (insert, append, ...), an assignment to it or to
    an item or slice of it, and site.addsitedir."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and (
                (node.func.attr in PATH_EDITS and _is_sys_path(node.func.value))
                or node.func.attr == "addsitedir"
            )
        ):
            lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            if any(
                _is_sys_path(t) or (isinstance(t, ast.Subscript) and _is_sys_path(t.value))
                for t in targets
            ):
                lines.append(node.lineno)
    return sorted(lines)


def test_the_package_never_imports_the_lab():
    found = {str(p.relative_to(PACKAGE.parent)): lab_imported(p) for p in python_files(PACKAGE)}
    assert {k: v for k, v in found.items() if v} == {}


def test_nothing_outside_the_lab_imports_it():
    assert LAB.is_dir()
    found = {
        str(p.relative_to(ROOT)): lab_imported(p)
        for p in python_files(ROOT)
        if LAB not in p.parents
    }
    assert {k: v for k, v in found.items() if v} == {}


def test_no_file_edits_sys_path():
    found = {str(p.relative_to(ROOT)): path_edits(p) for p in python_files(ROOT)}
    assert len(found) > 100  # the walk reached the sources (src, tests, lab, ...)
    assert {k: v for k, v in found.items() if v} == {}


def test_the_checks_see_lab_imports_and_path_edits(tmp_path):
    source = tmp_path / "x.py"
    source.write_text(
        "import sys, site\nimport lab.studies.decoding_levers\n"
        "from lab.studies import _harness\n"
        "def f():\n    import importlib\n"
        "    importlib.import_module('lab.benchmarks.round_clock')\n"
        "    sys.path.insert(0, 'a')\n    sys.path += ['b']\n    sys.path[0] = 'c'\n"
        "    sys.path = []\n    site.addsitedir('d')\n"
        "print(sys.path, 'sys.path.insert(0, x)')\n"
    )
    assert lab_imported(source) == {
        "lab.studies",
        "lab.studies.decoding_levers",
        "lab.studies._harness",
        "lab.benchmarks.round_clock",
    }
    assert path_edits(source) == [7, 8, 9, 10, 11]
