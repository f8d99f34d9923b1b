"""lab/studies/sentiment_lexicon.py (the word-rating lexicon) and lab/studies/sentiment_probe.py
(steering the beam toward the reviews' tone, and its command line)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import (
    save_tiny_summarizer,
    study_refuses,
    synthetic_reviews,
    write_dev_sets,
    write_jsonl,
)
from denoisesum.data.batch import inference_batch
from denoisesum.inference.beam import DecodeConfig, beam_search
from denoisesum.summarizer import Summarizer, SummarizerConfig
from lab.studies import sentiment_probe
from lab.studies.sentiment_lexicon import RatingLexicon

ROOT = Path(__file__).resolve().parents[2]
STUDY = [sys.executable, "-m", "lab.studies.sentiment_probe"]  # run from ROOT
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def probe():
    return sentiment_probe


@pytest.fixture(scope="module")
def lexicon():
    return RatingLexicon.fit(((r["text"], r["rating"]) for r in synthetic_reviews()), min_count=5)


def test_the_lexicon_learns_which_words_go_with_low_stars(lexicon):
    assert lexicon.mean == pytest.approx(sum(r["rating"] for r in synthetic_reviews()) / 360)
    assert lexicon.weights["rude"] < 0 < lexicon.weights["friendly"]
    assert abs(lexicon.weights["the"]) < 0.01  # in every review: no tone
    assert lexicon.slope > 0
    held = synthetic_reviews(n_entities=5, seed=7)
    good = [lexicon.rating(r["text"]) for r in held if r["rating"] == 5.0]
    bad = [lexicon.rating(r["text"]) for r in held if r["rating"] == 1.0]
    assert min(good) > 4.0 > 2.0 > max(bad)  # the line stretches the offsets back to stars
    assert lexicon.offset("zzz qqq") == 0.0 and lexicon.rating("zzz") == pytest.approx(
        lexicon.intercept
    )


def test_rare_words_are_left_out_and_ratings_round_trip(lexicon, tmp_path):
    rated = [("a fine meal", 5.0), ("a fine day", 4.0), ("a sad meal", 1.0)]
    small = RatingLexicon.fit(rated, min_count=2, shrink=0.0)
    assert set(small.weights) == {"a", "fine", "meal"}
    assert small.weights["fine"] == pytest.approx(4.5 - 10 / 3)  # its reviews' mean - the mean
    lexicon.save(tmp_path / "lex.json")
    again = RatingLexicon.load(tmp_path / "lex.json")
    assert again == lexicon
    with pytest.raises(ValueError, match="needs rated texts"):
        RatingLexicon.fit([])


def test_no_words_that_vary_leaves_the_mean(tmp_path):
    flat = RatingLexicon.fit([("same words", 3.0), ("same words", 5.0)], min_count=1)
    assert flat.slope == 0.0 and flat.rating("same words") == flat.mean == 4.0


def tiny(tmp_path, lexicon, shortlist=0):
    summarizer = Summarizer.from_pretrained(
        save_tiny_summarizer(tmp_path / f"m{shortlist}", SummarizerConfig(shortlist=shortlist))
    )
    weights = torch.tensor(lexicon.token_weights(summarizer.vocab.tokens))
    return summarizer, weights


def test_steering_biases_the_words_toward_the_reviews_tone(probe, lexicon, tmp_path):
    summarizer, weights = tiny(tmp_path, lexicon)
    rude, friendly = (summarizer.vocab.index[w] for w in ("rude", "friendly"))
    texts = [r["text"] for r in synthetic_reviews(n_entities=2, per_entity=4)]
    batch = inference_batch(
        [summarizer.encode_reviews(texts[:4]), summarizer.encode_reviews(texts[4:])]
    )
    steered = probe.SteeredModel(summarizer.model, weights, 5.0, center=1.0)  # above any tone
    state = steered.encode(batch)
    assert state.bias.shape == (2, len(summarizer.vocab))
    assert (state.bias[:, rude] > 0).all() and (state.bias[:, friendly] < 0).all()
    log_probs, _ = steered.decode_step(state, torch.full((2,), 2))
    assert torch.allclose(log_probs.logsumexp(-1), torch.zeros(2), atol=1e-5)
    moved = state.index_select(torch.tensor([1, 1, 0]))
    assert torch.equal(moved.bias[0], state.bias[1]) and torch.equal(moved.bias[2], state.bias[0])
    cfg = DecodeConfig(beam_size=3, min_length=2, max_length=10)
    plain = beam_search(summarizer.model, batch, cfg)
    same = beam_search(probe.SteeredModel(summarizer.model, weights, 0.0, 1.0), batch, cfg)
    assert [h[0].tokens for h in same] == [h[0].tokens for h in plain]


def test_steering_over_a_shortlist_biases_its_rows(probe, lexicon, tmp_path):
    summarizer, weights = tiny(tmp_path, lexicon, shortlist=5)
    summarizer_probe = probe.ProbeSummarizer.from_pretrained(summarizer.path)
    seen = []

    def wrap(model):
        seen.append(probe.SteeredModel(model, weights, 2.0, 0.0))
        return seen[-1]

    summarizer_probe.wrap = wrap
    texts = [r["text"] for r in synthetic_reviews(n_entities=1, per_entity=4)]
    assert summarizer_probe.summarize_tokens_batch([texts])[0]
    steered = seen[0]
    assert torch.equal(steered.out_weights, weights[steered.model.rows])


def test_the_command_line_measures_tone_and_pairs_every_probe(tmp_path, monkeypatch):
    model = save_tiny_summarizer(tmp_path / "m", SummarizerConfig(shortlist=5))
    reviews = synthetic_reviews()
    corpus = write_jsonl(tmp_path / "corpus.jsonl", reviews)
    dev = write_dev_sets(tmp_path / "dev.jsonl")
    out, md = tmp_path / "s.json", tmp_path / "s.md"
    flags = [
        str(model),
        str(dev),
        "--corpus",
        str(corpus),
        "--heldout",
        str(corpus),
        "--lexicon",
        str(tmp_path / "lex.json"),
    ]
    common = [*STUDY, *flags]
    run = subprocess.run(
        [
            *common,
            "--probes",
            "s:strength=3;r:strength=3,center='reviews'",
            "--json",
            str(out),
            "--markdown",
            str(md),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    rows = json.loads(out.read_text())
    assert list(rows) == ["base", "s", "r"] and "rouge1" in rows["s"]["vs_base"]
    text = md.read_text()
    assert "held-out rated reviews: Pearson r" in text and "| summaries' rating |" in text
    assert "| r | " in text and (tmp_path / "lex.json").exists()
    # refusals: one line each, before any work (in-process: no interpreter to start)
    for probes, message in (
        ("x:temperature=2", "unknown key(s) temperature"),
        ("x:strength=1,center='middle'", "center must be one of"),
    ):
        args = [*flags, "--probes", probes, "--json", str(tmp_path / "x.json")]
        study_refuses(monkeypatch, sentiment_probe.main, args, message)
    assert not (tmp_path / "x.json").exists()
    args = [str(model), str(dev), "--lexicon", str(tmp_path / "none.json")]
    args += ["--json", str(tmp_path / "y.json")]
    study_refuses(monkeypatch, sentiment_probe.main, args, "--corpus is needed")
