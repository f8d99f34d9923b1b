"""lab/studies/adaptation.py: several evaluation sets per hotel, each hotel counted once."""

import random

from lab.studies.adaptation import EVAL_REVIEWS, MEASURES, _compare, _draws


def test_draws_are_disjoint_sets_of_eight_as_many_as_reviews_allow():
    reviews = [{"text": str(i)} for i in range(29)]
    sets = _draws(random.Random(0), reviews, 12)
    assert [len(s) for s in sets] == [EVAL_REVIEWS] * 3  # 29 reviews: three sets of 8
    texts = [r["text"] for s in sets for r in s]
    assert len(set(texts)) == len(texts)
    assert len(_draws(random.Random(0), reviews, 2)) == 2
    assert len(_draws(random.Random(0), reviews[:5], 1)[0]) == 5  # one set: all it has


def test_a_hotel_with_several_sets_counts_once_with_their_mean():
    def run(values):
        per = [dict.fromkeys((k for k, *_ in MEASURES), v) for v in values]
        return {"per": per, "entities": ["a", "a", "a", "b"]}

    tests = _compare(run([1.0, 1.0, 0.0, 0.0]), run([0.0, 0.0, 0.0, 1.0]))
    test = tests["supported"]["test"]
    assert abs(test.mean_a - (2 / 3 + 0) / 2) < 1e-9  # hotel a: 2/3, hotel b: 0
    assert abs(test.mean_b - (0 + 1) / 2) < 1e-9
