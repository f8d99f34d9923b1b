"""The shipped Yelp model (denoisesum-yelp, package data in src/denoisesum/pretrained/): it loads
with no arguments or by name, fits the size budget, and summarizes the bundled examples from Python
and from the command line. tests/test_packaging.py checks it installs with a wheel."""

import json
from pathlib import Path

from safetensors import safe_open
from typer.testing import CliRunner

import denoisesum
from conftest import token_summary
from denoisesum.cli import app
from denoisesum.data.reviewsets import read_review_sets
from denoisesum.summarizer import (
    DEFAULT_MODEL_DIR,
    Summarizer,
    installed_models,
    resolve_model,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "review_sets.jsonl"


def test_the_default_model_is_shipped_within_budget():
    files = {p.name: p.stat().st_size for p in DEFAULT_MODEL_DIR.iterdir() if p.is_file()}
    assert {"model.safetensors", "config.json", "vocab.json"} <= set(files)
    assert sum(files.values()) <= 60 * 2**20
    # its noising LM (fit --from noises with it): fp16, 22 MB
    noise_lm = {p.name: p.stat().st_size for p in (DEFAULT_MODEL_DIR / "noise-lm").iterdir()}
    assert set(noise_lm) == {"model.safetensors", "config.json", "vocab.json"}
    assert sum(noise_lm.values()) <= 24 * 2**20
    with safe_open(str(DEFAULT_MODEL_DIR / "noise-lm" / "model.safetensors"), "pt") as weights:
        assert weights.get_tensor("embed.weight").dtype.itemsize == 2
    with safe_open(str(DEFAULT_MODEL_DIR / "model.safetensors"), "pt") as weights:
        assert weights.get_tensor("embed.weight").dtype.itemsize == 2  # stored in fp16


def test_the_default_model_is_package_data_found_by_name():
    package = Path(denoisesum.__file__).parent
    assert package / "pretrained" / "denoisesum-yelp" == DEFAULT_MODEL_DIR
    assert installed_models() == ["denoisesum-yelp"]
    assert resolve_model("denoisesum-yelp") == resolve_model(None) == DEFAULT_MODEL_DIR
    package_data = '"denoisesum" = ["pretrained/*/*", "pretrained/*/noise-lm/*"]'
    assert package_data in (ROOT / "pyproject.toml").read_text()
    assert not (ROOT / "models" / "denoisesum-yelp").exists()  # one copy in the repository


def test_from_pretrained_without_arguments_summarizes_a_review_set():
    summarizer = Summarizer.from_pretrained()
    review_set = next(iter(read_review_sets(EXAMPLES)))
    summary = summarizer.summarize(review_set.reviews)
    words = summary.split()
    # its length follows the input (decode.length_ratio) and it ends at a sentence boundary
    tokens = token_summary(summarizer, review_set.reviews)
    assert 5 <= len(tokens) <= summarizer.config.search.max_words
    assert tokens[-1] in {".", "!", "?"}
    assert "<unk>" not in summary and summary[0].isupper()
    # it read the reviews: a ramen shop's summary talks about food
    vocabulary = {w.strip(".,!").lower() for w in words}
    assert vocabulary & {"food", "ramen", "noodles", "broth", "place", "service", "staff"}


def test_summarize_command_uses_the_default_model(tmp_path):
    small = tmp_path / "sets.jsonl"
    small.write_text(EXAMPLES.read_text().splitlines()[1] + "\n")
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(app, ["summarize", str(small), "-o", str(out)])
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["entity_id"] == json.loads(small.read_text())["entity_id"]
    # the model's default method, opinions: each sentence said by the reviews it names
    assert record["summary"] and record["attribution"]
    assert all(a["text"] in record["summary"] for a in record["attribution"])


def test_the_shipped_vocabulary_separates_english_from_other_languages():
    """The documented threshold (MIN_KNOWN_SHARE) on the real vocabulary: the bundled English
    examples are readable; Chinese, French, German and symbol-only review sets are not."""
    summarizer = Summarizer.from_pretrained()
    for review_set in read_review_sets(EXAMPLES):
        assert summarizer.input_warnings(review_set.reviews) == [], review_set.entity_id
    others = {
        "zh": ["这家餐厅的拉面非常好吃，服务也很周到。"],
        "fr": [
            "Le restaurant était excellent, le service rapide et les plats délicieux.",
            "Très bon rapport qualité-prix, je recommande vivement ce petit bistrot.",
        ],
        "de": ["Das Essen war sehr lecker und die Bedienung freundlich."],
        "emoji": ["😀😀🍜🍜👍"],
        "punctuation": ["!!! ???"],
        "zero-width": ["\u200b\u200b"],
    }
    for name, reviews in others.items():
        assert summarizer.input_warnings(reviews), name
