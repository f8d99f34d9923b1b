"""The package's stages import only downward (issue 17): a stage may import the stages listed
before it in LAYERS, never one after it, so each can be read, tested and reused without what
comes later in the data flow. models/ sits below noising because noising runs the trained LM;
training may reach up to inference and evaluation only for its dev-set decoding and scoring."""

import ast
from pathlib import Path

import denoisesum

PACKAGE = Path(denoisesum.__file__).parent
# lowest first; errors/io/config are the shared base every stage may use
LAYERS = ["errors", "io", "config", "data", "models", "noising", "topics", "training",
          "inference", "evaluation", "baselines", "fit", "serving", "cli", "__init__", "__main__"]
BASE = {"config", "io", "errors"}
ALLOWED_UP = {("training", "denoisesum.inference.summarizer"),
              ("training", "denoisesum.evaluation.decoded"),
              ("training", "denoisesum.evaluation.rouge")}


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
    return ".".join(rel.parts).removesuffix(".__init__") if rel.name == "__init__" \
        else ".".join(rel.parts)


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        stage = stage_of(name) if path.name != "__init__.py" or path.parent != PACKAGE \
            else "__init__"
        if stage not in LAYERS:
            found.append(f"{name}: stage '{stage}' has no place in LAYERS")
            continue
        for target in imports_of(path) - {"denoisesum"}:  # the root: version, lazy exports
            other = stage_of(target)
            if other == stage or (other in BASE and stage not in BASE):
                continue
            if other not in LAYERS:
                found.append(f"{name} imports {target}: unknown stage")
            elif LAYERS.index(other) > LAYERS.index(stage) and (stage, target) not in ALLOWED_UP:
                found.append(f"{name} ({stage}) imports {target} ({other}), a later stage")
    return found


def test_no_stage_imports_a_later_one():
    assert violations() == []


def test_the_check_sees_function_level_imports(tmp_path):
    source = tmp_path / "x.py"
    source.write_text("def f():\n    from denoisesum.training.lm import LMTrainer\n")
    assert imports_of(source) == {"denoisesum.training.lm"}
