"""The summarizer's one interface (issue 60): per-call options are a value passed down, never a
change to the loaded model (two threads with other options each get what they get alone), the
method seam (a registry by name), and save_pretrained paired with from_pretrained."""

import json
import threading
from pathlib import Path

import pytest

from conftest import save_tiny_summarizer, synthetic_sets
from denoisesum.errors import DenoiseSumError
from denoisesum.inference import methods
from denoisesum.inference.beam import SearchConfig
from denoisesum.inference.methods import SummaryResult
from denoisesum.inference.policy import migrate_summarize
from denoisesum.summarizer import DEFAULT_MODEL_DIR, Summarizer, SummarizerConfig

SETTINGS = SummarizerConfig(
    max_review_tokens=12, max_reviews=4, search=SearchConfig(beam=3, min_words=4, max_words=30)
)
OPTIONS = [{"max_words": 20, "beam": 1}, {"max_words": 60, "beam": 3}]

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def summarizer(tmp_path_factory) -> Summarizer:
    return Summarizer.from_pretrained(
        save_tiny_summarizer(tmp_path_factory.mktemp("models") / "tiny", SETTINGS)
    )


def test_threads_with_other_options_each_get_what_they_get_alone(summarizer):
    sets = synthetic_sets(4)
    alone = [summarizer.summarize_results(sets, **o) for o in OPTIONS]
    assert [r.summary for r in alone[0]] != [r.summary for r in alone[1]]  # options matter
    before = summarizer.config
    got: dict[int, list] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(OPTIONS) * 2)

    def run(key: int, options: dict) -> None:
        try:
            start.wait()
            got[key] = [summarizer.summarize_results(sets, **options) for _ in range(3)]
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=run, args=(i, OPTIONS[i % len(OPTIONS)]))
        for i in range(len(OPTIONS) * 2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    for key, runs in got.items():
        assert all(run == alone[key % len(OPTIONS)] for run in runs), key
    assert summarizer.config is before and summarizer.config == before


def test_three_ways_to_summarize_agree(summarizer):
    reviews = synthetic_sets(1)[0]
    text = summarizer.summarize(reviews, max_words=20)
    (result,) = summarizer.summarize_results([reviews], max_words=20)
    explained = summarizer.explain(reviews, max_words=20)
    assert isinstance(result, SummaryResult) and result.summary == text == explained.summary
    assert result.explanation is None and explained.explanation is not None
    assert explained.support is not None and "sentences" in explained.support


def test_methods_are_chosen_by_name(summarizer, monkeypatch):
    reviews = synthetic_sets(1)[0]
    assert summarizer.summarize(reviews, method="denoisesum") == summarizer.summarize(reviews)
    with pytest.raises(DenoiseSumError, match=r"method='nope': .*\(methods: denoisesum"):
        summarizer.summarize(reviews, method="nope")

    class Echo:
        name = "echo"

        def summarize_sets(self, sets, options):
            words = options.settings.get("max_words") or 3
            return [SummaryResult(" ".join(s.reviews)[:words], []) for s in sets]

    monkeypatch.setitem(methods.METHODS, "echo", lambda s: Echo())
    assert summarizer.summarize(["abcdef"], method="echo", max_words=4) == "abcd"
    results = summarizer.summarize_results([["xyz"], ["uvw"]], method="echo")
    assert [r.summary for r in results] == ["xyz", "uvw"]


def test_an_unknown_option_lists_the_valid_ones(summarizer):
    reviews = synthetic_sets(1)[0]
    with pytest.raises(DenoiseSumError, match="unknown option 'beam_size'; valid options: max_"):
        summarizer.summarize(reviews, beam_size=2)
    with pytest.raises(DenoiseSumError, match=r"option max_words: 0 must be between 1 and 1000"):
        summarizer.summarize(reviews, max_words=0)


def test_save_pretrained_loads_back_the_same_summarizer(summarizer, tmp_path):
    out = summarizer.save_pretrained(tmp_path / "saved")
    config = json.loads((out / "config.json").read_text())
    assert config["method"] == "denoisesum" and "decode" not in config["summarize"]
    assert set(config["summarize"]["search"]) >= {"beam", "min_words", "max_words"}
    loaded = Summarizer.from_pretrained(out, device="cpu")
    assert loaded.config == summarizer.config
    sets = synthetic_sets(3)
    assert loaded.summarize_results(sets) == summarizer.summarize_results(sets)


@pytest.mark.skipif(not DEFAULT_MODEL_DIR.is_dir(), reason="no installed model")
def test_the_shipped_config_has_no_run_paths_and_saves_back(tmp_path):
    text = (DEFAULT_MODEL_DIR / "config.json").read_text()
    assert "runs/" not in text and "../" not in text and '"decode"' not in text
    shipped = Summarizer.from_pretrained(device="cpu")
    out = shipped.save_pretrained(tmp_path / "copy")
    assert json.loads((out / "config.json").read_text()) == json.loads(text)
    weights = (DEFAULT_MODEL_DIR / "model.safetensors").stat().st_size
    assert (out / "model.safetensors").stat().st_size <= weights * 1.01  # fp16 kept
    assert Summarizer.from_pretrained(out, device="cpu").config == shipped.config


def test_a_config_saved_before_the_split_is_read_as_today():
    old = {
        "shortlist": 5,
        "decode": {
            "beam_size": 2,
            "min_length": 3,
            "max_length": 9,
            "block_first_person": True,
            "first_person": ["i"],
            "mixed_band": 0.5,
            "rerank": False,
            "input_bonus": 0.0,
            "rerank_ngrams": 2,
        },
    }
    assert migrate_summarize(old) == {
        "shortlist": 5,
        "search": {"beam": 2, "min_words": 3, "max_words": 9},
        "policy": {"first_person": False, "first_person_words": ["i"], "mixed_band": 0.5},
    }
    with pytest.raises(DenoiseSumError, match=r"summarize\.decode\.rerank=True: .*removed"):
        migrate_summarize({"decode": {"rerank": True}})


def test_the_service_shares_one_summarizer():
    source = (Path(__file__).parents[1] / "src/denoisesum/serving/worker.py").read_text()
    assert "copy.copy" not in source and "_view" not in source
