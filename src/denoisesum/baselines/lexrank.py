"""LexRank (Erkan & Radev, 2004): sentence centrality in a graph of TF-IDF cosine similarities.

The sentences of all of an entity's reviews are the nodes; two sentences are linked when their
TF-IDF cosine exceeds a threshold (0.1, the paper's best). Each sentence's score is its stationary
probability under a random walk on the degree-normalised graph with teleportation (damping 0.15),
found by power iteration. The top sentences are extracted, up to a word budget, and printed in
their original order.

IDF comes from the entity's own sentences (each sentence a document, as in the paper's
cluster-level setting) unless the summarizer was fitted on a corpus of reviews.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from denoisesum.baselines.base import (
    Summarizer,
    compared_words,
    fill_budget,
    join_tokens,
    split_sentences,
    word_count,
)
from denoisesum.baselines.options import DEFAULT_WORDS
from denoisesum.data.tokenizer import Tokenizer
from denoisesum.text import idf_table

_TOKENIZER = Tokenizer()


def tfidf_cosine(
    sentences: Sequence[Sequence[str]], idf: dict[str, float], unseen_idf: float
) -> np.ndarray:
    """Cosine similarity matrix of the sentences' TF-IDF vectors (rows of zeros stay zero)."""
    vocab = {w: i for i, w in enumerate(sorted({w for s in sentences for w in s}))}
    matrix = np.zeros((len(sentences), len(vocab)))
    for row, words in enumerate(sentences):
        for word, tf in Counter(words).items():
            matrix[row, vocab[word]] = tf * idf.get(word, unseen_idf)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return matrix @ matrix.T


def lexrank_scores(
    similarity: np.ndarray,
    threshold: float = 0.1,
    damping: float = 0.15,
    tolerance: float = 1e-8,
    max_iterations: int = 1000,
) -> np.ndarray:
    """Stationary distribution of the thresholded similarity graph (LexRank with threshold)."""
    n = len(similarity)
    adjacency = (similarity > threshold).astype(float)
    np.fill_diagonal(adjacency, 1.0)  # every sentence is similar to itself: no dangling rows
    transition = adjacency / adjacency.sum(axis=1, keepdims=True)
    p = np.full(n, 1.0 / n)
    for _ in range(max_iterations):
        updated = damping / n + (1 - damping) * transition.T @ p
        if np.abs(updated - p).sum() < tolerance:
            return updated
        p = updated
    return p


class LexRank(Summarizer):
    """Extract the most central sentences of the entity's reviews, up to `words` words."""

    name = "lexrank"
    can_fit = True

    def __init__(
        self, *, words: int = DEFAULT_WORDS, threshold: float = 0.1, damping: float = 0.15
    ) -> None:
        self.words = words
        self.threshold = threshold
        self.damping = damping
        self.idf: dict[str, float] | None = None  # set by fit(); None: the entity's sentences
        self.unseen_idf = 0.0

    def fit(self, texts: Iterable[str]) -> LexRank:
        """IDF over a corpus, each review a document."""
        self.idf, self.unseen_idf = idf_table(compared_words(_TOKENIZER.tokenize(t)) for t in texts)
        return self

    def rank(self, reviews: Sequence[str]) -> tuple[list[list[str]], np.ndarray]:
        """The entity's sentences (cased tokens) and their LexRank scores."""
        sentences = [s for review in reviews for s in split_sentences(review)]
        words = [compared_words(s) for s in sentences]
        idf, unseen = (self.idf, self.unseen_idf) if self.idf is not None else idf_table(words)
        if not sentences:
            return [], np.zeros(0)
        similarity = tfidf_cosine(words, idf, unseen)
        return sentences, lexrank_scores(similarity, self.threshold, self.damping)

    def summarize(self, reviews: Sequence[str], *, references: Sequence[str] = ()) -> str:
        sentences, scores = self.rank(reviews)
        texts = [join_tokens(s) for s in sentences]
        # a stable sort: among equal scores, the earlier sentence wins
        ranked = sorted(range(len(texts)), key=lambda i: -scores[i])
        ranked = _drop_repeats(ranked, sentences)
        chosen = fill_budget(ranked, [word_count(t) for t in texts], self.words)
        return " ".join(texts[i] for i in sorted(chosen))


def _drop_repeats(ranked: list[int], sentences: Sequence[Sequence[str]]) -> list[int]:
    # The same sentence written twice ("Great service!") would otherwise be extracted twice.
    seen: set[tuple[str, ...]] = set()
    kept = []
    for i in ranked:
        key = tuple(compared_words(sentences[i]))
        if key not in seen:
            seen.add(key)
            kept.append(i)
    return kept
