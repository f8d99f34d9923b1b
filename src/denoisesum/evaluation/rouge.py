"""ROUGE-1/2/L F1 with Google's `rouge-score` package, the primary numbers.

rouge-score lower-cases, turns every character outside [a-z0-9] into a space, splits on spaces and
Porter-stems (NLTK's default mode) words longer than 3 characters. That makes a tokenized output
("can ' t") and raw text ("can't") the same words ("can t"), so either may be scored against the
other. `rougeL` is the LCS of the whole summaries (not `rougeLsum`, which splits on newlines).
An entity's F1 is the mean of its F1 against each of its references.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


@cache
def _scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)


def rouge_f1(hypothesis: str, references: Sequence[str]) -> dict[str, float]:
    """F1 (0-1) of one hypothesis, averaged over its references."""
    per_reference = [_scorer().score(ref, hypothesis) for ref in references]
    return {t: sum(s[t].fmeasure for s in per_reference) / len(per_reference) for t in ROUGE_TYPES}


def rouge_f1_per_entity(
    hypotheses: Sequence[str], references: Sequence[Sequence[str]]
) -> dict[str, list[float]]:
    """Each entity's F1 (0-100) by ROUGE type, in input order: the per-entity scores that a
    mean, a bootstrap interval or a paired test is computed from."""
    scores = [rouge_f1(h, r) for h, r in zip(hypotheses, references, strict=True)]
    return {t: [100 * s[t] for s in scores] for t in ROUGE_TYPES}
