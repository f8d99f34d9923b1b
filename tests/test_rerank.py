"""Input-aware choice among candidate summaries (inference/rerank.py) and its Summarizer option."""

from dataclasses import replace

import pytest

from conftest import save_tiny_summarizer, token_summary
from denoisesum.inference.beam import DecodeConfig
from denoisesum.inference.rerank import OverlapScorer, choose, review_subsets
from denoisesum.inference.summarizer import Summarizer, SummarizerConfig

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def summarizer(tmp_path_factory) -> Summarizer:
    settings = SummarizerConfig(
        max_review_tokens=12,
        max_reviews=8,
        decode=DecodeConfig(beam_size=3, min_length=4, max_length=10),
    )
    return Summarizer.from_pretrained(
        save_tiny_summarizer(tmp_path_factory.mktemp("models") / "tiny", settings)
    )


def test_subsets_leave_out_different_reviews():
    assert review_subsets(8, 3) == [[1, 2, 3, 5, 6, 7], [0, 2, 3, 4, 6, 7], [0, 1, 3, 4, 5, 7]]
    assert review_subsets(2, 3) == []  # too few reviews to vary
    assert review_subsets(3, 5) == [[1, 2], [0, 2], [0, 1]]  # no duplicates, never all


def test_overlap_is_the_mean_rouge_f1_against_each_review():
    reviews = [[10, 11, 12, 13], [10, 11, 20, 21]]
    scorer = OverlapScorer(reviews, ignore={0, 1, 2, 3, 99}, n=1)
    # against review 1: 2 of 2 candidate words match its 4: F1 = 2*2/(2+4); same for review 2
    assert scorer.score([10, 11]) == pytest.approx(2 * 2 / 6)
    assert scorer.score([10, 11, 99]) == pytest.approx(2 * 2 / 6)  # ignored ids do not count
    bigrams = OverlapScorer(reviews, ignore=set(), n=2)
    assert bigrams.score([10, 11]) == pytest.approx((2 * 2 / 6 + 2 * 1 / 4) / 2)


def test_choose_prefers_the_candidate_closest_to_the_reviews_and_the_first_among_equals():
    reviews = [[10, 11, 12], [10, 11, 13], [10, 14, 15]]
    assert choose([[30, 31, 32], [10, 11, 40]], reviews, set()) == 1
    assert choose([[10, 40], [10, 41]], reviews, set()) == 0


def test_rerank_picks_among_more_candidates_and_never_fails(summarizer):
    reviews = [
        "the pizza was great and the staff friendly",
        "great pizza , slow staff",
        "the staff was slow but the pizza great",
        "pizza and salad were fine",
    ]
    base = summarizer.config
    plain = token_summary(summarizer, reviews)
    for decode in (
        replace(base.decode, rerank=True),
        replace(base.decode, rerank=True, subsets=3, rerank_ngrams=1),
    ):
        summarizer.config = replace(base, decode=decode)
        try:
            chosen = token_summary(summarizer, reviews)
            candidates = summarizer._search([summarizer.encode_reviews(reviews)], 1)[0]
        finally:
            summarizer.config = base
        assert chosen and len(candidates) >= 1
        # what rerank returns is one of the full set's or the subsets' hypotheses, and no
        # hypothesis of the full set is closer to the reviews than it
        ids = summarizer.encode_reviews(reviews)
        scorer = OverlapScorer(ids, summarizer._word_classes()[2], decode.rerank_ngrams)
        best = scorer.score(summarizer.vocab.encode(chosen))
        assert all(scorer.score(c) <= best + 1e-12 for c in candidates)
    assert isinstance(plain, list) and DecodeConfig().rerank is False


def test_decode_and_score_summarizes_and_scores_every_set(summarizer):
    from denoisesum.data.reviewsets import ReviewSet
    from denoisesum.evaluation.decoded import decode_and_score

    sets = [
        ReviewSet(
            entity_id=f"e{i}",
            reviews=["great pizza and friendly staff", "slow staff"],
            summaries=["great pizza , slow staff"],
        )
        for i in range(3)
    ]
    run = decode_and_score(summarizer, sets, "rouge", batch_size=2)
    assert len(run.summaries) == 3 and run.seconds > 0
    assert run.report.entity_ids == ["e0", "e1", "e2"]
    assert set(run.means) == {"rouge1", "rouge2", "rougeL"}
    assert run.rouge_mean == pytest.approx(sum(run.means.values()) / 3)
    assert run.words == pytest.approx(sum(len(s.split()) for s in run.summaries) / 3)
    assert run.summaries[0] == " ".join(token_summary(summarizer, sets[0].reviews))


def test_the_decoding_levers_are_command_line_options(summarizer, tmp_path):
    import json
    import subprocess
    import sys

    sets = tmp_path / "sets.jsonl"
    sets.write_text(
        json.dumps(
            {
                "entity_id": "a",
                "reviews": [
                    "the pizza was great",
                    "great pizza , slow staff",
                    "the staff was slow",
                ],
            }
        )
        + "\n"
    )
    model = summarizer.path
    args = [
        sys.executable,
        "-m",
        "denoisesum.cli",
        "summarize",
        str(sets),
        "--model",
        str(model),
        "--rerank",
        "--subsets",
        "2",
        "--no-repeat-in-sentence",
        "--max-word-repeats",
        "1",
        "--restate-overlap",
        "0.5",
        "--input-bonus",
        "1.0",
        "--input-words-only",
        "--unsaid-penalty",
        "1.5",
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]
    bad = subprocess.run(
        [*args[:7], "--subsets", "2", "--no-rerank"], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode != 0 and "needs rerank" in bad.stderr and "Traceback" not in bad.stderr


def test_the_recipe_never_picks_reranking_as_the_default():
    from denoisesum.evaluation.decoded import choose_variant

    variants = {
        "base": {},
        "restate": {"restate_overlap": 0.5},
        "rerank": {"rerank": True, "subsets": 3},
    }
    means = {"base": 17.0, "restate": 17.2, "rerank": 17.5}  # mean of R1/R2/RL
    assert choose_variant(means, variants) == "restate"  # reranking scores best but costs 4x
    means["restate"] = 16.8
    assert choose_variant(means, variants) == "base"
