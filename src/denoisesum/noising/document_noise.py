"""Document-level noise: the N reviews of the same entity most similar to the candidate.

Similarity is IDF-weighted ROUGE-1 F1 (docs/method.md §1.4): overlap = sum of the IDF of the
words of review x found in candidate y (each occurrence in x counts); P = overlap / |x|,
R = overlap / |y|.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse


def idf_rouge1_f1(review: np.ndarray, candidate: np.ndarray, idf: np.ndarray) -> float:
    """IDF-weighted ROUGE-1 F1 of one review (word ids) against the candidate (word ids)."""
    if len(review) == 0 or len(candidate) == 0:
        return 0.0
    overlap = float(idf[review[np.isin(review, candidate)]].sum())
    precision, recall = overlap / len(review), overlap / len(candidate)
    return 0.0 if overlap == 0 else 2 * precision * recall / (precision + recall)


def most_similar(
    candidate: np.ndarray, reviews: Sequence[np.ndarray], exclude: int, n: int, idf: np.ndarray
) -> list[int]:
    """Indices (into `reviews`) of the n best reviews by IDF-ROUGE-1 F1, never `exclude`.

    Ties keep the earlier review, so the result is deterministic.
    """
    scores = [(-idf_rouge1_f1(r, candidate, idf), i) for i, r in enumerate(reviews) if i != exclude]
    return [i for _, i in sorted(scores)[:n]]


def support(
    counts: sparse.csr_matrix, candidates: np.ndarray, lengths: np.ndarray, idf: np.ndarray, n: int
) -> np.ndarray:
    """float32 [len(candidates)]: each candidate's mean IDF-ROUGE-1 F1 against its n most
    similar other reviews, all reviews of one entity (the document noise it will be given).

    counts: [m, V] word counts of the entity's reviews; candidates: row indices into it;
    lengths: [m] review lengths. The same F1 as `idf_rouge1_f1`, for all rows at once.
    """
    k = min(n, len(lengths) - 1)
    if k < 1:  # an entity of one review: nothing supports it
        return np.zeros(len(candidates), dtype=np.float32)
    overlap = (counts @ sparse.diags(idf)) @ (counts[candidates] > 0).T  # [m, c]
    overlap = np.asarray(overlap.todense(), dtype=np.float64)
    precision = overlap / np.maximum(lengths, 1)[:, None]
    recall = overlap / np.maximum(lengths[candidates], 1)[None, :]
    f1 = np.where(overlap > 0, 2 * precision * recall / np.maximum(precision + recall, 1e-12), 0)
    f1[candidates, np.arange(len(candidates))] = -np.inf  # never a candidate's own review
    return (-np.sort(-f1, axis=0)[:k]).mean(axis=0).astype(np.float32)
