"""`denoisesum fit --from MODEL` (issue 35): adapting the installed model to a small corpus works
the first time, through the real command; a bad --from is refused before any work; a failed
stage is started over when what made it fail is fixed; fit ends with scores on businesses held
out of training and says plainly when the model is not usable yet; its progress, written to a
pipe, is plain lines."""

import gzip
import json
from pathlib import Path

import pytest
from safetensors.torch import load_file

from conftest import refused, run_cli, synthetic_reviews, write_jsonl
from denoisesum.evaluation.heldout import (
    HeldOutConfig,
    domain_terms,
    failures,
    held_out_entities,
    terms_covered,
)
from denoisesum.fit.decoding import best_band
from denoisesum.models.store import noise_lm
from denoisesum.summarizer import DEFAULT_MODEL_DIR

# a few steps and greedy decoding: the 30k-word model is slow on one CPU thread
QUICK = [
    "--preset",
    "tiny",
    "--set",
    "train.train.max_steps=3",
    "--set",
    "train.summarize.search.beam=1",
    "--set",
    "evaluate.entities=2",
]


def read(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def adapted(tmp_path_factory):
    root = tmp_path_factory.mktemp("adapt")
    corpus = write_jsonl(root / "corpus.jsonl", synthetic_reviews())
    model = root / "model"
    done = run_cli("fit", corpus, "-o", model, "--from", "denoisesum-yelp", *QUICK)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"root": root, "corpus": corpus, "model": model, "done": done}


def test_fit_from_the_installed_model_works_the_first_time(adapted):
    model, base = adapted["model"], DEFAULT_MODEL_DIR
    config, shipped = read(model / "config.json"), read(base / "config.json")
    # the base model's sizes, topic count and vocabulary, and its whole decoding
    assert config["model"] == {
        **shipped["model"],
        **{k: v for k, v in config["model"].items() if k not in shipped["model"]},
    }
    assert config["model"]["n_topics"] == shipped["model"]["n_topics"] == 100
    assert read(model / "vocab.json")["tokens"] == read(base / "vocab.json")["tokens"]
    decode = {**config["summarize"]["search"], **config["summarize"]["policy"]}
    base_decode = {**shipped["summarize"]["search"], **shipped["summarize"]["policy"]}
    assert not decode["first_person"] and decode["restate_overlap"] == 0.5
    assert all(decode[k] == v for k, v in base_decode.items() if k not in ("beam", "mixed_band"))
    # but mixed_band: the one of [0.25, 0.5] its held-out summaries chose
    bands = read(model / "work" / "decode.stage.json")["result"]["bands"]
    assert [row["mixed_band"] for row in bands["rows"]] == [base_decode["mixed_band"], 0.5]
    assert (
        decode["mixed_band"] == bands["mixed_band"] == best_band(bands["rows"], 0.25)["mixed_band"]
    )
    assert config["fit"]["from"] == "denoisesum-yelp"
    assert (model / "rating.npz").read_bytes() == (base / "rating.npz").read_bytes()
    # it started from the base weights (three small steps away), not from an LM
    train = model / "work" / "train"
    assert not (train / "lm-init.json").exists()
    before, after = (
        load_file(str(base / "model.safetensors")),
        load_file(str(model / "model.safetensors")),
    )
    key = "decoder_c.out.weight" if "decoder_c.out.weight" in before else sorted(before)[0]
    assert (before[key].float() - after[key].float()).abs().max().item() < 0.05
    # one checkpoint kept: what resuming needs; no pair cache (made again from the shards)
    assert len(list((train / "checkpoints").glob("step-*"))) == 1
    assert not (train / "data").exists()
    # noised with the installed model's own noising LM: no LM trained
    assert not (model / "work" / "lm").exists()
    stages = {s["stage"]: s for s in read(model / "fit-report.json")["stages"]}
    assert stages["lm"]["status"] == "given"
    assert stages["lm"]["output"] == str(base / "noise-lm")
    assert "the noising LM of denoisesum-yelp" in stages["lm"]["summary"]


def test_fit_ends_with_scores_on_held_out_businesses(adapted):
    model, stderr = adapted["model"], adapted["done"].stderr
    report = read(model / "fit-report.json")
    quality = report["quality"]
    assert len(quality["held_out"]) == 2 and quality["scores"]["businesses"] == 2
    for key in ("opinion_agrees", "misleading", "supported", "unsaid_words", "terms_covered"):
        assert key in quality["scores"]
    assert quality["usable"] == (not failures(quality["scores"]))
    stdout = adapted["done"].stdout
    assert "held out of training (2 businesses of this corpus): opinion agrees" in stdout
    if not quality["usable"]:
        assert "warning: evaluate: the model is not usable yet" in stdout
        assert "--budget" in stdout and "synthesize.pairs=" in stdout
    # the held-out businesses made no synthetic pair
    summaries = read(model / "work" / "heldout" / "summaries.json")
    assert [s["entity_id"] for s in summaries] == quality["held_out"]
    pairs = model / "work" / "pairs"
    assert read(pairs / "manifest.json")["excluded_entities"] == 2
    made = [
        json.loads(line)["entity_id"]
        for shard in sorted((pairs / "shards").glob("*.gz"))
        for line in gzip.decompress(shard.read_bytes()).decode().splitlines()
    ]
    assert made and not set(made) & set(quality["held_out"])
    assert "[8/8] evaluate: done" in stderr
    # beside the model it started from, on the same businesses (fit/compare.py)
    base = quality["base"]
    assert base["model"] == "denoisesum-yelp" and base["scores"]["businesses"] == 2
    loss = base["review_loss"]
    assert loss["businesses"] == 2 and loss["reviews"] > 2
    assert loss["interval"][0] <= loss["difference"] <= loss["interval"][1]
    assert "denoisesum-yelp, the model it started from, on the same businesses: opinion" in stdout
    assert "held-out review loss (nats per word" in stdout
    assert quality["few"].startswith("only 2 businesses held out") and quality["few"] in stdout


def test_a_model_adapted_from_an_installed_one_noises_with_its_lm(adapted, tmp_path):
    """--from a directory: its own noise-lm/, else that of the model it was adapted from (its
    config's fit.from), else none (fit trains one)."""
    shipped = DEFAULT_MODEL_DIR / "noise-lm"
    assert noise_lm(DEFAULT_MODEL_DIR) == shipped
    assert noise_lm(adapted["model"]) == shipped  # fit.from: denoisesum-yelp
    alone = tmp_path / "alone"
    alone.mkdir()
    config = read(adapted["model"] / "config.json")
    del config["fit"]["from"]
    (alone / "config.json").write_text(json.dumps(config))
    assert noise_lm(alone) is None
    config["fit"]["from"] = str(tmp_path / "gone")  # a model no longer there
    (alone / "config.json").write_text(json.dumps(config))
    assert noise_lm(alone) is None


def test_progress_written_to_a_pipe_is_plain_lines(adapted):
    stderr = adapted["done"].stderr
    assert "\r" not in stderr
    lines = stderr.splitlines()
    assert any(line.startswith("train: 3/3 step,") and "step/s" in line for line in lines)
    assert not any(line.startswith("train-lm:") for line in lines)  # the shipped one noises
    assert any(line.startswith("tokenizing: ") for line in lines)


def test_a_rerun_skips_every_stage(adapted):
    done = run_cli(
        "fit", adapted["corpus"], "-o", adapted["model"], "--from", "denoisesum-yelp", *QUICK
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "fit: 8 skipped, 1 given" in done.stdout


@pytest.mark.parametrize(
    "base, message",
    [
        ("no-such-model", "no model directory or installed model named 'no-such-model'"),
        ("{tmp}", "is not a trained summarizer (it has no model.safetensors"),
    ],
)
def test_a_bad_from_is_refused_before_any_work(tmp_path, base, message):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", synthetic_reviews(n_entities=3))
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "out"
    done = run_cli("fit", corpus, "-o", out, "--from", base.format(tmp=empty), *QUICK)
    assert refused(done, message), done.stderr
    assert "--from" in done.stderr and not (out / "work" / "encoded").exists()


def test_from_with_an_lm_to_start_from_is_refused(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", synthetic_reviews(n_entities=3))
    done = run_cli(
        "fit", corpus, "-o", tmp_path / "out", "--from", "denoisesum-yelp", "--lm", tmp_path, *QUICK
    )
    assert refused(done, "give one (--noise-lm DIR"), done.stderr


def test_a_failed_stage_starts_over_when_fixed(tmp_path):
    """The summarizer stage fails (a model to start from that is not there); the same command
    with that fixed runs it, no directory deleted by hand."""
    corpus = write_jsonl(tmp_path / "corpus.jsonl", synthetic_reviews())
    out = tmp_path / "out"
    args = ["fit", corpus, "-o", out, "--preset", "tiny", "--set", "train.train.max_steps=2"]
    failed = run_cli(*args, "--set", f'train.train.init_model="{tmp_path / "missing"}"')
    assert failed.returncode != 0 and "[5/8] train: training" in failed.stderr
    assert read(out / "work" / "train.stage.json")["failed"]
    fixed = run_cli(*args)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    assert "train: it failed earlier" in fixed.stderr and "starting it over" in fixed.stderr
    assert "[5/8] train: done" in fixed.stderr


def test_the_band_kept_is_the_one_whose_summaries_agree_most():
    def rows(*agree):
        return [
            {"mixed_band": b, "opinion_agrees": a}
            for b, a in zip((0.25, 0.5, 0.75), agree, strict=True)
        ]

    assert best_band(rows(0.7, 0.9, 0.8), own=0.25)["mixed_band"] == 0.5
    assert best_band(rows(0.9, 0.9, 0.9), own=0.25)["mixed_band"] == 0.25  # a tie: its own
    assert best_band(rows(0.5, 0.9, 0.9), own=0.25)["mixed_band"] == 0.5  # then the narrower


def test_a_band_out_of_range_is_refused_before_any_work(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", synthetic_reviews(n_entities=12))
    bad = run_cli(
        "fit",
        corpus,
        "-o",
        tmp_path / "bad",
        "--from",
        "denoisesum-yelp",
        *QUICK,
        "--set",
        "decode.mixed_bands=[0.5, 3]",
    )
    assert refused(bad, "decode.mixed_bands"), bad.stderr[-1000:]
    assert not (tmp_path / "bad" / "work").exists()


def test_held_out_businesses_are_drawn_from_those_with_enough_reviews():
    import numpy as np

    entity = np.repeat(np.arange(40), [1] * 10 + [6] * 30)  # 10 with one review, 30 with six
    names = [f"b{i}" for i in range(40)]
    chosen = held_out_entities(entity, names, HeldOutConfig(entities=30, min_reviews=4))
    assert len(chosen) == 3  # at most 10% of the 30 eligible
    assert all(int(name[1:]) >= 10 for name in chosen)
    assert held_out_entities(entity, names, HeldOutConfig(entities=0)) == []
    assert chosen == held_out_entities(entity, names, HeldOutConfig(entities=30, min_reviews=4))


def test_domain_terms_are_the_corpus_words_the_base_model_ranks_lower():
    types = ["the", "room", "food", "bed", "great", "desk"]
    counts = [100, 50, 40, 30, 20, 10]
    base = ["the", "food", "great", "good", "place", "service", "room"]
    assert domain_terms(types, counts) == ["room", "food", "bed", "great", "desk"]
    # food and great rank as high in the base model's corpus: not this domain's own
    assert domain_terms(types, counts, base) == ["room", "bed", "desk"]
    reviews = [["the", "room", "bed"], ["room", "bed", "desk"], ["desk"]]
    assert terms_covered(["nice", "room"], reviews, {"room", "bed", "desk"}) == pytest.approx(1 / 3)
    assert terms_covered(["x"], [["room"]], {"room"}) is None


def test_a_model_past_a_limit_is_not_usable():
    good = {"supported": 0.55, "unsaid_words": 4.0, "opinion_agrees": 0.9}
    assert failures(good) == []
    salad = {"supported": 0.2, "unsaid_words": 12.0, "opinion_agrees": 0.9}
    lines = failures(salad)
    assert len(lines) == 2 and lines[0].startswith("20% of its sentences are supported")
    assert "12.0 words per summary that no review says (needs <= 8)" in lines[1]
