"""Decode review sets with a Summarizer and score the summaries against their references: the
one way the decoding search, the decoding benchmarks and the trainer's dev-ROUGE selection
measure a model.

    run = decode_and_score(summarizer, read_review_sets(dev_file), metrics="rouge,pooled")
    run.means["rouge1"], run.rouge_mean, run.words, run.seconds, run.summaries[0]
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from denoisesum.data.reviewsets import ReviewSet
from denoisesum.evaluation.report import EvaluationReport, evaluate
from denoisesum.evaluation.rouge import ROUGE_TYPES


@dataclass
class DecodedRun:
    summaries: list[str]  # tokenized summaries (space-joined tokens), in input order
    report: EvaluationReport
    seconds: float  # decoding time only

    @property
    def means(self) -> dict[str, float]:
        return self.report.means

    @property
    def rouge_mean(self) -> float:
        """The mean of rouge-score R1, R2 and RL F1: what decoding searches choose by."""
        return sum(self.means[t] for t in ROUGE_TYPES) / len(ROUGE_TYPES)

    @property
    def words(self) -> float:
        """Mean summary length in tokens."""
        return sum(len(s.split()) for s in self.summaries) / max(1, len(self.summaries))


def decode_and_score(
    summarizer,
    sets: Iterable[ReviewSet],
    metrics: Sequence[str] | str = "rouge",
    batch_size: int = 8,
    **options: Any,
) -> DecodedRun:
    """Summarize every review set (which must have reference summaries) with the summarizer's
    per-call `options` (Summarizer.summarize_results') and score it."""
    sets = list(sets)
    start = time.perf_counter()
    results = summarizer.summarize_results(
        [s.reviews for s in sets], batch_size=batch_size, **options
    )
    seconds = time.perf_counter() - start
    summaries = [" ".join(r.tokens) for r in results]
    report = evaluate(
        {s.entity_id: h for s, h in zip(sets, summaries, strict=True)},
        {s.entity_id: s.summaries for s in sets},
        metrics,
    )
    return DecodedRun(summaries, report, seconds)


def choose_variant(means: dict[str, float]) -> str:
    """The decoding variant to ship: the best mean of rouge-score R1/R2/RL (`means`, the first
    among equals)."""
    return max(means, key=lambda name: means[name])
