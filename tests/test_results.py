"""One record per summary (issue 32 item 6) and the formats users have (issue 35 item 4): the
Summarizer's SummaryResult is what the command writes; options come from SearchConfig (per
call by name, `--set decode.KEY=VALUE` in the command); any iterable of reviews; pandas
DataFrames in and out."""

from __future__ import annotations

import json
import sys
import warnings
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from conftest import refused, run_cli, save_tiny_summarizer, summaries, synthetic_sets
from denoisesum.cli import app
from denoisesum.errors import DenoiseSumError
from denoisesum.inference.beam import SearchConfig
from denoisesum.inference.frames import summarize_frame
from denoisesum.inference.policy import Decoding, decoding_with
from denoisesum.summarizer import (
    EmptySliceWarning,
    Summarizer,
    SummarizerConfig,
    SummaryResult,
)

pytestmark = pytest.mark.usefixtures("one_thread")

SETTINGS = SummarizerConfig(read_reviews=3, search=SearchConfig(beam=2, max_words=12))


@pytest.fixture(scope="module")
def summarizer(tmp_path_factory) -> Summarizer:
    path = save_tiny_summarizer(tmp_path_factory.mktemp("results") / "tiny", SETTINGS)
    return Summarizer.from_pretrained(path, device="cpu")


@pytest.fixture(scope="module")
def sets_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("sets") / "sets.jsonl"
    path.write_text(
        "".join(
            json.dumps({"entity_id": f"e{i}", "reviews": r}) + "\n"
            for i, r in enumerate(synthetic_sets(3))
        )
    )
    return path


def summarize_cli(summarizer, sets_file, *args) -> list[dict]:
    done = CliRunner().invoke(
        app, ["summarize", str(sets_file), "--model", str(summarizer.path), *map(str, args)]
    )
    assert done.exit_code == 0, done.output
    return [json.loads(line) for line in done.stdout.splitlines()]


# ---- the record ------------------------------------------------------------------------------


def test_the_command_writes_the_summarizers_records(summarizer, sets_file):
    sets = synthetic_sets(3)
    results = summarizer.summarize_results(sets, explain=True)
    assert all(isinstance(r, SummaryResult) for r in results)
    assert [r.summary for r in results] == summaries(summarizer, sets)
    assert results[0].reviews_read == 3 and results[0].reviews_total == 4  # it chose 3 of 4
    written = summarize_cli(summarizer, sets_file, "--explain")
    assert written == [{"entity_id": f"e{i}", **r.to_dict()} for i, r in enumerate(results)]
    assert set(written[0]) >= {"summary", "reviews_read", "reviews_total", "support"}
    raw = summarizer.summarize_results([sets[0]], raw=True)[0]
    assert raw.summary == " ".join(raw.tokens) and raw.explanation is None


def test_a_record_says_why_it_has_no_summary(summarizer):
    reviews = synthetic_sets(1)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptySliceWarning)  # said in the record instead
        result = summarizer.summarize_results([reviews], [[5.0] * 4], slice="complaints")[0]
    assert result.summary == "" and result.to_dict() == {
        "summary": "",
        "reviews_read": 3,
        "reviews_total": 4,
        "warnings": [
            "no review belongs to the complaints (reviews of at most 3 stars): no summary"
        ],
    }
    unreadable = summarizer.summarize_results([["!!! ???", "... ---"]])[0]
    assert unreadable.warnings and "no words" in unreadable.warnings[0]


# ---- options from the settings dataclass -----------------------------------------------------


def test_every_decoding_setting_is_a_per_call_option(summarizer):
    reviews = synthetic_sets(1)[0]
    before = summarizer.config
    assert summarizer.summarize(reviews, max_words=5) == summarizer.summarize(reviews, max_words=5)
    assert summarizer.summarize(reviews, beam=1) == summarizer.summarize(reviews, beam=1)
    # first_person says what is allowed
    decoding = before.decoding
    assert decoding_with(decoding, {"first_person": True}).policy.first_person is True
    assert decoding_with(decoding, {"first_person": False}).policy.first_person is False
    base = Decoding(replace(decoding.search, min_words=10), decoding.policy)
    capped = decoding_with(base, {"max_words": 6}).search
    assert (capped.max_words, capped.min_words, capped.end_at_sentence) == (6, 6, True)
    with pytest.raises(
        DenoiseSumError,
        match=r"unknown option 'max_lenght'; valid options: "
        r"max_words, .*, against_reviews",
    ):
        summarizer.summarize(reviews, max_lenght=5)
    with pytest.raises(
        DenoiseSumError,
        match=r"option opinion_weight: inf must be between 0 and "
        r"100 \(0: off\)",
    ):
        summarizer.summarize(reviews, opinion_weight=float("inf"))
    with pytest.raises(
        DenoiseSumError, match="option min_words: 12 must be between 0 and max_words"
    ):
        summarizer.summarize(reviews, min_words=12, max_words=10)
    assert summarizer.config == before  # options last one call


def test_the_command_takes_any_setting_with_set(summarizer, sets_file):
    by_flag = summarize_cli(summarizer, sets_file, "--beam", "1", "--max-words", "6")
    by_set = summarize_cli(
        summarizer,
        sets_file,
        "--set",
        "search.beam=1",
        "--set",
        "search.max_words=6",
        "--set",
        "search.end_at_sentence=true",
        "--set",
        "search.min_words=6",
    )
    assert by_flag == by_set
    old = summarize_cli(summarizer, sets_file, "--length-penalty", "0.5", "--max-word-repeats=1")
    new = summarize_cli(
        summarizer,
        sets_file,
        "--set",
        "search.length_penalty=0.5",
        "--set",
        "search.max_word_repeats=1",
    )
    assert old == new


def test_a_bad_setting_is_one_line_naming_it(summarizer, sets_file):
    common = ("summarize", sets_file, "--model", summarizer.path)
    assert refused(
        run_cli(*common, "--set", "search.beem=2"),
        "unknown config key 'search.beem' (known: beam, min_words",
    )
    assert refused(
        run_cli(*common, "--set", "read_reviews=0"),
        "config key 'read_reviews': 0 must be at least 1",
    )
    assert refused(run_cli(*common, "--beam", "2000"), "--beam 2000 must be between 1 and 1000")
    assert refused(
        run_cli(*common, "--max-word-repeats"), "option '--max-word-repeats' requires an argument"
    )


def test_help_shows_set_and_the_common_flags_only():
    done = CliRunner().invoke(app, ["summarize", "--help"], env={"COLUMNS": "200"})
    assert "--set" in done.stdout and "--max-words" in done.stdout
    assert "--beam" in done.stdout and "--device" in done.stdout
    assert "--input-bonus" not in done.stdout and "--rerank" not in done.stdout


# ---- any iterable ----------------------------------------------------------------------------


def test_any_iterable_of_reviews_or_review_sets(summarizer):
    sets = synthetic_sets(2)
    expected = summaries(summarizer, sets)
    assert summarizer.summarize(iter(sets[0])) == expected[0]
    assert summarizer.summarize(tuple(sets[0])) == expected[0]
    assert summaries(summarizer, (iter(s) for s in sets)) == expected
    assert [r.summary for r in summarizer.summarize_results(map(tuple, sets))] == expected
    assert summarizer.explain(iter(sets[0])).summary == expected[0]
    with pytest.raises(DenoiseSumError, match="must be a list of review texts, got str"):
        summarizer.summarize("one review, not a list")
    with pytest.raises(
        DenoiseSumError, match="review_sets must be a list of lists of review texts, got int"
    ):
        summaries(summarizer, 3)


# ---- pandas ----------------------------------------------------------------------------------


def reviews_frame():
    pd = pytest.importorskip("pandas")
    rows = [
        {"business": f"b{i}", "body": text, "stars": 4.0 if j else None}
        for i, reviews in enumerate(synthetic_sets(3))
        for j, text in enumerate(reviews)
    ]
    return pd.DataFrame(rows[4:] + rows[:4])  # b1, b2, then b0: order of first review


def test_a_frame_in_a_frame_out(summarizer):
    frame = reviews_frame()
    out = summarize_frame(
        summarizer, frame, entity="business", text="body", rating="stars", explain=True
    )
    assert list(out.columns) == [
        "business",
        "summary",
        "reviews_read",
        "reviews_total",
        "warnings",
        "support",
    ]
    assert list(out["business"]) == ["b1", "b2", "b0"]
    sets = [list(frame[frame.business == b].body) for b in ("b1", "b2", "b0")]
    stars = [
        [None if s != s else s for s in frame[frame.business == b].stars]
        for b in ("b1", "b2", "b0")
    ]
    expected = summarizer.summarize_results(sets, stars, explain=True)
    assert list(out["summary"]) == [r.summary for r in expected]
    assert list(out["reviews_read"]) == [3, 3, 3] and str(out["reviews_read"].dtype) == "Int64"
    assert out["support"][0] == expected[0].support and list(out["warnings"][0]) == []


def test_a_bad_frame_is_one_line(summarizer, monkeypatch):
    frame = reviews_frame()
    with pytest.raises(
        DenoiseSumError,
        match=r"text='text': the frame has no such column "
        r"\(columns: business, body, stars\)",
    ):
        summarize_frame(summarizer, frame, entity="business")
    frame.loc[5, "body"] = None
    with pytest.raises(DenoiseSumError, match="row 5, column 'body': a review must be text"):
        summarize_frame(summarizer, frame, entity="business", text="body")
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if not installed
    with pytest.raises(DenoiseSumError, match=r"pip install 'denoisesum\[pandas\]'"):
        summarize_frame(summarizer, frame, entity="business", text="body")
