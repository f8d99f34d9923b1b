"""Where summaries are computed (issue 35 item 6): `--device auto|cpu|cuda` in summarize, serve
and fit, `Summarizer.from_pretrained(..., device="auto")` in the API. On CPU-only machines the
CPU tests run and the GPU ones are skipped with the reason; `pytest -m gpu` (or this file) on a
machine with CUDA runs the GPU ones: the shipped model summarizes the bundled examples on the
GPU, in float16, and most summaries are the CPU's word for word (the share is printed: run with
-s to see it)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch

from conftest import refused, run_cli, save_tiny_summarizer, synthetic_sets
from denoisesum.errors import DenoiseSumError
from denoisesum.inference.beam import SearchConfig
from denoisesum.models.precision import resolve_device
from denoisesum.summarizer import Summarizer, SummarizerConfig

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "review_sets.jsonl"
HAS_CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(
    not HAS_CUDA, reason="no CUDA GPU here (torch.cuda.is_available() is False)"
)
without_cuda = pytest.mark.skipif(HAS_CUDA, reason="this machine has a CUDA GPU")
# the share of summaries that must be the CPU's word for word: float16 changes a log-probability
# in its third digit, so a close beam may go another way
MIN_SAME = 0.8


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    settings = SummarizerConfig(search=SearchConfig(beam=2, max_words=10))
    return save_tiny_summarizer(tmp_path_factory.mktemp("device") / "tiny", settings)


@pytest.fixture(scope="module")
def sets_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("device-sets") / "sets.jsonl"
    path.write_text(json.dumps({"entity_id": "a", "reviews": synthetic_sets(1)[0]}) + "\n")
    return path


# ---- on any machine --------------------------------------------------------------------------


def test_auto_is_the_gpu_when_there_is_one(tiny):
    expected = "cuda" if HAS_CUDA else "cpu"
    assert resolve_device("auto").type == expected
    summarizer = Summarizer.from_pretrained(tiny)  # device="auto"
    assert summarizer.device.type == expected and summarizer.half == HAS_CUDA
    assert next(summarizer.model.parameters()).device.type == expected
    cpu = Summarizer.from_pretrained(tiny, device="cpu")
    assert cpu.device.type == "cpu" and not cpu.half
    assert cpu.summarize(synthetic_sets(1)[0])


def test_a_device_that_is_not_one_is_one_line(tiny, sets_file):
    with pytest.raises(DenoiseSumError, match="device 'gpu' must be one of auto, cpu, cuda"):
        Summarizer.from_pretrained(tiny, device="gpu")
    done = run_cli("summarize", sets_file, "--model", tiny, "--device", "tpu")
    assert refused(done, "--device 'tpu' must be one of auto, cpu, cuda (or cuda:N)")


@without_cuda
def test_cuda_where_there_is_none_is_one_line(tiny, sets_file, tmp_path):
    with pytest.raises(DenoiseSumError, match="device 'cuda': no CUDA GPU is available here"):
        Summarizer.from_pretrained(tiny, device="cuda")
    said = "--device 'cuda': no CUDA GPU is available here"
    assert refused(run_cli("summarize", sets_file, "--model", tiny, "--device", "cuda"), said)
    assert refused(run_cli("serve", "--model", tiny, "--device", "cuda"), said)
    out = tmp_path / "fitted"
    done = run_cli("fit", sets_file, "-o", out, "--preset", "tiny", "--device", "cuda")
    assert refused(done, said)
    assert not (out / "work").exists()  # refused before any stage ran


def test_fit_device_sets_the_trainers_device(monkeypatch, tmp_path, sets_file):
    """fit --device reaches train.train.device (the summarizer's trainer), the preset's
    otherwise."""
    import denoisesum.fit as fit

    seen = {}

    def fake_run_fit(request, **_):
        seen["overrides"] = request.overrides
        raise KeyboardInterrupt  # stop before any work

    monkeypatch.setattr(fit, "run_fit", fake_run_fit)
    from typer.testing import CliRunner

    from denoisesum.cli import app

    CliRunner().invoke(
        app,
        [
            "fit",
            str(sets_file),
            "-o",
            str(tmp_path / "m"),
            "--device",
            "CPU",
            "--set",
            "synthesize.pairs=5",
        ],
    )
    assert seen["overrides"] == ["synthesize.pairs=5", 'train.train.device="cpu"']
    CliRunner().invoke(app, ["fit", str(sets_file), "-o", str(tmp_path / "m")])
    assert seen["overrides"] == []


# ---- on a GPU --------------------------------------------------------------------------------


def example_sets() -> list[list[str]]:
    return [json.loads(line)["reviews"] for line in EXAMPLES.read_text().splitlines()]


# per-call variants, so that the figure rests on more than the 5 bundled review sets
VARIANTS = [
    {},
    {"beam": 1},
    {"max_words": 40},
    {"beam": 3, "first_person": True},
    {"slice": "praise"},
    {"slice": "complaints"},
]


def summaries(summarizer: Summarizer, sets: list[list[str]]) -> list[str]:
    out = []
    for options in VARIANTS:
        options = dict(options)
        slice_ = options.pop("slice", "all")
        out += [r.summary for r in summarizer.summarize_results(sets, slice=slice_, **options)]
    return out


@pytest.mark.gpu
@needs_cuda
def test_the_gpu_summarizes_as_the_cpu_does():
    cpu = Summarizer.from_pretrained(device="cpu")
    gpu = Summarizer.from_pretrained(device="cuda")
    assert gpu.device.type == "cuda" and gpu.half
    sets = example_sets()
    start = time.perf_counter()
    on_cpu = summaries(cpu, sets)
    cpu_s = time.perf_counter() - start
    summaries(gpu, sets[:1])  # warm-up: CUDA kernels and cuDNN plans
    start = time.perf_counter()
    on_gpu = summaries(gpu, sets)
    gpu_s = time.perf_counter() - start
    gpu.half = False
    on_gpu_fp32 = summaries(gpu, sets)
    n = len(on_cpu)
    same = sum(a == b for a, b in zip(on_cpu, on_gpu, strict=True))
    same_fp32 = sum(a == b for a, b in zip(on_cpu, on_gpu_fp32, strict=True))
    print(
        f"\n{torch.cuda.get_device_name()}: float16 {same}/{n} summaries identical to the "
        f"CPU's, fp32 {same_fp32}/{n}; {n} summaries in {cpu_s:.1f} s on the CPU "
        f"({torch.get_num_threads()} threads), {gpu_s:.1f} s on the GPU"
    )
    for i, (a, b) in enumerate(zip(on_cpu, on_gpu, strict=True)):
        if a != b:
            print(f"  differs [{i}]:\n    cpu: {a}\n    gpu: {b}")
    plain = len(sets) * 4  # the variants without a slice always have a summary
    assert all(on_gpu[:plain]) and all(on_gpu_fp32[:plain])
    assert same >= MIN_SAME * n and same_fp32 >= MIN_SAME * n


@pytest.mark.gpu
@needs_cuda
def test_explain_and_the_command_on_the_gpu(tmp_path):
    gpu = Summarizer.from_pretrained(device="cuda")
    [result] = gpu.summarize_results(example_sets()[:1], explain=True)
    assert result.summary and result.explanation.sentences
    out = tmp_path / "out.jsonl"
    done = run_cli("summarize", EXAMPLES, "--device", "cuda", "--explain", "-o", out)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 5 and all(r["summary"] and r["support"] for r in records)
