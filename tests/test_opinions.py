"""The opinions method on tiny hand-made reviews: a lexicon and a rating model small enough to
read, so that each test's expected summary follows from its reviews."""

import time

import numpy as np
import pytest

from denoisesum.data.tokenizer import Tokenizer
from denoisesum.models.rating import RatingModel
from denoisesum.models.store import DEFAULT_MODEL_DIR
from denoisesum.opinions.aspects import Lexicon
from denoisesum.opinions.fluency import Fluency, Scores
from denoisesum.opinions.method import DIVIDED_OPENING, OTHER_SIDE, Casing, OpinionMethod, _who
from denoisesum.opinions.sentences import Sentence, distinct_reviews, read_sentences
from denoisesum.opinions.writing import ranked_sentences, readable, third_person

GOOD = ["delicious", "friendly", "great", "rich", "fresh", "love", "loved"]
BAD = ["rude", "salty", "slow", "cold", "dirty", "bland", "waited"]
WORDS = (
    GOOD
    + BAD
    + """the broth is was staff pork ramen a for table minutes we and
    it our server noodles""".split()
)


def tiny_rating() -> RatingModel:
    """Five classes; each good word pulls toward 5 stars, each bad one toward 1."""
    features = GOOD + BAD
    coef = np.zeros((5, len(features)), np.float32)
    for j, word in enumerate(features):
        coef[4 if word in GOOD else 0, j] = 6.0
    return RatingModel(
        features,
        np.ones(len(features), np.float32),
        coef,
        np.zeros(5, np.float32),
        np.arange(1, 6, dtype=np.float32),
    )


def tiny_lexicon() -> Lexicon:
    terms = {"broth": 5, "staff": 80, "ramen": 10, "pork ramen": 2, "table": 60, "noodle": 8}
    return Lexicon(terms, 100, frozenset(WORDS))


@pytest.fixture
def method() -> OpinionMethod:
    return OpinionMethod(tiny_lexicon(), tiny_rating())


def test_lexicon_names_compounds_before_their_head():
    lexicon = tiny_lexicon()
    assert lexicon.mentions("the pork ramen and the ramen broth".split()) == [
        "pork ramen",
        "ramen",
        "broth",
    ]
    assert lexicon.mentions(["noodles"]) == ["noodle"]  # plurals folded
    assert lexicon.specificity("pork ramen") > lexicon.specificity("staff")


def test_identical_reviews_count_once():
    found = distinct_reviews(["Great broth.", "great  broth.", "Rude staff.", "Great broth."])
    assert found.texts == ["Great broth.", "Rude staff."]
    assert found.copies == [3, 1]
    assert found.warnings == ["2 repeated review(s) counted once"]


def test_each_aspect_gets_its_clause_s_opinion():
    [sentence], _ = read_sentences(
        ["The broth is bland, but the staff is friendly."], tiny_lexicon(), tiny_rating()
    )
    assert sentence.aspect_stars["broth"] < 2.5 < 3.5 < sentence.aspect_stars["staff"]
    assert sentence.contrast


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I loved the broth.", "One reviewer loved the broth."),
        ("I love the pork ramen", "One reviewer loves the pork ramen."),
        ("We waited 30 minutes for a table.", "One reviewer waited 30 minutes for a table."),
        (
            "We were seated quickly and I was happy.",
            "One reviewer was seated quickly and they were happy.",
        ),
        ("I'm a fan of our server.", "One reviewer is a fan of their server."),
        (
            "I really have to say my noodles were cold.",
            "One reviewer really has to say their noodles were cold.",
        ),
        ("My ramen was cold.", "One reviewer's ramen was cold."),
        ("The broth was rich and salty.", "The broth is rich and salty."),
        ("Love the pork ramen.", "One reviewer loves the pork ramen."),
        ("Highly recommend the broth!", "One reviewer highly recommends the broth!"),
        ("Friendly , happy staff..", "Friendly, happy staff."),
    ],
)
def test_third_person(text, expected):
    named = any(w in text for w in ("I", "We", "My", "Love", "Highly"))
    assert third_person(text, ["broth", "pork ramen", "ramen"]) == (expected, named)


def sentence(text: str, aspects=("broth",), cased=True) -> Sentence:
    return Sentence(0, text, Tokenizer()(text), list(aspects), 4.0, cased=cased)


@pytest.mark.parametrize(
    ("text", "alone"),
    [
        ("The broth is rich and very hot.", True),
        ("Came in a sweet sauce and over cooked.", False),  # whose subject? the dish's
        ("Was told the broth takes an hour.", False),
        ("The broth is rich here too.", False),  # leans on the sentence before
        ("The broth is great as well.", False),
        ("When the broth is cold and you want a table.", False),  # no main clause
        ("When the weather is cold, the broth is perfect.", True),
    ],
)
def test_a_quoted_sentence_stands_alone(text, alone):
    assert readable(sentence(text)) is alone


def test_reviewers_are_named_so_that_a_reader_can_follow_them():
    assert [_who(r, named) for r, named in [(3, []), (4, [3]), (4, [3, 4]), (3, [3, 4])]] == [
        "one",
        "another",
        "the same",
        "the first",
    ]


def test_the_best_sentences_are_weighed_by_how_well_they_read():
    group = [sentence("The broth is rich and hot here."), sentence("The broth is rich and hot.")]
    assert ranked_sentences(group, 0, "broth")[0] == 0  # the same words: review order
    fluent = ranked_sentences(group, 0, "broth", fluency=lambda ss: [0.5, 4.0][: len(ss)])
    assert fluent[0] == 1


def test_fluency_scores_fragments_below_sentences():
    fluency = Fluency.load(DEFAULT_MODEL_DIR)
    scores = Scores(fluency)
    fine, fragment = scores(
        [
            sentence("The staff is very friendly and helpful."),
            sentence("Handcrafted chocolates best quality in store."),
        ]
    )
    assert fine > fragment
    assert scores([sentence("The staff is very friendly and helpful.")]) == [fine]
    assert len(scores.known) == 2  # each text scored once


def test_a_name_keeps_its_capital_after_the_turn():
    said = [sentence("We asked for Eric again."), sentence("Service was slow, eric was kind.")]
    casing = Casing(
        [*said, sentence("Ask for Eric.")], Lexicon({}, 1, frozenset({"eric", "horrible"}))
    )
    assert casing.lower_first("Eric was rude.") == "Eric was rude."
    assert casing.lower_first("The broth is cold.") == "the broth is cold."
    assert casing.lower_first("Horrible broth.") == "horrible broth."  # a known word
    assert casing.lower_first("Erwin was rude.") == "Erwin was rude."  # unknown: a name


def test_the_second_reviewer_named_is_another():
    assert third_person("I loved it here.", who="another")[0] == "Another reviewer loved it here."


def test_the_shared_opinion_comes_first_with_its_reviews(method):
    reviews = [
        "The broth is rich and delicious.",
        "Loved the rich broth here.",
        "The broth was delicious, honestly.",
        "The staff was rude to us.",
        "Fresh noodles and a delicious broth.",
    ]
    summary = method.summarize(reviews, max_words=60)
    first = summary.sentences[0]
    assert first.aspect == "broth" and first.polarity == 1
    assert first.count == 4 and first.total == 5 and first.share == "4 of 5 reviews"
    assert first.reviews == [0, 1, 2, 4]
    assert summary.text.startswith(first.text)
    assert "rude" not in summary.text  # one review of five: not an opinion reviewers share


def test_a_divided_business_is_said_to_be_divided(method):
    reviews = [
        "The broth is rich and delicious.",
        "The broth was delicious and fresh.",
        "The staff was rude and slow.",
        "The staff is rude to everyone.",
    ]
    summary = method.summarize(reviews, ratings=[5, 5, 1, 1])
    assert summary.text.startswith(DIVIDED_OPENING)
    assert {s.polarity for s in summary.sentences} == {-1, 1}
    assert OTHER_SIDE not in summary.text  # judges marked it down between divided sides


def test_no_aspect_said_both_ways_unless_divided(method):
    reviews = [
        "The broth is delicious.",
        "The broth is rich.",
        "The broth is delicious and rich.",
        "The broth is great.",
        "The broth was delicious.",
        "The broth is bland.",
        "The broth was bland and cold.",
    ]
    summary = method.summarize(reviews, ratings=[5, 5, 5, 5, 5, 2, 2])  # a quarter unhappy
    polarities = {s.polarity for s in summary.sentences if s.aspect == "broth"}
    assert polarities == {1}


def test_complaints_slice_says_only_complaints(method):
    reviews = [
        "The broth is rich and delicious.",
        "The broth was delicious and fresh.",
        "The staff was rude and slow.",
        "The staff is rude to everyone.",
    ]
    summary = method.summarize(reviews, ratings=[5, 5, 1, 2], slice="complaints")
    assert summary.sentences and all(s.polarity == -1 for s in summary.sentences)
    assert all(i in (2, 3) for s in summary.sentences for i in s.reviews)


def test_first_person_kept_when_asked(method):
    reviews = ["I loved the broth here.", "I loved the rich broth."]
    assert "I loved" in method.summarize(reviews, first_person=True).text
    assert "I loved" not in method.summarize(reviews).text


def test_max_words_bounds_the_summary(method):
    reviews = [
        "The broth is rich and delicious.",
        "The broth was delicious and fresh.",
        "The staff was friendly and great.",
        "The staff is friendly to everyone.",
        "The noodles are fresh and delicious.",
        "Fresh noodles, delicious too.",
    ]
    long = method.summarize(reviews, max_words=100)
    short = method.summarize(reviews, max_words=8)
    assert len(long.sentences) == 3
    assert len(short.sentences) == 1 and len(short.text.split()) <= 8


def test_no_review_no_summary(method):
    summary = method.summarize([])
    assert summary.text == "" and summary.warnings


def test_text_without_aspects_says_so(method):
    summary = method.summarize(["Das Essen war sehr gut.", "Ich komme wieder."])
    assert summary.text == ""
    assert summary.warnings[0] == "no opinion of the reviews could be written as a sentence"
    assert "another language?" in summary.warnings[1]


def test_one_review_without_punctuation_is_read(method):
    run_on = " ".join(["the broth is rich and delicious and the staff is friendly"] * 12)
    summary = method.summarize([run_on])
    assert summary.reviews_read == 1  # read, cut into clauses; whatever it says comes from it


def test_a_huge_review_costs_what_its_cut_warrants(method):
    huge = "The broth is delicious. " * 50_000  # 1.2 MB
    start = time.perf_counter()
    summary = method.summarize([huge, "The broth was rich."])
    assert time.perf_counter() - start < 10
    assert any("longer than" in w for w in summary.warnings)


@pytest.fixture(scope="module")
def shipped():
    from denoisesum.summarizer import Summarizer

    return Summarizer.from_pretrained(device="cpu")


def test_bad_input_gets_a_summary_or_says_why(shipped):
    """The issue's bad inputs with the shipped model: one review, one sentence, no punctuation,
    another language, one review pasted many times."""

    def run(reviews):
        [result] = shipped.summarize_results([reviews], method="opinions")
        return result

    one = run(["The ramen broth is rich and the noodles are perfectly chewy. Great spot."])
    assert one.summary and one.attribution[0].total == 1
    bare = run(["the ramen broth is rich and the noodles are chewy and the staff is friendly"])
    assert bare.summary or bare.warnings
    german = run(["Das Essen war sehr gut und der Service freundlich.", "Ich komme wieder gern."])
    assert german.summary == "" and any("another language" in w for w in german.warnings)
    pasted = run(["The broth is rich and delicious."] * 50 + ["The staff was rude."])
    assert any("49 repeated review(s) counted once" in w for w in pasted.warnings)
    assert all(a.total == 2 for a in pasted.attribution)
