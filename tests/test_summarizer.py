"""Summarizer API and `denoisesum summarize` on a tiny random DenoiseSum model directory."""

import copy
import csv
import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import denoisesum
from conftest import grouped_reviews, save_tiny_summarizer, summaries, token_summary
from denoisesum.cli import app
from denoisesum.errors import DenoiseSumError, InputError
from denoisesum.inference.beam import SearchConfig
from denoisesum.models import precision, store
from denoisesum.models.precision import bf16_supported
from denoisesum.summarizer import Summarizer, SummarizerConfig

runner = CliRunner()
SETTINGS = SummarizerConfig(
    max_review_tokens=12,
    max_reviews=4,
    search=SearchConfig(beam=3, min_words=4, max_words=10),
)


pytestmark = pytest.mark.usefixtures("one_thread")


def texts_by_entity(n_entities: int = 3) -> dict[str, list[str]]:
    return grouped_reviews(n_entities, 5, seed=1)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """A tiny random DenoiseSum saved the way the trainer saves one."""
    return save_tiny_summarizer(tmp_path_factory.mktemp("models") / "tiny", SETTINGS)


@pytest.fixture(scope="module")
def summarizer(model_dir) -> Summarizer:
    return Summarizer.from_pretrained(model_dir)


def edit_config(model_dir: Path, tmp_path: Path, change) -> Path:
    """A copy of the model directory with config.json changed by change(config)."""
    copy = tmp_path / "edited"
    copy.mkdir()
    for name in ("model.safetensors", "vocab.json"):
        (copy / name).write_bytes((model_dir / name).read_bytes())
    config = json.loads((model_dir / "config.json").read_text())
    change(config)
    (copy / "config.json").write_text(json.dumps(config))
    return copy


# ---- Python API -------------------------------------------------------------------------


def test_from_pretrained_reads_the_model_and_its_settings(summarizer):
    assert summarizer.config == SETTINGS
    assert not summarizer.model.training
    assert denoisesum.Summarizer is Summarizer  # the lazy top-level export


def test_summarize_is_a_deterministic_string(summarizer):
    reviews = texts_by_entity()["biz-000"]
    summary = summarizer.summarize(reviews)
    assert isinstance(summary, str) and summary
    assert summary == summarizer.summarize(reviews)
    tokens = token_summary(summarizer, reviews)
    assert 4 <= len(tokens) <= 10 and "<unk>" not in tokens
    assert summary[0].isupper() or not summary[0].isalpha()  # detokenized for people


@pytest.mark.skipif(
    not bf16_supported(torch.device("cpu")),
    reason="this CPU has no bfloat16 instructions (AVX512-BF16 or AMX)",
)
def test_bf16_runs(summarizer):
    fast = Summarizer(summarizer.model, summarizer.vocab, replace(summarizer.config, bf16=True))
    tokens = token_summary(fast, texts_by_entity()["biz-000"])
    assert 4 <= len(tokens) <= 10
    assert next(summarizer.model.parameters()).dtype == torch.float32  # weights untouched


def test_bf16_on_a_cpu_without_it_decodes_in_fp32(summarizer, monkeypatch):
    monkeypatch.setattr(precision, "bf16_supported", lambda device: False)
    fast = Summarizer(summarizer.model, summarizer.vocab, replace(summarizer.config, bf16=True))
    reviews = texts_by_entity()["biz-000"]
    with pytest.warns(precision.PrecisionWarning, match="bf16 decoding: this CPU has no"):
        tokens = token_summary(fast, reviews)
    assert tokens == token_summary(summarizer, reviews)  # fp32, as without bf16


def test_batch_equals_one_at_a_time(summarizer):
    sets = list(texts_by_entity(4).values())
    sets[1] = sets[1][:1]  # entities of different sizes share a padded batch
    one_by_one = [summarizer.summarize(s) for s in sets]
    assert summaries(summarizer, sets) == one_by_one
    assert summaries(summarizer, sets, batch_size=3) == one_by_one


def test_with_a_shortlist_a_set_summarized_beside_others_is_summarized_as_alone(summarizer):
    # each set decodes over its own shortlist (the 2 most frequent words and its reviews'), not
    # the union of the batch's, which would let it write and normalise over others' words
    short = Summarizer(summarizer.model, summarizer.vocab, replace(summarizer.config, shortlist=2))
    sets = list(texts_by_entity(6).values())
    one_by_one = [short.summarize(s) for s in sets]
    assert summaries(short, sets) == one_by_one
    assert summaries(short, sets[::-1]) == one_by_one[::-1]


def test_reviews_are_truncated(summarizer):
    reviews = texts_by_entity()["biz-000"]
    ids = summarizer.encode_reviews([*reviews, "extra review"])
    assert len(ids) == SETTINGS.max_reviews
    assert max(len(r) for r in ids) == SETTINGS.max_review_tokens  # the reviews have 15+ words
    long = [r + " and more" * 50 for r in reviews]
    assert summarizer.summarize(long) == summarizer.summarize(reviews)  # only the start is read


def test_first_person_blocking(summarizer):
    model = copy.deepcopy(summarizer.model)
    first_person = [summarizer.vocab.id(w) for w in ("i", "my", "me")]
    with torch.no_grad():  # make the first person by far the likeliest output
        for branch in (model.seg, model.doc):
            branch.decoder.out.bias[first_person] += 20.0
    reviews = ["i love my pizza , i think my staff was great"] * 3
    loose = token_summary(Summarizer(model, summarizer.vocab, summarizer.config), reviews)
    assert {"i", "my", "me"} & set(loose)
    blocked = summarizer.config.with_settings(first_person=False)
    strict = token_summary(Summarizer(model, summarizer.vocab, blocked), reviews)
    assert len(strict) >= 4 and not {"i", "me", "my", "mine", "myself"} & set(strict)


def test_bad_input_is_a_clear_error(summarizer):
    with pytest.raises(DenoiseSumError, match="no reviews to summarize"):
        summarizer.summarize([])
    with pytest.raises(DenoiseSumError, match="review 1 is empty"):
        summarizer.summarize(["good food", "   "])
    with pytest.raises(DenoiseSumError, match="list of review texts, got str"):
        summarizer.summarize("one review as a string")
    with pytest.raises(DenoiseSumError, match="review set 1: no reviews"):
        summaries(summarizer, [["good food"], []])


def test_missing_or_wrong_model_directory(tmp_path, model_dir):
    with pytest.raises(InputError, match="no such model directory"):
        Summarizer.from_pretrained(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"not a model directory: model\.safetensors is missing"):
        Summarizer.from_pretrained(tmp_path / "empty")
    bilm = edit_config(model_dir, tmp_path, lambda c: c.update(kind="bilm"))
    with pytest.raises(InputError, match="field 'kind': holds a 'bilm' model"):
        Summarizer.from_pretrained(bilm)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c["model"].update(hidden_size=3), "field 'model.hidden_size': unknown key"),
        (lambda c: c["model"].update(vocab_size=7), "field 'model.vocab_size': 7 does not match"),
        (lambda c: c["model"].update(embed_dim="big"), "field 'model.embed_dim'"),
        (lambda c: c["model"].update(embed_dim=10), "weights do not fit config.json's model"),
        (
            lambda c: c["summarize"]["search"].update(beam_size=2),
            "field 'summarize.search.beam_size'",
        ),
        (lambda c: c.pop("model"), "field 'model': missing"),
    ],
)
def test_bad_config_names_the_field(tmp_path, model_dir, change, message):
    with pytest.raises(InputError, match=message):
        Summarizer.from_pretrained(edit_config(model_dir, tmp_path, change))


def test_no_default_model(monkeypatch, tmp_path):
    monkeypatch.setattr(store, "DEFAULT_MODEL_DIR", tmp_path / "denoisesum-yelp")
    with pytest.raises(DenoiseSumError, match=r"no default model is installed.*--model DIR"):
        Summarizer.from_pretrained()


@pytest.fixture
def installed(monkeypatch, tmp_path, model_dir) -> Path:
    """The tiny model installed with the package as 'tiny-yelp' (beside a folder that is not a
    model), in a stand-in for denoisesum/pretrained."""
    root = tmp_path / "pretrained"
    shutil.copytree(model_dir, root / "tiny-yelp")
    (root / "notes").mkdir()
    monkeypatch.setattr(store, "installed_models_dir", lambda: root)
    return root


def test_an_installed_model_loads_by_name(installed, tmp_path, monkeypatch):
    assert store.installed_models() == ["tiny-yelp"]
    loaded = Summarizer.from_pretrained("tiny-yelp")
    assert loaded.path == installed / "tiny-yelp" and loaded.config == SETTINGS
    with pytest.raises(DenoiseSumError) as error:
        Summarizer.from_pretrained("tiny")
    assert str(error.value) == (
        "no model directory or installed model named 'tiny' (installed models: tiny-yelp)"
    )
    # an existing directory wins over a name; a path (a separator in it) is never a name
    monkeypatch.chdir(tmp_path)
    shutil.copytree(installed / "tiny-yelp", tmp_path / "tiny-yelp")
    assert Summarizer.from_pretrained("tiny-yelp").path == Path("tiny-yelp")
    with pytest.raises(InputError, match="no such model directory"):
        Summarizer.from_pretrained("./tiny")


def test_the_command_takes_an_installed_model_by_name(installed, tmp_path, summarizer):
    sets = texts_by_entity(1)
    source = tmp_path / "sets.jsonl"
    source.write_text(
        "".join(json.dumps({"entity_id": e, "reviews": r}) + "\n" for e, r in sets.items())
    )
    result = runner.invoke(app, ["summarize", str(source), "--model", "tiny-yelp"])
    assert result.exit_code == 0, result.output
    assert [p["summary"] for p in read_jsonl(result.stdout)] == summaries(
        summarizer, list(sets.values())
    )
    result = runner.invoke(app, ["summarize", str(source), "--model", "tiny"])
    assert isinstance(result.exception, DenoiseSumError)
    assert "installed models: tiny-yelp" in str(result.exception)


# ---- command line -----------------------------------------------------------------------


def read_jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_cli_on_a_review_set_file(tmp_path, model_dir, summarizer):
    sets = texts_by_entity()
    source = tmp_path / "sets.jsonl"
    source.write_text(
        "".join(json.dumps({"entity_id": e, "reviews": r}) + "\n" for e, r in sets.items())
    )
    out = tmp_path / "out" / "predictions.jsonl"
    result = runner.invoke(
        app,
        ["summarize", str(source), "--model", str(model_dir), "-o", str(out), "--batch-size", "2"],
    )
    assert result.exit_code == 0, result.output
    predictions = read_jsonl(out.read_text())
    assert [p["entity_id"] for p in predictions] == list(sets)
    assert [p["summary"] for p in predictions] == summaries(summarizer, list(sets.values()))
    # --raw: the tokenized form, on standard output; decoding options reach the search
    result = runner.invoke(
        app,
        [
            "summarize",
            str(source),
            "--model",
            str(model_dir),
            "--raw",
            "--beam",
            "1",
            "--min-words",
            "6",
            "--max-words",
            "6",
        ],
    )
    assert result.exit_code == 0, result.output
    raw = read_jsonl(result.stdout)
    # 6 words decoded; a length cap ends the summary at its last sentence end within them
    for p in raw:
        words = p["summary"].split()
        assert 0 < len(words) <= 6 and p["summary"] == p["summary"].lower()
        assert len(words) == 6 or words[-1] in ".!?"


def test_cli_on_a_csv_corpus_and_stdin(tmp_path, model_dir, summarizer):
    sets = texts_by_entity(2)
    path = tmp_path / "reviews.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["business", "body"])
        for i in range(5):  # interleaved entities are grouped
            for entity, reviews in sets.items():
                writer.writerow([entity, reviews[i]])
    result = runner.invoke(
        app,
        [
            "summarize",
            str(path),
            "--model",
            str(model_dir),
            "--entity-field",
            "business",
            "--text-field",
            "body",
        ],
    )
    assert result.exit_code == 0, result.output
    expected = [
        {"entity_id": e, "summary": s}
        for e, s in zip(sets, summaries(summarizer, list(sets.values())), strict=True)
    ]
    assert read_jsonl(result.stdout) == expected
    stdin = "".join(json.dumps({"entity_id": e, "reviews": r}) + "\n" for e, r in sets.items())
    result = runner.invoke(app, ["summarize", "-", "--model", str(model_dir)], input=stdin)
    assert result.exit_code == 0, result.output
    assert read_jsonl(result.stdout) == expected


def run_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "denoisesum.cli", *map(str, args)], capture_output=True, text=True
    )


def test_cli_bf16_where_the_cpu_has_none_is_one_warning_line(tmp_path, model_dir):
    source = tmp_path / "sets.jsonl"
    source.write_text('{"entity_id": "a", "reviews": ["the pizza was great"]}\n')
    result = run_cli("summarize", source, "--model", model_dir, "--bf16")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["summary"]
    said = [line for line in result.stderr.splitlines() if "bfloat16" in line]
    if bf16_supported(torch.device("cpu")):
        assert said == []
    else:
        assert said == [
            "warning: bf16 decoding: this CPU has no bfloat16 instructions "
            "(AVX512-BF16 or AMX); computing in fp32"
        ]


def test_cli_errors_are_one_clear_line(tmp_path, model_dir):
    source = tmp_path / "sets.jsonl"
    source.write_text(
        '{"entity_id": "a", "reviews": ["good"]}\n{"entity_id": "b", "reviews": []}\n'
    )
    result = run_cli("summarize", source, "--model", model_dir)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"error: {source}, line 2, field 'reviews'" in result.stderr
    result = run_cli("summarize", source, "--model", tmp_path / "nowhere")
    assert result.returncode == 2
    assert f"error: {tmp_path / 'nowhere'}: no such model directory" in result.stderr
