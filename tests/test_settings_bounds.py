"""Hostile input, round two (issue 33): settings outside their bounds are one line naming the key
and its valid range, before any work; a small corpus trains (or is refused, saying what works);
--resume passes over a checkpoint whose state.pt is damaged. Each case through the real command."""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path

import pytest

from conftest import refused, run_cli

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CORPUS = EXAMPLES / "corpus.jsonl"


# ---- small corpora ---------------------------------------------------------------------------


def test_train_lm_on_the_example_corpus_with_the_default_config(tmp_path):
    # 24 reviews, a vocabulary of a few dozen words: below the default cutoffs [2000, 10000]
    done = run_cli("train-lm", CORPUS, "-o", tmp_path / "lm", "--max-steps", 2)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "lm" / "model.safetensors").is_file()
    cloze = run_cli("cloze", tmp_path / "lm", "the _ was great")
    assert cloze.returncode == 0 and cloze.stdout.startswith("_1: "), cloze.stderr


def test_train_lm_whose_vocabulary_keeps_no_word_is_refused(tmp_path):
    done = run_cli(
        "train-lm", CORPUS, "-o", tmp_path / "lm", "--max-steps", 2, "--set", "vocab.min_count=1000"
    )
    assert refused(done, "the vocabulary has no word"), done.stderr
    assert "lower vocab.min_count" in done.stderr
    assert not (tmp_path / "lm" / "model.safetensors").exists()


def test_resume_after_the_newest_state_was_truncated_uses_the_one_before(tmp_path):
    out = tmp_path / "lm"
    first = run_cli(
        "train-lm",
        CORPUS,
        "-o",
        out,
        "--max-steps",
        2,
        "--set",
        "train.save_every=1",
        "--set",
        "train.keep_checkpoints=3",
    )
    assert first.returncode == 0, first.stderr
    newest = out / "checkpoints" / "step-000000002" / "state.pt"
    newest.write_bytes(newest.read_bytes()[:100])  # a damaged disk, a copy cut short
    again = run_cli("train-lm", CORPUS, "-o", out, "--max-steps", 3, "--resume")
    assert again.returncode == 0, again.stderr
    assert "step-000000002 is incomplete" in again.stderr
    assert "resuming from step-000000001" in again.stderr
    assert "starting at step 1" in again.stderr


# ---- settings outside their bounds -------------------------------------------------------------


def tiny_bilm(directory: Path) -> Path:
    from collections import Counter
    from dataclasses import asdict

    import torch

    from conftest import synthetic_reviews
    from denoisesum.data.tokenizer import Tokenizer
    from denoisesum.data.vocab import Vocab
    from denoisesum.models.bilm import BiLM, BiLMConfig
    from denoisesum.models.store import save_model_dir

    tokenizer = Tokenizer()
    counts = Counter(t for r in synthetic_reviews() for t in tokenizer.tokenize(r["text"]))
    vocab = Vocab.from_counts(counts, tokenizer=tokenizer)
    torch.manual_seed(0)
    cfg = BiLMConfig(vocab_size=len(vocab), embed_dim=8, hidden_dim=8, proj_dim=16)
    save_model_dir(directory, BiLM(cfg), {"kind": "bilm", "model": asdict(cfg)}, vocab)
    return directory


def tiny_summarizer(directory: Path) -> Path:
    from conftest import save_tiny_summarizer
    from denoisesum.summarizer import SummarizerConfig

    return save_tiny_summarizer(directory, SummarizerConfig())


TRAIN_LM = ("train-lm", CORPUS, "-o", "{tmp}/lm")
TRAIN = ("train", "{tmp}/pairs", "-o", "{tmp}/run")
SYNTHESIZE = ("synthesize", CORPUS, "--lm", "{tmp}/no-lm", "-o", "{tmp}/pairs")
FIT = ("fit", CORPUS, "-o", "{tmp}/fit")

# (command line, the one line's text): each names the setting and its valid range
CASES = [
    ((*TRAIN_LM, "--set", "model.dropout=5"), "'model.dropout': 5.0 must be in [0, 1)"),
    ((*TRAIN_LM, "--set", "model.embed_dim=-2"), "'model.embed_dim': -2 must be at least 1"),
    ((*TRAIN_LM, "--set", "model.hidden_dim=0"), "'model.hidden_dim': 0 must be at least 1"),
    ((*TRAIN_LM, "--set", "train.lr=-1"), "'train.lr': -1.0 must be more than 0"),
    ((*TRAIN_LM, "--set", "train.lr=nan"), "'train.lr': nan must be more than 0"),
    (
        (*TRAIN_LM, "--set", "vocab.max_size=2"),
        "'vocab.max_size': 2 must be at least 5 (the 4 special tokens and a word)",
    ),
    ((*TRAIN_LM, "--max-steps", -5), "'train.max_steps': -5 must be at least 1"),
    (
        (*TRAIN_LM, "--max-minutes", -1),
        "'train.max_minutes': -1.0 must be at least 0 (0: no limit)",
    ),
    ((*TRAIN, "--set", "train.lr=nan"), "'train.lr': nan must be more than 0"),
    ((*TRAIN, "--set", "train.lr=-1"), "'train.lr': -1.0 must be more than 0"),
    ((*TRAIN, "--set", "model.dropout=5"), "'model.dropout': 5.0 must be in [0, 1)"),
    (
        (*TRAIN, "--set", "summarize.shortlist=-5"),
        "'summarize.shortlist': -5 must be at least 0 (0: every word)",
    ),
    (
        (*TRAIN, "--set", "data.max_review_tokens=0"),
        "'data.max_review_tokens': 0 must be at least 1",
    ),
    ((*SYNTHESIZE, "--pairs", -5), "'pairs': -5 must be at least 1"),
    ((*SYNTHESIZE, "--n-mean", "nan"), "'n_mean': nan must be at least 1"),
    ((*SYNTHESIZE, "--workers", -2), "--workers -2 must be at least 0"),
    (
        ("vocab", CORPUS, "-o", "{tmp}/vocab.json", "--max-size", -5),
        "--max-size -5 must be at least 5 (the 4 special tokens and a word)",
    ),
    (("cloze", "{bilm}", "the _ was great", "--top", -1), "--top -1 must be between 1 and "),
    (
        ("cloze", "{bilm}", "the _ was great", "--top", 100000),
        "--top 100000 must be between 1 and ",
    ),
    (
        ("summarize", "{sets}", "--model", "{model}", "--opinion-weight", "inf"),
        "--opinion-weight inf must be between 0 and 100 (0: off)",
    ),
    (
        ("summarize", "{sets}", "--model", "{model}", "--restate-overlap", "inf"),
        "--restate-overlap inf must be between 0 and 1 (0: off)",
    ),
    (
        ("summarize", "{sets}", "--model", "{model}", "--beam", 100000),
        "--beam 100000 must be between 1 and 1000 (1: greedy)",
    ),
    (
        ("summarize", "{sets}", "--model", "{model}", "--set", "search.beam=100000"),
        "'search.beam': 100000 must be between 1 and 1000",
    ),
    ((*FIT, "--budget", "nan"), "--budget nan must be more than 0 hours"),
    ((*FIT, "--set", "synthesize.pairs=0"), "'synthesize.pairs': 0 must be at least 1"),
    ((*FIT, "--set", "train.train.lr=nan"), "'train.train.lr': nan must be more than 0"),
    ((*FIT, "--set", "lm.train.lr=-1"), "'lm.train.lr': -1.0 must be more than 0"),
    (
        ("serve", "--model", "{model}", "--log-level", "bogus"),
        "--log-level 'bogus' must be one of critical, error, warning, info, debug, trace",
    ),
]


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bounds")
    sets = root / "sets.jsonl"
    sets.write_text(json.dumps({"entity_id": "a", "reviews": ["the pizza was great ."]}) + "\n")
    return {
        "bilm": tiny_bilm(root / "bilm"),
        "model": tiny_summarizer(root / "model"),
        "sets": sets,
    }


@pytest.mark.parametrize(
    ("args", "message"), CASES, ids=[" ".join(map(str, a[:1] + a[-2:])) for a, _ in CASES]
)
def test_a_setting_out_of_bounds_is_one_line_naming_it_before_any_work(
    args, message, places, tmp_path
):
    names = {"tmp": tmp_path, **places}
    done = run_cli(*(str(a).format(**names) for a in args))
    assert refused(done, message), done.stderr
    # before any work: nothing tokenized, trained or written
    assert not any(tmp_path.iterdir()) or not any(tmp_path.rglob("*.npy")), done.stderr
    assert "[1/8]" not in done.stderr


# ---- the one mechanism: every numeric setting has its range ----------------------------------


def settings_classes(cls: type, seen: set[type]) -> set[type]:
    """`cls` and every config dataclass nested in it (through Optional and lists too)."""
    seen.add(cls)
    for hint in typing.get_type_hints(cls).values():
        for inner in (hint, *typing.get_args(hint)):
            if dataclasses.is_dataclass(inner) and inner not in seen:
                settings_classes(inner, seen)
    return seen


def numeric(hint) -> bool:
    return hint in (int, float) or any(numeric(a) for a in typing.get_args(hint))


def every_settings_class() -> set[type]:
    from denoisesum.fit.config import FitConfig
    from denoisesum.inference.support import SupportConfig
    from denoisesum.models.bilm import BiLMConfig
    from denoisesum.serving.limits import ServiceLimits
    from denoisesum.summarizer import SummarizerConfig

    return settings_classes(FitConfig, set()) | {
        SummarizerConfig,
        BiLMConfig,
        SupportConfig,
        ServiceLimits,
    }


def test_every_numeric_setting_has_its_bounds():
    missing = []
    for cls in every_settings_class():
        bounds = getattr(cls, "BOUNDS", {})
        for f in dataclasses.fields(cls):
            if numeric(typing.get_type_hints(cls)[f.name]) and f.name not in bounds:
                missing.append(f"{cls.__name__}.{f.name}")
    assert not missing


def test_settings_are_checked_in_one_form():
    """config.check (bounds, then the class's validate()), never on construction: a setting
    made in Python or changed later is checked the same way, its error naming the key."""
    assert [cls.__name__ for cls in every_settings_class() if "__post_init__" in vars(cls)] == []


def bad_settings(case: str):
    """A settings object made in Python with one bad setting, and the error it gives."""
    from denoisesum.inference.support import SupportConfig
    from denoisesum.noising.config import SynthesisConfig
    from denoisesum.serving.limits import ServiceLimits
    from denoisesum.training.denoiser_config import SummarizerRunConfig, SummarizerTrainConfig
    from denoisesum.training.pairs import PairVocabConfig

    return {
        "preset": (
            SynthesisConfig(preset="nope"),
            "config key 'preset': must be one of yelp, rt, generic, got 'nope'",
        ),
        "document_noise": (
            SynthesisConfig(document_noise="near"),
            "config key 'document_noise': must be one of similar, random, got 'near'",
        ),
        "device": (
            SummarizerRunConfig(train=SummarizerTrainConfig(device="tpu")),
            "config key 'train.device': must be one of auto, cpu, cuda, got 'tpu'",
        ),
        "source": (
            SummarizerRunConfig(vocab=PairVocabConfig(source="lms")),
            "config key 'vocab.source': must be one of pairs, lm, got 'lms'",
        ),
        "top_k": (SupportConfig(top_k=-1), "config key 'top_k': -1 must be at least 0"),
        "pending": (
            ServiceLimits(max_sets=4, max_pending_sets=2),
            "config key 'max_pending_sets': 2 must be at least max_sets (4): a full "
            "batch request must fit",
        ),
    }[case]


@pytest.mark.parametrize(
    "case", ["preset", "document_noise", "device", "source", "top_k", "pending"]
)
def test_a_setting_made_in_python_is_checked_naming_its_key(case):
    from denoisesum.config import check
    from denoisesum.errors import ConfigError

    settings, message = bad_settings(case)
    with pytest.raises(ConfigError) as caught:
        check(settings)
    assert str(caught.value) == message


def test_a_float_setting_is_never_nan_or_infinite():
    from denoisesum.config import load_config
    from denoisesum.errors import ConfigError
    from denoisesum.training.denoiser_config import SummarizerRunConfig

    for value in ("nan", "inf", "-inf"):
        with pytest.raises(ConfigError, match=rf"'train.kl_weight': {value} must be at least 0"):
            load_config(SummarizerRunConfig, overrides=[f"train.kl_weight={value}"])


def test_ranges_say_their_ends():
    from denoisesum.config import Range, above, at_least, between

    assert str(at_least(1)) == "at least 1"
    assert str(above(0, "x")) == "more than 0 (x)"
    assert str(between(0, 1)) == "between 0 and 1"
    assert str(Range(0, 1, high_open=True)) == "in [0, 1)"
    assert str(Range(0, 1, low_open=True)) == "in (0, 1]"
    assert not Range(0, 1, low_open=True).contains(0) and Range(0, 1, low_open=True).contains(1)
    assert not at_least(0).contains(float("nan")) and not at_least(0).contains(float("inf"))


def test_a_model_whose_settings_are_out_of_bounds_names_the_field(places, tmp_path):
    # summarize.max_review_tokens=0 in a model's config.json: the setting is to blame, not the
    # input
    import shutil

    model = tmp_path / "model"
    shutil.copytree(places["model"], model)
    config = json.loads((model / "config.json").read_text())
    config["summarize"]["max_review_tokens"] = 0
    (model / "config.json").write_text(json.dumps(config))
    done = run_cli("summarize", places["sets"], "--model", model)
    message = "config.json, field 'summarize.max_review_tokens': 0 must be at least 1"
    assert refused(done, message), done.stderr
