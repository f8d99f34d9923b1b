"""lab/studies/mixture_probes.py: shifted gates and copy switches, ensembles, and its command
line."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import save_tiny_summarizer, study_refuses, synthetic_sets, write_dev_sets
from denoisesum.data.batch import inference_batch
from denoisesum.inference.beam import DecodeConfig, beam_search
from denoisesum.summarizer import Summarizer, SummarizerConfig
from lab.studies import mixture_probes

ROOT = Path(__file__).resolve().parents[2]
STUDY = [sys.executable, "-m", "lab.studies.mixture_probes"]  # run from ROOT
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def probes():
    return mixture_probes


def review_sets(summarizer, n=3):
    return [summarizer.encode_reviews(reviews) for reviews in synthetic_sets(n)]


def decode(model, sets):
    cfg = DecodeConfig(beam_size=3, min_length=2, max_length=12)
    return [h[0].tokens for h in beam_search(model, inference_batch(sets), cfg)]


def test_no_shift_decodes_as_the_model_and_a_shift_moves_the_gate(probes, tmp_path):
    summarizer = Summarizer.from_pretrained(
        save_tiny_summarizer(tmp_path / "m", SummarizerConfig())
    )
    sets = review_sets(summarizer)
    same, kept = probes.shifted(summarizer.model, 0.0, 0.0)
    assert decode(same, sets) == decode(summarizer.model, sets)
    means = kept.means()
    assert 0 < means["lambda"] < 1 and 0 < means["p_gen"] < 1
    up, kept = probes.shifted(summarizer.model, 3.0, -3.0)
    decode(up, sets)
    assert kept.means()["lambda"] > means["lambda"] and kept.means()["p_gen"] < means["p_gen"]


def test_the_command_line_pairs_every_probe_with_the_model(tmp_path, monkeypatch):
    model = save_tiny_summarizer(tmp_path / "a", SummarizerConfig(shortlist=5))
    other = save_tiny_summarizer(tmp_path / "b", SummarizerConfig())
    dev = write_dev_sets(tmp_path / "dev.jsonl")
    out = tmp_path / "probes.json"
    run = subprocess.run(
        [
            *STUDY,
            str(model),
            str(dev),
            "--probes",
            f"g:gate=2;e:ensemble='{other}'",
            "--json",
            str(out),
            "--markdown",
            str(tmp_path / "t.md"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    rows = json.loads(out.read_text())
    assert list(rows) == ["base", "g", "e"]
    assert rows["g"]["changes"] == {"gate": 2} and "rouge1" in rows["g"]["vs_base"]
    assert rows["g"]["mixture"]["lambda"] > rows["base"]["mixture"]["lambda"]
    assert "| e |" in (tmp_path / "t.md").read_text()
    # refusals: one line each (in-process: no interpreter to start); a bad key before any work
    args = [str(model), str(dev), "--probes", "x:temperature=2", "--json", str(tmp_path / "x.json")]
    study_refuses(monkeypatch, mixture_probes.main, args, "unknown key(s) temperature")
    assert not (tmp_path / "x.json").exists()
    vocab = json.loads((other / "vocab.json").read_text())
    vocab["tokens"][-1] = "zzz-not-a-word"  # the same size, another word
    (other / "vocab.json").write_text(json.dumps(vocab))
    args = [str(model), str(dev), "--probes", f"e2:ensemble='{other}'", "--json", str(out)]
    study_refuses(monkeypatch, mixture_probes.main, args, "another vocabulary than the model")


def test_an_ensemble_over_a_shortlist_uses_the_same_words(probes, tmp_path):
    """The model with itself, over its shortlist: the ensemble's positions are the model's."""
    path = save_tiny_summarizer(tmp_path / "m", SummarizerConfig(shortlist=5))
    reviews = synthetic_sets(2)
    alone = Summarizer.from_pretrained(path).summarize_tokens_batch(reviews)
    twice = probes.ProbeSummarizer.from_pretrained(path)
    twice.wrap = probes.ensemble_with([twice.model])
    assert twice.summarize_tokens_batch(reviews) == alone


def test_teacher_forced_mixture_on_a_run_s_held_out_pairs(probes, tmp_path):
    from denoisesum.training.denoiser import SummarizerTrainer
    from test_train_summarizer import make_pairs, tiny_config, write_shards

    run = tmp_path / "run"
    SummarizerTrainer(
        write_shards(tmp_path / "pairs", make_pairs()),
        run,
        tiny_config(max_steps=2),
        progress=False,
    ).fit()
    summarizer = Summarizer.from_pretrained(run)
    means = probes.teacher_forced_mixture(summarizer.model, summarizer.vocab, run, n=5)
    assert means["pairs"] == 5 and 0 < means["lambda"] < 1 and 0 < means["p_gen"] < 1
    shifted, _ = probes.shifted(summarizer.model, 4.0, 0.0)
    assert (
        probes.teacher_forced_mixture(shifted, summarizer.vocab, run, n=5)["lambda"]
        > means["lambda"]
    )
