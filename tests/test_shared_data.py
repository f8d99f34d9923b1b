"""Checks against slices of the real data in ../shared/data; skipped when it is absent."""

from itertools import islice

import regex

from conftest import SHARED_DATA, needs_data
from denoisesum.data.corpus import CorpusReader
from denoisesum.data.reviewsets import read_predictions, read_review_sets
from denoisesum.data.tokenizer import Tokenizer, detokenize

pytestmark = needs_data


def test_yelp_corpus_streams():
    reader = CorpusReader(str(SHARED_DATA / "yelp" / "corpus" / "part-*.jsonl.xz"))
    assert len(reader.paths) == 16
    first = list(islice(reader, 2000))
    assert len(first) == 2000 and all(r.text.strip() and r.entity_id for r in first)
    assert all(r.rating is None or 1 <= r.rating <= 5 for r in first)


def test_yelp_eval_sets_and_released_outputs():
    for split in ("dev", "test"):
        sets = list(read_review_sets(SHARED_DATA / "yelp" / f"meansum_{split}.jsonl"))
        assert len(sets) == 100
        assert all(len(s.reviews) == 8 and len(s.summaries) == 1 for s in sets)
    test_ids = [s.entity_id for s in read_review_sets(SHARED_DATA / "yelp" / "meansum_test.jsonl")]
    for system in ("denoisesum", "copycat", "plansum", "bertcent"):
        preds = list(read_predictions(SHARED_DATA / "yelp" / "systems" / f"{system}.test.jsonl"))
        assert [p.entity_id for p in preds] == test_ids


def test_tokenizer_on_real_reviews_splits_glued_sentences():
    tok = Tokenizer()
    reviews = [
        r.text
        for r in islice(CorpusReader(SHARED_DATA / "yelp" / "corpus" / "part-00.jsonl.xz"), 3000)
    ]
    glued = [t for t in reviews if GLUED.search(t)]
    assert len(glued) > 50  # the corpus really has "great.The" boundaries
    for text in glued:
        tokens = tok.tokenize(text)
        assert not any(GLUED_TOKEN.match(t) for t in tokens), text
        assert not GLUED.search(detokenize(tokens)), text


GLUED = regex.compile(r"(?<![/@.\w])\p{Ll}{2,}\.\p{Lu}\p{Ll}+(?![.\w/])")
GLUED_TOKEN = regex.compile(r"^\p{L}{2,}\.\p{L}{2,}$")
