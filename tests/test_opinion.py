"""Opinion conditioning (issue 31): ratings through the encoded corpus and the synthetic pairs,
rating-balanced candidate sampling, and the summarizer's opinion embedding."""

import gzip
import json
import math
from collections import Counter

import numpy as np
import pytest

from conftest import write_jsonl
from denoisesum.data.corpus import CorpusReader
from denoisesum.data.encoded import FORMAT, EncodedCorpus
from denoisesum.data.synthetic import iter_pairs
from denoisesum.data.tokenizer import Tokenizer
from denoisesum.errors import InputError
from denoisesum.io import read_json
from denoisesum.noising import pipeline
from denoisesum.noising.plan import make_plan, rating_balance_weights, star_classes
from test_noising import noising_reviews, read_pairs, synth_config, workspace  # noqa: F401


def rated_reviews():
    """The noising test corpus, each review with a rating: mostly 5 stars, as Yelp; every 7th
    review unrated."""
    rng = np.random.default_rng(0)
    out = []
    for i, record in enumerate(noising_reviews()):
        stars = rng.choice([1, 2, 3, 4, 5], p=[0.05, 0.05, 0.1, 0.2, 0.6])
        out.append({**record, "rating": None if i % 7 == 0 else float(stars)})
    return out


@pytest.fixture(scope="module")
def rated(tmp_path_factory):
    root = tmp_path_factory.mktemp("rated")
    records = rated_reviews()
    path = write_jsonl(root / "corpus.jsonl", records)
    return records, EncodedCorpus.build(CorpusReader(path), root / "enc", Tokenizer())


# ----------------------------------------------------------------------------- encoded cache


def test_encoded_cache_keeps_ratings_nan_when_missing(rated):
    records, corpus = rated
    assert corpus.ratings.dtype == np.float32 and len(corpus.ratings) == len(records)
    for record, stored in zip(records, corpus.ratings.tolist(), strict=True):
        if record["rating"] is None:
            assert math.isnan(stored)
        else:
            assert stored == record["rating"]


def test_a_cache_of_the_old_format_is_rebuilt(tmp_path):
    path = write_jsonl(tmp_path / "corpus.jsonl", rated_reviews()[:20])
    corpus = EncodedCorpus.build(CorpusReader(path), tmp_path / "enc", Tokenizer())
    meta = read_json(tmp_path / "enc" / "meta.json")
    assert meta["format"] == FORMAT
    # a cache written before ratings.npy: same sources, old format, no ratings file
    (tmp_path / "enc" / "ratings.npy").unlink()
    (tmp_path / "enc" / "meta.json").write_text(json.dumps({**meta,
                                                            "format": "denoisesum-encoded/1"}))
    assert np.isnan(EncodedCorpus(tmp_path / "enc").ratings).all()  # readable, no ratings
    rebuilt = EncodedCorpus.build(CorpusReader(path), tmp_path / "enc", Tokenizer())
    assert (tmp_path / "enc" / "ratings.npy").exists()
    assert np.array_equal(rebuilt.ratings, corpus.ratings, equal_nan=True)


# ----------------------------------------------------------------------------- sampling


def test_star_classes_round_half_up_and_clamp():
    got = star_classes(np.array([np.nan, 0.2, 1.0, 2.5, 3.49, 4.5, 5.0, 9.0]))
    assert got.tolist() == [0, 1, 1, 3, 3, 5, 5, 5]


def test_balance_weights_are_inverse_class_frequency():
    ratings = np.array([5, 5, 5, 5, 1, 3, 3, np.nan], dtype=np.float32)
    w = rating_balance_weights(ratings)
    assert w[:4].tolist() == [0.25] * 4 and w[4] == 1.0 and w[5] == w[6] == 0.5
    assert w[7] == pytest.approx(np.mean(w[:7]))  # unrated: the mean of the rated
    assert (rating_balance_weights(np.full(3, np.nan)) == 1).all()


def test_balanced_plan_draws_star_classes_about_equally():
    rng = np.random.default_rng(1)
    # 10,000 candidates, 70% 5 stars, 4% 1 star
    stars = rng.choice([1, 2, 3, 4, 5], size=10_000, p=[0.04, 0.06, 0.08, 0.12, 0.7])
    eligible = np.arange(10_000, dtype=np.int64) * 3  # review indices, not 0..n-1
    ratings = np.zeros(30_000, dtype=np.float32)
    ratings[eligible] = stars
    uniform = make_plan(eligible, 1_000, 4, 1, seed=3)
    balanced = make_plan(eligible, 1_000, 4, 1, seed=3,
                         weights=rating_balance_weights(ratings[eligible]))
    assert len(set(balanced.candidates.tolist())) == 1_000  # distinct, from the eligible
    assert set(balanced.candidates.tolist()) <= set(eligible.tolist())
    share = Counter(star_classes(ratings[balanced.candidates]).tolist())
    assert all(150 <= share[k] <= 250 for k in range(1, 6)), share
    assert Counter(star_classes(ratings[uniform.candidates]).tolist())[5] > 600
    # without weights, the plan is the one made before weights existed
    old = np.random.default_rng([3, 0]).choice(eligible, size=1_000, replace=False)
    assert np.array_equal(uniform.candidates, old)


# ----------------------------------------------------------------------------- pair records


def test_pairs_record_their_summary_review_rating(workspace, rated, tmp_path):  # noqa: F811
    records, corpus = rated
    out = tmp_path / "syn"
    manifest = pipeline.synthesize(corpus, out, workspace["lm"],
                                   synth_config(balance_ratings=True), workers=0, progress=False)
    pairs = read_pairs(out)
    assert manifest["pairs"] == len(pairs) == 24
    for pair in pairs:
        assert pair["rating"] == records[pair["candidate_review"]]["rating"]
    assert sum(manifest["candidate_filter"]["chosen_by_stars"].values()) == 24
    parsed = list(iter_pairs(sorted((out / "shards").glob("*.jsonl.gz"))))
    assert [p.rating for p in parsed] == [p["rating"] for p in pairs]
    # the setting is part of the noising fingerprint, absent at its default (old directories)
    with pytest.raises(Exception, match="other inputs or settings"):
        pipeline.synthesize(corpus, out, workspace["lm"], synth_config(), workers=0,
                            progress=False)


@pytest.mark.parametrize("bad", [True, "5", 11.0, -1, float("nan")])
def test_a_bad_rating_in_a_pair_is_an_input_error(tmp_path, bad):
    record = {"pair_id": 0, "entity_id": "e", "summary": "good food .",
              "segment_noise": ["bad food ."], "document_noise": ["the food ."], "rating": bad}
    path = tmp_path / "shard-00000.jsonl.gz"
    # json.dumps writes NaN, which Python's reader reads back: it must still be refused
    path.write_bytes(gzip.compress((json.dumps(record) + "\n").encode()))
    with pytest.raises(InputError, match="rating") as info:
        list(iter_pairs([path]))
    assert "line 1" in str(info.value) and "shard-00000" in str(info.value)


def test_a_pair_without_a_rating_has_none(tmp_path):
    record = {"pair_id": 0, "entity_id": "e", "summary": "good food .",
              "segment_noise": ["bad food ."], "document_noise": ["the food ."]}
    path = tmp_path / "shard-00000.jsonl.gz"
    path.write_bytes(gzip.compress((json.dumps(record) + "\n").encode()))
    assert next(iter_pairs([path])).rating is None
