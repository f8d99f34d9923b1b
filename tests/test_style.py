"""Repetition, restatement and voice measures (evaluation/style.py) and decode_and_score."""

import pytest

from denoisesum.evaluation.style import (
    first_person,
    repeated_words,
    restated_sentences,
    sentences,
    style_report,
    unsupported_words,
)


def test_sentences_split_after_end_marks_and_lower_case():
    assert sentences("The pool was clean. Staff: great!  ok") == [
        ["the", "pool", "was", "clean"],
        ["staff", "great"],
        ["ok"],
    ]


def test_repeated_content_words_count_within_a_sentence_only():
    assert repeated_words("the pool was clean and clean .") == 1
    assert repeated_words("i had the eggs , eggs and eggs .") == 2
    assert repeated_words("the pool was clean . the pool was big .") == 0  # other sentences
    assert repeated_words("it was the one and the only one") == 0  # stopwords only
    assert repeated_words("great food and great service") == 1


def test_a_sentence_restating_an_earlier_one_is_counted():
    text = "the staff is very friendly . the food is good . staff friendly and helpful ."
    assert restated_sentences(text) == 1  # staff, friendly of {staff, friendly, helpful}
    assert restated_sentences("great food . nice staff .") == 0
    assert restated_sentences("great food . great food .") == 1


def test_first_person_singular():
    assert first_person("I love this place")
    assert first_person("the owner helped me . great")
    assert not first_person("customers praise the ramen ; service can be slow")
    assert not first_person("we loved it")  # plural is not one customer


def test_report_shares():
    report = style_report(["i had eggs , eggs .", "the food is good .", "good food . food good ."])
    assert report.summaries == 3
    assert report.with_repeated_words == pytest.approx(1 / 3)
    assert report.with_restated_sentence == pytest.approx(1 / 3)
    assert report.first_person == pytest.approx(1 / 3)


def test_words_no_review_says():
    reviews = ["The tacos were great.", "Great salsa, slow service."]
    # "taco" is the reviews' "tacos" (plural folding); "friendly" and "staff" are not said
    assert unsupported_words("Great taco and salsa, friendly staff.", reviews) == 2
    assert unsupported_words("Great tacos.", reviews) == 0
    report = style_report(["great coffee .", "great salsa ."], [reviews, reviews])
    assert report.unsupported_words == 0.5
    assert style_report(["great coffee ."]).unsupported_words is None
