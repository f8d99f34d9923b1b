"""Which of an entity's reviews the model reads when it has more than it was trained on.

The shipped model was trained on sets of about 8 reviews; real entities have hundreds. Reading
them all costs time linear in their number (the encoder, and every decoding step attends over
all their words) and takes the model far from the inputs it learned on, so the Summarizer reads
`read_reviews` of them (SummarizerConfig.select, .read_reviews):

- "central" (the default): the reviews most similar on average to all the others, by the
  similarity the document noise used to build the training inputs (noising/document_noise.py:
  IDF-weighted ROUGE-1 F1, `idf_rouge1_f1(review, candidate, idf)`), with the IDF computed over
  the entity's own reviews (`text.idf_weights` of their document frequencies). centrality(x) is
  the mean over the other reviews y of idf_rouge1_f1(x, y): how well x would have matched each
  other review taken as the summary candidate, i.e. how typical x is of the set. Why this and
  not clustering: the training inputs of the document noise are exactly the reviews most
  similar to a candidate summary, so the model learned to turn a set of mutually similar,
  typical reviews into their common opinion; the most central reviews are that kind of input.
  It needs no parameter (a clustering needs a k and a seed) and is deterministic: ties keep
  the earlier review. The central reviews hold more of a business's most frequent content words
  than random ones, and so do their summaries (docs/results/many-reviews.md); what it trades:
  typical reviews are the mainstream ones, so their stars lean a little above the business's
  mean, and longer reviews (up to max_review_tokens, as they are cut) score higher, sharing
  more words: the model gets fuller inputs.
- "first": the first read_reviews reviews (what max_reviews alone did before).
- "random": a uniform sample, seeded (`seed`), the same for the same number of reviews.

The chosen reviews are read in their given order. An entity with at most read_reviews reviews
is read whole, whatever the mode, so its summary is unchanged.

Cost: one sparse product over the set's word counts, not a Python loop over review pairs
(`similarity_matrix` is idf_rouge1_f1 for every pair at once: with O the overlap,
P = O / |x| and R = O / |y|, so F1 = 2PR / (P + R) = 2O / (|x| + |y|)): choosing 8 of 200
reviews takes about 40 ms with their tokenizing, against about 600 ms to decode a summary.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from denoisesum.errors import DenoiseSumError
from denoisesum.text import idf_weights

SELECT_MODES = ("central", "first", "random")


def similarity_matrix(reviews: Sequence[Sequence[int]]) -> np.ndarray:
    """float [N, N]: S[x, y] = idf_rouge1_f1(reviews[x], reviews[y], idf) for every pair of
    reviews (word ids), with idf = idf_weights over these reviews' document frequencies."""
    from scipy import sparse  # here: only entities with more than read_reviews reviews need it

    n = len(reviews)
    lengths = np.array([len(r) for r in reviews], dtype=np.float64)
    if n == 0:
        return np.zeros((0, 0))
    flat = np.concatenate([np.asarray(r, dtype=np.int64) for r in reviews])
    words, columns = np.unique(flat, return_inverse=True)
    rows = np.repeat(np.arange(n), lengths.astype(np.int64))
    counts = sparse.csr_matrix(
        (np.ones(len(flat), np.float32), (rows, columns)), shape=(n, len(words))
    )  # repeated (row, word) entries add up
    present = counts.copy()
    present.data[:] = 1.0
    idf = idf_weights(np.asarray(present.sum(axis=0)).ravel(), n)
    # overlap[x, y]: the IDF of x's words (each occurrence) that y contains
    overlap = (counts.multiply(idf[None, :]).tocsr() @ present.T).toarray().astype(np.float64)
    return 2 * overlap / np.maximum(lengths[:, None] + lengths[None, :], 1.0)


def centrality(reviews: Sequence[Sequence[int]]) -> np.ndarray:
    """float [N]: each review's mean similarity (`similarity_matrix`) to the others."""
    n = len(reviews)
    if n < 2:
        return np.zeros(n)
    similarity = similarity_matrix(reviews)
    return (similarity.sum(axis=1) - np.diag(similarity)) / (n - 1)


def select_reviews(
    reviews: Sequence[Sequence[int]], k: int, mode: str = "central", seed: int = 0
) -> list[int]:
    """Indices of the k reviews (word ids) to read, ascending; all of them when there are at
    most k."""
    if mode not in SELECT_MODES:
        raise DenoiseSumError(f"select must be one of {', '.join(SELECT_MODES)}, got {mode!r}")
    if k < 1:
        raise DenoiseSumError(f"read_reviews must be at least 1, got {k}")
    n = len(reviews)
    if n <= k:
        return list(range(n))
    if mode == "first":
        return list(range(k))
    if mode == "random":
        return sorted(random.Random(seed).sample(range(n), k))
    score = centrality(reviews)
    order = np.lexsort((np.arange(n), -score))  # best first; ties: the earlier review
    return sorted(int(i) for i in order[:k])
