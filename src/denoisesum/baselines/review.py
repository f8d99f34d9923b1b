"""Baselines that return one whole input review: First, Random, Clustroid and the Oracle."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from functools import cache

from denoisesum.baselines.base import Summarizer, clean
from denoisesum.errors import DenoiseSumError
from denoisesum.evaluation.rouge import ROUGE_TYPES, rouge_f1


class FirstReview(Summarizer):
    """The entity's first review, as listed in the input."""

    name = "first"

    def summarize(self, reviews: Sequence[str], *, references: Sequence[str] = ()) -> str:
        return clean(reviews[0])


class RandomReview(Summarizer):
    """A review drawn at random; the draw depends only on the seed and the entity's reviews, so it
    is the same whatever order or subset of entities is summarized."""

    name = "random"

    def __init__(self, *, seed: int = 0) -> None:
        self.seed = seed

    def summarize(self, reviews: Sequence[str], *, references: Sequence[str] = ()) -> str:
        digest = hashlib.sha256("\x00".join([str(self.seed), *reviews]).encode()).digest()
        return clean(random.Random(digest).choice(list(reviews)))


@cache
def _rouge1_scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)


def rouge1_f1(a: str, b: str) -> float:
    return _rouge1_scorer().score(a, b)["rouge1"].fmeasure


class Clustroid(Summarizer):
    """The most typical review: the highest mean ROUGE-1 F1 (rouge-score, stemmed) against the
    entity's other reviews. F1 is symmetric, so each pair is scored once; ties go to the first."""

    name = "clustroid"

    def summarize(self, reviews: Sequence[str], *, references: Sequence[str] = ()) -> str:
        n = len(reviews)
        if n == 1:
            return clean(reviews[0])
        totals = [0.0] * n
        for i in range(n):
            for j in range(i + 1, n):
                f1 = rouge1_f1(reviews[i], reviews[j])
                totals[i] += f1
                totals[j] += f1
        return clean(reviews[max(range(n), key=totals.__getitem__)])


class Oracle(Summarizer):
    """The input review closest to the gold summaries: the highest mean of ROUGE-1, -2 and -L F1
    (rouge-score, stemmed, averaged over references), or ROUGE-1 F1 alone with
    `metric="rouge1"`. An upper bound for any method that returns one review, not a system."""

    name = "oracle"
    needs_reference = True
    METRICS = ("mean", *ROUGE_TYPES)

    def __init__(self, *, metric: str = "rouge1") -> None:
        if metric not in self.METRICS:
            raise DenoiseSumError(
                f"unknown oracle metric '{metric}'; choose from {', '.join(self.METRICS)}"
            )
        self.metric = metric

    def _score(self, review: str, references: Sequence[str]) -> float:
        scores = rouge_f1(review, references)
        if self.metric == "mean":
            return sum(scores.values()) / len(scores)
        return scores[self.metric]

    def summarize(self, reviews: Sequence[str], *, references: Sequence[str] = ()) -> str:
        if not references:
            raise ValueError("the oracle needs the gold summaries (references)")
        scores = [self._score(r, references) for r in reviews]
        return clean(reviews[max(range(len(reviews)), key=scores.__getitem__)])
