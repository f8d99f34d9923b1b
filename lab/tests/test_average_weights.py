"""lab/studies/average_weights.py: the mean of two summarizers' weights, refused across
vocabularies."""

import json
import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from conftest import save_tiny_summarizer
from denoisesum.summarizer import SummarizerConfig

ROOT = Path(__file__).resolve().parents[2]
STUDY = [sys.executable, "-m", "lab.studies.average_weights"]  # run from ROOT


def run(*args):
    return subprocess.run([*STUDY, *map(str, args)], capture_output=True, text=True, cwd=ROOT)


def test_average_of_two_models_and_a_clear_refusal(tmp_path):
    a = save_tiny_summarizer(tmp_path / "a", SummarizerConfig())
    b = save_tiny_summarizer(tmp_path / "b", SummarizerConfig())
    weights = load_file(str(b / "model.safetensors"))
    save_file(
        {k: v + 1.0 if v.is_floating_point() else v for k, v in weights.items()},
        str(b / "model.safetensors"),
    )
    done = run(a, b, "-o", tmp_path / "soup")
    assert done.returncode == 0, done.stderr
    first, second = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    soup = load_file(str(tmp_path / "soup" / "model.safetensors"))
    for key, value in soup.items():
        if value.is_floating_point():
            assert torch.allclose(value, (first[key] + second[key]) / 2, atol=1e-6), key
    vocab = json.loads((b / "vocab.json").read_text())
    vocab["tokens"] = [*vocab["tokens"][:-1], "zebra"]
    (b / "vocab.json").write_text(json.dumps(vocab))
    refused = run(a, b, "-o", tmp_path / "other")
    assert refused.returncode == 1 and "another vocabulary" in refused.stderr
    assert "Traceback" not in refused.stderr and not (tmp_path / "other").exists()
