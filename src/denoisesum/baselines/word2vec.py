"""The "Word2Vec" baseline of the DenoiseSum paper: the review nearest the entity's centroid.

Word vectors are trained on a review corpus with gensim (CBOW, 100 dimensions). A text is the
IDF-weighted mean of the vectors of its words (IDF over the same corpus, each review a document);
the entity's centroid is the same over all the words of all its reviews. The review whose vector
has the highest cosine with the centroid is the summary.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from denoisesum.baselines.base import Summarizer, clean, compared_words
from denoisesum.data.tokenizer import Tokenizer
from denoisesum.errors import DenoiseSumError
from denoisesum.io import read_json, require_part, write_json
from denoisesum.text import idf_table

_TOKENIZER = Tokenizer()
VECTORS_FILE = "vectors.bin"
META_FILE = "word2vec.json"


def _words(text: str) -> list[str]:
    return compared_words(_TOKENIZER.tokenize(text))


@dataclass(frozen=True)
class Word2VecSettings:
    """How the word vectors are trained (saved with them)."""

    dim: int = 100
    window: int = 5
    min_count: int = 5
    epochs: int = 5
    seed: int = 0


class Word2VecCentroid(Summarizer):
    """Pick the review closest (cosine) to the IDF-weighted embedding centroid of all reviews.
    `settings`: those of Word2VecSettings (dim=100, window=5, ...)."""

    name = "word2vec"
    can_fit = True
    needs_fit = True

    def __init__(self, *, workers: int = 2, **settings: int) -> None:
        self.settings = Word2VecSettings(**settings)
        self.workers = workers
        self.vectors = None  # gensim KeyedVectors, from fit() or load()
        self.idf: dict[str, float] = {}
        self.reviews_seen = 0

    def fit(self, texts: Iterable[str]) -> Word2VecCentroid:
        from gensim.models import Word2Vec

        documents = [_words(t) for t in texts]
        if not any(documents):
            raise DenoiseSumError("word2vec: the training corpus has no words")
        s = self.settings
        model = Word2Vec(
            documents,
            vector_size=s.dim,
            window=s.window,
            min_count=s.min_count,
            epochs=s.epochs,
            seed=s.seed,
            workers=self.workers,
            sg=0,
        )
        self.vectors = model.wv
        idf, _ = idf_table(documents)
        # only words with a vector are ever weighted
        self.idf = {w: idf[w] for w in self.vectors.index_to_key}
        self.reviews_seen = len(documents)
        return self

    def save(self, directory: str | Path) -> None:
        directory = Path(directory)
        self._require_vectors()
        directory.mkdir(parents=True, exist_ok=True)
        # gensim writes only to a path: write beside the target, then rename (atomic)
        partial = directory / f".{VECTORS_FILE}.partial"
        self.vectors.save_word2vec_format(str(partial), binary=True)
        os.replace(partial, directory / VECTORS_FILE)
        write_json(
            directory / META_FILE,
            {"settings": asdict(self.settings), "reviews": self.reviews_seen, "idf": self.idf},
        )

    @classmethod
    def load(cls, directory: str | Path) -> Word2VecCentroid:
        from gensim.models import KeyedVectors

        directory = Path(directory)
        vectors = require_part(
            directory,
            VECTORS_FILE,
            f"no trained word vectors here (expected {VECTORS_FILE}; train them with --corpus)",
        )
        meta = read_json(directory / META_FILE)
        summarizer = cls(**meta["settings"])
        summarizer.vectors = KeyedVectors.load_word2vec_format(vectors, binary=True)
        summarizer.idf = meta["idf"]
        summarizer.reviews_seen = meta["reviews"]
        return summarizer

    def describe(self) -> str:
        s = self.settings
        return (
            f"{len(self.idf):,} word vectors ({s.dim}-dim CBOW, window {s.window}, "
            f"min count {s.min_count}, {s.epochs} epochs) trained on "
            f"{self.reviews_seen:,} reviews"
        )

    def _require_vectors(self) -> None:
        if self.vectors is None:
            raise DenoiseSumError(
                "word2vec has no word vectors: fit it on a corpus "
                "(--corpus FILES) or load a trained model (--model DIR)"
            )

    def weighted_sum(self, words: Sequence[str]) -> np.ndarray:
        """IDF-weighted sum of the vectors of the known words (zeros when none is known)."""
        total = np.zeros(self.vectors.vector_size)
        for word in words:
            if word in self.idf:
                total += self.idf[word] * self.vectors[word]
        return total

    def summarize(self, reviews: Sequence[str], *, references: Sequence[str] = ()) -> str:
        self._require_vectors()
        sums = [self.weighted_sum(_words(r)) for r in reviews]
        # The centroid of all the entity's words is the sum of the reviews' sums; cosine ignores
        # the normalisation by total weight, so sums stand in for weighted means.
        centroid = np.sum(sums, axis=0)
        best = max(range(len(reviews)), key=lambda i: _cosine(sums[i], centroid))
        return clean(reviews[best])


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norm if norm > 0 else -1.0
