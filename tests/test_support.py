"""Support scores (denoisesum.inference.support): hand-computed values, sentence spans, the
Summarizer.explain API and `denoisesum summarize --explain`."""

import json
import math

import pytest
from typer.testing import CliRunner

from conftest import save_tiny_summarizer
from denoisesum.cli import app
from denoisesum.errors import DenoiseSumError
from denoisesum.inference.beam import SearchConfig
from denoisesum.inference.support import (
    SupportConfig,
    explain,
    format_explanation,
    keyed_content_words,
    split_sentences,
)
from denoisesum.summarizer import Summarizer, SummarizerConfig
from denoisesum.text import fold

REVIEWS = [
    "The pork ramen here is rich and salty. Service was quick.",
    "Great noodles, tiny room. We waited 30 minutes.",
    "Broth was flavorful and the staff are friendly.",
]


def spans(text: str) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text)]


def test_sentences_keep_their_spans():
    assert spans("The ramen was great. Service was quick!  We will be back") == [
        "The ramen was great.",
        "Service was quick!",
        "We will be back",
    ]
    assert spans('It was $5.99... "Really?" (Yes.) Wow') == [
        "It was $5.99...",
        '"Really?"',
        "(Yes.)",
        "Wow",
    ]
    assert spans("line one\nline two.\n\nthree") == ["line one", "line two.", "three"]
    assert spans("") == [] and spans("  \n ") == []


def test_content_words_and_folding():
    assert [w for _, w in keyed_content_words("the staff was n't friendly at all !".split())] == [
        "staff",
        "friendly",
    ]
    assert [
        fold(w) for w in ("noodles", "berries", "dishes", "glass", "delicious", "tacos", "bus")
    ] == ["noodle", "berry", "dish", "glass", "delicious", "taco", "bus"]


def test_scores_are_idf_weighted_recall():
    explanation = explain(
        REVIEWS,
        "The ramen was rich and the noodles were great. "
        "The staff is friendly. The parking is terrible. It is.",
    )
    first, staff, parking, empty = explanation.sentences
    # every word of the first sentence is in exactly one review: equal weights ln(4/2) + 1
    assert first.score == 0.5 and first.supported
    assert [(r.index, r.score, r.matched) for r in first.reviews] == [
        (0, 0.5, ["ramen", "rich"]),
        (1, 0.5, ["noodles", "great"]),
    ]
    assert staff.score == 1.0 and staff.reviews[0].index == 2 and staff.missing == []
    assert parking.score == 0.0 and not parking.supported and parking.reviews == []
    assert parking.missing == ["parking", "terrible"]
    assert empty.score == 1.0 and empty.supported and empty.reviews == []  # claims nothing
    assert explanation.supported_share == 0.75 and explanation.threshold == 0.5


def test_rare_words_weigh_more():
    reviews = ["great pizza", "great pasta", "great salad", "pizza crust"]
    [sentence] = explain(reviews, "Great crust.").sentences
    idf_great, idf_crust = math.log(5 / 4) + 1, math.log(5 / 2) + 1
    assert sentence.reviews[0].index == 3  # the review with the rare word ranks first
    assert sentence.reviews[0].score == round(idf_crust / (idf_great + idf_crust), 4)
    assert [r.index for r in sentence.reviews] == [3, 0, 1, 2]


def test_thresholds_and_listing():
    summary = "The ramen was rich and the noodles were great."
    strict = explain(REVIEWS, summary, config=SupportConfig(threshold=0.6))
    assert not strict.sentences[0].supported and strict.supported_share == 0.0
    few = explain(REVIEWS, summary, config=SupportConfig(top_k=1))
    assert len(few.sentences[0].reviews) == 1
    none = explain(REVIEWS, summary, config=SupportConfig(min_score=0.9))
    assert none.sentences[0].reviews == [] and none.sentences[0].score == 0.5
    assert explain(REVIEWS, "").sentences == [] and explain(REVIEWS, "").supported_share == 0.0
    with pytest.raises(DenoiseSumError, match="'threshold': 2 must be between 0 and 1"):
        explain(REVIEWS, summary, config=SupportConfig(threshold=2))
    with pytest.raises(DenoiseSumError, match="list of review texts"):
        explain("one review", summary)
    with pytest.raises(DenoiseSumError, match="review 1 is a int"):
        explain(["good", 3], summary)


def test_text_format():
    text = format_explanation(explain(REVIEWS, "The staff is friendly. Parking is terrible."))
    assert "[supported 1.00] The staff is friendly." in text
    assert "reviews: #2 (1.00: staff friendly)" in text
    assert "[UNSUPPORTED 0.00] Parking is terrible." in text
    assert "in no review: parking terrible" in text
    assert text.endswith("1 of 2 sentences supported (50%, threshold 0.50)")


# ---- Summarizer.explain and the command line ----------------------------------------------


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    settings = SummarizerConfig(
        max_review_tokens=12,
        max_reviews=4,
        search=SearchConfig(beam=3, min_words=4, max_words=10),
    )
    return save_tiny_summarizer(tmp_path_factory.mktemp("models") / "tiny", settings)


SETS = {
    "a": ["the pizza was great and the staff was friendly .", "great pizza ."],
    "b": ["the soup was cold .", "the waiter was rude and the soup was bland ."],
}


@pytest.mark.usefixtures("one_thread")
def test_summarizer_explain(model_dir):
    summarizer = Summarizer.from_pretrained(model_dir)
    assert summarizer.path == model_dir
    reviews = SETS["a"]
    summary = summarizer.summarize(reviews)
    explanation = summarizer.explain(reviews).explanation  # summarizes first
    assert explanation.summary == summary
    assert explanation == summarizer.denoisesum.evidence(reviews, summary)
    assert summarizer.denoisesum.evidence(reviews, "Parking is terrible.").supported_share == 0.0


@pytest.mark.usefixtures("one_thread")
def test_cli_explain(tmp_path, model_dir):
    summarizer = Summarizer.from_pretrained(model_dir)
    source = tmp_path / "sets.jsonl"
    source.write_text(
        "".join(json.dumps({"entity_id": e, "reviews": r}) + "\n" for e, r in SETS.items())
    )
    runner = CliRunner()
    result = runner.invoke(app, ["summarize", str(source), "--model", str(model_dir), "--explain"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    for record, (entity, reviews) in zip(records, SETS.items(), strict=True):
        support = summarizer.denoisesum.evidence(reviews, record["summary"]).to_dict()
        del support["summary"]
        assert record == {
            "entity_id": entity,
            "summary": summarizer.summarize(reviews),
            "support": support,
        }
    result = runner.invoke(app, ["summarize", str(source), "--model", str(model_dir)])
    assert all("support" not in json.loads(line) for line in result.stdout.splitlines())
    result = runner.invoke(
        app, ["summarize", str(source), "--model", str(model_dir), "--explain", "--text"]
    )
    assert result.exit_code == 0, result.output
    for entity, reviews in SETS.items():
        summary = summarizer.summarize(reviews)
        block = (
            f"{entity}\n  {summary}\n"
            + format_explanation(summarizer.denoisesum.evidence(reviews, summary), "    ")
            + "\n"
        )
        assert block in result.stdout
    result = runner.invoke(app, ["summarize", str(source), "--model", str(model_dir), "--text"])
    assert result.stdout == "".join(f"{e}\n  {summarizer.summarize(r)}\n" for e, r in SETS.items())
