"""lab/studies/support_repair.py: the sentence features, the review sentences it may put in, and the
repairs (prune, replace)."""

import numpy as np

from lab.studies import support_repair

REVIEWS = [
    "The ramen is rich and the broth is deep. I loved the pork buns.",
    "The ramen is rich here. Service is slow on weekends.",
    "Service is slow but the ramen is rich and worth it. We will be back.",
]


def test_features_of_a_sentence_said_by_a_review_and_of_an_invented_one():
    texts, rows = support_repair.sentence_features(
        REVIEWS, "The ramen is rich here. Free parking and a rooftop pool."
    )
    assert texts == ["The ramen is rich here.", "Free parking and a rooftop pool."]
    assert rows.shape == (2, len(support_repair.FEATURES))
    said, invented = rows
    assert said[0] == 1.0 and said[1] == 0  # every content word in a review, none missing
    assert said[2] == 1.0 and said[3] == 1.0  # its bigrams and trigrams all in a review
    assert invented[0] == 0.0 and invented[1] == 4  # free, parking, rooftop, pool: in none
    assert invented[2] == 0.0
    assert (said[4], invented[4]) == (0, 1) and (said[5], invented[5]) == (0, 0.5)


def test_review_sentences_offered_leave_out_first_person_and_questions():
    offered = [text for text, _ in support_repair.lexrank_sentences(REVIEWS)]
    assert "I loved the pork buns." not in offered
    assert offered and all(not text.endswith("?") for text in offered)
    # the most central first: the rich ramen is in every review
    assert "ramen" in offered[0].lower()


def test_prune_drops_low_sentences_but_keeps_openings_and_never_empties():
    sentences = ["Some reviewers praise it: the ramen is rich.", "Nonsense here.", "Good."]
    kept = support_repair.repaired(sentences, np.array([0.1, 0.2, 0.9]), 0.5, None)
    assert kept == "Some reviewers praise it: the ramen is rich. Good."
    assert support_repair.repaired(["A.", "B."], np.array([0.1, 0.3]), 0.5, None) == "B."


def test_replace_puts_a_central_review_sentence_with_new_words_in_place():
    sentences = ["The ramen is rich.", "Free parking and a rooftop pool."]
    out = support_repair.repaired(sentences, np.array([0.9, 0.1]), 0.5, REVIEWS)
    first, second = out.split(". ", 1)
    assert first == "The ramen is rich"
    assert "pool" not in second and second in " ".join(REVIEWS)
