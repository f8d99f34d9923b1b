"""Every file of the package under 600 lines and every function under 81 (issue 60): a module
that outgrows them holds more than one thing, and a function that long more than one step.
Split by what the pieces do (see fit/, training/, noising/, models/ for how)."""

import ast
from pathlib import Path

import denoisesum

PACKAGE = Path(denoisesum.__file__).parent
MAX_FILE_LINES = 599
MAX_FUNCTION_LINES = 80


def too_long(path: Path) -> list[str]:
    """The file itself when it has 600+ lines, and each function (or method) of 81+ lines."""
    text = path.read_text()
    found = []
    if len(text.splitlines()) > MAX_FILE_LINES:
        found.append(f"{path.relative_to(PACKAGE)}: {len(text.splitlines())} lines")
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
                found.append(f"{where} {node.name}: {lines} lines")
    return found


def test_no_file_or_function_is_too_long():
    paths = sorted(PACKAGE.rglob("*.py"))
    assert len(paths) > 100  # the walk saw the package
    assert [problem for path in paths for problem in too_long(path)] == []


def test_the_check_sees_a_long_file_and_a_long_function(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.PACKAGE", tmp_path)
    long_file = tmp_path / "long.py"
    long_file.write_text("x = 1\n" * 600)
    body = "".join(f"    y{i} = {i}\n" for i in range(80))
    long_function = tmp_path / "function.py"
    long_function.write_text(f"class A:\n    def f(self):\n{body.replace('    ', '        ')}")
    short_function = tmp_path / "short.py"
    short_function.write_text(f"def g():\n{body[: body.index('    y79')]}")
    assert too_long(long_file) == ["long.py: 600 lines"]
    assert too_long(long_function) == ["function.py:2 f: 81 lines"]
    assert too_long(short_function) == []
