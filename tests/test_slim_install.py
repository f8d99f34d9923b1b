"""A slim install (issue 35): `pip install denoisesum` brings what summarizing needs; training,
evaluation, serving, Parquet and pandas come with extras (pyproject.toml), and a command whose
extra is missing says so in one line (denoisesum/extras.py, cli.main).

The first tests hide a package from an installed command (as if its extra were missing). The
last builds the wheel, installs it with no extra into a fresh virtual environment (torch==2.13.0,
the CPU build, first, as the README says) and summarizes the bundled examples there, writing CSV.
It needs the package index for the dependencies (skipped, with the reason, when pip cannot reach
it) and takes about two minutes, mostly installing torch; `-m "not packaging"` skips it.
"""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import build_wheel
from denoisesum.cli import main
from denoisesum.extras import EXTRA_OF, install_hint, missing_extra

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
# what the index cannot be reached looks like in pip's output
OFFLINE = (
    "NewConnectionError",
    "Failed to establish a new connection",
    "Network is unreachable",
    "Temporary failure in name resolution",
    "ConnectTimeoutError",
)


def hide(monkeypatch, package: str) -> None:
    """Make `package` (and its submodules) fail to import, as when it is not installed."""
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, package, None)


def run_main(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["denoisesum", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    return exit_info.value.code, capsys.readouterr().err


def test_a_command_without_its_extra_is_one_line_naming_it(monkeypatch, capsys, tmp_path):
    hide(monkeypatch, "gensim")
    code, err = run_main(
        monkeypatch,
        capsys,
        "topics",
        str(EXAMPLES / "corpus.jsonl"),
        "-o",
        str(tmp_path / "topics"),
    )
    assert code == 2 and "Traceback" not in err
    assert err.strip() == (
        "error: denoisesum topics needs the train extra: pip install 'denoisesum[train]'"
    )


def test_a_package_met_while_running_is_named_by_its_extra(monkeypatch, capsys):
    hide(monkeypatch, "spacy")  # the Opinosis baseline tags with spaCy; LexRank needs nothing
    code, err = run_main(
        monkeypatch, capsys, "baseline", "opinosis", str(EXAMPLES / "review_sets.jsonl")
    )
    assert "Traceback" not in err and (code, err.strip().splitlines()[-1]) == (
        2,
        "error: denoisesum baseline needs the train extra: pip install 'denoisesum[train]'",
    )


def test_serve_without_the_serve_extra(monkeypatch, capsys):
    hide(monkeypatch, "fastapi")
    for name in [m for m in sys.modules if m.startswith("denoisesum.serving")]:
        monkeypatch.delitem(sys.modules, name)  # imported afresh, meeting the missing fastapi
    code, err = run_main(monkeypatch, capsys, "serve", "--port", "0")
    assert (code, err.strip()) == (
        2,
        "error: denoisesum serve needs the serve extra: pip install 'denoisesum[serve]'",
    )


def test_a_parquet_output_without_pyarrow_is_refused_before_any_work(monkeypatch, capsys, tmp_path):
    hide(monkeypatch, "pyarrow")
    output = tmp_path / "out.parquet"
    code, err = run_main(
        monkeypatch, capsys, "summarize", str(EXAMPLES / "review_sets.jsonl"), "-o", str(output)
    )
    assert (code, err.strip()) == (
        2,
        "error: a .parquet output needs the parquet extra: pip install 'denoisesum[parquet]'",
    )
    assert list(tmp_path.iterdir()) == []


def test_a_module_no_extra_brings_is_not_called_an_extra():
    assert missing_extra(ModuleNotFoundError("x", name="sklearn.linear_model")) == "train"
    assert missing_extra(ModuleNotFoundError("x", name="no_such_module")) is None
    assert install_hint("METEOR", "eval") == (
        "METEOR needs the eval extra: pip install 'denoisesum[eval]'"
    )


def test_every_extra_named_is_declared():
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(EXTRA_OF.values()) <= set(declared)
    assert {"train", "eval", "serve", "parquet", "pandas", "all", "test"} <= set(declared)


# ---- the wheel in a fresh virtual environment, no extras -------------------------------------


def run(command: list, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, f"{result.args}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.mark.packaging
def test_the_plain_install_summarizes_without_the_extras(tmp_path):
    wheel = build_wheel(tmp_path)  # build/ and egg-info outside the checkout

    venv = tmp_path / "venv"
    ok(run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp_path))
    python = venv / "bin" / "python"
    # torch's CPU build first (a plain `torch` pulls a CUDA build), then the wheel, no extras;
    # --no-compile: byte-compiling torch's files would double the time
    installed = run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-compile",
            "torch==2.13.0",
            wheel,
        ],
        cwd=tmp_path,
    )
    if installed.returncode and any(s in installed.stdout + installed.stderr for s in OFFLINE):
        pytest.skip("the package index is not reachable: the plain install cannot be made")
    ok(installed)

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PYTHONNOUSERSITE="1", OMP_NUM_THREADS="1")
    importable = ok(
        run(
            [
                python,
                "-c",
                "import importlib.util as u, json, sys; print(json.dumps("
                "[m for m in sys.argv[1:] if u.find_spec(m)]))",
                *EXTRA_OF,
            ],
            cwd=tmp_path,
            env=env,
        )
    )
    assert json.loads(importable.stdout) == []  # no spaCy, gensim, dask, pyarrow, scorers, ...

    denoisesum = venv / "bin" / "denoisesum"
    ok(
        run(
            [denoisesum, "summarize", EXAMPLES / "review_sets.jsonl", "-o", "x.csv"],
            cwd=tmp_path,
            env=env,
        )
    )
    with open(tmp_path / "x.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    sets = [json.loads(line) for line in (EXAMPLES / "review_sets.jsonl").read_text().splitlines()]
    assert [r["entity_id"] for r in rows] == [s["entity_id"] for s in sets]
    assert all(len(r["summary"].split()) >= 5 for r in rows)

    # a command that needs an extra says which, in one line
    refused = run(
        [denoisesum, "topics", EXAMPLES / "corpus.jsonl", "-o", "topics"], cwd=tmp_path, env=env
    )
    assert refused.returncode == 2 and refused.stderr.strip() == (
        "error: denoisesum topics needs the train extra: pip install 'denoisesum[train]'"
    )
