"""Input-aware choice among candidate summaries (beyond the paper).

Beam search keeps the hypothesis the model scores best, but the model's score knows nothing of
how well a summary reflects the reviews it read. COOP (Iso et al. 2021) showed for mean-based
summarizers that choosing among candidate summaries by their word overlap with the input reviews
adds about 2.5 ROUGE-1. The analogue here, with `DecodeConfig.rerank`:

- candidates: the beam's finished hypotheses (free: beam search makes `beam_size` of them), plus
  those decoded from `DecodeConfig.subsets` subsets of the reviews (each leaves out every
  (subsets + 1)-th review, at a different offset: as many extra decodes);
- choice: the candidate with the highest mean, over the input reviews, of ROUGE-1..n F1 against
  that review (n = `DecodeConfig.rerank_ngrams`), on word ids, ignoring special tokens and
  punctuation. Only the input reviews are used: no reference, nothing learned.

Ties keep the earlier candidate, so the model's own best wins them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def review_subsets(n_reviews: int, count: int) -> list[list[int]]:
    """Up to `count` index subsets of n_reviews reviews: subset j leaves out the reviews i with
    i % (count + 1) == j. No subset when there are fewer than 3 reviews (nothing to vary)."""
    if n_reviews < 3:
        return []
    out = []
    for j in range(count):
        keep = [i for i in range(n_reviews) if i % (count + 1) != j]
        if len(keep) < n_reviews and keep not in out:
            out.append(keep)
    return out


def _ngrams(ids: Sequence[int], n: int) -> Counter:
    return Counter(tuple(ids[i : i + n]) for i in range(len(ids) - n + 1))


def _f1(overlap: int, a: int, b: int) -> float:
    return 0.0 if overlap == 0 else 2 * overlap / (a + b)


class OverlapScorer:
    """Mean ROUGE-1..n F1 of a candidate against each of an entity's reviews (word ids)."""

    def __init__(self, reviews: Sequence[Sequence[int]], ignore: set[int], n: int = 2) -> None:
        self.ignore, self.n = ignore, n
        self.reviews = [[self._grams(r, k) for k in range(1, n + 1)] for r in reviews]

    def _grams(self, ids: Sequence[int], n: int) -> Counter:
        kept = [i for i in ids if i not in self.ignore]
        return _ngrams(kept, n)

    def score(self, candidate: Sequence[int]) -> float:
        cand = [self._grams(candidate, k) for k in range(1, self.n + 1)]
        total = 0.0
        for review in self.reviews:
            for c, r in zip(cand, review, strict=True):
                total += _f1(sum((c & r).values()), sum(c.values()), sum(r.values()))
        return total / max(1, len(self.reviews) * self.n)


def choose(
    candidates: Sequence[Sequence[int]],
    reviews: Sequence[Sequence[int]],
    ignore: set[int],
    n: int = 2,
) -> int:
    """Index of the candidate closest to the reviews (the first one among equals)."""
    scorer = OverlapScorer(reviews, ignore, n)
    scores = [scorer.score(c) for c in candidates]
    return max(range(len(scores)), key=lambda i: (scores[i], -i))
