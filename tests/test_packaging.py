"""The default model installs with the package (issue 15): a wheel built from the repository,
installed (not editable) into a fresh virtual environment, summarizes with
`Summarizer.from_pretrained()` and the `denoisesum summarize` console script, from a directory
outside the checkout.

The fresh environment gets the project environment's dependencies (torch, spaCy, ...) without
downloading anything through a `.pth` file naming that environment's site-packages. A directory
named by a .pth line is only added to sys.path: the .pth files inside it, among them the editable
install's (which puts src/ on the path), are not run, so `denoisesum` can only come from the
wheel; the test checks that it does. The build writes its build/ and egg-info to a temporary
directory (DIST_EXTRA_CONFIG), not into the checkout. About 20 s; `-m "not packaging"` skips it.
"""

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from conftest import build_wheel

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "src" / "denoisesum" / "pretrained" / "denoisesum-yelp"
REVIEWS = [
    "The ramen was rich and the broth was deep. Friendly staff, quick service.",
    "Great noodles and a tasty broth, but the room is tiny and it gets loud.",
    "Best ramen in town: the pork is tender, the staff are kind, prices are fair.",
]

pytestmark = pytest.mark.packaging


def run(command: list, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel of the working tree, built without touching it."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_wheel_holds_the_default_model_once(wheel):
    with zipfile.ZipFile(wheel) as archive:
        entries = {info.filename: info.file_size for info in archive.infolist()}
    model = {name: size for name, size in entries.items() if "/pretrained/" in name}
    assert model == {
        f"denoisesum/pretrained/denoisesum-yelp/{p.relative_to(MODEL).as_posix()}": p.stat().st_size
        for p in MODEL.rglob("*")
        if p.is_file()
    }
    assert sorted(name for name in entries if name.endswith(".safetensors")) == [
        "denoisesum/pretrained/denoisesum-yelp/model.safetensors",
        "denoisesum/pretrained/denoisesum-yelp/noise-lm/model.safetensors",  # fit --from's LM
    ]  # not lms/bilm-yelp-256
    # the fp16 weights hardly compress: the wheel is the model and its noising LM plus well
    # under 5 MiB of code
    weights = sum((d / "model.safetensors").stat().st_size for d in (MODEL, MODEL / "noise-lm"))
    assert 0.8 * weights < wheel.stat().st_size < weights + 5 * 2**20


def test_the_installed_wheel_summarizes_with_its_default_model(wheel, tmp_path):
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp_path)
    python = venv / "bin" / "python"
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "--no-deps",
            "--no-index",
            "--force-reinstall",
            "--disable-pip-version-check",
            "-q",
            wheel,
        ],
        cwd=tmp_path,
    )
    site = Path(
        run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            cwd=tmp_path,
        ).stdout.strip()
    )
    deps = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (site / "_project_dependencies.pth").write_text("".join(f"{path}\n" for path in deps))

    elsewhere = tmp_path / "elsewhere"  # neither the checkout nor the environment
    elsewhere.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")
    }
    env.update(
        PYTHONNOUSERSITE="1",
        OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"),
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
    )
    code = (
        "import json, sys, denoisesum\n"
        "from denoisesum import Summarizer\n"
        "from denoisesum.summarizer import installed_models\n"
        "s = Summarizer.from_pretrained()\n"
        f"print(json.dumps({{'file': denoisesum.__file__, 'model': str(s.path), "
        f"'installed': installed_models(), 'path': sys.path, "
        f"'summary': s.summarize({REVIEWS!r})}}))\n"
    )
    found = json.loads(run([python, "-c", code], cwd=elsewhere, env=env).stdout)
    assert Path(found["file"]) == site / "denoisesum" / "__init__.py"
    assert Path(found["model"]) == site / "denoisesum" / "pretrained" / "denoisesum-yelp"
    assert found["installed"] == ["denoisesum-yelp"]
    assert str(ROOT / "src") not in found["path"]
    words = {w.strip(".,!:").lower() for w in found["summary"].split()}
    assert len(words) >= 5 and words & {"food", "ramen", "noodles", "broth", "place", "staff"}

    sets = elsewhere / "reviews.jsonl"
    sets.write_text(json.dumps({"entity_id": "noodle-bar", "reviews": REVIEWS}) + "\n")
    run(
        [venv / "bin" / "denoisesum", "summarize", sets.name, "-o", "out.jsonl"],
        cwd=elsewhere,
        env=env,
    )
    (record,) = [json.loads(line) for line in (elsewhere / "out.jsonl").read_text().splitlines()]
    # its length follows the input (three short reviews: a sentence), ending at a sentence
    assert record["entity_id"] == "noodle-bar" and len(record["summary"].split()) >= 5
