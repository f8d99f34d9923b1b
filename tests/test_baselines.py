"""Baselines on tiny hand-made inputs, their registry, the `baseline` and `leaderboard` commands,
and the leaderboard on a slice of the MeanSum Yelp test set (shared data)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import SHARED_DATA, needs_data, write_jsonl
from denoisesum.baselines import (
    BASELINES,
    Clustroid,
    FirstReview,
    LexRank,
    Opinosis,
    Oracle,
    RandomReview,
    Summarizer,
    Word2VecCentroid,
    create,
    sample_texts,
    summarize_sets,
)
from denoisesum.baselines.base import fill_budget, split_sentences
from denoisesum.baselines.lexrank import lexrank_scores
from denoisesum.baselines.opinosis import WordGraph, gapped_overlap
from denoisesum.cli import app
from denoisesum.data.corpus import Review
from denoisesum.data.reviewsets import ReviewSet
from denoisesum.errors import DenoiseSumError, InputError

runner = CliRunner()

REVIEWS = [
    "The pizza was great and the staff was friendly.",
    "Great pizza, friendly staff, fair prices.",
    "We waited an hour for a table and the music was too loud.",
]


# ---------------------------------------------------------------- interface and registry


def test_registry_holds_every_baseline_behind_one_interface():
    assert list(BASELINES) == [
        "first",
        "random",
        "clustroid",
        "oracle",
        "lexrank",
        "word2vec",
        "opinosis",
    ]
    for name, cls in BASELINES.items():
        assert issubclass(cls, Summarizer) and cls.name == name
    assert [n for n, c in BASELINES.items() if c.needs_reference] == ["oracle"]
    assert [n for n, c in BASELINES.items() if c.needs_fit] == ["word2vec"]


def test_create_passes_only_the_options_a_baseline_takes():
    assert create("lexrank", words=25, seed=3).words == 25
    assert create("random", words=25, seed=3).seed == 3
    assert isinstance(create("first", words=25, seed=3), FirstReview)
    with pytest.raises(
        DenoiseSumError,
        match="unknown baseline 'textrank'; choose from first, random, clustroid, oracle, lexrank",
    ):
        create("textrank")


def test_sentence_splitting_and_word_budget():
    assert split_sentences("Great food!! The staff was nice... Will return :)") == [
        ["Great", "food", "!"],
        ["The", "staff", "was", "nice", "..."],
        ["Will", "return", ":)"],
    ]
    assert split_sentences("!!! ...") == []
    # rank order 2, 0, 1 with lengths 5, 50, 30: 2 and 50-word 0 would pass 40, so 0 is skipped
    assert fill_budget([2, 0, 1], [50, 30, 5], 40) == [2, 1]
    assert fill_budget([0, 1], [70, 5], 40) == [0]  # the best item is taken even when too long


# ---------------------------------------------------------------- review-level baselines


def test_first_and_random():
    reviews = [f"review number {i}\nwith a line break" for i in range(20)]
    assert FirstReview().summarize(reviews) == "review number 0 with a line break"
    picks = {RandomReview(seed=s).summarize(reviews) for s in range(10)}
    assert len(picks) > 3  # the seed matters
    again = RandomReview(seed=4)
    assert again.summarize(reviews) == RandomReview(seed=4).summarize(reviews)
    # the draw depends on the entity's reviews only, not on what was summarized before
    again.summarize(["something else", "entirely"])
    assert again.summarize(reviews) == RandomReview(seed=4).summarize(reviews)


def test_clustroid_picks_the_most_typical_review():
    reviews = [
        "the pizza was cold and the service slow",
        "great pizza and friendly service , the pizza was great",
        "the pizza was great and the service friendly",
        "parking is impossible downtown",
    ]
    assert Clustroid().summarize(reviews) == reviews[2]


def test_oracle_picks_the_review_equal_to_the_gold():
    reviews = ["the pasta was bland", "lovely staff and a great patio", "too loud to talk"]
    assert Oracle().summarize(reviews, references=["Lovely staff and a great patio!"]) == reviews[1]
    assert Oracle(metric="mean").summarize(reviews, references=["too loud"]) == reviews[2]
    with pytest.raises(ValueError, match="needs the gold summaries"):
        Oracle().summarize(reviews)
    with pytest.raises(DenoiseSumError, match="unknown oracle metric 'bleu'"):
        Oracle(metric="bleu")


def test_oracle_without_summaries_names_file_and_entity(tmp_path):
    sets = [
        ReviewSet(entity_id="a", reviews=["x y"], summaries=["x"]),
        ReviewSet(entity_id="b", reviews=["x y"]),
    ]
    with pytest.raises(
        InputError,
        match=r"gold.jsonl, field 'summaries': entity 'b' has no gold "
        r"summaries, which the oracle baseline needs",
    ):
        list(summarize_sets(Oracle(), sets, tmp_path / "gold.jsonl"))


# ---------------------------------------------------------------- LexRank


def test_lexrank_scores_follow_the_graph():
    # a star: sentence 0 is similar to all others, which are not similar to each other
    similarity = np.eye(4)
    similarity[0, 1:] = similarity[1:, 0] = 0.5
    scores = lexrank_scores(similarity)
    assert math.isclose(scores.sum(), 1.0)
    assert scores.argmax() == 0 and np.allclose(scores[1:], scores[1])


def test_lexrank_picks_the_central_sentence():
    reviews = [
        "The pizza was great. Parking was hard to find.",
        "Friendly staff. The music was loud.",
        "The pizza was great and the staff was friendly. We came on a Tuesday.",
        "Great pizza. Loud music.",
    ]
    summarizer = LexRank(words=10)
    sentences, scores = summarizer.rank(reviews)
    central = " ".join(sentences[int(scores.argmax())])
    assert central == "The pizza was great and the staff was friendly ."
    assert summarizer.summarize(reviews) == "The pizza was great and the staff was friendly."
    # a larger budget adds sentences, printed in their original order
    longer = LexRank(words=20).summarize(reviews)
    assert longer.startswith("The pizza was great. The music was loud. The pizza was great and")
    assert "Parking" not in longer


def test_lexrank_fitted_idf_comes_from_the_corpus():
    summarizer = LexRank().fit(["the pizza", "the staff", "the music"])
    assert summarizer.idf["the"] == 0.0 and summarizer.idf["pizza"] > 0
    assert summarizer.summarize(REVIEWS)


# ---------------------------------------------------------------- word2vec centroid


def test_word2vec_picks_the_review_nearest_the_centroid(tmp_path):
    corpus = ["pizza pasta pizza", "sushi ramen sushi", "pizza sushi tacos"] * 20
    summarizer = Word2VecCentroid(dim=8, min_count=1, epochs=2, workers=1).fit(corpus)
    # with equal IDF weights, the centroid of {pizza x3, sushi x3} is the third review's vector
    reviews = ["pizza pizza", "sushi sushi", "pizza sushi"]
    assert summarizer.summarize(reviews) == "pizza sushi"
    summarizer.save(tmp_path / "w2v")
    loaded = Word2VecCentroid.load(tmp_path / "w2v")
    assert loaded.summarize(reviews) == "pizza sushi"
    assert "trained on 60 reviews" in loaded.describe()
    with pytest.raises(DenoiseSumError, match="has no word vectors"):
        Word2VecCentroid().summarize(reviews)


def test_sample_texts_is_seeded_and_keeps_corpus_order():
    reader = [Review("e", f"text {i}") for i in range(100)]
    sample = sample_texts(reader, 10, seed=1)
    assert len(sample) == 10 and sample == sample_texts(reader, 10, seed=1)
    assert sample == sorted(sample, key=lambda t: int(t.split()[1]))
    assert sample_texts(reader[:5], 10) == [f"text {i}" for i in range(5)]


# ---------------------------------------------------------------- Opinosis


def test_gapped_overlap_allows_up_to_gap_words_between():
    # "staff" at positions 2 (sentence 0) and 2 (sentence 1); "friendly" at 3 and 6
    assert gapped_overlap({0: [2], 1: [2]}, {0: [3], 1: [6]}, gap=3) == {0: [3]}
    assert gapped_overlap({0: [2], 1: [2]}, {0: [3], 1: [5]}, gap=3) == {0: [3], 1: [5]}


def test_opinosis_fuses_a_redundant_path():
    reviews = [
        "The staff is friendly. We had the soup.",
        "The staff is very friendly. The rooms are clean.",
        "The staff is helpful. The rooms are clean!",
        "The staff is so helpful. Parking is free.",
    ]
    summarizer = Opinosis(pos=False, words=20)
    graph = WordGraph.build(summarizer.keys(reviews))
    assert len(graph.references[("staff", "")]) == 4
    best = summarizer.candidates(reviews)[0]
    # "the staff is ... friendly" and "... helpful" are each said twice (with gaps), fused at "is"
    assert " ".join(best.words) == "the staff is friendly and helpful"
    assert best.redundancy == 2
    assert summarizer.summarize(reviews).startswith("The staff is friendly and helpful.")
    assert "The rooms are clean." in summarizer.summarize(reviews)


def test_opinosis_strict_redundancy_and_no_collapse():
    reviews = ["The staff is friendly.", "The staff is friendly!", "Parking is a nightmare."]
    strict = Opinosis(pos=False, min_redundancy=2, collapse=False)
    assert strict.summarize(reviews) == "The staff is friendly."
    assert Opinosis(pos=False, min_redundancy=2).summarize(["Nothing repeats here."]) == ""


def test_opinosis_with_pos_tags_needs_a_noun_and_a_verb():
    reviews = ["The food was great.", "The food was great!", "Very very great, very very great."]
    assert Opinosis().summarize(reviews) == "The food was great."


# ---------------------------------------------------------------- commands


def _sets_file(tmp_path, summaries=True):
    records = [
        {
            "entity_id": f"biz-{i}",
            "reviews": REVIEWS[i:] + REVIEWS[:i],
            **({"summaries": ["Great pizza and friendly staff."]} if summaries else {}),
        }
        for i in range(3)
    ]
    return write_jsonl(tmp_path / "sets.jsonl", records)


def test_baseline_command_writes_predictions(tmp_path):
    path = _sets_file(tmp_path)
    result = runner.invoke(app, ["baseline", "first", str(path)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows[0] == {"entity_id": "biz-0", "summary": REVIEWS[0]}
    out = tmp_path / "pred.jsonl"
    result = runner.invoke(app, ["baseline", "lexrank", str(path), "-o", str(out), "--words", "8"])
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 3


def test_baseline_command_errors(tmp_path):
    result = runner.invoke(app, ["baseline", "textrank", str(_sets_file(tmp_path))])
    assert isinstance(result.exception, DenoiseSumError)
    assert "unknown baseline 'textrank'; choose from first, random" in str(result.exception)
    path = _sets_file(tmp_path, summaries=False)
    result = runner.invoke(app, ["baseline", "oracle", str(path)])
    assert isinstance(result.exception, InputError)
    assert str(result.exception) == (
        f"{path}, field 'summaries': entity 'biz-0' has no gold "
        "summaries, which the oracle baseline needs"
    )
    result = runner.invoke(app, ["baseline", "word2vec", str(path)])
    assert "must be trained first: pass --corpus" in str(result.exception)
    result = runner.invoke(app, ["baseline", "first", str(path), "--corpus", str(path)])
    assert "learns nothing from a corpus" in str(result.exception)


def test_baseline_help_lists_every_baseline():
    result = runner.invoke(app, ["baseline", "--help"])
    assert all(name in result.output for name in BASELINES)


def test_word2vec_command_trains_saves_and_loads(tmp_path, synthetic_corpus):
    path = _sets_file(tmp_path)
    model = tmp_path / "w2v"
    result = runner.invoke(
        app,
        [
            "baseline",
            "word2vec",
            str(path),
            "--corpus",
            str(synthetic_corpus),
            "--model",
            str(model),
            "--sample",
            "50",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "sampled 50 reviews" in result.stderr
    again = runner.invoke(app, ["baseline", "word2vec", str(path), "--model", str(model)])
    assert again.exit_code == 0 and again.stdout == result.stdout


def test_leaderboard_command(tmp_path):
    gold = _sets_file(tmp_path)
    system = write_jsonl(
        tmp_path / "mine.test.jsonl",
        [{"entity_id": f"biz-{i}", "summary": "Great pizza."} for i in range(4)],
    )
    notes = tmp_path / "notes.md"
    notes.write_text("## Notes\n\nHand-written analysis.\n")
    out = tmp_path / "board.md"
    result = runner.invoke(
        app,
        [
            "leaderboard",
            str(gold),
            "--systems",
            str(tmp_path / "mine.test.jsonl"),
            "--baselines",
            "first,oracle,lexrank",
            "--predictions",
            f"again={system}",
            "--metrics",
            "rouge",
            "--notes",
            str(notes),
            "-o",
            str(out),
            "--title",
            "Tiny",
        ],
    )
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert page.startswith("# Tiny\n")
    rows = [line for line in page.splitlines() if line.startswith("| ")]
    assert [r.split(" | ")[0][2:] for r in rows] == [
        "system",
        "mine",
        "first",
        "oracle",
        "lexrank",
        "again",
    ]
    assert "R1 95% CI" in rows[0] and "METEOR" not in rows[0]
    assert "--baselines first,oracle,lexrank" in page and "Hand-written analysis." in page
    result = runner.invoke(
        app,
        ["leaderboard", str(gold), "--baselines", "", "--predictions", "nofile", "-o", str(out)],
    )
    assert "expected NAME=FILE, got 'nofile'" in str(result.exception)


@needs_data
def test_leaderboard_on_a_slice_of_the_yelp_test_set(tmp_path):
    out = tmp_path / "board.md"
    yelp = SHARED_DATA / "yelp"
    result = runner.invoke(
        app,
        [
            "leaderboard",
            str(yelp / "meansum_test.jsonl"),
            "--systems",
            str(yelp / "systems"),
            "--baselines",
            "first,random,clustroid,lexrank,opinosis,oracle",
            "--limit",
            "10",
            "--metrics",
            "rouge",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = {
        line.split(" | ")[0][2:]: line.split(" | ")
        for line in out.read_text().splitlines()
        if line.startswith("| ")
    }
    assert set(rows) >= {"denoisesum", "copycat", "plansum", "bertcent", "lexrank", "oracle"}
    r1 = {name: float(cells[2]) for name, cells in rows.items() if name != "system"}
    # the oracle picks the best review by ROUGE-1: no single-review baseline can beat it
    assert r1["oracle"] >= max(r1["first"], r1["random"], r1["clustroid"])
    assert "10 entities" in out.read_text()
